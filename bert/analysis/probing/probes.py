"""Layer-wise linear probes: how well can a logistic regression read a property off each layer?

For the residual stream after the embeddings and after every layer we fit one multinomial logistic regression
per task on the tokens of 80% of the sentences and report its accuracy on the other 20% (split by sentence,
seeded). Beside it, the same probe on a *control task* (Hewitt & Liang 2019, "Designing and Interpreting Probes
with Control Tasks"): every word type gets a random label, drawn from the task's label distribution and fixed
for that type. A probe can pass the control only by memorising word types, so

    selectivity = task accuracy - control accuracy

tells how much of the accuracy the representation itself gives.

Axes: layer (0 = embeddings, i = after layer i), example (one probed token), hidden, class.
"""
from __future__ import annotations

import logging
import math
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from ...data import PARTS_OF_SPEECH, LabelledSentence
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..attention.attention_stats import is_punctuation
from ..corpus.batching import gather_residuals, layer_names

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]  # (fraction done, what is running) -> None, e.g. a progress bar


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    inputs: str  # "single" sentences, "pair"s of consecutive sentences as A and B, or "masked" sentences


TASKS = {
    task.name: task
    for task in [
        Task("position", "the token's index in the input (0 = [CLS]), up to 31", "single"),
        Task("segment", "sentence A or B, in inputs made of two consecutive sentences", "pair"),
        Task("continuation", "is the token a ## piece that continues a word?", "single"),
        Task("punctuation", "is the token punctuation?", "single"),
        Task("frequency", "the token's frequency band in this sentence set (top, middle, bottom third of uses)", "single"),
        Task("masked_identity", "which of the 10 most frequent words was replaced by [MASK]", "masked"),
        Task("pos", "part of speech of the WordNet headword (noun, verb, adjective, adverb); built-in set only", "single"),
    ]
}
MAX_POSITION = 31  # the position task uses tokens 0..31
MASKED_VOCABULARY = 10  # how many frequent words the masked_identity task tells apart


@dataclass(frozen=True)
class ProbeData:
    """One task's examples: a token's residual stream at every layer and its labels."""

    features: torch.Tensor  # [layer, example, hidden]
    labels: torch.Tensor  # [example] class index
    control_labels: torch.Tensor  # [example] class index of the control task
    groups: torch.Tensor  # [example] which sentence (or pair) the token is from: the split is by group
    class_names: list[str]


@dataclass(frozen=True)
class ProbeResult:
    task: str
    layer_names: list[str]  # "embeddings", "layer 1", ...
    accuracy: list[float]  # held-out accuracy by layer
    control_accuracy: list[float]  # the same probe on the control task
    majority_accuracy: float  # always guessing the most frequent training label
    class_names: list[str]
    num_train: int  # tokens
    num_test: int

    @property
    def selectivity(self) -> list[float]:
        return [a - c for a, c in zip(self.accuracy, self.control_accuracy)]


@dataclass(frozen=True)
class ProbeReport:
    results: dict[str, ProbeResult]
    skipped: dict[str, str] = field(default_factory=dict)  # task -> why it could not run on these sentences
    num_sentences: int = 0


