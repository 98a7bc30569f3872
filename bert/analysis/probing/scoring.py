"""Scoring the tasks: a classification task (word tags, text tasks, arcs) with its control (and MDL), the structural
probes' scores, and each task's summary. `pipeline` runs them; its docstring describes them.

Axes: layer (0 = embeddings), example (a word, a word piece or an arc), features (hidden, or 2 x hidden for an arc).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch

from ...errors import BertError
from . import tree_metrics
from .examples import Examples, task_examples
from .linear_probes import control_labels, fit_layers, standardise
from .mdl import online_codelength
from .structural_probe import StructuralProbes, StructuralProbeSettings
from .task_table import task
from .word_features import WordFeatures

PRIMARY_MEASURE = {"tag": "accuracy", "text": "accuracy", "arcs": "accuracy", "distance": "uuas", "depth": "root_accuracy"}
MDL_KINDS = ("tag", "text")  # the tasks whose MDL code is measured (settings.mdl)


@dataclass(frozen=True)
class ProbeSettings:
    pieces: str = "first"  # a word's vector: its "first", "mean" or "last" word piece's
    seed: int = 0  # the split, the samples, the control labels and the probes' initialisation
    test_fraction: float = 0.2  # with one treebank: the sentences held out for testing
    max_train_words: int | None = 5000  # per classification task, a seeded sample (None: all), stated in notes
    max_iter: int = 50  # L-BFGS iterations per logistic-regression probe
    mdl: bool = False  # also the online code length of each word-tag and text task and its control
    structural: StructuralProbeSettings = field(default_factory=StructuralProbeSettings)
    batch_size: int = 64  # sentences per forward pass
    float16: bool = False  # store word vectors in half precision (half the memory)


@dataclass(frozen=True)
class TaskResult:
    task: str
    kind: str  # "tag", "text", "arcs", "distance" or "depth" (task_table.Task.kind)
    layers: tuple[dict, ...]  # per hidden state {"hidden_states_index": 0, "accuracy": ..., ...}: 0 = embeddings, i = after layer i-1
    primary: str  # the measure the best layer is chosen by: "accuracy", "uuas" or "root_accuracy"
    best_hidden_states_index: int
    expected_hidden_states_index: float | None  # Tenney et al.'s expected layer from the per-layer gains (None: no gain)
    selectivity_at_best: float | None  # classification tasks
    num_train: int  # training examples used (words, word pieces or arcs; sentences for structural probes)
    num_test: int
    class_names: tuple[str, ...] = ()
    majority_accuracy: float | None = None  # always the most frequent training label
    notes: tuple[str, ...] = ()

    def measure(self, name: str) -> list[float | None]:
        """One measure across layers, e.g. result.measure("control_accuracy")."""
        return [layer.get(name) for layer in self.layers]

    def summary(self) -> dict:
        return {
            "best_hidden_states_index": self.best_hidden_states_index, "expected_hidden_states_index": self.expected_hidden_states_index, "primary_measure": self.primary,
            "selectivity_at_best": self.selectivity_at_best, "num_train": self.num_train, "num_test": self.num_test,
            "majority_accuracy": self.majority_accuracy, "notes": list(self.notes),
        }


class CannotProbe(BertError):
    """This task has no usable examples in these sentences (the reason is the message): the report lists it as
    skipped instead of failing the run."""


# ---- classification: word tags, text tasks, arcs -----------------------------------------------------------------


def classification_task(name: str, train: WordFeatures, test: WordFeatures, settings: ProbeSettings, timings: dict) -> TaskResult:
    """A linear probe and its control at every layer, for a tag, text or arc task."""
    train_examples, test_examples = task_examples(name, train, test)
    return _classify(name, task(name).kind, train_examples, test_examples, settings, timings)


def _classify(name: str, kind: str, train: Examples, test: Examples, settings: ProbeSettings, timings: dict) -> TaskResult:
    class_names = sorted(set(train.labels))
    if len(class_names) < 2:
        raise CannotProbe(f"fewer than two different labels in the training data ({class_names})")
    if not test.labels:
        raise CannotProbe("no labelled example in the test data")
    index = {name: i for i, name in enumerate(class_names)}
    unseen = len(class_names)  # a test label the training data lacks: never predicted, so always wrong
    train_y = torch.tensor([index[label] for label in train.labels])
    test_y = torch.tensor([index.get(label, unseen) for label in test.labels])
    types = {form: i for i, form in enumerate(dict.fromkeys(train.word_types + test.word_types))}
    word_types = torch.tensor([types[form] for form in train.word_types + test.word_types])
    control = control_labels(train_y, word_types, len(class_names), settings.seed)
    control_train, control_test = control[: len(train_y)], control[len(train_y) :]
    notes = []
    sample = torch.arange(len(train_y))
    if settings.max_train_words is not None and len(train_y) > settings.max_train_words:
        sample = torch.randperm(len(train_y), generator=torch.Generator().manual_seed(settings.seed + 2))[: settings.max_train_words]
        sample = sample.sort().values
        notes.append(f"trained on a seeded sample of {len(sample)} of {len(train_y)} training examples (max_train_words)")
    train_x, test_x = standardise(train.features[:, sample].float().numpy(), test.features.float().numpy())
    accuracy = fit_layers(train_x, train_y[sample], test_x, test_y, max_iter=settings.max_iter)
    control_accuracy = fit_layers(train_x, control_train[sample], test_x, control_test, max_iter=settings.max_iter)
    majority = torch.bincount(train_y[sample], minlength=len(class_names)).argmax()
    layers = tuple(
        {"hidden_states_index": layer, "accuracy": float(a), "control_accuracy": float(c), "selectivity": float(a - c)}
        for layer, (a, c) in enumerate(zip(accuracy.tolist(), control_accuracy.tolist()))
    )
    unseen_count = int((test_y == unseen).sum())
    if unseen_count:
        notes.append(f"{unseen_count} test example(s) carry labels the training data lacks (counted wrong)")
    if settings.mdl and kind in MDL_KINDS:
        started = time.perf_counter()
        layers = _mdl_measures(layers, train_x, train_y[sample].numpy(), control_train[sample].numpy(), len(class_names), settings)
        timings["mdl"] = timings.get("mdl", 0.0) + time.perf_counter() - started
    result = summarise(name, kind, layers, len(sample), len(test_y), tuple(notes))
    return replace(result, class_names=tuple(class_names), majority_accuracy=float((test_y == majority).float().mean()))


def _mdl_measures(layers: tuple[dict, ...], train_x: np.ndarray, train_y: np.ndarray, control_y: np.ndarray,
                  num_classes: int, settings: ProbeSettings) -> tuple[dict, ...]:
    """Each layer's scores with the online code length and compression of the task and of its control."""
    measured = []
    for layer_x, scores in zip(train_x, layers):
        real = online_codelength(layer_x, train_y, num_classes, settings.seed, max_iter=settings.max_iter)
        control = online_codelength(layer_x, control_y, num_classes, settings.seed, max_iter=settings.max_iter)
        measured.append(scores | {"codelength": real.codelength, "compression": real.compression,
                                  "control_codelength": control.codelength, "control_compression": control.compression,
                                  "uniform_codelength": real.uniform_codelength})
    return tuple(measured)


