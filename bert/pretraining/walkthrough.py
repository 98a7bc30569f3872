"""One example through BERT's pre-training, with the very code training runs (Devlin et al. 2019, section 3.1 and
appendix A): the masked-LM draw (trainer.mask_batch), the next-sentence or sentence-order pairs (data.pair_examples)
and the summed loss (trainer.pretraining_loss), each returned with what a class needs to see it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..data import builtin_sentences, split_sentences
from ..devices import model_device
from ..errors import InvalidInputError
from ..model import Bert
from ..tokenizer import BertTokenizer
from .data import Batch, DataConfig, collate, pair_examples, single_examples
from .masking import IGNORE
from .nsp import IS_NEXT
from .trainer import TrainConfig, pretraining_loss, step_masks

MAX_LENGTH = DataConfig().max_length  # 128 tokens, as the trainer's default
OTHER_DOCUMENTS = 300  # built-in sentences a random sentence B is drawn from
KINDS = ("mask", "random", "kept")  # what happened to a chosen token: [MASK] (80%), a random token (10%), unchanged (10%)


@dataclass(frozen=True)
class MaskedExample:
    tokens: list[str]  # what the text is, [CLS] ... [SEP]
    shown: list[str]  # what the model reads after the draw
    shown_ids: list[int]  # their ids
    labels: list[int]  # the token id the loss asks for at each chosen position; IGNORE (-100) elsewhere
    kinds: list[str | None]  # per position: "mask", "random", "kept", or None (not chosen)
    seed: int
    truncated: bool = False  # the text was longer than MAX_LENGTH tokens and was cut

    @property
    def chosen(self) -> list[int]:
        return [i for i, kind in enumerate(self.kinds) if kind is not None]


@dataclass(frozen=True)
class PairExample:
    tokens: list[str]  # [CLS] A [SEP] B [SEP]
    segment_ids: list[int]  # 0 for [CLS] A [SEP], 1 for B [SEP]
    label: int  # 0: B follows A (nsp) or in order (sop); 1: B random (nsp) or A and B swapped (sop)
    batch: Batch  # the example as the trainer's batch of one


def sentence_batch(tokenizer: BertTokenizer, text: str) -> tuple[Batch, bool]:
    """The text as the trainer reads a line (data.single_examples): a batch of one, and whether it was cut."""
    examples = single_examples([" ".join(text.split())], tokenizer, DataConfig(max_length=MAX_LENGTH))
    if not examples:
        raise InvalidInputError("the text has no word pieces to mask: type a sentence")
    pieces = len(tokenizer.encode_plain([" ".join(text.split())])[0])
    return collate(examples, tokenizer), pieces > MAX_LENGTH - 2


def mask_example(tokenizer: BertTokenizer, batch: Batch, seed: int, whole_word: bool = False, truncated: bool = False,
                 step: int = 0, static: bool = False, max_ngram: int = 1) -> MaskedExample:
    """The draw the trainer makes at step `step` (default 0) of a run seeded `seed` for a batch of this one example
    (trainer.step_masks): 15% chosen (tokens, whole words, or n-grams up to `max_ngram`), then 80/10/10; with
    `static`, the sequence's own draw at every step (dynamic_masking.py)."""
    config = TrainConfig(seed=seed, whole_word=whole_word, static_masks=static, max_ngram=max_ngram)
    corrupted, labels = step_masks(batch, tokenizer, config, step)
    original, corrupted, labels = batch.input_ids[0].tolist(), corrupted[0].tolist(), labels[0].tolist()
    kinds = [None if label == IGNORE else "mask" if shown == tokenizer.mask_id else "kept" if shown == token else "random"
             for token, shown, label in zip(original, corrupted, labels)]
    tokens, shown = ([tokenizer.id_to_token(i) for i in ids] for ids in (original, corrupted))
    return MaskedExample(tokens, shown, corrupted, labels, kinds, seed, truncated)


def sentence_pairs(tokenizer: BertTokenizer, text: str, seed: int, task: str = "nsp") -> list[PairExample]:
    """The pairs pre-training builds from this text as one document (one sentence a segment), as data.batches
    does in epoch 0 of a run seeded `seed`: B is the true next sentence, or (odds 1/2) a built-in sentence
    (task "nsp") or A and B swapped (task "sop")."""
    sentences = [s.text for s in split_sentences(text)]
    if len(sentences) < 2:
        raise InvalidInputError("next-sentence pairs need at least two sentences: end each with . ! or ?")
    others = [line for s in builtin_sentences(OTHER_DOCUMENTS) for line in ("", s.text)]  # one-sentence documents
    config = DataConfig(max_length=MAX_LENGTH, next_sentence=task == "nsp", sentence_order=task == "sop")
    examples = pair_examples(sentences + others, tokenizer, config, random.Random(f"{seed}-0"))[: len(sentences) - 1]
    return [PairExample([tokenizer.id_to_token(i) for i in ids], types, label, collate([(ids, types, label)], tokenizer))
            for ids, types, label in examples]


@torch.no_grad()
def next_sentence_probability(model: Bert, pair: PairExample) -> float:
    """The model's P(B follows A) for this pair (its NSP head's index 0)."""
    batch = pair.batch.to(model_device(model))
    return float(model(batch.input_ids, batch.token_type_ids, batch.attention_mask, output="nsp").float().softmax(-1)[0, IS_NEXT])


@dataclass(frozen=True)
class ExampleLoss:
    positions: list[int]  # the chosen positions
    targets: list[str]  # the original token at each
    token_losses: list[float]  # -log p(original) at each: the masked-LM loss is their mean
    mlm: float
    nsp: float  # -log p(the pair's true label)
    total: float  # mlm + nsp, as pretraining_loss sums them


@torch.no_grad()
def example_loss(model: Bert, pair: PairExample, masked: MaskedExample) -> ExampleLoss:
    """The pre-training loss of one masked pair (trainer.pretraining_loss) and its parts, in eval mode (no dropout)."""
    device = model_device(model)
    batch = pair.batch.to(device)
    corrupted = torch.tensor([masked.shown_ids], device=device)
    labels = torch.tensor([masked.labels], device=device)
    was_training = model.training
    model.eval()
    losses = pretraining_loss(model, batch, corrupted, labels)
    chosen = labels != IGNORE
    logits = model.mlm_logits(model.encode(corrupted, batch.token_type_ids, batch.attention_mask), chosen).float()
    token_losses = F.cross_entropy(logits, labels[chosen], reduction="none").tolist()
    model.train(was_training)
    return ExampleLoss(masked.chosen, [masked.tokens[i] for i in masked.chosen], token_losses,
                       float(losses["mlm"]), float(losses["nsp"]), float(losses["loss"]))
