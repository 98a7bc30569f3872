"""The page "Features" (address `features`), as a spec (viz_app/specs/base.py): the sparse autoencoders the app
offers for a model, the corpora a scan reads, who may keep feature labels with an SAE and the labels a page shows
(kept with the SAE, uploaded, typed in the session), a top example as HTML (escaped, its token highlighted), the
command that trains an SAE for another model; its `Settings`, its two heavy computations (every neuron of a layer,
or every feature, over a corpus: one pass each, shared read-only by every visitor) and its views. Plain Python.
The analyses themselves are bert.analysis.features."""
from __future__ import annotations

import hashlib
import html
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from bert.analysis.corpus.batching import batches_cost
from bert.analysis.features.corpora import Corpus, corpus_from_texts, load_corpus
from bert.analysis.features.feature_pages import GuessChange, mask_guess_change, scan_features
from bert.analysis.features.residuals import residual_at
from bert.devices import model_device
from bert.analysis.features.neurons import scan_neurons, tag_mix
from bert.analysis.features.top_activations import UnitScan
from bert.costs import Cost
from bert.analysis.features.feature_labels import LABELS_FILE, FeatureLabelsError, parse_labels, read_labels
from bert.analysis.features.neurons import NeuronExample
from bert.analysis.features.sae import CONFIG_FILE, SaeFileError, load_sae, read_config
from bert.analysis.features.shipped import is_shipped, shipped_sae
from bert.errors import BertError
from bert.layers import residual_label
from bert.data import builtin_sentences
from bert.tokenizer import BertTokenizer
from viz_app.server.access import Role
from viz_app.app.navigation import FIRST_SCREEN_CORPUS, FIRST_SCREEN_SENTENCES, LINK_PARAMS
from viz_app.charts.base import Chart
from viz_app.charts.features import (activation_histogram, guess_change_chart, promoted_tokens_chart, strongest_features,
                                     tag_mix_chart, token_feature_heatmap)
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "features"
NEURONS = "MLP neurons"  # the other view: "Sparse-autoencoder features"
LESSON_CHARTS = ("histogram",)

SAE_FOLDERS_VARIABLE = "BERT_INSIDE_SAES"  # a server folder the teacher fills: each subfolder one `sae train --out`
UPLOAD, INDEX = "upload", "index"  # the corpus picker's other entries: a text file, a saved corpus index
CORPUS_LABELS = LINK_PARAMS["features_corpus"].choices  # {corpus id: label}, as the page's registry entry gives them
CORPORA = {name: label for name, label in CORPUS_LABELS.items() if name not in (UPLOAD, INDEX)}  # built in
MAX_LINES, MAX_TOKENS = 2000, 30_000  # an uploaded corpus: at most so many sentences and word pieces


def corpus_choices(may_choose_folders: bool) -> dict[str, str]:
    """{corpus id: label} for the corpus picker. A corpus index is a folder on the server: offered only to a
    visitor who may choose folders (viz_app/server/access.py), never to a student."""
    return {name: label for name, label in CORPUS_LABELS.items() if name != INDEX or may_choose_folders}


def index_stamp(folder: str) -> int | None:
    """When the index in `folder` was last written (its index.json), to tell a rebuilt index from the old one in
    the caches; None when there is no such file."""
    path = Path(folder).expanduser() / "index.json"
    return path.stat().st_mtime_ns if path.is_file() else None


def offered_saes(model_source: str) -> dict[str, Path]:
    """{name shown: folder} of the SAEs for this model: the one shipped for a built-in model, then those in the
    teacher's folder (environment variable BERT_INSIDE_SAES) whose config names this model. Loading still checks
    the weights' fingerprint."""
    offered = {}
    shipped = shipped_sae(model_source)
    if shipped is not None:
        offered[f"shipped: {residual_label(read_config(shipped).layer)}, {read_config(shipped).features} features"] = shipped
    root = os.environ.get(SAE_FOLDERS_VARIABLE)
    if root and Path(root).is_dir():
        for folder in sorted(p for p in Path(root).iterdir() if (p / CONFIG_FILE).is_file()):
            try:
                config = read_config(folder)
            except SaeFileError:
                continue
            if config.model == model_source:
                offered[f"{folder.name}: {residual_label(config.layer)}, {config.features} features"] = folder
    return offered


