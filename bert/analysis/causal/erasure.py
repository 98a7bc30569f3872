"""Amnesic probing (Elazar et al. 2021): erase a property from one layer and see whether the model's guesses suffer.

    report = amnesic_probing(model, tokenizer, train.sentences, test.sentences, task="upos", hidden_states_index=3)
    report.probe_before, report.probe_after, report.probe_majority, report.probe_random
    report.mlm_before, report.mlm_after, report.mlm_random

1. The layer's word vectors (hidden_states[hidden_states_index], a word's first word piece) of the training sentences and their
   labels fit a LEACE eraser (Belrose et al. 2023, the `concept-erasure` package): the least-squares affine edit
   after which no linear classifier can read the label better than a constant. Its rank (how many directions it
   removes) is at most the number of labels minus one.
2. Probe (a logistic regression, bert.analysis.probing.linear_probes.train_probes) on the test sentences'
   vectors before and after erasure, beside the majority baseline (the most frequent training label).
3. Masked-LM accuracy on the test words: every word that is one word piece (and not [UNK]) is masked alone, one
   word per input, and the model's top guess is compared with it; after erasure the eraser is applied to every
   position (every token, [MASK] included) of hidden_states[hidden_states_index] and the forward pass goes on from there.
4. The control (Elazar et al.): the same measures with a random erasure of the same rank (random orthonormal
   directions projected out around the training mean), so a drop can be told apart from the damage any edit of
   that size does.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from concept_erasure import LeaceEraser

from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...stopping import checkpoint
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import batches, batches_cost, pad
from ..probing.linear_probes import train_probes
from ..probing.treebank import MISSING, TreebankSentence
from ..probing.word_features import encode_sentences, extract_word_features
from .patching import site_hook

WORD_BATCH = 32  # sentences per pass when reading the word vectors

Progress = Callable[[float, str], None]  # (fraction done, what is running)


@dataclass(frozen=True)
class ErasureReport:
    model: str
    task: str
    hidden_states_index: int  # 0 = the embeddings' output, i = after layer i-1 (bert/layers.py)
    rank: int  # directions the LEACE eraser removes (the random control removes as many)
    probe_before: float  # test accuracy of a probe on the layer's word vectors
    probe_after: float  # ... on the erased vectors (a probe trained on erased training vectors)
    probe_majority: float  # the most frequent training label's share of the test words
    probe_random: float  # ... on vectors with the random erasure of the same rank
    mlm_before: float  # masked-LM top-1 accuracy on the test words, masked one at a time
    mlm_after: float
    mlm_random: float
    num_train_words: int
    num_test_words: int
    num_mlm_words: int

    def to_dict(self) -> dict:
        """The shape `python -m bert erase --json` writes."""
        return {
            "model": self.model, "task": self.task, "hidden_states_index": self.hidden_states_index, "rank": self.rank,
            "probe": {"before": self.probe_before, "after": self.probe_after, "majority": self.probe_majority,
                      "random_control": self.probe_random},
            "mlm": {"before": self.mlm_before, "after": self.mlm_after, "random_control": self.mlm_random},
        }


def fit_leace(vectors: torch.Tensor, labels: torch.Tensor, num_classes: int) -> LeaceEraser:
    """LEACE for integer labels ([example]) on vectors ([example, hidden]), fitted in float64."""
    one_hot = torch.nn.functional.one_hot(labels, num_classes).double()
    eraser = LeaceEraser.fit(vectors.double(), one_hot)
    return LeaceEraser(eraser.proj_left.float(), eraser.proj_right.float(), None if eraser.bias is None else eraser.bias.float())


def eraser_rank(eraser: LeaceEraser) -> int:
    """How many directions the eraser changes: the rank of identity - its projection."""
    return int(torch.linalg.matrix_rank((eraser.proj_left @ eraser.proj_right).double(), atol=1e-6))


def random_eraser(mean: torch.Tensor, rank: int, seed: int = 0) -> LeaceEraser:
    """Project out `rank` random orthonormal directions around `mean` (the control erasure)."""
    hidden = mean.shape[0]
    gaussian = torch.randn(hidden, rank, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    directions = torch.linalg.qr(gaussian).Q.float() if rank else torch.zeros(hidden, 0)  # [hidden, rank]
    return LeaceEraser(directions, directions.T.contiguous(), mean.float())


def erase_intervention(hidden_states_index: int, eraser: LeaceEraser, device: torch.device):
    """(hook, intervention): apply the eraser at every position of hidden_states[hidden_states_index]."""
    left, right = eraser.proj_left.to(device), eraser.proj_right.to(device)
    moved = LeaceEraser(left, right, None if eraser.bias is None else eraser.bias.to(device))

    def erase(activation: torch.Tensor, name: str) -> torch.Tensor:
        return moved(activation.float()).to(activation.dtype)

    return site_hook("residual", hidden_states_index), erase


def sample_sentences(sentences: Sequence[TreebankSentence], max_words: int | None, seed: int) -> list[TreebankSentence]:
    """A seeded sample of whole sentences with at most `max_words` words (None: all), in their file order."""
    if max_words is None:
        return list(sentences)
    order = list(range(len(sentences)))
    random.Random(seed).shuffle(order)
    kept, words = [], 0
    for index in order:
        if words + len(sentences[index]) > max_words:
            continue
        kept.append(index)
        words += len(sentences[index])
    return [sentences[i] for i in sorted(kept)]


def _labelled(model, tokenizer, sentences, task: str, hidden_states_index: int) -> tuple[torch.Tensor, list[str]]:
    """(word vectors at the layer [word, hidden], their labels), words without a label left out."""
    features = extract_word_features(model, tokenizer, sentences, batch_size=WORD_BATCH)
    labels = [label for sentence in features.sentences for label in sentence.labels[task]]
    keep = torch.tensor([label != MISSING for label in labels], dtype=torch.bool)
    return features.vectors[hidden_states_index][keep], [label for label in labels if label != MISSING]


def amnesic_probing_cost(
    tokenizer: BertTokenizer, train: Sequence[TreebankSentence], test: Sequence[TreebankSentence], max_positions: int,
    seed: int = 0, max_train_words: int | None = 10_000, max_test_words: int | None = 5_000,
    max_mlm_words: int | None = 2_000, batch_size: int = 64,
) -> Cost:
    """The passes `amnesic_probing` makes with the same samples, before it starts (max_positions: the model's
    longest input): the sampled sentences' word vectors, then every masked word three times (intact, erased, the
    random control)."""
    lower = ("the number of sentences",)
    cost = Cost(0, 0, lower)
    for sentences in (sample_sentences(train, max_train_words, seed), sample_sentences(test, max_test_words, seed + 1)):
        _, encodings, _ = encode_sentences(tokenizer, sentences, max_positions)
        cost += batches_cost([len(e) for e in encodings], WORD_BATCH, lower)
    masked = masked_words(tokenizer, sample_sentences(test, max_test_words, seed + 1), max_mlm_words, seed + 2, max_positions)
    once = batches_cost([len(encoding) for encoding, _, _ in masked], batch_size, lower)
    return cost + once + once + once


def amnesic_probing(
    model: Bert, tokenizer: BertTokenizer, train: Sequence[TreebankSentence], test: Sequence[TreebankSentence], task: str,
    hidden_states_index: int, seed: int = 0, max_train_words: int | None = 10_000, max_test_words: int | None = 5_000,
    max_mlm_words: int | None = 2_000, batch_size: int = 64, model_name: str = "", progress: Progress | None = None,
) -> ErasureReport:
    """Erase `task` (a label column: upos, xpos, deprel, ...) from hidden_states[`hidden_states_index`]; see the module docstring.
    The samples (training and test sentences up to the word limits, masked words) are seeded."""
    check_erasure(model, train, test, task, hidden_states_index)

    def report(fraction: float, what: str) -> None:
        checkpoint()  # between its stages a watcher (bert/stopping.py) may stop it
        if progress:
            progress(fraction, what)

    report(0.0, "word vectors of the training sentences")
    train_x, train_labels = _labelled(model, tokenizer, sample_sentences(train, max_train_words, seed), task, hidden_states_index)
    report(0.2, "word vectors of the test sentences")
    test_sentences = sample_sentences(test, max_test_words, seed + 1)
    test_x, test_labels = _labelled(model, tokenizer, test_sentences, task, hidden_states_index)
    names = sorted(set(train_labels))
    if len(names) < 2:
        raise InvalidInputError(f"the training words have {len(names)} {task} label(s); erasing needs at least two")
    index = {name: i for i, name in enumerate(names)}
    train_y = torch.tensor([index[label] for label in train_labels])
    test_y = torch.tensor([index.get(label, -1) for label in test_labels])  # a label never seen in training: always wrong
    report(0.4, "fitting LEACE and the probes")
    eraser = fit_leace(train_x, train_y, len(names))
    rank = eraser_rank(eraser)
    control = random_eraser(train_x.mean(0), rank, seed)
    variants = [lambda x: x, eraser, control]
    accuracy = train_probes(torch.stack([v(train_x) for v in variants]), train_y, torch.stack([v(test_x) for v in variants]), test_y)
    majority = float((test_y == torch.bincount(train_y).argmax()).float().mean())
    report(0.6, "masked-LM accuracy")
    masked = masked_words(tokenizer, test_sentences, max_mlm_words, seed + 2, model.config.max_position_embeddings)
    device = model_device(model)
    mlm = [mlm_accuracy(model, tokenizer, masked, interventions, batch_size) for interventions in
           ([], [erase_intervention(hidden_states_index, eraser, device)], [erase_intervention(hidden_states_index, control, device)])]
    report(1.0, "done")
    return ErasureReport(model_name, task, hidden_states_index, rank, float(accuracy[0]), float(accuracy[1]), majority, float(accuracy[2]),
                         mlm[0], mlm[1], mlm[2], len(train_y), len(test_y), len(masked))


def masked_words(
    tokenizer: BertTokenizer, sentences: Sequence[TreebankSentence], max_words: int | None, seed: int, max_length: int = 512,
) -> list[tuple[Encoding, int, int]]:
    """(the sentence with one word masked, its position, the word's token id) for every word that is one word
    piece (not [UNK]); a seeded sample of `max_words` of them (None: all)."""
    found = []
    for sentence in sentences:
        try:
            encoding = tokenizer.encode_words(list(sentence.words), max_length)
        except InvalidInputError:
            continue  # too long for the model: left out, as the word vectors leave it out
        pieces: dict[int, list[int]] = {}
        for position, word in enumerate(encoding.word_ids):
            if word is not None:
                pieces.setdefault(word, []).append(position)
        for positions in pieces.values():
            if len(positions) == 1 and encoding.input_ids[positions[0]] != tokenizer.unk_id:
                found.append((encoding, positions[0]))
    if max_words is not None and len(found) > max_words:
        found = [found[i] for i in sorted(random.Random(seed).sample(range(len(found)), max_words))]
    return [(encoding.with_masks([position], tokenizer.mask_id), position, encoding.input_ids[position]) for encoding, position in found]


@torch.no_grad()
def mlm_accuracy(model: Bert, tokenizer: BertTokenizer, masked: Sequence[tuple[Encoding, int, int]], interventions=(), batch_size: int = 64) -> float:
    """Share of the masked words whose top guess is the word itself, with `interventions` in every pass."""
    if not masked:
        raise InvalidInputError("no test word is a single word piece, so masked-LM accuracy cannot be measured")
    device = model_device(model)
    encodings = [encoding for encoding, _, _ in masked]
    correct = 0
    for batch in batches(encodings, batch_size):
        input_ids, token_type_ids, attention_mask = pad([encodings[i] for i in batch], tokenizer.pad_id, device)
        at_mask = torch.zeros_like(input_ids, dtype=torch.bool)
        at_mask[torch.arange(len(batch)), torch.tensor([masked[i][1] for i in batch])] = True
        logits, _ = model.run_with_cache(input_ids, token_type_ids, attention_mask, names=[], interventions=interventions, logit_mask=at_mask)
        targets = torch.tensor([masked[i][2] for i in batch], device=logits.device)
        correct += int((logits.argmax(-1) == targets).sum())
    return correct / len(masked)


def check_erasure(model: Bert, train, test, task: str, hidden_states_index: int) -> None:
    """InvalidInputError for a request amnesic_probing cannot run, before any forward pass."""
    if not model.has_mlm_head:
        raise InvalidInputError("amnesic probing measures masked-word guesses: load a model with a masked-LM head")
    if not 0 <= hidden_states_index <= model.config.num_layers:
        raise InvalidInputError(f"the hidden_states index must be 0 (the embeddings) to {model.config.num_layers} (after the "
                                f"last layer), not {hidden_states_index}")
    for name, sentences in (("training", train), ("test", test)):
        if not sentences:
            raise InvalidInputError(f"no {name} sentences")
        columns = sorted(sentences[0].labels)
        if task not in sentences[0].labels:
            raise InvalidInputError(f"the {name} data has no {task!r} labels; its label columns are {columns}")
