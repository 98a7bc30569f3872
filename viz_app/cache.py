"""Everything the app caches, in one place.

- the model: `st.cache_resource`, one object shared by every session and thread. It is in eval mode and
  nothing ever changes it: recording and interventions are per call (bert.hooks uses a context variable).
- one forward pass per (model, text, pair, masks): `st.cache_resource`, so every page and every session that
  asks for the same input gets the same object, neither pickled nor copied. (`st.cache_data` pickled it on
  write and copied it on every read: for BERT-base at 512 tokens, 220 MB of attention and MLP activations on
  each rerun of each session.) Sharing is safe because the result cannot change: tuples, and numpy arrays
  marked read-only (`flags.writeable = False`), so a page that tried to write would fail loudly instead of
  disturbing another session. Memory stays bounded: at most FORWARD_ENTRIES inputs (the least recently used
  goes first), each kept at most an hour. A 512-token BERT-base input holds about 220 MB (so 3.5 GB at worst),
  a classroom sentence of 20 tokens under 4 MB; an evicted input is simply run again when asked for.
- what a view derives from that pass, computed once per input and shared the same way: the per-head
  attention statistics (only the attention page pays for them).
- the embedding tables' analysis per model (PCA, cosines, subspaces): `st.cache_data`.
- the room where tiny BERTs train live (one run at a time per server): `st.cache_resource`.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from bert.analysis import embedding_subspaces as es
from bert.analysis.attention_stats import HeadStatistics
from viz_app import architecture
from viz_app import forward as fw
from viz_app import models
from viz_app.tables import EmbeddingTables, embedding_tables, weight_tables
from viz_app.tiny_training import TrainingRoom


@st.cache_resource(show_spinner="Loading the model (once, shared by every session)…", max_entries=4)
def load_model(source: str, folder: str | None, revision: str) -> models.LoadedModel:
    """`revision` is part of the key only: a changed weight file loads afresh."""
    return models.load(source, folder)


def model_choices() -> list[models.ModelChoice]:
    """The models this machine has, as the pickers list them (cached for a minute)."""
    return _model_choices(str(models.hub_cache_dir()), models.MINILM_HEAD_FILE.is_file())


def forget_model_choices() -> None:
    """After a download: the next call scans the hub cache again."""
    _model_choices.clear()


@st.cache_data(show_spinner=False, ttl=60)
def _model_choices(cache_dir: str, minilm_head_present: bool) -> list[models.ModelChoice]:
    """The arguments are the key (scanning the hub cache takes a moment)."""
    return models.model_choices(Path(cache_dir))


FORWARD_ENTRIES = 16
HOUR = 3600


@st.cache_resource(show_spinner="Running the model…", max_entries=FORWARD_ENTRIES, ttl=HOUR)
def forward(
    source: str, folder: str | None, revision: str, text: str, pair: str, masks: tuple[int, ...], truncate: bool
) -> fw.ForwardResult:
    loaded = load_model(source, folder, revision)
    prepared = fw.prepare_input(loaded.tokenizer, text, pair, masks, truncate, loaded.summary.max_positions)
    return fw.record(loaded.model, loaded.tokenizer, prepared)


@st.cache_data(show_spinner=False, max_entries=FORWARD_ENTRIES, ttl=HOUR)
def sentence_head_shapes(
    source: str, folder: str | None, revision: str, text: str, pair: str, masks: tuple[int, ...], truncate: bool
) -> dict[str, tuple[int, ...]]:
    """The architecture page's shapes at the sentence-level heads' hooks, which the recorded pass does not reach."""
    loaded = load_model(source, folder, revision)
    prepared = fw.prepare_input(loaded.tokenizer, text, pair, masks, truncate, loaded.summary.max_positions)
    return architecture.sentence_head_shapes(loaded.model, prepared.masked)


@st.cache_resource(show_spinner=False, max_entries=4 * FORWARD_ENTRIES, ttl=HOUR)
def head_statistics(
    source: str, folder: str | None, revision: str, text: str, pair: str, masks: tuple[int, ...], truncate: bool
) -> HeadStatistics:
    """The attention page's per-head statistics of one input (a few kB, read-only)."""
    return fw.attention_statistics(forward(source, folder, revision, text, pair, masks, truncate))


@st.cache_data(show_spinner="Analysing the embedding tables (once per model)…", max_entries=4)
def tables(source: str, folder: str | None, revision: str) -> EmbeddingTables:
    loaded = load_model(source, folder, revision)
    tokenizer = loaded.tokenizer
    vocabulary = [tokenizer.id_to_token(i) or "" for i in range(min(tokenizer.vocab_size, loaded.summary.vocab))]
    return embedding_tables(loaded.model, vocabulary)


@st.cache_data(show_spinner=False, max_entries=32)
def subspaces(source: str, folder: str | None, revision: str, k: int) -> es.SubspaceReport:
    directions = tables(source, folder, revision).directions
    return es.subspace_report(weight_tables(load_model(source, folder, revision).model), k, directions=directions)


@st.cache_resource(show_spinner=False)
def training_room() -> TrainingRoom:
    """The server's one room for live tiny-BERT runs: one run at a time, finished runs kept per settings."""
    return TrainingRoom()
