"""Charts for the model comparison: CKA layer by layer, CKA between every pair of layers, attention change per head."""
from __future__ import annotations

from typing import TYPE_CHECKING

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.representations.compare import Comparison

from bert.layers import head_short_label, layer_labels
from viz_app.charts.base import ATTENTION_SCALE, HIGHLIGHT_COLOUR, Chart, heatmap_height, layout


def cka_by_layer(comparison: Comparison, name_a: str, name_b: str) -> Chart:
    """Same-layer CKA, embeddings to the top (both models have the same depth)."""
    values = comparison.layer_cka
    figure = go.Figure(go.Scatter(x=comparison.layers_a, y=values, mode="lines+markers", line=dict(color=HIGHLIGHT_COLOUR),
                                  hovertemplate="%{x}: CKA %{y:.3f}<extra></extra>"))
    layout(figure, f"How similar {name_a} and {name_b} are, layer by layer (linear CKA; 1 = same up to rotation and scale)",
           height=380, xaxis=dict(title="layer", type="category"), yaxis=dict(title="CKA", range=[0, 1.05]))
    data = pd.DataFrame({"layer": comparison.layers_a, "cka": values})
    return Chart(figure, data, "cka_by_layer")


def cka_matrix(comparison: Comparison, name_a: str, name_b: str) -> Chart:
    figure = go.Figure(go.Heatmap(
        z=comparison.cka, x=comparison.layers_b, y=comparison.layers_a, zmin=0, zmax=1, colorscale=ATTENTION_SCALE,
        colorbar=dict(title="CKA", thickness=12), hovertemplate="%{y} of A vs %{x} of B: CKA %{z:.3f}<extra></extra>",
    ))
    layout(figure, "CKA between every layer of A (rows) and every layer of B (columns)",
           height=heatmap_height(len(comparison.layers_a), per_row=34, least=320),
           xaxis=dict(title=html.escape(f"B: {name_b}"), type="category"),
           yaxis=dict(title=html.escape(f"A: {name_a}"), type="category", autorange="reversed"))
    data = pd.DataFrame(comparison.cka, index=pd.Index(comparison.layers_a, name="A \\ B"), columns=comparison.layers_b)
    return Chart(figure, data, "cka_matrix", keep_index=True)


def attention_change(comparison: Comparison) -> Chart:
    js = comparison.attention_js
    layers, heads = js.shape
    figure = go.Figure(go.Heatmap(
        z=js, x=[head_short_label(h) for h in range(heads)], y=layer_labels(layers), zmin=0,
        zmax=max(float(js.max()), 1e-6), colorscale=ATTENTION_SCALE, colorbar=dict(title="JS distance", thickness=12),
        hovertemplate="%{y}, %{x}: %{z:.3f}<extra></extra>",
    ))
    layout(figure, "How much each head's attention changed (Jensen-Shannon distance; 0 = the same pattern, 1 = disjoint)",
           height=heatmap_height(layers, per_row=34, least=300), xaxis=dict(type="category"),
           yaxis=dict(type="category", autorange="reversed"))
    data = pd.DataFrame({"layer": np.repeat(np.arange(layers), heads), "head": np.tile(np.arange(heads), layers),
                         "js_distance": js.flatten()})
    return Chart(figure, data, "attention_change")
