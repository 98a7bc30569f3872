"""The records of the probes page's treebank runs, free of Streamlit: the data a run probes, an uploaded file read
as a treebank (or why not), and what the page keeps of a finished run. viz_app/cache.py caches them; the widgets
are in probe_data.py, the display in probe_results.py.

A run is kept in its JSON form (plain numbers and strings, what `python -m bert probe --json` writes) with its CSV
rows and, when the distance probe ran, the trees of the first test sentences at every layer: small to keep and to
copy, unlike the report's word vectors.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from bert.analysis.probing import tree_metrics
from bert.analysis.probing import treebank as tb
from bert.analysis.probing.treebank_probes import TreebankProbeReport
from bert.errors import TreebankError
from viz_app.charts.dependency_tree import Edge

MAX_LABELLED_BYTES = 5_000_000
MAX_TREES = 100  # test sentences whose trees the page can draw (the first ones)


@dataclass(frozen=True)
class ProbeData:
    """A treebank to probe: train on `train` and score on `test`, or (test None) a seeded 80/20 split of `train`.
    `key` names it for the caches."""

    train: tb.Treebank
    test: tb.Treebank | None
    description: str  # one line for the page, e.g. "the first 300 sentences of UD English EWT dev (training) and test"
    key: tuple  # hashable and small: what a cached run is keyed by

    @property
    def tasks(self) -> list[str]:
        return [task for task in self.train.tasks if self.test is None or task in self.test.tasks]


def read_labelled(data: bytes, name: str) -> tb.Treebank | str:
    """The uploaded file read as a treebank, or the message that says what is wrong (naming the line; Markdown
    shows it only once escaped)."""
    try:
        return tb.read_treebank(data, name=name, max_bytes=MAX_LABELLED_BYTES)
    except TreebankError as error:
        return f"That file cannot be used: {error}."


@dataclass(frozen=True)
class SentenceTrees:
    """One test sentence: its words, gold tree and the distance probe's tree at every layer (punctuation out)."""

    words: tuple[str, ...]
    gold: tuple[Edge, ...]
    predicted: tuple[tuple[Edge, ...], ...]  # [layer] -> edges
    labels: dict[frozenset, str]  # a gold arc's dependency relation
    excluded: tuple[int, ...]  # punctuation: left out of both trees and of the score


@dataclass(frozen=True)
class TreebankRun:
    json: str  # TreebankProbeReport.to_json(): NaN written as null
    run: dict  # the same, parsed
    rows: list[dict]  # one per (task, layer): the CSV
    trees: tuple[SentenceTrees, ...]  # empty unless the distance probe ran


def run_result(report: TreebankProbeReport) -> TreebankRun:
    """What the page keeps of a finished run: its JSON, its CSV rows and the first test sentences' trees."""
    text = report.to_json()
    trees = sentence_trees(report) if "distance" in report.tasks else ()
    return TreebankRun(text, json.loads(text), report.csv_rows(), trees)


def sentence_trees(report: TreebankProbeReport, most: int = MAX_TREES) -> tuple[SentenceTrees, ...]:
    """The trees of the first `most` test sentences with at least two words that count, at every layer."""
    trees = []
    features = report.test_features
    for index, sentence in enumerate(features.sentences):
        if len(trees) == most:
            break
        gold = report.gold_edges(index)
        if not gold:
            continue
        counted = tree_metrics.non_punctuation(sentence.labels.get("upos"), len(sentence))
        deprels = sentence.labels.get("deprel", ("",) * len(sentence))
        trees.append(SentenceTrees(
            sentence.words, tuple(sorted(gold)),
            tuple(tuple(sorted(edges)) for edges in report.predicted_trees(index)),
            {frozenset((word, head - 1)): label for word, (head, label) in enumerate(zip(sentence.heads, deprels)) if head},
            tuple(int(i) for i in (~counted).nonzero()[0]),
        ))
    return tuple(trees)
