"""Everything the app caches, in one place.

- the model: `st.cache_resource`, one object shared by every session and thread. It is in eval mode and
  nothing ever changes it: recording and interventions are per call (bert.hooks uses a context variable).
- one forward pass per (model, text, pair, masks): `st.cache_resource`, so every page and every session that
  asks for the same input gets the same object, neither pickled nor copied (docs/benchmarks.md#the-app says
  what that saves). Sharing is safe because the result cannot change: tuples, and numpy arrays
  marked read-only (`flags.writeable = False`), so a page that tried to write would fail loudly instead of
  disturbing another session. Memory stays bounded: at most FORWARD_ENTRIES inputs (the least recently used
  goes first), each kept at most an hour. A 512-token BERT-base input holds about 220 MB (so 3.5 GB at worst),
  a classroom sentence of 20 tokens under 4 MB; an evicted input is simply run again when asked for.
- what a view derives from that pass, computed once per input and shared the same way: the per-head
  attention statistics (only the attention page pays for them).
- the embedding tables' analysis per model (PCA, cosines, subspaces): `st.cache_data`.
- the corpus search indexes, one per (model, corpus): `st.cache_resource`, shared read-only like the forward pass
  (the built-in set's index takes seconds to build); each search: `st.cache_data`.
- the treebank probes' word vectors, per (model, data, word pieces): `st.cache_resource`, shared read-only (the
  probes only read them), at most TREEBANK_FEATURE_ENTRIES sets for an hour: BERT-base on all of UD EWT is about
  2 GB. Each run of the probes on them: `st.cache_data`, so other tasks or seeds on the same data skip the model.
- every other analysis a page runs (probes, corpus head statistics, logit lens, head ablation, attention flow,
  saliency, a word's contexts, sentence tasks, model comparison, a lesson's step and its figures):
  `st.cache_data`, keyed by the model's (source, folder, revision) and the inputs, never by the model object.
- the room where tiny BERTs train live (one run at a time per server): `st.cache_resource`.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from bert.analysis.causal import ablation
from bert.analysis.attention import head_stats, rollout
from bert.analysis.probing import probes
from bert.analysis.representations import self_similarity
from bert.analysis.representations import embedding_subspaces as es
from bert.analysis.representations import logit_lens as lens_analysis
from bert.analysis.attribution import saliency as attributions
from bert.analysis.attention.attention_stats import HeadStatistics
from bert.analysis.representations.compare import Comparison, check_comparable, compare_models
from bert.analysis.corpus.batching import layer_names
from bert.analysis.corpus.corpus_search import CorpusIndex, Hit
from bert.analysis.probing.treebank import Treebank
from bert.analysis.probing.treebank_probes import ProbeSettings, TreebankFeatures, extract_train_test, probe_features
from bert.data import LabelledSentence, builtin_sentences
from bert.devices import as_numpy, model_device
from bert.errors import InvalidInputError
from bert.tokenizer import Encoding
from viz_app import architecture
from viz_app import corpus_search as cs
from viz_app import forward as fw
from viz_app import models
from viz_app import treebank_runs as tr
from viz_app import sentence_tasks as tasks
from viz_app import word_contexts as wc
from viz_app.tables import EmbeddingTables, embedding_tables, weight_tables
from viz_app.tiny_training import TrainingRoom

if TYPE_CHECKING:  # the lesson modules import this one
    from viz_app.charts.base import Chart
    from viz_app.lessons.format import Lesson
    from viz_app.lessons.resolve import ResolvedStep


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


# ---- the analysis pages: probes, head statistics, logit lens, ablation, rollout, saliency ----------------------


def _digest(sentences: list[LabelledSentence]) -> str:
    return hashlib.sha1("\n".join(f"{s.text}\t{s.pos}\t{s.start}" for s in sentences).encode()).hexdigest()


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs={list: lambda s: _digest(s)})
def probe_report(source, folder, revision, sentences: list, tasks: tuple[str, ...], seed: int) -> probes.ProbeReport:
    loaded = load_model(source, folder, revision)
    bar = st.progress(0.0, "Starting…")
    report = probes.run_probes(loaded.model, loaded.tokenizer, sentences, tasks, seed=seed,
                               progress=lambda done, what: bar.progress(min(done, 1.0), what))
    bar.empty()
    return report


# ---- treebank probes: the word vectors per (model, data, pieces), shared; each run per settings ------------------

TREEBANK_FEATURE_ENTRIES = 2


@st.cache_data(show_spinner="Reading the file…", max_entries=8)
def labelled_file(data: bytes, name: str) -> Treebank | str:
    return tr.read_labelled(data, name)


@st.cache_resource(show_spinner=False, max_entries=TREEBANK_FEATURE_ENTRIES, ttl=HOUR)
def treebank_features(source, folder, revision, data_key: tuple, _data: tr.ProbeData, pieces: str,
                      split_seed: int) -> TreebankFeatures:
    """Every layer's word vectors of the data's training and test sentences (one file: split by split_seed).
    `data_key` names `_data`, which is not hashed (whole treebanks, on every rerun)."""
    loaded = load_model(source, folder, revision)
    bar = st.progress(0.0, "Starting…")
    features = extract_train_test(loaded.model, loaded.tokenizer, _data.train, _data.test,
                                  settings=ProbeSettings(pieces=pieces, seed=split_seed),
                                  progress=lambda done, what: bar.progress(min(done, 1.0), what))
    bar.empty()
    return features


@st.cache_data(show_spinner=False, max_entries=16)
def treebank_probes(source, folder, revision, data_key: tuple, _data: tr.ProbeData, tasks: tuple[str, ...],
                    pieces: str, seed: int, mdl: bool) -> tr.TreebankRun:
    """The probes of `tasks` trained and scored on the data's word vectors (see treebank_features). Raises
    bert.errors.BertError when they cannot run on this data."""
    split_seed = seed if _data.test is None else 0  # two files: the seed does not touch the sentences
    features = treebank_features(source, folder, revision, data_key, _data, pieces, split_seed)
    loaded = load_model(source, folder, revision)
    bar = st.progress(0.5, "Training the probes…")
    report = probe_features(features, list(tasks), ProbeSettings(pieces=pieces, seed=seed, mdl=mdl), source,
                            model_device(loaded.model), lambda done, what: bar.progress(min(done, 1.0), what))
    bar.progress(1.0, "Drawing the trees…")
    result = tr.run_result(report)
    bar.empty()
    return result


@st.cache_data(show_spinner="Averaging every head's output over 200 built-in sentences (once per model)…", max_entries=4)
def mean_head_outputs(source, folder, revision) -> np.ndarray:
    loaded = load_model(source, folder, revision)
    return as_numpy(ablation.mean_head_outputs(loaded.model, loaded.tokenizer, builtin_sentences(200)))


@st.cache_data(show_spinner=False, max_entries=16, hash_funcs={list: lambda s: _digest(s)})
def corpus_statistics(source, folder, revision, sentences: list, pairs: bool):
    loaded = load_model(source, folder, revision)
    bar = st.progress(0.0, "Starting…")
    result = head_stats.corpus_head_statistics(loaded.model, loaded.tokenizer, sentences, pairs=pairs,
                                              progress=lambda done, what: bar.progress(min(done, 1.0), what))
    bar.empty()
    return result


@st.cache_data(show_spinner="Solving the max-flow problems…", max_entries=16)
def attention_flow(attention: np.ndarray, layer: int) -> np.ndarray:
    return rollout.attention_flow(rollout.head_average(attention), layer=layer)


@st.cache_data(show_spinner=False, max_entries=32)
def logit_lens(source, folder, revision, encoding, top_k: int):
    loaded = load_model(source, folder, revision)
    return lens_analysis.logit_lens(loaded.model, loaded.tokenizer, encoding, top_k=top_k)


@st.cache_data(show_spinner="Ablating every head, one per row of a batch…", max_entries=32)
def head_ranking(source, folder, revision, encoding, position: int, mode: str) -> ablation.HeadRanking:
    loaded = load_model(source, folder, revision)
    mean_z = None
    if mode == "mean":
        import torch

        mean_z = torch.from_numpy(mean_head_outputs(source, folder, revision))
    return ablation.rank_heads(loaded.model, loaded.tokenizer, encoding, position=position, mode=mode, mean_z=mean_z)


@st.cache_data(show_spinner="Computing attributions…", max_entries=32)
def saliency(source, folder, revision, encoding, method: str, position: int, target_id: int, steps: int, head: str = "mlm"):
    loaded = load_model(source, folder, revision)
    return attributions.saliency(loaded.model, loaded.tokenizer, encoding, method, position, target_id, steps=steps, output=head)


# ---- corpus search: an index per (model, corpus), shared; searches per query ------------------------------------


@st.cache_resource(show_spinner=False, max_entries=4, ttl=3600, hash_funcs={cs.Corpus: lambda c: c.digest})
def corpus_index(source, folder, revision, corpus: cs.Corpus) -> CorpusIndex:
    """Every token of a corpus at every layer: built once per (model, text), with a progress bar, then shared by
    every session and never changed. Keyed like cache.load_model by the model's source and revision."""
    text = "the built-in sentences (once per model)" if corpus.digest == cs.BUILTIN else "your text"
    return cs.build(load_model(source, folder, revision), corpus, f"Indexing every token of {text} at every layer")


