"""Tiny BERTs trained from scratch in a minute or two on a CPU, through the project's own trainer (trainer.train),
with a log a class can watch: training and held-out loss, a fixed cloze sentence's guesses and one head's
attention at every evaluation, and the right-context cloze set at the end.

The miniatures of Devlin et al. (2019): masked-LM against a left-to-right model (their figure 5: here the same
masked-token loss, with the attention limited to the left, `causal`), and model size against held-out loss
(their table 6). A miniature: one or two million parameters, 8,000 word pieces, 35,094 sentences, hundreds of steps, not 1M steps on
3.3 billion words. The log is plain JSON (no weights): recipes/tiny_runs.py ships the default runs' logs.
"""
from __future__ import annotations

import gzip
import itertools
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import torch

from ..checkpoint import shapes_only
from ..config import BertConfig
from ..costs import Cost
from ..hooks import hook_name
from ..model import Bert
from ..predict import predict_masks
from ..tokenizer import BertTokenizer
from .cloze_eval import everyday_cloze_accuracy, read_cloze
from .data import DataConfig, batches
from .trainer import TrainConfig, evaluate, train

DATA = Path(__file__).resolve().parent.parent / "data"
TINY_CORPUS = DATA / "tiny_corpus.txt.gz"  # WordNet 3.0's example sentences (bert/data/build_tiny_corpus.py)
TINY_VOCAB = DATA / "tiny_vocab.txt"  # their 8,000 most useful uncased word pieces (the same script)
RIGHT_CONTEXT_CLOZE = DATA / "right_context_cloze.tsv"  # answers that only the right-hand words give away
WATCH_SENTENCE = "He opened the [MASK] and walked into the room."  # its guesses are logged at every evaluation
HELDOUT_EVERY = 20  # every 20th line of the corpus is held out: 1,755 sentences
TOP_K = 5


@dataclass(frozen=True)
class TinySettings:
    layers: int = 2  # L
    hidden: int = 128  # H (the MLP is 4 H wide)
    heads: int = 2  # A
    steps: int = 800  # optimizer updates
    batch_size: int = 16  # sentences per update: small batches, more updates in the same minute
    learning_rate: float = 1e-3  # peak: tiny models take a larger one than BERT's 1e-4
    warmup_steps: int = 50
    dropout: float = 0.0  # on embeddings, sub-layer outputs and attention (BERT: 0.1); a run this short does not overfit
    seed: int = 0  # initial weights, data order, masking, dropout
    causal: bool = False  # True: the left-to-right model (each position sees only its left)
    whole_word: bool = False  # mask whole words instead of word pieces
    eval_every: int = 50  # steps between evaluations (held-out loss, guesses, attention)
    eval_batches: int = 16  # held-out batches per evaluation (256 sentences)
    max_length: int = 48  # tokens per training sentence

    @property
    def name(self) -> str:
        """A file name that says what the run was: "mlm-L2-H128-800steps-seed0"."""
        kind = "causal" if self.causal else "mlm"
        rate = "" if self.learning_rate == TinySettings.learning_rate else f"-lr{self.learning_rate:g}"
        return f"{kind}-L{self.layers}-H{self.hidden}-{self.steps}steps{rate}-seed{self.seed}" + ("-wwm" if self.whole_word else "")

    def bert_config(self, vocab_size: int) -> BertConfig:
        return BertConfig(vocab_size=vocab_size, hidden_size=self.hidden, num_layers=self.layers, num_heads=self.heads,
                          intermediate_size=4 * self.hidden, hidden_dropout=self.dropout, attention_dropout=self.dropout,
                          causal=self.causal)

    def train_config(self) -> TrainConfig:
        return TrainConfig(steps=self.steps, learning_rate=self.learning_rate, warmup_steps=self.warmup_steps, seed=self.seed,
                           whole_word=self.whole_word, eval_every=self.eval_every, eval_batches=self.eval_batches,
                           checkpoint_every=self.steps)

    def data_config(self) -> DataConfig:
        return DataConfig(max_length=self.max_length, batch_size=self.batch_size)


