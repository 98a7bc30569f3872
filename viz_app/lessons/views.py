"""The figures a page shows for a given state, built in plain Python (no Streamlit): what a lesson step shows in
the presenter view and what an exported lesson contains. The same chart builders as the pages themselves.

`view_charts(page, loaded, state)` returns the page's main charts, or an empty list for a page whose figures are
only drawn in the app (the step then says to open the page).
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Mapping

import numpy as np

from bert.analysis.causal import ablation
from bert.analysis.representations.embedding_subspaces import decompose
from bert.analysis.representations.logit_lens import logit_lens
from bert.data import builtin_sentences
from viz_app import forward as fw
from viz_app import probe_runs
from viz_app.charts import attention as attention_charts
from viz_app.charts import embeddings as embedding_charts
from viz_app.charts.base import Chart
from viz_app.charts.prediction import prediction_bars
from viz_app.models import LoadedModel
from viz_app.state import LINK_PARAMS
from viz_app.tables import embedding_tables, weight_tables
from viz_app.views.probes import ProbeViewSettings, probes_view


class View:
    """One page's state for one model: the values the page would read, its input, the forward pass."""

    def __init__(self, loaded: LoadedModel, state: Mapping[str, Any]):
        self.loaded, self.state = loaded, state
        self.prepared = fw.prepare_input(loaded.tokenizer, self["text"], self["pair"], self["masks"], self["truncate"],
                                         loaded.summary.max_positions)

    def __getitem__(self, key: str):
        return self.state.get(key, LINK_PARAMS[key].default)

    def result(self) -> fw.ForwardResult:
        return fw.record(self.loaded.model, self.loaded.tokenizer, self.prepared)

    def within(self, key: str, count: int, default: int) -> int:
        """A layer, head or position that exists in this model and input (as the page's picker would clamp it)."""
        value = self[key]
        return value if isinstance(value, int) and 0 <= value < count else default

    def mask_position(self, key: str) -> int | None:
        masks = list(self.prepared.all_masks)
        return self[key] if self[key] in masks else (masks[0] if masks else None)


def _prediction(view: View) -> list[Chart]:
    if not view.loaded.model.has_mlm_head:
        return []
    return [prediction_bars(mask, view["top_k"], number) for number, mask in enumerate(view.result().masks, 1)]


def _attention(view: View) -> list[Chart]:
    result, summary = view.result(), view.loaded.summary
    layer, head = view.within("layer", summary.layers, 0), view.within("head", summary.heads, 0)
    positions = [i for i, special in enumerate(result.special) if not (view["hide_special"] and special)]
    focus = view["focus"] if view["focus"] in positions else positions[min(1, len(positions) - 1)]
    pattern = result.attention[layer, head]
    return [attention_charts.pattern_heatmap(pattern, result.tokens, positions, layer, head),
            attention_charts.attention_bars(pattern[focus], result.tokens, positions, focus, layer, head),
            attention_charts.heads_overview(result.attention, positions, (layer, head))]


def _embeddings(view: View) -> list[Chart]:
    from bert.analysis.representations.embedding_subspaces import subspace_report

    result, model = view.result(), view.loaded.model
    parts = decompose(result.embeddings["token"], result.embeddings["position"], result.embeddings["segment"])
    tables = _tables(view.loaded)
    k = view.within("k", min(64, view.loaded.summary.hidden) + 1, LINK_PARAMS["k"].default) or 1
    report = subspace_report(weight_tables(model), k, directions=tables.directions)
    return [embedding_charts.part_norms(parts, result.tokens), embedding_charts.part_cosines(parts, result.tokens),
            embedding_charts.position_cosines(tables.position_cosines), embedding_charts.angle_curves(report),
            embedding_charts.surviving_matrix(report)]


_TABLES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> its EmbeddingTables (seconds to make)


def _tables(loaded: LoadedModel):
    """The embedding tables' analysis, once per model (an exported lesson shows it in several steps)."""
    if loaded.model not in _TABLES:
        tokenizer = loaded.tokenizer
        vocabulary = [tokenizer.id_to_token(i) or "" for i in range(min(tokenizer.vocab_size, loaded.summary.vocab))]
        _TABLES[loaded.model] = embedding_tables(loaded.model, vocabulary)
    return _TABLES[loaded.model]


def _probes(view: View) -> list[Chart]:
    """The built-in sentences (or the first sentences of UD EWT) with the step's tasks; a file or a text to upload
    has no figure here."""
    if view["probes_source"] == "ud_ewt":
        count = view.state.get("probes_ud_count", probe_runs.UD_SENTENCES)
        data, tasks = probe_runs.ud_ewt_data(count if isinstance(count, int) and count >= 10 else probe_runs.UD_SENTENCES), view["probe_treebank_tasks"]
    elif view["probes_source"] == "wordnet":
        data, tasks = probe_runs.builtin_data(min(max(view["probes_count"], 20), len(builtin_sentences()))), view["probe_tasks"]
    else:
        return []
    tasks = [task for task in tasks if task in data.tasks]
    if not tasks:
        return []
    run = probe_runs.probe_run(view.loaded.model, view.loaded.tokenizer, data, tasks, view["probe_pieces"],
                               view["probe_seed"], view["probe_mdl"])
    return list(probes_view(ProbeViewSettings.from_state(view.state), run).values())


def _logit_lens(view: View) -> list[Chart]:
    from viz_app.charts.logit_lens import lens_chart

    position = view.mask_position("lens_mask")
    if position is None or not view.loaded.model.has_mlm_head:
        return []
    lenses = logit_lens(view.loaded.model, view.loaded.tokenizer, view.prepared.masked, 5)
    return [lens_chart(next(lens for lens in lenses if lens.position == position), view.prepared.masked.tokens)]


def _head_ablation(view: View) -> list[Chart]:
    from viz_app.charts.head_ablation import head_effect_heatmap

    position = view.mask_position("ablation_mask")
    if position is None or not view.loaded.model.has_mlm_head:
        return []
    mean_z = None
    if view["ablation_mode"] == "mean":
        mean_z = ablation.mean_head_outputs(view.loaded.model, view.loaded.tokenizer, builtin_sentences(200))
    ranking = ablation.rank_heads(view.loaded.model, view.loaded.tokenizer, view.prepared.masked, position,
                                  mode=view["ablation_mode"], mean_z=mean_z)
    return [head_effect_heatmap(ranking)]


def _sentence_tasks(view: View) -> list[Chart]:
    from viz_app.charts.sentence_tasks import probability_chart
    from viz_app.sentence_tasks import class_probabilities

    if "classify" not in view.loaded.model.sentence_heads:
        return []
    table = class_probabilities(view.loaded.model, view.prepared.base)
    top = str(table["label"][int(np.argmax(table["probability"]))])
    return [probability_chart(table, view["tasks_class"] if view["tasks_class"] in list(table["label"]) else top)]


BUILDERS: dict[str, Callable[[View], list[Chart]]] = {
    "prediction": _prediction,
    "attention": _attention,
    "embeddings": _embeddings,
    "probes": _probes,
    "logit_lens": _logit_lens,
    "head_ablation": _head_ablation,
    "sentence_tasks": _sentence_tasks,
}


def view_charts(page: str, loaded: LoadedModel, state: Mapping[str, Any]) -> list[Chart]:
    """The page's charts for this state; [] for a page drawn only in the app, or an input the page would refuse.
    Raises viz_app.forward.InputProblem for an input that cannot be run (empty, too long)."""
    builder = BUILDERS.get(page)
    return builder(View(loaded, state)) if builder else []