@st.cache_resource(show_spinner=False, max_entries=4, ttl=3600, hash_funcs={cs.Corpus: lambda c: c.digest})
def head_index(source, folder, revision, corpus: cs.Corpus, layer: int) -> CorpusIndex:
    """Every head's output in `layer` (1 .. N) for every token of a corpus: built on first use per (model, text,
    layer), then shared like corpus_index."""
    loaded = load_model(source, folder, revision)
    heads = [(layer, head) for head in range(loaded.model.config.num_heads)]
    return cs.build(loaded, corpus, f"Indexing what each head of layer {layer} passes on, for every token of the "
                    "sentences", layers=[], heads=heads)


@st.cache_data(show_spinner="Searching every layer…", max_entries=64, hash_funcs={cs.Corpus: lambda c: c.digest})
def neighbours(source, folder, revision, corpus: cs.Corpus, text: str, position: int, k: int) -> dict[int, list[Hit]]:
    """layer -> the k tokens of the corpus nearest to the token at `position` of `text`, for every indexed layer
    (one forward pass for the query, then one search per layer)."""
    loaded = load_model(source, folder, revision)
    searched = corpus_index(source, folder, revision, corpus)
    vectors = searched.token_vectors(loaded.model, loaded.tokenizer, text, position)  # one pass, every layer
    return {layer: searched.search(layer, vectors[layer], k) for layer in searched.layers}


