"""Probing every layer on a treebank: word tags, arc labels, structural probes, MDL, with controls and baselines.

    from bert.analysis.probing.treebank import builtin_treebank, read_treebank
    from bert.analysis.probing.treebank_probes import ProbeSettings, run_treebank_probes
    report = run_treebank_probes(model, tokenizer, builtin_treebank("dev"), builtin_treebank("test"),
                                 tasks=["upos", "deprel", "arcs", "distance", "depth"], settings=ProbeSettings(seed=0),
                                 model_name="minilm", progress=lambda fraction, message: ...)
    report.tasks["upos"].layers       # ({"layer": 0, "accuracy": ..., "control_accuracy": ..., "selectivity": ...}, ...)
    report.tasks["upos"].best_layer, report.tasks["upos"].expected_layer
    report.baselines                  # {"linear_uuas": ..., "layer0_uuas": ..., "majority_upos": ...}
    report.to_json()                  # the JSON of `python -m bert probe --json`
    report.csv_rows()                 # one row per (task, layer)
    report.predicted_edges(sentence, layer), report.predicted_trees(sentence), report.gold_edges(sentence)   # the distance probe's tree, test sentence i
    report.test_features.sentences[sentence].words                          # ... and its words, to draw them
    TASK_DESCRIPTIONS["distance"]     # one line per task, for a page; Treebank.tasks: the tasks a file supports

    # the same in two steps, to cache the model's part (per model, data, pieces) and rerun only the probes:
    data = extract_train_test(model, tokenizer, train_treebank, test_treebank, tasks, settings, progress)
    report = probe_features(data, tasks, settings, "minilm", model_device(model), progress)

With one treebank, a seeded 80/20 split by sentence; with two, train on the first and test on the second.

Tasks (Treebank.tasks says which a file supports):
- word tags, one per label column (upos, xpos, deprel, or an uploaded file's columns): a logistic-regression
  probe per layer (probes.py) on each word's vector, and a control task (Hewitt & Liang 2019: a random label per
  word form, drawn from the task's label distribution); selectivity = accuracy - control accuracy.
- arcs: Tenney et al.'s (2019) edge probing on dependencies: the deprel of a (head, dependent) arc from the two
  words' vectors side by side [h_head; h_dependent]; control: a random label per dependent word form.
- distance, depth: Hewitt & Manning's (2019) structural probes (structural_probe.py), scored with UUAS and distance
  Spearman, root accuracy and norm Spearman (tree_metrics.py); baselines: the linear chain and layer 0.
- MDL (settings.mdl): Voita & Titov's (2020) online code length and compression for every word-tag task and its
  control (mdl.py).

Summary per task: the best layer (by accuracy, UUAS or root accuracy), Tenney et al.'s expected layer
E[l] = sum_l l Δ_l / sum_l Δ_l with Δ_l the gain of layer l over the layers below it (the running best of
independent per-layer probes standing in for Tenney's cumulative scalar mix), and the selectivity at the best layer.

Training examples of a word-tag or arc task are capped at settings.max_train_words (a seeded sample) to bound
the time; every result says so in `notes` when it happens. Test words are never subsampled.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from . import tree_metrics
from .structural_probe import StructuralProbes, fit_structural_probes, one_cpu_thread
from .treebank import TREE_TASKS, Treebank, supported_tasks
from .treebank_tasks import (  # noqa: F401  (TASK_DESCRIPTIONS, TaskResult, expected_layer: part of this module's API)
    TASK_DESCRIPTIONS, CannotProbe, ProbeSettings, TaskResult, arc_task, expected_layer, score_structural,
    sentence_tree, structural_baselines, word_tag_task,
)
from .word_features import PIECES, WordFeatures, extract_word_features

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]  # (fraction done, what is running), e.g. a progress bar


@dataclass(frozen=True)
class TreebankProbeReport:
    model: str
    data: str  # the test data's name (and the training data's, when separate)
    settings: ProbeSettings
    layer_names: tuple[str, ...]
    tasks: dict[str, TaskResult]
    baselines: dict[str, float]
    skipped_tasks: dict[str, str] = field(default_factory=dict)  # task -> why it could not run
    notes: tuple[str, ...] = ()  # sentences left out, subsampling
    num_train_sentences: int = 0
    num_test_sentences: int = 0
    timings: dict[str, float] = field(default_factory=dict)  # seconds: features, tags, arcs, structural, mdl
    structural_probes: StructuralProbes | None = None  # the trained distance/depth probes (for drawing trees)
    test_features: WordFeatures | None = None  # the test sentences' word vectors

    def to_dict(self) -> dict:
        """The JSON shape of `python -m bert probe --json`: {"model", "data", "tasks": {name: {"layers": [...],
        "best_layer", ...}}, "baselines": {...}}, plus settings, notes and timings."""
        return {
            "model": self.model,
            "data": self.data,
            "tasks": {name: {"layers": list(result.layers), **result.summary()} for name, result in self.tasks.items()},
            "baselines": dict(self.baselines),
            "layer_names": list(self.layer_names),
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
        """One row per (task, layer): task, layer, layer_name and every measure (empty where it does not apply)."""
        rows = []
        for name, result in self.tasks.items():
            for layer in result.layers:
                rows.append({"task": name, "layer_name": self.layer_names[layer["layer"]], **layer})
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


def run_treebank_probes(
    model: Bert, tokenizer: BertTokenizer, train: Treebank, test: Treebank | None = None,
    tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, model_name: str = "",
    progress: Progress | None = None,
) -> TreebankProbeReport:
    """Every task at every layer (see the module docstring). tasks: None = all that `train` supports.
    Deterministic for settings.seed (on the CPU). The same as `extract_train_test` then `probe_features`."""
    settings = settings or ProbeSettings()
    data = extract_train_test(model, tokenizer, train, test, tasks, settings, progress)
    return probe_features(data, tasks, settings, model_name, model_device(model), progress)


@dataclass(frozen=True)
class TreebankFeatures:
    """Word features of the training and test sentences, ready for `probe_features` (a page can cache them per
    model, data and pieces, and run other tasks or seeds on it)."""

    train: WordFeatures
    test: WordFeatures
    name: str  # the data's name, e.g. "UD English EWT (test) (trained on UD English EWT (dev))"
    notes: tuple[str, ...] = ()  # sentences left out (bad, or too long for the model)
    seconds: float = 0.0  # time the feature extraction took


def extract_train_test(
    model: Bert, tokenizer: BertTokenizer, train: Treebank, test: Treebank | None = None,
    tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, progress: Progress | None = None,
) -> TreebankFeatures:
    """The word features of the training and test sentences (one treebank: split by settings.seed and
    settings.test_fraction), after checking both support the tasks. Progress runs from 0 to 0.5. Under torchrun
    every rank runs the model over its share and ends with all the features."""
    settings = settings or ProbeSettings()
    if settings.pieces not in PIECES:
        raise InvalidInputError(f"pieces must be one of {', '.join(PIECES)}, not {settings.pieces!r}")
    data_name = train.name if test is None else f"{test.name} (trained on {train.name})"
    if test is None:
        train, test = train.split(settings.test_fraction, settings.seed)
    _check_tasks(list(tasks) if tasks is not None else train.tasks, train, test)
    notes = [t.skipped_summary() for t in (train, test) if t.skipped]
    started = time.perf_counter()
    dtype = torch.float16 if settings.float16 else torch.float32
    parts = []
    for number, (part, treebank) in enumerate((("training", train), ("test", test))):
        if progress:
            progress(0.25 * number, f"running the model over the {len(treebank)} {part} sentences")
        batches = (lambda done, total, start=0.25 * number: progress(start + 0.25 * done / total, f"running the model over the {part} sentences")) if progress else None
        features = extract_word_features(model, tokenizer, treebank.sentences, settings.pieces, settings.batch_size, dtype, batches)
        if features.skipped:
            notes.append(f"{len(features.skipped)} {part} sentence(s) longer than the model's {model.config.max_position_embeddings} "
                         f"positions were skipped (first at line {features.skipped[0].line})")
        if not features.sentences:
            raise InvalidInputError(f"no {part} sentence fits the model's {model.config.max_position_embeddings} positions")
        parts.append(features)
    return TreebankFeatures(parts[0], parts[1], data_name, tuple(notes), time.perf_counter() - started)


def probe_features(
    data: TreebankFeatures, tasks: Sequence[str] | None = None, settings: ProbeSettings | None = None, model_name: str = "",
    device: torch.device | str | None = None, progress: Progress | None = None,
) -> TreebankProbeReport:
    """Train and score the probes on word features already extracted (`extract_train_test`). tasks: None = all the
    data supports. device: where the structural probes train (the model's). Progress runs from 0.5 to 1.
    settings.pieces, batch_size and float16 are the extraction's business and unused here."""
    settings = settings or ProbeSettings()
    train_features, test_features = data.train, data.test
    supported = [t for t in _feature_tasks(train_features) if t in _feature_tasks(test_features)]
    tasks = list(tasks) if tasks is not None else supported
    unknown = [t for t in tasks if t not in supported]
    if unknown or not tasks:
        raise InvalidInputError(f"these sentences do not support the task(s) {unknown or tasks}; they support {', '.join(supported) or 'none'}")
    notes: list[str] = list(data.notes)
    timings: dict[str, float] = {"features": data.seconds}
    report = lambda fraction, message: progress(fraction, message) if progress else None  # noqa: E731

    results: dict[str, TaskResult] = {}
    skipped_tasks: dict[str, str] = {}
    word_tasks = [t for t in tasks if t not in TREE_TASKS]
    for number, task in enumerate(word_tasks):
        report(0.5 + 0.2 * number / max(1, len(word_tasks)), f"training the {task} probes" + (" and their MDL codes" if settings.mdl else ""))
        started, mdl_before = time.perf_counter(), timings.get("mdl", 0.0)
        try:
            results[task] = word_tag_task(task, train_features, test_features, settings, timings)
        except CannotProbe as reason:
            skipped_tasks[task] = str(reason)
        timings[task] = time.perf_counter() - started - (timings.get("mdl", 0.0) - mdl_before)
    if "arcs" in tasks:
        report(0.7, "training the arc-label probes")
        started = time.perf_counter()
        try:
            results["arcs"] = arc_task(train_features, test_features, settings, timings)
        except CannotProbe as reason:
            skipped_tasks["arcs"] = str(reason)
        timings["arcs"] = time.perf_counter() - started
    baselines: dict[str, float] = {}
    structural = None
    kinds = tuple(k for k in ("distance", "depth") if k in tasks)
    if kinds:
        report(0.8, "training the structural probes")
        started = time.perf_counter()
        structural = fit_structural_probes(train_features, kinds, settings.structural, settings.seed, device)
        with one_cpu_thread("cpu"):  # small per-sentence products and scipy's spanning trees
            results.update(score_structural(structural, test_features, kinds, len(train_features.sentences)))
        baselines.update(structural_baselines(test_features, results))
        timings["structural"] = time.perf_counter() - started
    for name, result in results.items():
        if result.majority_accuracy is not None:
            baselines[f"majority_{name}"] = result.majority_accuracy
        if result.kind in ("tag", "arcs"):
            baselines[f"layer0_{name}_accuracy"] = result.layers[0]["accuracy"]
    report(1.0, "done")
    notes += [f"{name}: {note}" for name, result in results.items() for note in result.notes]
    return TreebankProbeReport(
        model_name, data.name, settings, train_features.layer_names, results, baselines, skipped_tasks, tuple(notes),
        len(train_features.sentences), len(test_features.sentences), {k: round(v, 2) for k, v in timings.items()},
        structural, test_features,
    )



def _feature_tasks(features: WordFeatures) -> list[str]:
    """The tasks the sentences behind some features support: label columns every sentence has, then the tree tasks."""
    if not features.sentences:
        return []
    columns = [c for c in features.sentences[0].labels if all(c in s.labels for s in features.sentences)]
    return supported_tasks(columns, all(s.heads is not None for s in features.sentences))


def _check_tasks(tasks: Sequence[str], train: Treebank, test: Treebank) -> None:
    if not tasks:
        raise InvalidInputError("no task to run: give at least one of " + ", ".join(train.tasks))
    for task in tasks:
        for part in (train, test):
            if task not in part.tasks:
                raise InvalidInputError(f"{part.name} does not support the task {task!r}; it supports {', '.join(part.tasks) or 'none'}")


def _finite(value):
    """NaN and infinities as None: JSON has no NaN."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