def run_probes(
    model: Bert,
    tokenizer: BertTokenizer,
    sentences: Sequence[LabelledSentence],
    tasks: Sequence[str] = tuple(TASKS),
    seed: int = 0,
    test_fraction: float = 0.2,
    max_tokens: int = 64,
    max_train: int = 4000,
    max_iter: int = 50,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> ProbeReport:
    """Train and score every task's probes (and control probes) at every layer. Deterministic for a seed.

    One forward pass per kind of input (single sentences, pairs, masked sentences) serves all its tasks.
    max_tokens: inputs are cut to this many tokens; max_train: at most this many training tokens per task
    (a seeded sample), which bounds the time a probe takes; max_iter: L-BFGS iterations per probe (scikit-learn).
    """
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        raise InvalidInputError(f"unknown probe task(s) {unknown}; choose from {sorted(TASKS)}")
    if len(sentences) < 10:
        raise InvalidInputError(f"probes need at least 10 sentences to hold some out; got {len(sentences)}")
    if not 0 < test_fraction < 1:
        raise InvalidInputError("test_fraction must lie between 0 and 1")
    report = ProbeReport({}, {}, len(sentences))
    names = layer_names(model)
    done = 0
    for inputs in ("single", "pair", "masked"):
        wanted = [name for name in tasks if TASKS[name].inputs == inputs]
        if not wanted:
            continue
        if progress:
            progress(done / len(tasks), f"running the model over {inputs} inputs")
        datasets = collect(model, tokenizer, sentences, wanted, seed, max_tokens, batch_size)
        for name in wanted:
            if progress:
                progress(done / len(tasks), f"training the {name} probes")
            data = datasets[name]
            try:
                if isinstance(data, str):
                    raise _CannotProbe(data)
                report.results[name] = fit_and_score(data, name, names, seed, test_fraction, max_train, max_iter)
            except _CannotProbe as reason:
                report.skipped[name] = str(reason)
            done += 1
    if progress:
        progress(1.0, "done")
    return report


class _CannotProbe(Exception):
    """This task has no usable examples in these sentences (the reason is the message)."""


# ---- examples ---------------------------------------------------------------------------------------------------


def collect(
    model: Bert, tokenizer: BertTokenizer, sentences: Sequence[LabelledSentence], tasks: Sequence[str], seed: int = 0,
    max_tokens: int = 64, batch_size: int = 32,
) -> dict[str, ProbeData | str]:
    """Encode the sentences as the tasks need (all tasks must share one kind of input), label their tokens and
    read the residual streams in one pass. Returns {task: its data, or why it cannot run on these sentences}."""
    kinds = {TASKS[name].inputs for name in tasks}
    if len(kinds) != 1:
        raise InvalidInputError(f"collect() takes tasks with one kind of input; got {sorted(kinds)}")
    inputs = kinds.pop()
    if inputs == "pair":
        encodings = [
            tokenizer.encode(a.text, b.text, max_length=max_tokens, truncate=True)
            for a, b in zip(sentences[0::2], sentences[1::2])
        ]
    else:
        encodings = [tokenizer.encode(s.text, max_length=max_tokens, truncate=True) for s in sentences]
    labelled = {}
    for name in tasks:
        try:
            if inputs == "masked":
                encodings, picks, labels, class_names = _masked_examples(encodings, tokenizer, seed)
            else:
                picks, labels, class_names = _LABELLERS[name](encodings, sentences)
            if len(set(labels)) < 2:
                raise _CannotProbe("fewer than two different labels in these sentences")
            labelled[name] = (picks, labels, class_names)
        except _CannotProbe as reason:
            labelled[name] = str(reason)
    every_pick = sorted({pick for value in labelled.values() if not isinstance(value, str) for pick in value[0]})
    row_of = {pick: row for row, pick in enumerate(every_pick)}
    features = gather_residuals(model, encodings, every_pick, tokenizer.pad_id, batch_size) if every_pick else None
    datasets: dict[str, ProbeData | str] = {}
    for name, value in labelled.items():
        if isinstance(value, str):
            datasets[name] = value
            continue
        picks, labels, class_names = value
        labels = torch.tensor(labels)
        if inputs == "masked":  # the probed token is always [MASK]: a per-type control would be constant
            control = labels[torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed + 1))]
        else:
            word_types = torch.tensor([encodings[index].input_ids[position] for index, position in picks])
            control = control_labels(labels, word_types, len(class_names), seed)
        rows = torch.tensor([row_of[pick] for pick in picks])
        groups = torch.tensor([index for index, _ in picks])
        datasets[name] = ProbeData(features[:, rows], labels, control, groups, class_names)
    return datasets


def control_labels(labels: torch.Tensor, word_types: torch.Tensor, num_classes: int, seed: int) -> torch.Tensor:
    """Hewitt & Liang's control task: one random label per word type, drawn from the labels' distribution."""
    generator = torch.Generator().manual_seed(seed + 1)
    types, type_index = word_types.unique(return_inverse=True)
    distribution = torch.bincount(labels, minlength=num_classes).float()
    per_type = torch.multinomial(distribution, len(types), replacement=True, generator=generator)
    return per_type[type_index]


def _word_tokens(encodings: Sequence[Encoding]):
    """(encoding index, position) of every non-special token."""
    for index, encoding in enumerate(encodings):
        for position, special in enumerate(encoding.special):
            if not special:
                yield index, position


def _binary(encodings, test: Callable[[str], bool], names: list[str]):
    picks = list(_word_tokens(encodings))
    labels = [int(test(encodings[i].tokens[p])) for i, p in picks]
    return picks, labels, names


