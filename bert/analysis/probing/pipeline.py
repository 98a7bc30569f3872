"""Probing every layer, one pipeline for every source: data (labelled sentences), tasks, probes, report.

    from bert.analysis.probing.pipeline import ProbeSettings, run_probes
    from bert.analysis.probing.sentence_sets import sentence_set
    from bert.analysis.probing.treebank import builtin_treebank
    report = run_probes(model, tokenizer, builtin_treebank("dev"), builtin_treebank("test"),
                        tasks=["upos", "deprel", "arcs", "distance", "depth"], settings=ProbeSettings(seed=0),
                        model_name="minilm", progress=lambda fraction, message: ...)
    report = run_probes(model, tokenizer, sentence_set(builtin_sentences(300), "built-in"), tasks=["position", "pos"])
    report.tasks["upos"].layers       # ({"hidden_states_index": 0, "accuracy": ..., "control_accuracy": ..., "selectivity": ...}, ...)
    report.tasks["upos"].best_hidden_states_index, report.tasks["upos"].expected_hidden_states_index
    report.baselines                  # {"linear_uuas": ..., "embeddings_uuas": ..., "majority_upos": ...}
    report.skipped_tasks              # {task: why it could not run on these sentences}
    report.to_json()                  # the JSON of `python -m bert probe --json`
    report.csv_rows()                 # one row per (task, hidden state)
    report.predicted_edges(sentence, layer), report.predicted_trees(sentence), report.gold_edges(sentence)   # the distance probe's tree, test sentence i
    report.test_features.sentences[sentence].words                          # ... and its words, to draw them

    # the same in two steps, to cache the model's part (per model, data, pieces) and rerun only the probes:
    features = extract_features(model, tokenizer, train, test, tasks, settings, progress)
    report = probe_features(features, tasks, settings, "minilm", model_device(model), progress)

Data: a `Treebank` of labelled sentences (treebank.py reads CoNLL-U and labelled-column files; sentence_sets.py
the built-in WordNet sentences and plain text). With one, a seeded 80/20 split by sentence; with two, train on the
first and test on the second.

Tasks (task_table.py; Treebank.tasks says which the data offers):
- text tasks, on word pieces: position, segment (pairs of consecutive sentences), continuation, punctuation,
  frequency, masked_identity (one frequent word masked per sentence).
- word tags, one per label column (upos, xpos, deprel, the WordNet headwords' pos, an uploaded file's columns).
- arcs: Tenney et al.'s (2019) edge probing on dependencies: the deprel of a (head, dependent) arc from the two
  words' vectors side by side [h_head; h_dependent].
- distance, depth: Hewitt & Manning's (2019) structural probes (structural_probe.py), scored with UUAS and distance
  Spearman, root accuracy and norm Spearman (tree_metrics.py); baselines: the linear chain and the embeddings (hidden_states[0]).

Probes: a logistic regression per layer (linear_probes.py) for the text, tag and arc tasks, beside a control task
(Hewitt & Liang 2019: a random label per word type, drawn from the task's label distribution); selectivity =
accuracy - control accuracy. MDL (settings.mdl): Voita & Titov's (2020) online code length and compression for
every tag and text task and its control (mdl.py).

Report, per task: the best layer (by accuracy, UUAS or root accuracy), Tenney et al.'s expected layer
E[l] = sum_l l Δ_l / sum_l Δ_l with Δ_l the gain of layer l over the layers below it (the running best of
independent per-layer probes standing in for Tenney's cumulative scalar mix), and the selectivity at the best layer.
A task with no usable examples in the sentences is skipped with the reason (`skipped_tasks`).

Training examples of a classification task are capped at settings.max_train_words (a seeded sample) to bound the
time; every result says so in `notes` when it happens. Test examples are never subsampled.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

import numpy as np
import torch

from ...config import BertConfig
from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...stopping import checkpoint
from ...tokenizer import BertTokenizer
from ..corpus.batching import batches_cost
from . import tree_metrics
from .scoring import (  # noqa: F401  (TaskResult, expected_hidden_states_index: part of this module's API)
    CannotProbe, ProbeSettings, TaskResult, classification_task, expected_hidden_states_index, score_structural, sentence_tree,
    structural_baselines,
)
from .structural_probe import StructuralProbes, fit_structural_probes
from .task_table import TASKS, TEXT_TASKS, TREE_TASKS, can_run, needs, supported_tasks
from .text_inputs import maskable, masked_features, masked_vocabulary, pair_encodings, pair_features, vocabulary_of
from .treebank import Treebank
from .word_features import PIECES, WordFeatures, encode_sentences, extract_word_features

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]  # (fraction done, what is running), e.g. a progress bar
STRUCTURAL = ("distance", "depth")
MIN_SPLIT_SENTENCES = 10  # one set of sentences split into training and test sentences: fewer leave too few to test


@dataclass(frozen=True)
class ProbeReport:
    model: str
    data: str  # the test data's name (and the training data's, when separate)
    settings: ProbeSettings
    residual_names: tuple[str, ...]
    tasks: dict[str, TaskResult]
    baselines: dict[str, float]
    skipped_tasks: dict[str, str] = field(default_factory=dict)  # task -> why it could not run
    notes: tuple[str, ...] = ()  # sentences left out, subsampling
    num_train_sentences: int = 0
    num_test_sentences: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: features, each task, structural, mdl
    structural_probes: StructuralProbes | None = None  # the trained distance/depth probes (for drawing trees)
    test_features: WordFeatures | None = None  # the test sentences' word vectors

    def to_dict(self) -> dict:
        """The JSON shape of `python -m bert probe --json`: {"model", "data", "tasks": {name: {"layers": [...],
        "best_hidden_states_index", ...}}, "baselines": {...}}, plus settings, notes and timings."""
        return {
            "model": self.model,
            "data": self.data,
            "tasks": {name: {"layers": list(result.layers), **result.summary()} for name, result in self.tasks.items()},
            "baselines": dict(self.baselines),
            "residual_names": list(self.residual_names),
            "pieces": self.settings.pieces,
            "seed": self.settings.seed,
            "num_train_sentences": self.num_train_sentences,
            "num_test_sentences": self.num_test_sentences,
            "skipped_tasks": dict(self.skipped_tasks),
            "notes": list(self.notes),
            "timings_s": dict(self.timings),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(_finite(self.to_dict()), indent=indent)

    def csv_rows(self) -> list[dict]:
        """One row per (task, hidden state): task, residual_name, hidden_states_index and every measure (empty where it does
        not apply)."""
        rows = []
        for name, result in self.tasks.items():
            for layer in result.layers:
                rows.append({"task": name, "residual_name": self.residual_names[layer["hidden_states_index"]], **layer})
        return rows

    def gold_edges(self, sentence: int) -> set[tuple[int, int]]:
        """Undirected gold edges (0-based word pairs) of test sentence `sentence`, punctuation left out as in UUAS."""
        features = self._features()
        heads, keep = sentence_tree(features.sentences[sentence])
        return tree_metrics.spanning_tree_edges(tree_metrics.tree_distances(heads), keep)

    def predicted_edges(self, sentence: int, layer: int) -> set[tuple[int, int]]:
        """The distance probe's tree for test sentence `sentence` at `layer`: the minimum spanning tree of its
        predicted distances over the non-punctuation words (0-based word pairs)."""
        return self.predicted_trees(sentence)[layer]

    def predicted_trees(self, sentence: int) -> list[set[tuple[int, int]]]:
        """`predicted_edges` at every layer, from one pass of the probe and one spanning-forest computation."""
        features = self._features()
        if self.structural_probes is None or self.structural_probes.distance is None:
            raise InvalidInputError("this report has no distance probe: run the distance task")
        _, keep = sentence_tree(features.sentences[sentence])
        distances = self.structural_probes.distances(features.sentence(sentence)).numpy()  # [layer, word, word]
        return tree_metrics.spanning_tree_edges_of(distances, [keep] * len(distances))

    def _features(self) -> WordFeatures:
        if self.test_features is None:
            raise InvalidInputError("this report keeps no test features")
        return self.test_features


def run_probes(
    model: Bert, tokenizer: BertTokenizer, train: Treebank, test: Treebank | None = None,
    tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, model_name: str = "",
    progress: Progress | None = None,
) -> ProbeReport:
    """Every task at every layer (see the module docstring). tasks: None = all that `train` offers.
    Deterministic for settings.seed (on the CPU). The same as `extract_features` then `probe_features`."""
    settings = settings or ProbeSettings()
    features = extract_features(model, tokenizer, train, test, tasks, settings, progress)
    return probe_features(features, tasks, settings, model_name, model_device(model), progress)


@dataclass(frozen=True)
class ProbeFeatures:
    """Word (and word-piece) features of the training and test sentences, ready for `probe_features` (a page can
    cache them per model, data, pieces and inputs, and run other tasks or seeds on them)."""

    train: WordFeatures
    test: WordFeatures
    name: str  # the data's name, e.g. "UD English EWT (test) (trained on UD English EWT (dev))"
    notes: tuple[str, ...] = ()  # sentences left out (bad, or too long for the model)
    seconds: float = 0.0  # time the feature extraction took
    format: str = "conllu"  # the data's Treebank.format: which tasks it offers


def inputs_needed(tasks: Sequence[str]) -> tuple[str, ...]:
    """The word-piece inputs the text tasks among `tasks` read: "tokens" (the sentences' own), "pairs", "masked"."""
    kinds = {TASKS[t].inputs for t in tasks if t in TEXT_TASKS}
    return tuple(name for name, inputs in (("tokens", "single"), ("pairs", "pair"), ("masked", "masked")) if inputs in kinds)


def extract_features_cost(
    tokenizer: BertTokenizer, train: Treebank, test: Treebank | None, tasks: Sequence[str] | None, settings: ProbeSettings | None,
    max_positions: int, config: BertConfig | None = None,
) -> Cost:
    """The passes `extract_features` makes, before it starts (max_positions: the model's longest input): each kept
    sentence once, each pair of consecutive sentences for the segment task, each sentence with a frequent word
    again with it masked; padded to their batch's longest. The probes' training is not in it. With the model's
    `config`, also the memory the features keep (`Cost.kept_bytes`): one vector per word at every hidden state,
    and for the text tasks one per word piece of the inputs they read (at most); and the peak: those and the
    largest batch's pass with every hidden state it records (batches_cost)."""
    settings = settings or ProbeSettings()
    if test is None:
        if len(train) < MIN_SPLIT_SENTENCES:
            return Cost(0, 0)  # refused before any pass
        train, test = train.split(settings.test_fraction, settings.seed)
    inputs = inputs_needed(list(tasks) if tasks is not None else [t for t in train.tasks if t in test.tasks])
    lower = ("the number of sentences",)
    states = 0 if config is None else config.num_layers + 1  # a batch records every hidden state
    cost, parts, vectors = Cost(0, 0, lower), [], 0
    for treebank in (train, test):
        kept, encodings, _ = encode_sentences(tokenizer, treebank.sentences, max_positions)
        parts.append(encodings)
        cost += batches_cost([len(e) for e in encodings], settings.batch_size, lower, config, states)
        vectors += sum(len(treebank.sentences[i].words) for i in kept)
        vectors += sum(len(e) for e in encodings) if "tokens" in inputs else 0
        if "pairs" in inputs:
            pairs = pair_encodings(tokenizer, [treebank.sentences[i] for i in kept], max_positions)
            cost += batches_cost([len(e) for e in pairs], settings.batch_size, lower, config, states)
            vectors += sum(len(e) for e in pairs)
    if "masked" in inputs:
        wanted = set(vocabulary_of(parts))
        for encodings in parts:
            masked = [len(e) for e in encodings if maskable(e, wanted)]
            cost += batches_cost(masked, settings.batch_size, lower, config, states)
            vectors += len(masked)
    if config is None:
        return cost
    kept = vectors * (config.num_layers + 1) * config.hidden_size * (2 if settings.float16 else 4)
    return replace(cost, kept_bytes=kept, peak_bytes=kept + cost.peak_bytes)  # the vectors kept, then the largest batch


def extract_features(
    model: Bert, tokenizer: BertTokenizer, train: Treebank, test: Treebank | None = None,
    tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, progress: Progress | None = None,
) -> ProbeFeatures:
    """The word features of the training and test sentences (one treebank: split by settings.seed and
    settings.test_fraction), and the word pieces the text tasks need, after checking both sides support the tasks.
    Progress runs from 0 to 0.5. Under torchrun every rank runs the model over its share and ends with all the
    features."""
    settings = settings or ProbeSettings()
    if settings.pieces not in PIECES:
        raise InvalidInputError(f"pieces must be one of {', '.join(PIECES)}, not {settings.pieces!r}")
    data_name = train.name if test is None else f"{test.name} (trained on {train.name})"
    if test is None:
        if len(train) < MIN_SPLIT_SENTENCES:
            raise InvalidInputError(f"probes need at least {MIN_SPLIT_SENTENCES} sentences to hold some out; got {len(train)}")
        train, test = train.split(settings.test_fraction, settings.seed)
    tasks = list(tasks) if tasks is not None else [t for t in train.tasks if t in test.tasks]
    _check_tasks(tasks, train, test)
    inputs = inputs_needed(tasks)
    notes = [t.skipped_summary() for t in (train, test) if t.skipped]
    started = time.perf_counter()
    dtype = torch.float16 if settings.float16 else torch.float32
    parts = []
    for number, (part, treebank) in enumerate((("training", train), ("test", test))):
        if progress:
            progress(0.25 * number, f"running the model over the {len(treebank)} {part} sentences")
        batches = (lambda done, total, start=0.25 * number: progress(start + 0.25 * done / total, f"running the model over the {part} sentences")) if progress else None
        features = extract_word_features(model, tokenizer, treebank.sentences, settings.pieces, settings.batch_size, dtype,
                                         batches, tokens="tokens" in inputs)
        if features.skipped:
            notes.append(f"{len(features.skipped)} {part} sentence(s) longer than the model's {model.config.max_position_embeddings} "
                         f"positions were skipped (first at line {features.skipped[0].line})")
        if not features.sentences:
            raise InvalidInputError(f"no {part} sentence fits the model's {model.config.max_position_embeddings} positions")
        if "pairs" in inputs:
            features = replace(features, pairs=pair_features(model, tokenizer, features, settings.batch_size))
        parts.append(features)
    if "masked" in inputs:
        vocabulary = masked_vocabulary(parts)
        parts = [replace(part, masked=masked_features(model, tokenizer, part, vocabulary, settings.seed + side, settings.batch_size))
                 for side, part in enumerate(parts)]
    return ProbeFeatures(parts[0], parts[1], data_name, tuple(notes), time.perf_counter() - started, train.format)


def probe_features(
    data: ProbeFeatures, tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, model_name: str = "",
    device: torch.device | str | None = None, progress: Progress | None = None,
) -> ProbeReport:
    """Train and score the probes on features already extracted (`extract_features`). tasks: None = all the data
    offers. device: where the structural probes train (the model's). Progress runs from 0.5 to 1.
    settings.pieces, batch_size and float16 are the extraction's business and unused here."""
    settings = settings or ProbeSettings()
    train_features, test_features = data.train, data.test
    offered = [t for t in _offered(train_features, data.format) if t in _offered(test_features, data.format)]
    tasks = list(tasks) if tasks is not None else offered
    unknown = [t for t in tasks if not (_can_run(t, train_features) and _can_run(t, test_features))]
    if unknown or not tasks:
        raise InvalidInputError(f"these sentences do not support the task(s) {unknown or tasks}; they support {', '.join(offered) or 'none'}")
    notes: list[str] = list(data.notes)
    timings: dict[str, float] = {"features": data.seconds}

    def report(fraction: float, message: str) -> None:
        checkpoint()  # between tasks a watcher (bert/stopping.py) may stop the training
        if progress:
            progress(fraction, message)


    results: dict[str, TaskResult] = {}
    skipped_tasks: dict[str, str] = {}
    classified = [t for t in tasks if t not in TREE_TASKS] + (["arcs"] if "arcs" in tasks else [])
    for number, task in enumerate(classified):
        what = "arc-label" if task == "arcs" else task
        report(0.5 + 0.3 * number / max(1, len(classified)), f"training the {what} probes" + (" and their MDL codes" if settings.mdl and task != "arcs" else ""))
        started, mdl_before = time.perf_counter(), timings.get("mdl", 0.0)
        try:
            results[task] = classification_task(task, train_features, test_features, settings, timings)
        except CannotProbe as reason:
            skipped_tasks[task] = str(reason)
        timings[task] = time.perf_counter() - started - (timings.get("mdl", 0.0) - mdl_before)
    baselines: dict[str, float] = {}
    structural = None
    kinds = tuple(k for k in STRUCTURAL if k in tasks)
    if kinds:
        report(0.8, "training the structural probes")
        started = time.perf_counter()
        structural = fit_structural_probes(train_features, kinds, settings.structural, settings.seed, device)
        results.update(score_structural(structural, test_features, kinds, len(train_features.sentences)))
        baselines.update(structural_baselines(test_features, results))
        timings["structural"] = time.perf_counter() - started
    for name, result in results.items():
        if result.majority_accuracy is not None:
            baselines[f"majority_{name}"] = result.majority_accuracy
        if result.kind in ("tag", "text", "arcs"):
            baselines[f"embeddings_{name}_accuracy"] = result.layers[0]["accuracy"]
    report(1.0, "done")
    notes += [f"{name}: {note}" for name, result in results.items() for note in result.notes]
    return ProbeReport(
        model_name, data.name, settings, train_features.residual_names, results, baselines, skipped_tasks, tuple(notes),
        len(train_features.sentences), len(test_features.sentences), {k: round(v, 2) for k, v in timings.items()},
        structural, test_features,
    )


def _columns(features: WordFeatures) -> tuple[list[str], bool]:
    """The label columns every sentence behind some features has, and whether every one has a tree."""
    sentences = features.sentences
    columns = [c for c in sentences[0].labels if all(c in s.labels for s in sentences)] if sentences else []
    return columns, bool(sentences) and all(s.heads is not None for s in sentences)


def _offered(features: WordFeatures, format: str) -> list[str]:
    return supported_tasks(format, *_columns(features)) if features.sentences else []


def _can_run(task: str, features: WordFeatures) -> bool:
    """The sentences can run it and the features carry the word pieces it reads."""
    return can_run(task, *_columns(features)) and all(getattr(features, part) is not None for part in inputs_needed([task]))


def _check_tasks(tasks: Sequence[str], train: Treebank, test: Treebank) -> None:
    if not tasks:
        raise InvalidInputError("no task to run: give at least one of " + ", ".join(train.tasks))
    for task in tasks:
        for part in (train, test):
            if not can_run(task, part.label_columns, part.has_trees):
                problem = (f"unknown probe task {task!r}: {part.name} has no label column of that name" if task not in TASKS
                           else f"{part.name} does not support the task {task!r} (it needs {needs(task)})")
                raise InvalidInputError(f"{problem}; it supports {', '.join(part.tasks) or 'none'}")


def _finite(value):
    """NaN and infinities as None: JSON has no NaN."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