@st.cache_data(show_spinner="Searching every head…", max_entries=64, hash_funcs={cs.Corpus: lambda c: c.digest})
def head_neighbours(source, folder, revision, corpus: cs.Corpus, text: str, position: int, k: int, layer: int) -> dict[int, list[Hit]]:
    """head -> the k tokens of the corpus whose output from that head of `layer` is nearest to the query token's."""
    loaded = load_model(source, folder, revision)
    searched = head_index(source, folder, revision, corpus, layer)
    vectors = searched.token_vectors(loaded.model, loaded.tokenizer, text, position)  # one pass, every head
    return {head: searched.search(layer, vectors[(layer, head)], k, head=head) for _, head in searched.heads}


# ---- one word, many contexts ------------------------------------------------------------------------------------


@st.cache_data(show_spinner="Finding the word in every sentence and running the model…", max_entries=32)
def word_contexts(source, folder, revision, word: str, sentences: tuple[str, ...]) -> wc.WordResult:
    """Raises WordNotFoundError (not cached) when a sentence lacks the word."""
    loaded = load_model(source, folder, revision)
    contexts = self_similarity.word_contexts(loaded.model, loaded.tokenizer, word, list(sentences))
    return wc.WordResult(layer_names(loaded.model), contexts.self_similarity().numpy(), contexts.cosines().numpy(),
                      contexts.pieces)