def _position(encodings, sentences):
    picks = [(i, p) for i, e in enumerate(encodings) for p in range(min(len(e), MAX_POSITION + 1))]
    return picks, [p for _, p in picks], [str(p) for p in range(MAX_POSITION + 1)]


def _segment(encodings, sentences):
    picks = list(_word_tokens(encodings))
    return picks, [encodings[i].token_type_ids[p] for i, p in picks], ["A", "B"]


def _frequency(encodings, sentences):
    """Bands by share of uses: 'top' types make the first third of all token uses, 'bottom' the last third."""
    picks = list(_word_tokens(encodings))
    ids = [encodings[i].input_ids[p] for i, p in picks]
    counts = Counter(ids)
    band, running = {}, 0
    for token_id, count in counts.most_common():
        band[token_id] = min(2, int(3 * running / len(ids)))
        running += count
    return picks, [band[t] for t in ids], ["top third", "middle third", "bottom third"]


def _pos(encodings, sentences):
    """The first token of each sentence's WordNet headword, labelled with the headword's part of speech."""
    letters = list(PARTS_OF_SPEECH)
    picks, labels = [], []
    for index, (encoding, sentence) in enumerate(zip(encodings, sentences)):
        if sentence.pos is None:
            continue
        for position, (start, end) in enumerate(encoding.offsets):
            if not encoding.special[position] and start == sentence.start:
                picks.append((index, position))
                labels.append(letters.index(sentence.pos))
                break
    if not picks:
        raise _CannotProbe("these sentences carry no part-of-speech labels (only the built-in set does)")
    return picks, labels, list(PARTS_OF_SPEECH.values())


def _masked_examples(encodings: list[Encoding], tokenizer: BertTokenizer, seed: int):
    """Mask one occurrence (chosen at random, seeded) of a frequent whole word in each sentence that has one."""
    counts = Counter(
        encodings[i].input_ids[p]
        for i, p in _word_tokens(encodings)
        if encodings[i].tokens[p].isalpha()
    )
    vocabulary = [token_id for token_id, _ in counts.most_common(MASKED_VOCABULARY)]
    generator = torch.Generator().manual_seed(seed)
    masked, picks, labels = [], [], []
    for encoding in encodings:
        hits = [p for p, token_id in enumerate(encoding.input_ids) if token_id in vocabulary and not encoding.special[p]]
        if not hits:
            continue
        position = hits[int(torch.randint(len(hits), (1,), generator=generator))]
        picks.append((len(masked), position))
        labels.append(vocabulary.index(encoding.input_ids[position]))
        masked.append(encoding.with_masks([position], tokenizer.mask_id))
    return masked, picks, labels, [tokenizer.id_to_token(t) for t in vocabulary]


_LABELLERS = {
    "position": _position,
    "segment": _segment,
    "continuation": lambda e, s: _binary(e, lambda t: t.startswith("##"), ["word start", "continuation"]),
    "punctuation": lambda e, s: _binary(e, is_punctuation, ["other", "punctuation"]),
    "frequency": _frequency,
    "pos": _pos,
}


# ---- training ---------------------------------------------------------------------------------------------------


def split_groups(groups: torch.Tensor, test_fraction: float, seed: int) -> torch.Tensor:
    """bool [example]: True for held-out examples; whole groups (sentences) go to one side, chosen by the seed."""
    unique = groups.unique()
    order = unique[torch.randperm(len(unique), generator=torch.Generator().manual_seed(seed))]
    held_out = order[: max(1, math.ceil(test_fraction * len(unique)))]
    return torch.isin(groups, held_out)


def fit_and_score(
    data: ProbeData, task: str, names: list[str], seed: int = 0, test_fraction: float = 0.2, max_train: int = 4000,
    max_iter: int = 50,
) -> ProbeResult:
    test = split_groups(data.groups, test_fraction, seed)
    train = (~test).nonzero().flatten()
    train = train[torch.randperm(len(train), generator=torch.Generator().manual_seed(seed + 2))[:max_train]]
    if len(train) == 0 or test.sum() == 0:
        raise _CannotProbe("too few sentences to hold some out")
    num_classes = len(data.class_names)
    train_x, test_x = standardise(data.features[:, train].numpy(), data.features[:, test].numpy())  # once for both
    accuracy = fit_layers(train_x, data.labels[train], test_x, data.labels[test], max_iter=max_iter)
    control = fit_layers(train_x, data.control_labels[train], test_x, data.control_labels[test], max_iter=max_iter)
    majority = torch.bincount(data.labels[train], minlength=num_classes).argmax()
    return ProbeResult(
        task=task,
        layer_names=names,
        accuracy=accuracy.tolist(),
        control_accuracy=control.tolist(),
        majority_accuracy=float((data.labels[test] == majority).float().mean()),
        class_names=data.class_names,
        num_train=len(train),
        num_test=int(test.sum()),
    )


