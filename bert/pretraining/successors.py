"""What BERT's successors changed in pre-training, side by side in miniature, through the project's own trainer
(trainer.train): the same tiny model, text and steps, one run per objective, and the held-out masked-token loss of
each, measured the same way for all (single held-out sentences, 15% of their pieces masked, a fresh draw per
evaluation fixed by the seed).

- static masks: each sentence masked once, the same whenever it comes back (BERT's prepared data, Devlin et al. 2019);
- dynamic masks: drawn anew every time (RoBERTa, Liu et al. 2019, section 4.1);
- n-gram masks and sentence order: spans of up to 3 pieces, and "are A and B in order?" (ALBERT, Lan et al. 2020);
- generator and discriminator: replaced-token detection (ELECTRA, Clark et al. 2020); its held-out masked-token loss
  is the generator's, and the discriminator's own loss (binary, per token) is logged beside it.

The text: the visitor's sentences (one document) and a few hundred of the tiny corpus's training sentences, in
documents of four; held out: sentences of the tiny corpus none of the runs trains on (miniature.py). A miniature:
seconds of one CPU core, a model of a few hundred thousand parameters; what the paper found at scale need not show.
"""
from __future__ import annotations

import gzip
import itertools
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..config import BertConfig
from ..costs import Cost
from ..data import split_sentences
from ..errors import InvalidInputError
from ..model import Bert
from ..tokenizer import BertTokenizer
from .data import DataConfig, batches
from .electra import Electra
from .miniature import HELDOUT_EVERY, TINY_CORPUS, step_ended, tokenizer as tiny_tokenizer
from .trainer import TrainConfig, evaluate, train

OBJECTIVES = {  # name: (what changed, its paper)
    "static": ("Masked LM, each sentence masked once (BERT's prepared data)", "Devlin et al. 2019"),
    "dynamic": ("Masked LM, masks redrawn every time a sentence comes back (RoBERTa)", "Liu et al. 2019, section 4.1"),
    "albert": ("Spans of up to 3 pieces masked, plus sentence order (ALBERT)", "Lan et al. 2020, section 4.1"),
    "electra": ("A small generator fills the masks; the model spots the replaced tokens (ELECTRA)", "Clark et al. 2020, section 2"),
}
DOCUMENT_LINES = 4  # the corpus's sentences, grouped into documents for the sentence-order pairs


@dataclass(frozen=True)
class ComparisonSettings:
    steps: int = 60  # optimizer updates per run
    sentences: int = 128  # tiny-corpus sentences trained on beside the visitor's: few, so that each comes back often
    layers: int = 1
    hidden: int = 64
    heads: int = 2
    batch_size: int = 16
    max_length: int = 32  # tokens per example
    learning_rate: float = 2e-3
    eval_every: int = 15  # steps between held-out evaluations
    eval_batches: int = 4  # held-out batches per evaluation
    seed: int = 0

    def config(self, family: str, vocab_size: int) -> BertConfig:
        return BertConfig.of_family(family, vocab_size=vocab_size, hidden_size=self.hidden, num_layers=self.layers, num_heads=self.heads,
                                    intermediate_size=4 * self.hidden, max_position_embeddings=self.max_length,
                                    hidden_dropout=0.0, attention_dropout=0.0)

    @property
    def evaluations(self) -> int:
        """Held-out evaluations per run: before the first step, every eval_every steps, and after the last."""
        return 1 + math.ceil(self.steps / self.eval_every)


@dataclass
class ObjectiveRun:
    objective: str  # a key of OBJECTIVES
    steps: list[int] = field(default_factory=list)  # the steps evaluated at
    heldout_loss: list[float] = field(default_factory=list)  # held-out masked-token loss (nats) at each
    replaced_loss: list[float] = field(default_factory=list)  # ELECTRA: the discriminator's held-out loss per token
    train_loss: list[float] = field(default_factory=list)  # the objective's own training loss, per step
    parameters: int = 0
    seconds: float = 0.0
    stopped_at: int | None = None


def comparison_cost(settings: ComparisonSettings, objectives: tuple[str, ...]) -> Cost:
    """The runs' passes, counted at the model's size: a training row is one forward and one backward pass, ELECTRA's
    two (generator and discriminator; the generator, a quarter as wide, counted as a whole model); an evaluation
    row one forward pass, ELECTRA's three (the generator's loss, then its samples and the discriminator). An upper
    bound: an epoch's last batch may be smaller."""
    training = settings.steps * settings.batch_size
    evaluation = settings.evaluations * settings.eval_batches * settings.batch_size
    forward = backward = 0
    for objective in objectives:
        models = 2 if objective == "electra" else 1
        forward += models * training + (3 if objective == "electra" else 1) * evaluation
        backward += models * training
    return Cost(forward, settings.max_length, ("steps", "the runs compared"), backward)


