"""Charts of the page "One pass, step by step" (viz_app/specs/one_pass.py): a few named rows of real numbers as a
small heatmap (each value on hover), and the overview of how much each block changes each token's vector."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import ATTENTION_SCALE, HIGHLIGHT_COLOUR, Chart, heatmap_height, layout, token_labels
from viz_app.charts.query_key import DIVERGING


def number_rows(rows: dict[str, np.ndarray], title: str, name: str, caption: str = "",
                columns: list[str] | None = None, shares: bool = False) -> Chart:
    """Each row a vector of the pass (a token's embedding, a query, a softmax row), one cell per number, its value
    on hover; on a diverging scale centred on 0, or (`shares`) from 0 up. `columns`: the column labels (tokens),
    else the dimensions 0, 1, 2, ... Rows of different lengths (ALBERT's 128-wide embeddings beside its
    768-wide layers) end blank. The CSV has the numbers, one row per vector."""
    labels = list(rows)
    width = max(len(values) for values in rows.values())
    matrix = np.full((len(rows), width), np.nan)
    for row, values in enumerate(rows.values()):
        matrix[row, :len(values)] = values
    x = token_labels(columns) if columns is not None else list(range(matrix.shape[1]))
    shown = np.where(np.isfinite(matrix), matrix, np.nan)  # a masked score (the dtype's minimum) is left blank
    limit = max(float(np.nanmax(np.where(np.abs(shown) > 1e30, np.nan, np.abs(shown)), initial=0)), 1e-6)
    scale = dict(colorscale=ATTENTION_SCALE, zmin=0) if shares else dict(colorscale=DIVERGING, zmid=0, zmin=-limit, zmax=limit)
    figure = go.Figure(go.Heatmap(
        z=np.where(np.abs(shown) > 1e30, np.nan, shown), x=x, y=token_labels(labels), **scale,
        hovertemplate="%{y}<br>" + ("%{x}" if columns is not None else "dimension %{x}") + ": %{z:.4f}<extra></extra>"))
    layout(figure, title, height=heatmap_height(len(labels), per_row=30, least=150, most=520),
           yaxis=dict(autorange="reversed", type="category"),
           xaxis=dict(type="category", tickangle=-45) if columns is not None else dict(title="dimension"))
    data = pd.DataFrame(matrix, index=labels, columns=columns if columns is not None else None)
    return Chart(figure, data, name, caption, keep_index=True)


def change_overview(changes: np.ndarray, tokens: list[str], token: int, blocks: tuple[str, ...]) -> Chart:
    """[layer, block, seq] -> a heatmap, one row per block in the order the pass runs them ("layer 0 attention",
    "layer 0 MLP", ...), one column per token, the picked token's column outlined: how far each block moves each
    token's vector (||after - before|| / ||before||)."""
    layers = changes.shape[0]
    rows = [f"layer {layer} {block}" for layer in range(layers) for block in blocks]
    matrix = changes.reshape(layers * len(blocks), -1)
    labels = token_labels(tokens)
    figure = go.Figure(go.Heatmap(
        z=matrix, x=labels, y=rows, colorscale=ATTENTION_SCALE, zmin=0, colorbar=dict(title="change", thickness=12),
        hovertemplate="%{y}<br>%{x}: changed by %{z:.1%} of its length<extra></extra>"))
    figure.add_shape(type="rect", xref="x", yref="paper", x0=token - 0.5, x1=token + 0.5, y0=0, y1=1,
                     line=dict(color=HIGHLIGHT_COLOUR, width=2))
    layout(figure, f"How much each block changes each token's vector (outlined: {tokens[token]})",
           height=heatmap_height(len(rows), per_row=18, least=260, most=700),
           yaxis=dict(autorange="reversed", type="category"), xaxis=dict(type="category", tickangle=-45))
    data = pd.DataFrame(matrix, index=rows, columns=[f"{i} {t}" for i, t in enumerate(tokens)])
    return Chart(figure, data, "one_pass_overview",
                 "Each cell: the length of what the block added (after the residual and, in BERT's post-LN layers, "
                 "the LayerNorm) over the length of the vector before it.", keep_index=True)