def train_probes(
    train_x: torch.Tensor, train_y: torch.Tensor, test_x: torch.Tensor, test_y: torch.Tensor,
    weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3,
) -> torch.Tensor:
    """One multinomial logistic regression per layer (scikit-learn's, L-BFGS) on standardised features, minimising
    mean cross-entropy + weight_decay·|W|² (the bias is not penalised). train_x, test_x: [layer, example, hidden].
    Returns the held-out accuracy by layer: [layer].

    Each layer's fit starts from the previous layer's weights (neighbouring layers' probes are alike), which
    saves iterations. max_iter and tolerance (on the gradient) bound the time: on the 992 built-in sentences
    the defaults take a third of the time of max_iter 100 and tolerance 1e-4, and their accuracies differ from
    those by at most 0.05 (a control task on 183 test tokens; the real tasks at most 0.022). With two classes
    scikit-learn fits one weight vector (binary logistic regression); its penalty is twice that of the
    equivalent two-way softmax.
    """
    scaled_train, scaled_test = standardise(train_x.numpy(), test_x.numpy())
    return fit_layers(scaled_train, train_y, scaled_test, test_y, weight_decay, max_iter, tolerance)


def fit_layers(
    train_x: np.ndarray, train_y: torch.Tensor, test_x: np.ndarray, test_y: torch.Tensor,
    weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3,
) -> torch.Tensor:
    """train_probes on features already standardised ([layer, example, hidden] numpy arrays): the task's probes
    and its control probes share one standardisation."""
    if len(train_y.unique()) < 2:  # nothing to learn: the probe can only say the one label it saw
        return (test_y == train_y[0]).float().mean().expand(len(train_x)).clone()
    probe = logistic_probe(len(train_y), weight_decay, max_iter, tolerance)
    accuracy = []
    # One BLAS thread: L-BFGS's many small products gain nothing from more, and on two cores with PyTorch's own
    # OpenMP threads beside them they took 3.5x the time of one thread (measured: 38 against 11 s for the
    # built-in sentences). It changes thread counts only (process-wide while it lasts), never results.
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter bounds a probe's time: stopping there is expected
        for layer_train, layer_test in zip(train_x, test_x):
            probe.fit(layer_train, train_y.numpy())
            accuracy.append(probe.score(layer_test, test_y.numpy()))
    return torch.tensor(accuracy)


def logistic_probe(num_train: int, weight_decay: float = 1e-3, max_iter: int = 50, tolerance: float = 1e-3) -> LogisticRegression:
    """The probe: scikit-learn's multinomial logistic regression minimising mean cross-entropy +
    weight_decay·|W|² over `num_train` examples; each fit starts from the previous one's weights (warm start)."""
    return LogisticRegression(C=1 / (2 * weight_decay * num_train), max_iter=max_iter, tol=tolerance, warm_start=True)


def standardise(train_x: np.ndarray, test_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every feature of every layer ([layer, example, hidden]) to zero mean and unit variance over the training
    examples: one scikit-learn StandardScaler over all layers' features side by side ([example, layer x hidden]),
    the same as a scaler per layer, in one pass (a scaler per layer and probe cost 0.8 s of the probes' 15 s)."""
    layers, _, hidden = train_x.shape
    scaler = StandardScaler().fit(_side_by_side(train_x))

    def scaled(x: np.ndarray) -> np.ndarray:  # back to [layer, example, hidden]
        return scaler.transform(_side_by_side(x)).reshape(len(x[0]), layers, hidden).transpose(1, 0, 2).astype(x.dtype)

    return scaled(train_x), scaled(test_x)


def _side_by_side(x: np.ndarray) -> np.ndarray:
    """[layer, example, hidden] -> [example, layer x hidden]."""
    return x.transpose(1, 0, 2).reshape(x.shape[1], -1)
