"""The rollout page's view: one layer's head-averaged attention, the rollout up to it, and the attention flow."""
from __future__ import annotations

import numpy as np

from bert.analysis.attention import rollout
from viz_app.charts.base import Chart
from viz_app.charts.token_matrix import token_heatmap
from viz_app.forward import ForwardResult


def rollout_view(layer: int, result: ForwardResult, flow: np.ndarray | None = None) -> dict[str, Chart]:
    """"raw", "rollout", and "flow" when the attention flow up to `layer` is given (it takes a while)."""
    tokens = list(result.tokens)
    average = rollout.head_average(result.attention)  # [layer, query, key]
    charts = {
        "raw": token_heatmap(average[layer], tokens, f"Raw attention, layer {layer} (mean of heads)", "raw_attention"),
        "rollout": token_heatmap(rollout.attention_rollout(average)[layer], tokens, f"Rollout up to layer {layer}",
                                 "attention_rollout", "Rows: positions after this layer; columns: input tokens."),
    }
    if flow is not None:
        charts["flow"] = token_heatmap(flow, tokens, f"Attention flow up to layer {layer}", "attention_flow")
    return charts