# ---- structural probes ------------------------------------------------------------------------------------------


def sentence_tree(sentence) -> tuple[tuple[int, ...], np.ndarray]:
    return sentence.heads, tree_metrics.non_punctuation(sentence.labels.get("upos"), len(sentence))


def score_structural(probes: StructuralProbes, test: WordFeatures, kinds, num_train: int) -> dict[str, TaskResult]:
    layers = test.num_layers
    gold_distances, gold_depths, keeps, heads = [], [], [], []
    predicted_distances = [[] for _ in range(layers)]
    predicted_depths = [[] for _ in range(layers)]
    with torch.no_grad():
        for index, sentence in enumerate(test.sentences):
            sentence_heads, keep = sentence_tree(sentence)
            heads.append(sentence_heads)
            keeps.append(keep)
            gold_distances.append(tree_metrics.tree_distances(sentence_heads))
            gold_depths.append(tree_metrics.tree_depths(sentence_heads))
            vectors = test.sentence(index)
            if "distance" in kinds:
                for layer, matrix in enumerate(probes.distances(vectors).numpy()):
                    predicted_distances[layer].append(matrix)
            if "depth" in kinds:
                for layer, depths in enumerate(probes.depths(vectors).numpy()):
                    predicted_depths[layer].append(depths)
    results = {}
    if "distance" in kinds:
        gold_trees = tree_metrics.spanning_tree_edges_of(gold_distances, keeps)
        scores = [{"hidden_states_index": layer, "uuas": tree_metrics.uuas(predicted_distances[layer], gold_distances, keeps, gold_trees),
                   "spearman": tree_metrics.distance_spearman(predicted_distances[layer], gold_distances)} for layer in range(layers)]
        results["distance"] = summarise("distance", "distance", tuple(scores), num_train, len(test.sentences), ())
    if "depth" in kinds:
        scores = [{"hidden_states_index": layer, "root_accuracy": tree_metrics.root_accuracy(predicted_depths[layer], heads, keeps),
                   "spearman": tree_metrics.depth_spearman(predicted_depths[layer], gold_depths)} for layer in range(layers)]
        results["depth"] = summarise("depth", "depth", tuple(scores), num_train, len(test.sentences), ())
    return results


