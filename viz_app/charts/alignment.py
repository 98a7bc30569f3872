"""The page "Where is the variable?"'s charts: an IIA grid (layer by position) and a direction's projection over a
sentence's tokens (layer by token). Arrays and labels in, a Chart out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, heatmap_height, layout, token_labels


def iia_grid(values: np.ndarray, layers: list[str], positions: list[str], title: str, name: str, caption: str) -> Chart:
    """Held-out IIA ([layer, position], 0 to 1) as a heatmap, each cell's value written in it."""
    values = np.asarray(values, dtype=float)
    figure = go.Figure(go.Heatmap(
        z=values, x=positions, y=layers, zmin=0, zmax=1, colorscale="Greens", colorbar=dict(title="IIA"),
        text=[[f"{v:.2f}" for v in row] for row in values], texttemplate="%{text}",
        hovertemplate="%{y}, %{x}<br>IIA %{z:.3f}<extra></extra>",
    ))
    layout(figure, title, height=heatmap_height(len(layers), 34), yaxis=dict(autorange="reversed"))
    data = pd.DataFrame([{"layer": layer, "position": position, "iia": float(values[i, j])}
                         for i, layer in enumerate(layers) for j, position in enumerate(positions)])
    return Chart(figure, data, name, caption)


def projection_heatmap(values: np.ndarray, rows: list[str], tokens: list[str], title: str, name: str, caption: str) -> Chart:
    """Each token's vector along a direction ([row, token]; a row per layer) on a red-blue scale centred on 0."""
    values = np.asarray(values, dtype=float)
    bound = max(float(np.abs(values).max()) if values.size else 1.0, 1e-6)
    figure = go.Figure(go.Heatmap(
        z=values, x=token_labels(tokens), y=rows, zmid=0, zmin=-bound, zmax=bound, colorscale="RdBu_r",
        colorbar=dict(title="along it"), hovertemplate="%{y}, token %{x}<br>%{z:.3f}<extra></extra>",
    ))
    layout(figure, title, height=heatmap_height(len(rows), 34), yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))
    data = pd.DataFrame([{"layer": row, "token": f"{j} {token}", "projection": float(values[i, j])}
                         for i, row in enumerate(rows) for j, token in enumerate(tokens)])
    return Chart(figure, data, name, caption)


def iia_bars(values: dict[str, float], title: str, name: str, caption: str) -> Chart:
    """One site's scores as bars from 0 to 1 (held-out IIA, training IIA, the control task's IIA), labels plain text."""
    labels, heights = list(values), [float(v) for v in values.values()]
    figure = go.Figure(go.Bar(x=labels, y=heights, marker_color=["#2ca02c", "#98df8a", "#7f7f7f"][: len(labels)],
                              text=[f"{v:.2f}" for v in heights], textposition="outside",
                              hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    layout(figure, title, height=300, yaxis=dict(range=[0, 1.1], title="IIA"))
    return Chart(figure, pd.DataFrame({"score": labels, "iia": heights}), name, caption)
