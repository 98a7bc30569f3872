"""The Features page's logic beside the library (no Streamlit here): the sparse autoencoders the app offers for a
model, the corpora a scan reads, who may keep feature labels with an SAE and the labels a page shows (kept with
the SAE, uploaded, typed in the session), a top example as HTML (escaped, its token highlighted), and the command
that trains an SAE for another model. The analyses themselves are bert.analysis.features."""
from __future__ import annotations

import html
import os
import shlex
from pathlib import Path
from typing import Mapping

from bert.analysis.features.corpora import Corpus, corpus_from_texts, load_corpus
from bert.analysis.features.feature_labels import LABELS_FILE, FeatureLabelsError, parse_labels, read_labels
from bert.analysis.features.neurons import NeuronExample
from bert.analysis.features.sae import CONFIG_FILE, SaeFileError, read_config
from bert.analysis.features.shipped import is_shipped, shipped_sae
from bert.errors import BertError
from bert.layers import residual_label
from bert.tokenizer import BertTokenizer
from viz_app.server.access import Role
from viz_app.app.navigation import LINK_PARAMS

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
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}")
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


def example_html(example: NeuronExample, corpus: Corpus) -> str:
    """The example's sentence with its token marked and the activation beside it, escaped for st.markdown."""
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
