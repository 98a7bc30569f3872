"""The records of the probes page's runs, free of Streamlit: the data a run probes (the built-in WordNet sentences,
plain text, UD English EWT or an uploaded labelled file, all read as labelled sentences), and what the page keeps
of a finished run. The spec (viz_app/specs/probes/__init__.py) runs them; the widgets are in data.py, the charts in view.py.

A run is kept in its JSON form (plain numbers and strings, what `python -m bert probe --json` writes) with its CSV
rows and, when the distance probe ran, the trees of the first test sentences at every layer: small to keep and to
copy, unlike the report's word vectors.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from bert.analysis.causal.erasure import ErasureReport, amnesic_probing, amnesic_probing_cost
from bert.analysis.probing import tree_metrics
from bert.analysis.probing.treebank import Treebank, builtin_treebank, read_treebank
from bert.analysis.probing.pipeline import ProbeReport, ProbeSettings, extract_features, extract_features_cost, probe_features
from bert.analysis.probing.sentence_sets import builtin_set, sentence_set
from bert.config import BertConfig
from bert.costs import Cost
from bert.devices import model_device
from bert.errors import TreebankError
from viz_app.charts.dependency_tree import Edge
from viz_app.app.navigation import LINK_PARAMS

MAX_LABELLED_BYTES = 5_000_000
UD_SENTENCES = LINK_PARAMS["probes_ud_count"].default  # from each of UD EWT's files, to start with (all take minutes)
MAX_TREES = 100  # test sentences whose trees the page can draw (the first ones)
PIECES = {"first": "its first word piece", "mean": "the mean of its pieces", "last": "its last word piece"}


@dataclass(frozen=True)
class ProbeData:
    """Labelled sentences to probe: train on `train` and score on `test`, or (test None) a seeded 80/20 split of
    `train`. `key` names it for the caches."""

    train: Treebank
    test: Treebank | None
    description: str  # one line for the page, e.g. "the first 300 sentences of UD English EWT dev (training) and test"
    key: tuple  # hashable and small: what a cached run is keyed by

    @property
    def tasks(self) -> list[str]:
        return [task for task in self.train.tasks if self.test is None or task in self.test.tasks]

    @property
    def from_text(self) -> bool:
        """Sentences read from text (the WordNet set, an uploaded .txt): the text tasks, no trees."""
        return self.train.format == "text"


def builtin_data(count: int) -> ProbeData:
    """The first `count` built-in WordNet sentences."""
    return ProbeData(builtin_set(count), None, f"the first {count} built-in sentences", ("wordnet", count))


def ud_ewt_data(count: int) -> ProbeData:
    """The first `count` sentences of UD English EWT dev (training) and of its test file (scoring)."""
    dev, test = builtin_treebank("dev"), builtin_treebank("test")
    return ProbeData(first(dev, count), first(test, count),
                     f"the first {count} sentences of UD English EWT dev (training) and of its test file (scoring)",
                     ("ud_ewt", count))


def first(treebank: Treebank, count: int) -> Treebank:
    return replace(treebank, sentences=treebank.sentences[:count])


def text_data(sentences, description: str) -> ProbeData:
    """Sentences split from an uploaded text (bert.data.split_sentences), keyed by their text."""
    digest = hashlib.sha1("\n".join(s.text for s in sentences).encode()).hexdigest()
    return ProbeData(sentence_set(sentences, description), None, description, ("text", digest))


def read_labelled(data: bytes, name: str) -> Treebank | str:
    """The uploaded file read as a treebank, or the message that says what is wrong (naming the line; Markdown
    shows it only once escaped)."""
    try:
        return read_treebank(data, name=name, max_bytes=MAX_LABELLED_BYTES)
    except TreebankError as error:
        return f"That file cannot be used: {error}."


def settings(pieces: str, seed: int, mdl: bool = False) -> ProbeSettings:
    return ProbeSettings(pieces=pieces, seed=seed, mdl=mdl)


def split_seed(data: ProbeData, seed: int) -> int:
    """The seed that picks the held-out sentences: the run's for one set of sentences; with two, none is picked."""
    return seed if data.test is None else 0


def features(model, tokenizer, data: ProbeData, tasks: Sequence[str], pieces: str, seed: int,
             progress: Callable[[float, str], None] | None = None):
    """Every layer's word (and word-piece) vectors of the data's sentences, for `tasks`."""
    return extract_features(model, tokenizer, data.train, data.test, list(tasks), settings(pieces, split_seed(data, seed)), progress)