def write_texts(text: str, settings: ComparisonSettings, folder: Path) -> tuple[Path, Path]:
    """train.txt (the visitor's sentences as one document, then the corpus's in documents of four) and heldout.txt."""
    visitor = [s.text for s in split_sentences(text)]
    if not visitor:
        raise InvalidInputError("type a sentence or two to train on")
    lines = gzip.decompress(TINY_CORPUS.read_bytes()).decode("utf-8").splitlines()
    corpus = [line for i, line in enumerate(lines) if i % HELDOUT_EVERY][: settings.sentences]
    heldout = lines[::HELDOUT_EVERY][: settings.eval_batches * settings.batch_size]
    documents = [visitor] + [corpus[i : i + DOCUMENT_LINES] for i in range(0, len(corpus), DOCUMENT_LINES)]
    train_file, heldout_file = folder / "train.txt", folder / "heldout.txt"
    train_file.write_text("\n\n".join("\n".join(doc) for doc in documents) + "\n", encoding="utf-8")
    heldout_file.write_text("\n".join(heldout) + "\n", encoding="utf-8")
    return train_file, heldout_file


def build(objective: str, settings: ComparisonSettings, vocabulary: BertTokenizer) -> tuple[Bert | Electra, TrainConfig, DataConfig]:
    """The fresh model, training and data settings of one objective (the same seed: the same initial weights where
    the models are the same)."""
    import torch

    if objective not in OBJECTIVES:
        raise InvalidInputError(f"objective must be one of {tuple(OBJECTIVES)}, not {objective!r}")
    torch.manual_seed(settings.seed)
    common = dict(steps=settings.steps, learning_rate=settings.learning_rate, warmup_steps=max(1, settings.steps // 10),
                  seed=settings.seed, eval_every=settings.steps, checkpoint_every=settings.steps)
    data = DataConfig(max_length=settings.max_length, batch_size=settings.batch_size, sentence_order=objective == "albert")
    if objective == "electra":
        return Electra.from_config(settings.config("electra", vocabulary.vocab_size)), TrainConfig(mask_share=1.0, **common), data
    model = Bert(settings.config("albert" if objective == "albert" else "bert", vocabulary.vocab_size), nsp_head=objective == "albert")
    return model, TrainConfig(static_masks=objective == "static", max_ngram=3 if objective == "albert" else 1, **common), data


def compare(
    text: str, settings: ComparisonSettings, objectives: tuple[str, ...] = tuple(OBJECTIVES),
    on_update: Callable[[ObjectiveRun], None] | None = None, should_stop: Callable[[], bool] | None = None,
) -> dict[str, ObjectiveRun]:
    """Train one tiny model per objective on the visitor's text and the corpus's sentences; their held-out losses.
    on_update(run) after every step of each run; should_stop() asked after every step (a stopped run ends there,
    and no further run starts)."""
    vocabulary = tiny_tokenizer()
    runs: dict[str, ObjectiveRun] = {}
    with tempfile.TemporaryDirectory(prefix="inside-bert-successors-") as folder:
        train_file, heldout_file = write_texts(text, settings, Path(folder))
        heldout = list(itertools.islice(batches(heldout_file, vocabulary, DataConfig(max_length=settings.max_length,
                                                                                     batch_size=settings.batch_size), settings.seed, 0),
                                        settings.eval_batches))
        for objective in objectives:
            runs[objective] = run = _train_one(objective, settings, vocabulary, train_file, heldout, Path(folder) / objective,
                                               on_update, should_stop)
            if run.stopped_at is not None:
                break
    return runs


def _train_one(objective, settings, vocabulary, train_file, heldout, folder, on_update, should_stop) -> ObjectiveRun:
    started = time.perf_counter()
    model, train_config, data = build(objective, settings, vocabulary)
    run = ObjectiveRun(objective, parameters=sum(p.numel() for p in model.parameters()))
    measure = TrainConfig(seed=settings.seed, mask_share=train_config.mask_share)  # the same held-out masks for every run

    def record(step: int) -> None:
        metrics = evaluate(model, vocabulary, heldout, measure)
        run.steps.append(step)
        run.heldout_loss.append(round(math.log(metrics["perplexity"]), 4))
        if "replaced_loss" in metrics:
            run.replaced_loss.append(round(metrics["replaced_loss"], 4))

    def on_step(step: int, losses: dict[str, float], _evaluation) -> bool:
        run.train_loss.append(round(losses["loss"], 4))
        if step % settings.eval_every == 0 or step == settings.steps:
            record(step)
        return step_ended(run, step, should_stop, on_update)

    record(0)
    train(model, vocabulary, train_file, None, folder, train_config, data, resume=False, on_step=on_step)
    run.seconds = round(time.perf_counter() - started, 1)
    return run