def training_data(data: str, role: Role) -> str:
    """What an SAE was trained on (its config's `data`), as this visitor may read it: the owner and the presenter
    the whole path; a student the file's name only, never a folder of the server (viz_app/server/access.py)."""
    if role.may_choose_any_model or not data:
        return data or "an unnamed text"
    return Path(data.replace("\\", "/")).name or "a text on the server"


LABEL_KEY = "feature_label:{sae}:{feature}"  # the session's label box of one feature of one offered SAE


def may_save_labels(role: Role, folder: str | Path) -> bool:
    """Whether this visitor may keep labels beside the SAE in `folder` (its labels.json): the owner, and never in
    the SAEs shipped inside the package. Everyone else keeps labels for the session, and downloads them."""
    return role.may_write_to_server and not is_shipped(folder)


def saved_labels(folder: str | Path, features: int) -> tuple[dict[int, str], str | None]:
    """(the labels kept with the SAE, None) or ({}, why its labels.json cannot be read: no server path in it)."""
    try:
        return read_labels(folder, features), None
    except FeatureLabelsError as error:
        return {}, f"The labels kept with this sparse autoencoder cannot be read: {error}. Fix or remove its {LABELS_FILE}."


def uploaded_labels(data: bytes | None, name: str, features: int) -> tuple[dict[int, str], str | None]:
    """(labels from an uploaded labels file, None), ({}, None) when nothing is uploaded, or ({}, what is wrong)."""
    if data is None:
        return {}, None
    try:
        return parse_labels(data, features, name), None
    except FeatureLabelsError as error:
        return {}, f"That labels file cannot be used: {error}."


def typed_labels(state: Mapping, sae_name: str) -> dict[int, str]:
    """The labels typed in this browser session for the SAE offered as `sae_name` (its label boxes' values)."""
    prefix = LABEL_KEY.format(sae=sae_name, feature="")
    return {int(key.removeprefix(prefix)): value.strip() for key, value in state.items()
            if isinstance(key, str) and key.startswith(prefix) and key.removeprefix(prefix).isdigit()
            and isinstance(value, str) and value.strip()}


def train_command(model_source: str, layer: int) -> str:
    """The command line that trains an SAE for this model (the page shows it when none is offered)."""
    return (f"python -m bert sae train --model {shlex.quote(model_source)} --hidden-states-index {layer} --data my_sentences.txt "
            f"--features 4096 --k 32 --out saes/{shlex.quote(Path(model_source).name or 'model')}-hidden-states-{layer}")


def builtin_corpus(name: str, tokenizer: BertTokenizer, max_length: int) -> Corpus:
    """A corpus the app ships (`CORPORA`): FIRST_SCREEN_CORPUS is the first FIRST_SCREEN_SENTENCES built-in
    sentences, the others are bert.analysis.features.corpora's."""
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}")
    if name == FIRST_SCREEN_CORPUS:
        return corpus_from_texts(f"the first {FIRST_SCREEN_SENTENCES} built-in sentences",
                                 [s.text for s in builtin_sentences(FIRST_SCREEN_SENTENCES)], tokenizer, max_length)
    return load_corpus(name, tokenizer, max_length=max_length)


def index_corpus(folder: str, tokenizer: BertTokenizer, model, max_length: int) -> Corpus | str:
    """The sentences of a saved corpus index built with this model (its parts of speech as tags when it has
    them); else a message saying what to change (it names the folder: only the owner can type one)."""
    if index_stamp(folder) is None:
        return f"{folder} holds no corpus index (index.json): give a folder written by `python -m bert index`."
    try:
        return load_corpus(Path(folder).expanduser(), tokenizer, model, max_length)
    except BertError as error:
        return f"That index cannot be used: {error}"