def probe(model, extracted, tasks: Sequence[str], pieces: str, seed: int, mdl: bool, model_name: str,
          progress: Callable[[float, str], None] | None = None) -> "ProbeRun":
    """The probes of `tasks` trained and scored on features from `features`, kept as a ProbeRun."""
    report = probe_features(extracted, list(tasks), settings(pieces, seed, mdl), model_name, model_device(model), progress)
    return run_result(report)


def probe_run(model, tokenizer, data: ProbeData, tasks: Sequence[str], pieces: str = "first", seed: int = 0,
              mdl: bool = False, model_name: str = "") -> "ProbeRun":
    """Both steps at once, uncached (a lesson's figure)."""
    return probe(model, features(model, tokenizer, data, tasks, pieces, seed), tasks, pieces, seed, mdl, model_name)


ERASURE_MLM_WORDS = 1000  # test words masked one at a time for the page's amnesic probing (seeded sample)


def erasable_tasks(data: ProbeData, run: dict) -> list[str]:
    """The label columns of the data that the run probed: what amnesic probing can erase (not the text tasks)."""
    return [task for task in run["tasks"] if task in data.train.label_columns and not data.from_text]


def features_cost(tokenizer, data: ProbeData, tasks: Sequence[str], pieces: str, seed: int, config: BertConfig) -> Cost:
    """What `features` costs, before it starts, with the memory the word vectors keep and the most it holds: while
    they are read, the largest batch besides; then, while a probe trains, STANDARDISED_COPIES of them beside
    (bert/analysis/probing/scoring.py: a task's vectors picked out, then standardised), at most all of them. The
    probes' training passes are not in it (no forward pass)."""
    cost = extract_features_cost(tokenizer, data.train, data.test, list(tasks), settings(pieces, split_seed(data, seed)),
                                 config.max_position_embeddings, config)
    return replace(cost, peak_bytes=max(cost.peak_bytes, (1 + STANDARDISED_COPIES) * cost.kept_bytes))


STANDARDISED_COPIES = 2  # copies of the word vectors a probe's training holds beside them


def _erasure_split(data: ProbeData, seed: int):
    return (data.train, data.test) if data.test is not None else data.train.split(0.2, seed=seed)


def erase_cost(tokenizer, data: ProbeData, seed: int, max_positions: int) -> Cost:
    """What `erase` costs, before it starts."""
    train, test = _erasure_split(data, seed)
    return amnesic_probing_cost(tokenizer, train.sentences, test.sentences, max_positions, seed,
                                max_mlm_words=ERASURE_MLM_WORDS)


def erase(model, tokenizer, data: ProbeData, task: str, layer: int, seed: int, model_name: str = "",
          progress: Callable[[float, str], None] | None = None) -> ErasureReport:
    """Amnesic probing (bert.analysis.causal.erasure) of `task` at `layer` on the data: its training and test
    sentences, or one set split 80/20 by `seed` as the probes split it."""
    train, test = _erasure_split(data, seed)
    return amnesic_probing(model, tokenizer, train.sentences, test.sentences, task, layer, seed,
                           max_mlm_words=ERASURE_MLM_WORDS, model_name=model_name, progress=progress)


@dataclass(frozen=True)
class SentenceTrees:
    """One test sentence: its words, gold tree and the distance probe's tree at every layer (punctuation out)."""

    words: tuple[str, ...]
    gold: tuple[Edge, ...]
    predicted: tuple[tuple[Edge, ...], ...]  # [layer] -> edges
    labels: dict[frozenset, str]  # a gold arc's dependency relation
    excluded: tuple[int, ...]  # punctuation: left out of both trees and of the score


@dataclass(frozen=True)
class ProbeRun:
    json: str  # ProbeReport.to_json(): NaN written as null
    run: dict  # the same, parsed
    rows: list[dict]  # one per (task, layer): the CSV
    trees: tuple[SentenceTrees, ...]  # empty unless the distance probe ran


def run_result(report: ProbeReport) -> ProbeRun:
    """What the page keeps of a finished run: its JSON, its CSV rows and the first test sentences' trees."""
    text = report.to_json()
    trees = sentence_trees(report) if "distance" in report.tasks else ()
    return ProbeRun(text, json.loads(text), report.csv_rows(), trees)


def sentence_trees(report: ProbeReport, most: int = MAX_TREES) -> tuple[SentenceTrees, ...]:
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