def training_cost(settings: TinySettings) -> Cost:
    """What `train_tiny` runs, known before it starts: every training row forward and backward, and at each
    evaluation (before the first step, every `eval_every` steps and after the last) the held-out batches and the
    snapshot's rows (the watched sentence twice, the right-context set twice: its guesses and its answers' ranks),
    then the right-context set twice at the end; each row `max_length` tokens at most. Memory: the weights, their
    gradients and Adam's two moments (float32), and one batch's activations with its logits over the vocabulary."""
    cloze = len(read_cloze(RIGHT_CONTEXT_CLOZE))
    evaluations = 1 + math.ceil(settings.steps / settings.eval_every)
    per_evaluation = settings.eval_batches * settings.batch_size + 2 + 2 * cloze
    training = settings.steps * settings.batch_size
    config, rows = settings.bert_config(tokenizer().vocab_size), settings.batch_size * settings.max_length
    with shapes_only():
        parameters = sum(p.numel() for p in Bert(config).parameters())
    activations = rows * (config.num_layers * (16 * config.hidden_size + 2 * config.num_heads * settings.max_length)
                          + config.vocab_size)
    return Cost(training + evaluations * per_evaluation + 2 * cloze, settings.max_length, ("steps", "the size"),
                backward_passes=training, peak_bytes=4 * (4 * parameters + activations))


# Figure 5 in miniature: the same model, data and steps, ten times as many as the live default.
READING_DIRECTION_RUNS = (TinySettings(steps=8000, eval_every=400), TinySettings(steps=8000, eval_every=400, causal=True))
# Table 6 in miniature: three sizes, the same steps, at a learning rate the largest also trains stably with.
SIZES = tuple(TinySettings(layers=layers, hidden=hidden, heads=heads, learning_rate=5e-4) for layers, hidden, heads in ((1, 64, 1), (2, 128, 2), (4, 256, 4)))
DEFAULT_RUNS = (TinySettings(),) + READING_DIRECTION_RUNS + SIZES  # the runs recipes/tiny_runs.py ships logs of: the live default first


@dataclass
class RunLog:
    """What a run showed, as plain data (asdict() is JSON)."""

    settings: dict
    parameters: int
    watch_tokens: list[str]  # the watched sentence's tokens ([CLS] ... [SEP])
    attention_at: tuple[int, int]  # (layer, head) whose pattern is logged
    train_loss: list[float] = field(default_factory=list)  # one per step
    evals: list[dict] = field(default_factory=list)  # step, heldout_loss, top1, top5, guesses, right_context_top1/5, attention
    right_context: dict | None = None  # the cloze set at the end: top1, top5, per_sentence
    seconds: float = 0.0
    stopped_at: int | None = None  # the step a stop request ended the run at
    environment: dict = field(default_factory=dict)  # where it ran: date, machine, load (recipes/tiny_runs.py)

    @property
    def done(self) -> bool:
        return self.right_context is not None

    @classmethod
    def from_dict(cls, data: dict) -> "RunLog":
        return cls(**{**data, "attention_at": tuple(data["attention_at"])})


def step_ended(log, step: int, should_stop: Callable[[], bool] | None, on_update: Callable | None) -> bool:
    """After a training step: whether a stop was asked for (then `log.stopped_at` is the step); `on_update(log)`."""
    stop = bool(should_stop and should_stop())
    if stop:
        log.stopped_at = step
    if on_update:
        on_update(log)
    return stop


def tokenizer() -> BertTokenizer:
    """The tiny models' uncased vocabulary: 8,000 word pieces of bert-base-uncased's 30,522."""
    return BertTokenizer.from_vocab(TINY_VOCAB)


