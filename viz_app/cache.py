"""Everything the app caches, in one place: the cached wrappers, keyed by a `ModelKey` (never the model object)
and, for one input, a `PreparedInput` (hashed by its `key`: text, pair, masks, truncate; it is tokenized once, by
the sentence box, and never here).

- the model: `st.cache_resource`, one object shared by every session and thread, in eval mode, never changed
  (recording and interventions are per call: bert.hooks uses a context variable).
- a spec's computations (viz_app/specs/base.py), reached only through viz_app/heavy.py's `run`:
  - `computed`: the per-visitor results, in one store bounded by entries AND bytes (RESULT_ENTRIES,
    RESULT_BUDGETS of the server's memory budget, each for an hour: viz_app/server/memory.py), a copy to each
    session as `st.cache_data` gives;
  - `computed_shared`: a `shared` computation's result, one object for every session, neither pickled nor copied
    (its arrays marked read-only, so a page that tried to write would fail loudly): the recorded passes
    (viz_app/specs/recorded.py; a 512-token BERT-base input holds about 270 MB once its patterns are read, a
    classroom sentence under 5 MB), the corpus search's index, the Features page's scans. At most FORWARD_ENTRIES
    and SHARED_BUDGETS memory budgets, each for an hour; `kept_shared` tells heavy.run whether one is kept already
    (then no one pays for it again).
- what the pages derive without a forward pass (the attention page's head statistics and charts from its recorded
  pass, the embedding tables' analysis, a feature's promoted tokens): `st.cache_data` or `st.cache_resource`, each
  bounded by `max_entries` and an hour. A page's forward pass, however light, and a lesson step are a spec's
  computation, run through viz_app/heavy.py's `run`.
The server's shared objects that are not caches (the heavy computations' slots, the class room, the live
training room) are in viz_app/server/singletons.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from bert.analysis.attention.attention_stats import HeadStatistics
from bert.analysis.features.corpora import Corpus
from bert.analysis.features.feature_pages import promoted
from bert.analysis.features.sae import SaeFileError, TopKSae
from bert.analysis.probing.treebank import Treebank
from bert.analysis.representations import embedding_subspaces
from bert.analysis.representations.compare import same_vocabulary as shares_vocabulary
from bert.costs import Cost
from bert.errors import InvalidInputError
from bert.replaced_tokens import check_pair
from viz_app.specs import attention, features, head_ablation, prediction
from viz_app.app import generators, models
from viz_app.specs.probes import runs as probe_runs
from viz_app.charts.base import Chart
from viz_app.specs.base import Computation, Inputs
from viz_app.app.forward import ForwardResult, PreparedInput
from viz_app.app.models import ModelKey
from viz_app.app.tables import EmbeddingTables, model_tables, table_subspaces
from viz_app.server.budget import MB
from viz_app.server.memory import BoundedStore
from viz_app.server.settings import server_settings

BY_INPUT = {PreparedInput: lambda prepared: prepared.key}  # an input is its text, pair, masks and truncate flag


@st.cache_resource(show_spinner="Loading the model (once, shared by every session)…", max_entries=4)
def load_model(key: ModelKey) -> models.LoadedModel:
    """`key.revision` makes a changed weight file load afresh."""
    return models.load(key)


def model_choices() -> tuple[models.ModelChoice, ...]:
    """The models this machine has, as the pickers list them (cached for a minute)."""
    return _model_choices(str(models.hub_cache_dir()), models.MINILM_HEAD_FILE.is_file())


def forget_model_choices() -> None:
    """After a download: the next call scans the hub cache again."""
    _model_choices.clear()


@st.cache_resource(show_spinner=False, ttl=60)
def _model_choices(cache_dir: str, minilm_head_present: bool) -> tuple[models.ModelChoice, ...]:
    """The arguments are the key (scanning the hub cache takes a moment). One read-only tuple for every session (every
    run of every page reads it: a copy per run, as st.cache_data makes, cost a class's page runs more than the scan)."""
    return tuple(models.model_choices(Path(cache_dir)))


FORWARD_ENTRIES = 16
HOUR = 3600


@st.cache_resource(show_spinner=False, max_entries=4 * FORWARD_ENTRIES, ttl=HOUR, hash_funcs=BY_INPUT)
def head_statistics(key: ModelKey, prepared: PreparedInput, _result: ForwardResult) -> HeadStatistics:
    """The attention page's per-head statistics of one input (a few kB, read-only), from its recorded pass."""
    return attention.head_statistics(_result)


@st.cache_resource(show_spinner=False, max_entries=4 * FORWARD_ENTRIES, ttl=HOUR, hash_funcs=BY_INPUT)
def head_statistics_table(key: ModelKey, prepared: PreparedInput, _statistics: HeadStatistics) -> pa.Table:
    """The attention page's table of those statistics, one row per head, in Arrow's form, which st.dataframe sends
    as it is: made from a pandas frame at every run, it was a fifth of the page's run for a class on that page."""
    return pa.Table.from_pandas(pd.DataFrame(_statistics.rows()), preserve_index=False)


@st.cache_resource(show_spinner=False, max_entries=4 * FORWARD_ENTRIES, ttl=HOUR, hash_funcs=BY_INPUT)
def attention_charts(key: ModelKey, prepared: PreparedInput, settings: attention.Settings, _result: ForwardResult,
                     _statistics: HeadStatistics) -> dict[str, Chart]:
    """The attention page's charts for one input and its settings (in words or word pieces), built once and shared
    by every session that asks for the same: a class on one step asks thirty times. Streamlit only reads them."""
    return attention.view(settings, Inputs(load_model(key), prepared), {"recorded": _result, "statistics": _statistics})


@st.cache_resource(show_spinner=False, max_entries=4 * FORWARD_ENTRIES, ttl=HOUR, hash_funcs=BY_INPUT)
def prediction_charts(key: ModelKey, prepared: PreparedInput, settings: prediction.Settings,
                      _result: ForwardResult) -> dict[str, Chart]:
    """The prediction page's charts of one input's masks and its settings, built once and shared by every session
    that asks for the same, as `attention_charts`. Streamlit only reads them."""
    return prediction.view(settings, Inputs(load_model(key), prepared), {"recorded": _result})


@st.cache_data(show_spinner="Analysing the embedding tables (once per model)…", max_entries=4, ttl=HOUR)
def tables(key: ModelKey) -> EmbeddingTables:
    loaded = load_model(key)
    return model_tables(loaded.model, loaded.tokenizer, loaded.summary.vocab)


@st.cache_data(show_spinner=False, max_entries=32, ttl=HOUR)
def subspaces(key: ModelKey, k: int) -> embedding_subspaces.SubspaceReport:
    return table_subspaces(load_model(key).model, tables(key), k)


# ---- the probes' uploaded file, head ablation's mean (a lesson's) ----------------------------------------------------


def labelled_file(data: bytes, name: str) -> Treebank | str:
    """An uploaded labelled file read (a 5 MB file is a large result: kept within the results' store)."""
    digest = hashlib.sha256(data).hexdigest()
    return results_store().get_or_compute(("probes.file", digest, name), lambda: probe_runs.read_labelled(data, name))


@st.cache_data(show_spinner="Averaging every head's output over 200 built-in sentences (once per model)…", max_entries=4,
               ttl=HOUR)
def mean_head_outputs(key: ModelKey) -> np.ndarray:
    return head_ablation.mean_head_outputs(load_model(key))


# ---- model comparison and ELECTRA's generators --------------------------------------------------------------------


@st.cache_data(show_spinner=False, ttl=60)
def generator_choices(key: ModelKey, choices: tuple[models.ModelChoice, ...]) -> list[models.ModelChoice]:
    """The ELECTRA generators among the visitor's `choices` that share the model's vocabulary (for a minute: a
    teacher may add a folder)."""
    return generators.generator_choices(choices, load_model(key).tokenizer)


@st.cache_data(show_spinner=False, max_entries=16, ttl=HOUR)
def generator_problem(key: ModelKey, generator: ModelKey) -> str | None:
    """Why `generator` cannot fill the blanks that the discriminator `key` reads, or None when it can."""
    discriminator, filler = load_model(key), load_model(generator)
    return _why_not(check_pair, filler.model, discriminator.model, discriminator.tokenizer, filler.tokenizer)


@st.cache_data(show_spinner=False, max_entries=16, ttl=HOUR)
def same_vocabulary(key_a: ModelKey, key_b: ModelKey) -> bool:
    """Do the two models read the same token ids? Then they are compared token by token, else word by word."""
    return shares_vocabulary(load_model(key_a).tokenizer, load_model(key_b).tokenizer)


def _why_not(check, *args) -> str | None:
    """The message of the InvalidInputError `check(*args)` raises, or None when it passes."""
    try:
        check(*args)
    except InvalidInputError as error:
        return str(error)
    return None


# ---- features: sparse autoencoders and neurons across a corpus (pages/features.py) -----------------------------


@st.cache_resource(show_spinner="Reading the corpus…", max_entries=8, ttl=HOUR)
def feature_corpus(key: ModelKey, name: str) -> Corpus:
    """A built-in corpus for the Features page, encoded for this model's tokenizer (shared, read-only)."""
    loaded = load_model(key)
    return features.builtin_corpus(name, loaded.tokenizer, loaded.model.config.max_position_embeddings)


@st.cache_resource(show_spinner="Reading the file…", max_entries=8, ttl=HOUR)
def uploaded_feature_corpus(key: ModelKey, data: bytes, name: str) -> tuple[str | None, Corpus | str]:
    """(an id for the caches: the text's digest, the corpus) or (None, a message saying what to change)."""
    return features.read_uploaded_corpus(data, name, load_model(key))


@st.cache_resource(show_spinner="Reading the corpus index…", max_entries=4, ttl=HOUR)
def index_feature_corpus(key: ModelKey, folder: str, stamp: int | None) -> tuple[str | None, Corpus | str]:
    """(an id for the caches, the sentences of a corpus index built with this model) or (None, a message).
    stamp: features.index_stamp(folder), so that a rebuilt index is read again."""
    return features.read_index_corpus(folder, stamp, load_model(key))


@st.cache_resource(show_spinner="Loading the sparse autoencoder…", max_entries=8, ttl=HOUR)
def sae(key: ModelKey, folder: str) -> TopKSae | SaeFileError:
    """The SAE in `folder` for this model (shared, read-only), or why it cannot be used (its text may name the
    folder: a page shows it through access.failure). Its labels are not read here: the page reads them on every
    run (the owner may have saved one meanwhile)."""
    return features.sae_or_why_not(folder, load_model(key).model)


@st.cache_data(show_spinner=False, max_entries=256, ttl=HOUR)
def promoted_tokens(key: ModelKey, folder: str, feature: int) -> list[tuple[str, float]]:
    loaded = load_model(key)
    return promoted(sae(key, folder), loaded.model, loaded.tokenizer, feature)


# ---- a page spec's heavy computations (viz_app/specs/base.py), run through viz_app/heavy.py's `run` ------------


# The stores' bytes, in the server's memory budgets (viz_app/server/settings.py: memory_budget, what one computation
# of a student may hold): each keeps any result a student may make; one larger (an owner's) is handed back, not kept.
RESULT_ENTRIES = 64
RESULT_BUDGETS = 1  # per-visitor results kept at most
KEPT_PART_ENTRIES = 2  # the parts computations share (the probes' word vectors: BERT-base on UD EWT is about 2 GB)
KEPT_PART_BUDGETS = 1
SHARED_BUDGETS = 2  # shared results kept at most (recorded passes, corpus indexes, scans)


def store_bytes(budgets: int) -> int:
    """`budgets` times the server's memory budget, in bytes (read from its settings now)."""
    return budgets * server_settings().memory_budget * MB


def results_store() -> BoundedStore:
    """The specs' results (viz_app/server/memory.py): at most RESULT_ENTRIES and RESULT_BUDGETS memory budgets, each
    for an hour, a copy handed to each session as `st.cache_data` does."""
    return _results_store(store_bytes(RESULT_BUDGETS))


@st.cache_resource(show_spinner=False)
def _results_store(max_bytes: int) -> BoundedStore:
    return BoundedStore(RESULT_ENTRIES, max_bytes, HOUR, copies=True)


def kept_parts() -> BoundedStore:
    """What `Inputs.keep` keeps (viz_app/specs/base.py): at most KEPT_PART_ENTRIES and KEPT_PART_BUDGETS memory
    budgets, each for an hour, shared read-only (the probes only read their word vectors)."""
    return _kept_parts(store_bytes(KEPT_PART_BUDGETS))


@st.cache_resource(show_spinner=False)
def _kept_parts(max_bytes: int) -> BoundedStore:
    return BoundedStore(KEPT_PART_ENTRIES, max_bytes, HOUR)


def inputs(key: ModelKey, prepared: PreparedInput | None) -> Inputs:
    """A computation's inputs, with the app's cached loader, its store of shared parts and the results it keeps."""
    return Inputs(load_model(key), prepared, load_model, kept_parts().get_or_compute,
                  lambda computation, work: result_of(key, prepared, computation, work))


def result_of(key: ModelKey, prepared: PreparedInput | None, computation: Computation, work):
    """The computation's result kept for this model and input (`per_model`: the model), computed when it is not."""
    prepared = None if computation.per_model else prepared
    kept = computed_shared if computation.shared else computed
    return kept(computation.name, key, prepared, computation.cache_key(work), work, computation)


def _result_key(name: str, key: ModelKey, prepared: PreparedInput | None, work_key) -> tuple:
    """What the stores key a computation's result by: its name, the model, the input and `work_key` (the
    computation's `cache_key(work)`)."""
    return name, key, None if prepared is None else prepared.key, work_key


def computed(name: str, key: ModelKey, prepared: PreparedInput | None, work_key, _work, _computation: Computation):
    """The computation's result for this model, input and work."""
    return results_store().get_or_compute(_result_key(name, key, prepared, work_key),
                                          lambda: _computation.compute(inputs(key, prepared), _work))


@st.cache_data(show_spinner=False, max_entries=256, ttl=HOUR, hash_funcs=BY_INPUT)
def priced(name: str, key: ModelKey, prepared: PreparedInput | None, work_key, _work, _computation: Computation) -> Cost:
    """The computation's cost (worked out once per model, input and work: the probes' tokenize their sentences)."""
    return _computation.cost(inputs(key, prepared), _work)


def shared_store() -> BoundedStore:
    """The `shared` computations' results, one object for every session: at most FORWARD_ENTRIES and SHARED_BUDGETS
    memory budgets, each for an hour. A store, not an `st.cache_resource` of its own: a heavy job draws its progress
    bar while the computation runs, which Streamlit could not replay from a cached function."""
    return _shared_store(store_bytes(SHARED_BUDGETS))


@st.cache_resource(show_spinner=False)
def _shared_store(max_bytes: int) -> BoundedStore:
    return BoundedStore(FORWARD_ENTRIES, max_bytes, HOUR)


def computed_shared(name: str, key: ModelKey, prepared: PreparedInput | None, work_key, _work, _computation: Computation):
    """A `shared` computation's result (a recorded pass, a corpus index: read-only), one object for every session."""
    return shared_store().get_or_compute(_result_key(name, key, prepared, work_key),
                                         lambda: _computation.compute(inputs(key, prepared), _work))


def kept_shared(name: str, key: ModelKey, prepared: PreparedInput | None, work_key, _work=None, _computation=None):
    """`computed_shared`'s result when it is kept already, else None; never computes."""
    return shared_store().get(_result_key(name, key, prepared, work_key))