@st.cache_data(show_spinner=f"Measuring the baseline on {wc.BASELINE_SENTENCES} built-in sentences (once per model)…",
               max_entries=4)
def anisotropy_baseline(source, folder, revision) -> np.ndarray:
    loaded = load_model(source, folder, revision)
    texts = [s.text for s in builtin_sentences(wc.BASELINE_SENTENCES)]
    return self_similarity.anisotropy_baseline(loaded.model, loaded.tokenizer, texts, wc.BASELINE_SAMPLES, wc.BASELINE_SEED).numpy()


# ---- sentence tasks and model comparison -------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def next_sentence(source, folder, revision, text: str, pair: str, truncate: bool) -> tasks.NextSentence:
    loaded = load_model(source, folder, revision)
    return tasks.next_sentence(loaded.model, loaded.tokenizer, text, pair, loaded.summary.max_positions, truncate)


@st.cache_data(show_spinner=False, max_entries=64)
def class_probabilities(source, folder, revision, encoding: Encoding) -> pd.DataFrame:
    return tasks.class_probabilities(load_model(source, folder, revision).model, encoding)


@st.cache_data(show_spinner=False, max_entries=64)
def token_labels(source, folder, revision, encoding: Encoding) -> pd.DataFrame:
    return tasks.token_labels(load_model(source, folder, revision).model, encoding)


@st.cache_data(show_spinner=False, max_entries=16)
def vocabulary_problem(key_a: tuple, key_b: tuple) -> str | None:
    """Why the two models cannot read the same input, or None when they share a vocabulary."""
    a, b = load_model(*key_a), load_model(*key_b)
    try:
        check_comparable(a.model, b.model, a.tokenizer, b.tokenizer)
    except InvalidInputError as error:
        return str(error)
    return None


@st.cache_data(show_spinner="Running both models over the sentences…", max_entries=16)
def model_comparison(key_a: tuple, key_b: tuple, sentences: tuple[str, ...]) -> Comparison:
    """key_a, key_b: (source, folder, revision). Raises bert.errors.InvalidInputError for different vocabularies."""
    a, b = load_model(*key_a), load_model(*key_b)
    return compare_models(a.model, b.model, a.tokenizer, list(sentences), tokenizer_b=b.tokenizer)


@st.cache_data(show_spinner="Working out this step for the loaded model…", max_entries=64)
def lesson_step(source, folder, revision, lesson: Lesson, index: int, sentence: tuple[str, str, bool],
                escape_markdown: bool = True) -> ResolvedStep:
    """A lesson's step for this model; `sentence` (text, pair, truncate) is the session's, for steps that set none."""
    from viz_app.lessons.resolve import SIDEBAR_KEYS, resolve
    from viz_app.widgets import escape_markdown as escape

    session = dict(zip(SIDEBAR_KEYS, sentence))
    return resolve(lesson, index, load_model(source, folder, revision), session,
                   escape if escape_markdown else (lambda text: text))


@st.cache_data(show_spinner="Drawing this step's figures…", max_entries=64)
def lesson_charts(source, folder, revision, page: str, state: dict) -> list[Chart]:
    """The figures a lesson's step shows for this model (the page's main charts with the step's settings)."""
    from viz_app.lessons.views import view_charts

    return view_charts(page, load_model(source, folder, revision), state)


@st.cache_resource(show_spinner=False)
def training_room() -> TrainingRoom:
    """The server's one room for live tiny-BERT runs: one run at a time, finished runs kept per settings."""
    return TrainingRoom()