def write_text(folder: Path) -> tuple[Path, Path]:
    """The tiny corpus as two plain-text files in `folder`: training lines and held-out lines."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = gzip.decompress(TINY_CORPUS.read_bytes()).decode("utf-8").splitlines(keepends=True)
    train_file, heldout_file = folder / "train.txt", folder / "heldout.txt"
    train_file.write_text("".join(line for i, line in enumerate(lines) if i % HELDOUT_EVERY), encoding="utf-8")
    heldout_file.write_text("".join(lines[::HELDOUT_EVERY]), encoding="utf-8")
    return train_file, heldout_file


def build_model(settings: TinySettings, vocab_size: int) -> Bert:
    torch.manual_seed(settings.seed)  # the initial weights
    return Bert(settings.bert_config(vocab_size))


def train_tiny(
    settings: TinySettings,
    folder: str | Path,
    on_update: Callable[[RunLog], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[RunLog, Bert, BertTokenizer]:
    """Train one tiny BERT from scratch in `folder` (text, checkpoint) with trainer.train; return its log and model.

    on_update(log) after every step (the log grows in place); should_stop() is asked after every step.
    """
    folder, started = Path(folder), time.perf_counter()
    vocabulary = tokenizer()
    model = build_model(settings, vocabulary.vocab_size)
    train_file, heldout_file = write_text(folder)
    train_config, data = settings.train_config(), settings.data_config()
    layer, head = settings.layers - 1, 0
    watch = vocabulary.encode(WATCH_SENTENCE)
    log = RunLog(asdict(settings), sum(p.numel() for p in model.parameters()), watch.tokens, (layer, head))
    heldout = list(itertools.islice(batches(heldout_file, vocabulary, data, settings.seed, 0), settings.eval_batches))
    log.evals.append(snapshot(model, vocabulary, 0, evaluate(model, vocabulary, heldout, train_config), log))

    def on_step(step: int, losses: dict[str, float], evaluation: dict | None) -> bool:
        log.train_loss.append(round(losses["loss"], 4))
        if evaluation is not None:
            log.evals.append(snapshot(model, vocabulary, step, evaluation, log))
        return step_ended(log, step, should_stop, on_update)

    train(model, vocabulary, train_file, heldout_file, folder / "run", train_config, data, resume=False, on_step=on_step)
    model.eval()
    log.right_context = right_context_cloze(model, vocabulary)
    log.seconds = round(time.perf_counter() - started, 1)
    if on_update:
        on_update(log)
    return log, model, vocabulary


@torch.no_grad()
def snapshot(model: Bert, vocabulary: BertTokenizer, step: int, evaluation: dict, log: RunLog) -> dict:
    """One evaluation's record: held-out loss and accuracy, the watched sentence's guesses and attention."""
    was_training = model.training
    model.eval()
    watch = vocabulary.encode(WATCH_SENTENCE)
    (guess,) = predict_masks(model, vocabulary, watch, top_k=TOP_K)
    layer, head = log.attention_at
    name = hook_name("pattern", layer)
    _, cache = model.run_with_cache(*watch.tensors(), names=[name])
    cloze = everyday_cloze_accuracy(model, vocabulary, RIGHT_CONTEXT_CLOZE, k=TOP_K)
    answers = answer_scores(model, vocabulary)
    model.train(was_training)
    return {
        "step": step,
        "heldout_loss": round(math.log(evaluation["perplexity"]), 4),
        "top1": round(evaluation["top1"], 4),
        "top5": round(evaluation["top5"], 4),
        "guesses": [[c.token, round(c.probability, 4)] for c in guess.candidates],
        "right_context_top1": round(cloze["top1"], 4),
        "right_context_top5": round(cloze[f"top{TOP_K}"], 4),
        "right_context_loss": round(sum(a["loss"] for a in answers) / len(answers), 4),
        "attention": [[round(x, 3) for x in row] for row in cache[name][0, head].tolist()],  # [query, key]
    }


def right_context_cloze(model: Bert, vocabulary: BertTokenizer) -> dict:
    """The right-context set at the end: top-1 / top-5 accuracy, the mean −log p of the answer (its loss: lower is
    better, and it moves before the answer reaches the top 5), and every sentence's guesses and answer rank."""
    result = everyday_cloze_accuracy(model, vocabulary, RIGHT_CONTEXT_CLOZE, k=TOP_K)
    answers = answer_scores(model, vocabulary)
    rows = [{"sentence": r["sentence"], "answers": r["answers"], "guesses": r["predictions"], **a}
            for r, a in zip(result["per_sentence"], answers)]
    return {"top1": result["top1"], "top5": result[f"top{TOP_K}"], "loss": round(sum(a["loss"] for a in answers) / len(answers), 4),
            "sentences": result["sentences"], "per_sentence": rows}


@torch.no_grad()
def answer_scores(model: Bert, vocabulary: BertTokenizer) -> list[dict]:
    """Per right-context sentence: the best acceptable answer's rank in the whole vocabulary (1 = first guess)
    and its loss, −log p(answer) at the [MASK]."""
    scores = []
    for item in read_cloze(RIGHT_CONTEXT_CLOZE):
        encoding = vocabulary.encode(item.sentence)
        ids, types = encoding.tensors()
        at_mask = ids == vocabulary.mask_id
        log_p = model(ids, types, logit_mask=at_mask).float().log_softmax(-1)[0]  # [vocab]
        known = [i for i in (vocabulary.token_to_id(a) for a in item.answers) if i is not None]
        best = max(known, key=lambda i: float(log_p[i]))
        scores.append({"answer_rank": int((log_p > log_p[best]).sum()) + 1, "loss": round(-float(log_p[best]), 4)})
    return scores
