"""Charts for the MLP page: neuron activations (after GELU) of one layer, by token."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, heatmap_height, layout, row_labels, token_labels


def strongest_neurons(activations: np.ndarray, count: int) -> np.ndarray:
    """[seq, neuron] -> the `count` neurons with the highest peak activation on this input, strongest first."""
    peak = activations.max(axis=0)
    count = min(count, len(peak))
    best = np.argpartition(-peak, count - 1)[:count]
    return best[np.argsort(-peak[best])]


def activation_heatmap(
    activations: np.ndarray, tokens: list[str], neurons: np.ndarray, layer: int, total: int
) -> Chart:
    """activations [seq, neuron] of one layer, for the given neurons (columns, in that order)."""
    shown = activations[:, neurons]
    labels = token_labels(tokens)
    names = [f"n{n}" for n in neurons]
    peak = float(shown.max(initial=0))
    limit = max(float(np.percentile(shown, 99.5)) if shown.size else 0.0, 1e-6)  # a rare outlier saturates
    low = min(float(shown.min(initial=0)), 0.0)  # GELU's dip: at most -0.17
    figure = go.Figure(
        go.Heatmap(
            z=shown,
            x=names,
            y=labels,
            colorscale=_activation_scale(low, limit),
            zmin=low,
            zmax=limit,
            colorbar=dict(title="GELU(x)", thickness=12),
            hovertemplate="<b>%{y}</b>, neuron %{x}<br>activation %{z:.3f}<extra></extra>",
        )
    )
    if len(neurons) < total:
        shown_note = f"the {len(neurons)} of {total} neurons that fire hardest on this input"
    else:
        shown_note = f"all {total} neurons"
    layout(
        figure,
        f"Layer {layer} MLP: {shown_note}",
        height=heatmap_height(len(tokens), per_row=20, least=320, most=820),
        xaxis=dict(title="neuron", type="category", tickangle=-60),
        yaxis=dict(type="category", autorange="reversed"),
    )
    data = pd.DataFrame(shown, index=pd.Index(row_labels(tokens), name="token \\ neuron"), columns=names)
    caption = ""
    if peak > limit * 1.01:
        caption = f"Colours saturate at {limit:.2f} (the largest value is {peak:.2f}); hover for exact values."
    return Chart(figure, data, f"mlp_L{layer}_neurons", caption=caption, keep_index=True)


def top_neurons_for_token(
    activations: np.ndarray, tokens: list[str], position: int, layer: int, count: int = 20
) -> Chart:
    """The neurons that fire hardest on one token, as bars."""
    values = activations[position]
    best = strongest_neurons(values[None, :], count)
    names = [f"n{n}" for n in best]
    figure = go.Figure(
        go.Bar(
            x=values[best],
            y=names,
            orientation="h",
            marker_color=WORD_COLOUR,
            hovertemplate="neuron %{y}: %{x:.3f}<extra></extra>",
        )
    )
    layout(
        figure,
        f"Top {len(best)} neurons for “{tokens[position]}” (layer {layer})",
        height=max(260, 60 + 22 * len(best)),
        xaxis=dict(title="activation (after GELU)"),
        yaxis=dict(type="category", autorange="reversed"),
    )
    data = pd.DataFrame({"neuron": best, "activation": values[best].astype(float)})
    return Chart(figure, data, f"mlp_L{layer}_top_neurons_token{position}")


def neuron_by_token(
    activations: np.ndarray, tokens: list[str], neuron: int, layer: int, highlight: int | None = None
) -> Chart:
    """One neuron's activation on every token of the input."""
    values = activations[:, neuron]
    labels = token_labels(tokens)
    colours = [HIGHLIGHT_COLOUR if i == highlight else WORD_COLOUR for i in range(len(tokens))]
    figure = go.Figure(go.Bar(x=labels, y=values, marker_color=colours, hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    layout(
        figure,
        f"Neuron {neuron} of layer {layer}, on each token",
        height=340,
        xaxis=dict(type="category", tickangle=-60),
        yaxis=dict(title="activation (after GELU)", zeroline=True),
    )
    data = pd.DataFrame({"position": range(len(tokens)), "token": tokens, "activation": values.astype(float)})
    return Chart(figure, data, f"mlp_L{layer}_neuron{neuron}")


def _activation_scale(low: float, high: float) -> list:
    """White at 0, reds up to `high`, a light blue for GELU's small negative values (not stretched to look big)."""
    zero = -low / (high - low) if high > low else 0.0
    return [[0.0, "#d6e6f4"], [zero, "#ffffff"], [zero + (1 - zero) * 0.45, "#fb6a4a"], [1.0, "#67000d"]]
