"""The context-mixing page's view: for one method, or two side by side, a layer's [query, key] matrix, the whole
model's, and one query token's row as bars; attention flow (Abnar & Zuidema 2020) when it was computed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from bert.analysis.attention.mixing import METHODS, ContextMixing
from viz_app.charts.base import Chart
from viz_app.charts.mixing import mixing_heatmap, row_bars
from viz_app.charts.token_matrix import token_heatmap
from viz_app.specs.rollout import NO_SECOND
from viz_app.views import setting, within

WHOLE = {  # how each method's whole-model matrix is made, for the captions
    "attention": "rollout with 0.5·A + 0.5·I per layer (Abnar & Zuidema 2020)",
    "globenc": "rollout of the row-normalised layers; the residual is inside each",
    "alti": "rollout of the layers; the residual is inside each",
    "value-zeroing": "rollout of the layers; the residual is inside each",
    "decompx": "each position's predicted logit split over the input tokens (red lowers it, blue raises it)",
}


@dataclass(frozen=True)
class MixingSettings:
    method: str  # a key of METHODS
    compare: str  # another key of METHODS, or NO_SECOND
    layer: int  # 0 is the first transformer layer
    query: int  # the token whose row is drawn as bars

    @classmethod
    def from_state(cls, state: Mapping[str, Any], num_layers: int, tokens: list[str]) -> "MixingSettings":
        """The settings a link or a lesson step gives, made valid for this model and input as the widgets would."""
        method = setting(state, "mixing_method")
        compare = setting(state, "mixing_compare")
        method = method if method in METHODS else "attention"
        compare = compare if compare in METHODS or compare == NO_SECOND else NO_SECOND
        query = setting(state, "mixing_query")
        default_query = tokens.index("[MASK]") if "[MASK]" in tokens else min(1, len(tokens) - 1)
        return cls(method, compare, within(setting(state, "rollout_layer"), num_layers, num_layers - 1),
                   within(query, len(tokens), default_query))


def method_charts(settings: MixingSettings, tokens: list[str], mixing: ContextMixing, side: str) -> dict[str, Chart]:
    """One method's charts, named "<side>_layer", "<side>_row" and, where it has one, "<side>_whole" and
    "<side>_whole_row"."""
    info, layer, query = METHODS[mixing.method], settings.layer, settings.query
    unit = "share of the row" if info.rows_sum_to_one else "norm"
    name = mixing.method.replace("-", "_")
    matrix = mixing.layers[layer]
    charts = {
        f"{side}_layer": mixing_heatmap(matrix, tokens, f"{info.title}, layer {layer}", f"{name}_layer_{layer}",
                                        f"Row i: what token i's output takes from each input token ({unit}); {info.paper}."),
        f"{side}_row": row_bars(matrix[query], tokens, f"{info.title}, layer {layer}: what {tokens[query]} takes",
                                f"{name}_layer_{layer}_row_{query}"),
    }
    whole = mixing.whole_model
    if whole is not None:
        title, caption = f"{info.title}, whole model", WHOLE[mixing.method] + "."
        if whole.shape[0] == len(tokens):
            charts[f"{side}_whole"] = mixing_heatmap(whole, tokens, title, f"{name}_whole", caption,
                                                     signed=mixing.method == "decompx")
            row, what, caption = whole[query], f"what {tokens[query]} takes", ""
        else:  # a classifier's DecompX: one row, the predicted class's logit
            row, what = whole[0], "the predicted class's logit"
        charts[f"{side}_whole_row"] = row_bars(row, tokens, f"{title}: {what}", f"{name}_whole_row_{query}", caption)
    return charts


def mixing_view(settings: MixingSettings, tokens: list[str], first: ContextMixing, second: ContextMixing | None = None,
                flow: np.ndarray | None = None) -> dict[str, Chart]:
    """"first_*" for settings.method, "second_*" for settings.compare when given, "flow" when computed."""
    charts = method_charts(settings, tokens, first, "first")
    if second is not None:
        charts |= method_charts(settings, tokens, second, "second")
    if flow is not None:
        charts["flow"] = token_heatmap(flow, tokens, f"Attention flow up to layer {settings.layer}", "attention_flow")
    return charts