def structural_baselines(test: WordFeatures, results: dict[str, TaskResult]) -> dict[str, float]:
    baselines = {}
    if "distance" in results:
        gold = [tree_metrics.tree_distances(s.heads) for s in test.sentences]
        keeps = [sentence_tree(s)[1] for s in test.sentences]
        baselines["linear_uuas"] = tree_metrics.linear_uuas(gold, keeps)
        baselines["embeddings_uuas"] = results["distance"].layers[0]["uuas"]
        baselines["embeddings_distance_spearman"] = results["distance"].layers[0]["spearman"]
    if "depth" in results:
        baselines["embeddings_root_accuracy"] = results["depth"].layers[0]["root_accuracy"]
    return baselines


# ---- summary ----------------------------------------------------------------------------------------------------


def expected_hidden_states_index(scores: Sequence[float]) -> float | None:
    """Tenney et al.'s expected layer as a hidden_states index, sum_l l Δ_l / sum_l Δ_l (l = 1..L, hidden_states[l]
    = after layer l-1), with Δ_l the gain of the best score up to hidden_states[l] over the best up to [l - 1]. Their probes mix layers 0..l, so their scores never fall; the running
    best is what such a probe can reach from independent per-layer probes (it can ignore a worse later layer).
    None when nothing beats the embeddings."""
    best_so_far = np.maximum.accumulate(np.asarray(scores, dtype=float))
    gains = np.diff(best_so_far)
    if not np.isfinite(gains).all() or gains.sum() <= 0:
        return None
    return float((np.arange(1, len(scores)) * gains).sum() / gains.sum())


def summarise(name: str, kind: str, layers: tuple[dict, ...], num_train: int, num_test: int, notes: tuple[str, ...]) -> TaskResult:
    primary = PRIMARY_MEASURE[kind]
    scores = [layer[primary] for layer in layers]
    best = int(np.nanargmax(scores))
    selectivity = layers[best].get("selectivity")
    return TaskResult(name, kind, layers, primary, best, expected_hidden_states_index(scores), selectivity, num_train, num_test, notes=notes)
