"""A token-by-token (or sentence-by-sentence) heatmap: rollout, attention flow, a word's contexts."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import ATTENTION_SCALE, Chart, heatmap_height, layout, token_labels


def token_heatmap(matrix: np.ndarray, tokens: list[str], title: str, name: str, caption: str = "") -> Chart:
    labels = token_labels(tokens)
    figure = go.Figure(go.Heatmap(z=matrix, x=labels, y=labels, colorscale=ATTENTION_SCALE, zmin=0,
                                  hovertemplate="from %{y}<br>to %{x}<br>%{z:.3f}<extra></extra>"))
    layout(figure, title, height=heatmap_height(len(tokens)), yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))
    rows = [f"{i} {t}" for i, t in enumerate(tokens)]
    return Chart(figure, pd.DataFrame(matrix, index=rows, columns=rows), name, caption, keep_index=True)
