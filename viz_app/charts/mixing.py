"""Context mixing (bert/analysis/attention/mixing.py): a [query, key] matrix as a heatmap, and one query's row as
bars. Arrays in, a Chart out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import ATTENTION_SCALE, WORD_COLOUR, Chart, heatmap_height, layout, row_labels, token_labels

SIGNED_SCALE = "RdBu"  # a logit's parts: red pulls it down, blue up, white nothing


def mixing_heatmap(matrix: np.ndarray, tokens: list[str], title: str, name: str, caption: str = "",
                   signed: bool = False) -> Chart:
    """Row i: what token i's output takes from each input token (the columns)."""
    labels = token_labels(tokens)
    colours = dict(colorscale=SIGNED_SCALE, zmid=0) if signed else dict(colorscale=ATTENTION_SCALE, zmin=0)
    figure = go.Figure(go.Heatmap(z=matrix, x=labels, y=labels, **colours,
                                  hovertemplate="%{y} takes from %{x}<br>%{z:.3f}<extra></extra>"))
    layout(figure, title, height=heatmap_height(len(tokens)), yaxis=dict(autorange="reversed", title="output (query)"),
           xaxis=dict(tickangle=-45, title="input token (key)"))
    rows = row_labels(tokens)
    return Chart(figure, pd.DataFrame(matrix, index=rows, columns=rows), name, caption, keep_index=True)


def row_bars(values: np.ndarray, tokens: list[str], title: str, name: str, caption: str = "") -> Chart:
    """One output's row: a bar per input token, in sentence order."""
    figure = go.Figure(go.Bar(x=token_labels(tokens), y=values, marker_color=WORD_COLOUR,
                              hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    layout(figure, title, height=300, xaxis=dict(tickangle=-45))
    return Chart(figure, pd.DataFrame({"position": range(len(tokens)), "token": tokens, "value": values}), name, caption)