def uploaded_corpus(text: str, name: str, tokenizer: BertTokenizer, max_length: int) -> Corpus | str:
    """One sentence per non-empty line, within MAX_LINES and MAX_TOKENS; else a message saying what to change."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not lines:
        return "That file has no sentences. Upload a .txt file with one sentence per line."
    if len(lines) > MAX_LINES:
        return f"That file has {len(lines):,} lines; the limit is {MAX_LINES:,} sentences (one per line)."
    try:
        corpus = corpus_from_texts(name, lines, tokenizer, max_length)
    except ValueError as error:
        return f"That file cannot be used: {error}."
    if corpus.num_tokens > MAX_TOKENS:
        return f"That file has {corpus.num_tokens:,} word pieces; the limit is {MAX_TOKENS:,}. Upload fewer sentences."
    return corpus


def read_uploaded_corpus(data: bytes, name: str, loaded) -> tuple[str | None, Corpus | str]:
    """(an id for the caches: the text's digest, the corpus) or (None, a message saying what to change)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "That file is not UTF-8 text. Save it as UTF-8 and upload it again."
    corpus = uploaded_corpus(text, name, loaded.tokenizer, loaded.model.config.max_position_embeddings)
    return (None, corpus) if isinstance(corpus, str) else (hashlib.sha256(data).hexdigest(), corpus)


def read_index_corpus(folder: str, stamp: int | None, loaded) -> tuple[str | None, Corpus | str]:
    """(an id for the caches, the sentences of a corpus index built with this model) or (None, a message).
    stamp: index_stamp(folder), so that a rebuilt index is read again."""
    corpus = index_corpus(folder, loaded.tokenizer, loaded.model, loaded.model.config.max_position_embeddings)
    return (None, corpus) if isinstance(corpus, str) else (f"index:{folder}:{stamp}", corpus)


def sae_or_why_not(folder: str, model):
    """The SAE in `folder` for this model (its labels not read), or the SaeFileError that says why it cannot be used
    (its text may name the folder: a page shows it through access.failure)."""
    try:
        return load_sae(folder, model, labels=False)
    except SaeFileError as error:
        return error


def encode(sae, hidden) -> np.ndarray:
    """The SAE's features z [seq, feature] of a layer's vectors hidden [1, seq, hidden]."""
    with torch.no_grad():
        return sae.encode(hidden[0].float()).cpu().numpy()


def example_html(example: NeuronExample, corpus: Corpus) -> str:
    """The example's sentence with its token marked and the activation beside it, as HTML for `st.html`: the
    sentence's text escaped (html.escape), the mark and the value the only markup."""
    encoding = corpus.encodings[example.sentence_index]
    text = corpus.sentences[example.sentence_index]
    value = f"<code>{example.activation:.2f}</code>"
    if encoding.special[example.position]:  # [CLS] or [SEP]: shown at its end of the sentence
        token = f"<mark><b>{html.escape(example.token)}</b></mark>"
        body = f"{token} {html.escape(text)}" if example.position == 0 else f"{html.escape(text)} {token}"
        return f"{value} {body}"
    start, end = encoding.offsets[example.position]
    marked = f"<mark><b>{html.escape(text[start:end])}</b></mark>"
    return f"{value} {html.escape(text[:start])}{marked}{html.escape(text[end:])}"


# ---- the heavy computations: one pass over a corpus (every neuron of a layer, or every feature) ---------------------


@dataclass(frozen=True)
class ScanWork:
    corpus_id: str  # names the corpus in the caches (a built-in name, an upload's digest, an index's folder and stamp)
    corpus: Corpus = field(hash=False, compare=False)
    layer: int | None = None  # neurons: the MLP's layer
    folder: str | None = None  # features: the SAE's folder
    sae: Any = field(default=None, hash=False, compare=False)  # features: the SAE loaded from `folder` (None: load it)


def corpus_cost(inputs: Inputs, work: ScanWork) -> Cost:
    """One pass over the corpus, from its sentences' lengths in tokens: batches of 32, sorted by length
    (bert/analysis/corpus/batching.py)."""
    return batches_cost([len(encoding) for encoding in work.corpus.encodings], 32,
                        ("a smaller corpus (fewer or shorter sentences)",))


def read_only(scan: UnitScan) -> UnitScan:
    """The scan with its arrays marked read-only: one object shared by every session."""
    for array in (scan.top_values, scan.top_rows, scan.bin_edges, scan.counts, scan.means, scan.active):
        array.flags.writeable = False
    return scan


def _features(inputs: Inputs, work: ScanWork) -> UnitScan:
    loaded = inputs.loaded
    sae = work.sae if work.sae is not None else load_sae(work.folder, loaded.model, labels=False)
    return read_only(scan_features(loaded.model, sae, work.corpus, loaded.tokenizer.pad_id))


NEURON_SCAN = Computation(
    "features.neurons", lambda work: f"Reading every neuron of layer {work.layer} over the corpus",
    cost=corpus_cost, per_model=True, shared=True, key=lambda work: (work.corpus_id, work.layer),
    compute=lambda inputs, work: read_only(scan_neurons(inputs.loaded.model, work.corpus, work.layer,
                                                        inputs.loaded.tokenizer.pad_id)), work=ScanWork)
FEATURE_SCAN = Computation(
    "features.features", lambda work: "Finding every feature's top examples in the corpus",
    cost=corpus_cost, compute=_features, per_model=True, shared=True, key=lambda work: (work.folder, work.corpus_id), work=ScanWork)


@dataclass(frozen=True)
class SentenceWork:
    folder: str  # the SAE's folder
    sae: Any = field(hash=False, compare=False)  # the SAE loaded from `folder`


@dataclass(frozen=True)
class GuessWork:
    folder: str  # the SAE's folder
    feature: int
    factor: float  # the switch: 0 off, 1 as it is, more: turned up
    sae: Any = field(hash=False, compare=False)  # the SAE loaded from `folder`


def _sentence_features(inputs: Inputs, work: SentenceWork) -> np.ndarray:
    model = inputs.loaded.model
    return encode(work.sae, residual_at(model, work.sae.config.layer, *inputs.prepared.masked.tensors(model_device(model))))


SENTENCE = Computation(  # the pass as far as the SAE's layer, then its features at every token
    "features.sentence", lambda work: "The features of your sentence",
    cost=lambda inputs, work: Cost(1, len(inputs.prepared.masked)), compute=_sentence_features, work=SentenceWork)
GUESS = Computation(  # the pass as far as the SAE's layer, then the layers above it twice: as it is, and switched
    "features.guess", lambda work: "The [MASK] guess with the feature switched",
    cost=lambda inputs, work: Cost(2, len(inputs.prepared.masked)),
    compute=lambda inputs, work: mask_guess_change(inputs.loaded.model, inputs.loaded.tokenizer, inputs.prepared.masked,
                                                   work.sae, work.feature, work.factor), work=GuessWork)


@dataclass(frozen=True)
class Settings:
    look_at: str  # NEURONS, or the features of an SAE
    corpus_id: str | None  # None: no corpus yet (an upload to come)
    corpus: Corpus | None = field(default=None, hash=False, compare=False)
    layer: int = 0  # neurons: the MLP's layer
    neuron: int = 0
    folder: str | None = None  # features: the SAE's folder
    feature: int = 0
    factor: float = 0.0  # the switch: 0 off, 1 as it is, more: turned up
    sae: Any = field(default=None, hash=False, compare=False)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """A link's or a lesson step's settings: a built-in corpus (an upload or an index: none), the shipped or
        first offered SAE."""
        loaded = inputs.loaded
        neurons = setting(state, "features_look_at") == NEURONS
        name = setting(state, "neurons_corpus" if neurons else "features_corpus")
        try:
            corpus = builtin_corpus(name, loaded.tokenizer, loaded.model.config.max_position_embeddings) if name in CORPORA else None
        except BertError:  # a sentence longer than this model reads: no scan (the page says why)
            corpus = None
        offered = list(offered_saes(loaded.key.source).values())
        return cls(NEURONS if neurons else "features", name if corpus else None, corpus,
                   within(setting(state, "neurons_layer"), loaded.summary.layers, 0),
                   within(state.get("neurons_neuron"), loaded.summary.intermediate, 0),  # kept for the page only
                   str(offered[0]) if offered else None, state.get("features_feature") or 0)


def computations(settings: Settings) -> Planned:
    """"scan": every neuron of the layer, or every feature of the SAE, over the corpus; nothing without a corpus
    (or an SAE)."""
    if settings.corpus is None:
        return {}
    if settings.look_at == NEURONS:
        return {"scan": (NEURON_SCAN, ScanWork(settings.corpus_id, settings.corpus, layer=settings.layer))}
    if settings.folder is None:
        return {}
    return {"scan": (FEATURE_SCAN, ScanWork(settings.corpus_id, settings.corpus, folder=settings.folder, sae=settings.sae))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """A neuron's: neuron_view; a feature's: feature_view, with its promoted tokens and its [MASK] guess where the
    page gives them (`results["promoted"]`, `results["guess"]`)."""
    scan = results.get("scan")
    if scan is None:
        return {}
    if settings.look_at == NEURONS:
        mixes = {column: tag_mix(scan, settings.corpus, settings.neuron, column) for column in settings.corpus.tags}
        return neuron_view(settings.neuron, settings.layer, scan, mixes)
    return feature_view(settings.feature, scan, results.get("promoted") or [], results.get("guess"), settings.factor)


# ---- the views: the sentence's features, one feature's page, one neuron across a corpus ---------------------------


MAX_TAGS = 20  # bars in a tag-mix chart (UPOS has 18 with [special]; a treebank has some 50 deprels)


def strongest_feature(z: np.ndarray) -> int:
    """The feature with the highest activation anywhere on the sentence (0 if none fires)."""
    best = strongest_features(z, 1)
    return int(best[0]) if len(best) else 0


def sentence_view(shown: int, z: np.ndarray, tokens: list[str], layer: int, labels: dict[int, str]) -> dict[str, Chart]:
    """"heatmap": the `shown` strongest features on each token of the sentence."""
    return {"heatmap": token_feature_heatmap(z, tokens, strongest_features(z, shown), layer, labels)}


def feature_view(feature: int, scan: UnitScan, promoted: list[tuple[str, float]],
                 guess: GuessChange | None, factor: float) -> dict[str, Chart]:
    """"histogram", "promoted" and, when the sentence has a [MASK], "guess"."""
    charts = {
        "histogram": activation_histogram(scan.bin_edges, scan.counts[feature], f"feature {feature}", scan.active_only),
        "promoted": promoted_tokens_chart([t for t, _ in promoted], np.array([v for _, v in promoted]), feature),
    }
    if guess is not None:
        change = f"feature {feature} off" if factor == 0 else f"feature {feature} x {factor:g}"
        charts["guess"] = guess_change_chart(guess.tokens, np.array(guess.before), np.array(guess.after), change)
    return charts


def neuron_view(neuron: int, layer: int, scan: UnitScan, mixes: dict[str, dict[str, tuple[float, float]]]) -> dict[str, Chart]:
    """"histogram" and, for each tag column of the corpus (a treebank: "upos" and "deprel"), "tag_mix:COLUMN".
    mixes: {column: bert.analysis.features.neurons.tag_mix(...)}; a chart shows the MAX_TAGS tags most frequent
    among the top examples (then in the corpus)."""
    unit = f"neuron {neuron} of layer {layer}"
    charts = {"histogram": activation_histogram(scan.bin_edges, scan.counts[neuron], unit, scan.active_only)}
    for column, mix in mixes.items():
        charts[f"tag_mix:{column}"] = tag_mix_chart(dict(list(mix.items())[:MAX_TAGS]), unit, column)
    return charts
