"""The causal tracing page's charts: patching and tracing heatmaps (layer by token or head), and attribution
patching against the exact values. Arrays and labels in, a Chart out."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, heatmap_height, layout, legend_on_top, token_labels


def patching_heatmap(values: np.ndarray, rows: list[str], columns: list[str], title: str, name: str, caption: str,
                     column_axis: str = "token") -> Chart:
    """Normalised patching values ([row, column]; 1 = restores the clean run, 0 = no effect) on a red-blue scale
    centred on 0. rows: "layer 0", ...; columns: tokens (escaped here) or "head 0", ..."""
    values = np.asarray(values, dtype=float)
    bound = max(1.0, float(np.abs(values).max()) if values.size else 1.0)
    x = token_labels(columns) if column_axis == "token" else columns
    figure = go.Figure(go.Heatmap(
        z=values, x=x, y=rows, zmid=0, zmin=-bound, zmax=bound, colorscale="RdBu_r", colorbar=dict(title="restored"),
        hovertemplate=f"%{{y}}, {column_axis} %{{x}}<br>restored: %{{z:.3f}}<extra></extra>",
    ))
    layout(figure, title, height=heatmap_height(len(rows), 30), yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))
    return Chart(figure, _long_table(values, rows, columns, column_axis, "restored"), name, caption)


def probability_heatmap(values: np.ndarray, rows: list[str], tokens: list[str], title: str, name: str, caption: str,
                        low: float) -> Chart:
    """Causal tracing: p(answer) with one state restored ([row, token]); the colour starts at `low`, the noisy
    run's probability, so white means "restoring this did not help"."""
    values = np.asarray(values, dtype=float)
    high = max(float(values.max()), low + 1e-6)
    figure = go.Figure(go.Heatmap(
        z=values, x=token_labels(tokens), y=rows, zmin=low, zmax=high, colorscale="Purples", colorbar=dict(title="p(answer)"),
        hovertemplate="%{y}, token %{x}<br>p(answer) restored: %{z:.4f}<extra></extra>",
    ))
    layout(figure, title, height=heatmap_height(len(rows), 30), yaxis=dict(autorange="reversed"), xaxis=dict(tickangle=-45))
    return Chart(figure, _long_table(values, rows, tokens, "token", "probability"), name, caption)


def attribution_scatter(exact: np.ndarray, approximate: np.ndarray, cells: list[str], name: str) -> Chart:
    """Each cell of a sweep: exact patching (x) against attribution patching (y), with Pearson's r in the title."""
    exact, approximate = np.asarray(exact, dtype=float).ravel(), np.asarray(approximate, dtype=float).ravel()
    r = float(np.corrcoef(exact, approximate)[0, 1]) if exact.size > 1 and exact.std() > 0 and approximate.std() > 0 else float("nan")
    low, high = float(min(exact.min(), approximate.min())), float(max(exact.max(), approximate.max()))
    figure = go.Figure([
        go.Scatter(x=[low, high], y=[low, high], mode="lines", line=dict(color="#bbbbbb", dash="dot"), hoverinfo="skip", showlegend=False),
        go.Scatter(x=exact, y=approximate, mode="markers", text=cells, marker=dict(color="#3b6fb6", size=7), showlegend=False,
                   hovertemplate="%{text}<br>exact %{x:.3f}<br>attribution %{y:.3f}<extra></extra>"),
    ])
    layout(figure, f"Attribution patching against exact patching (Pearson's r = {r:.3f})", height=420,
           xaxis=dict(title="exact (patched run)"), yaxis=dict(title="attribution (gradient × difference)"))
    data = pd.DataFrame({"cell": cells, "exact": exact, "attribution": approximate})
    return Chart(figure, data, name, "On the dotted line the first-order approximation is exact; far from it, the "
                                     "model is not linear between the two runs there.")


def _long_table(values: np.ndarray, rows: list[str], columns: list[str], column_axis: str, value_name: str) -> pd.DataFrame:
    return pd.DataFrame([{"row": row, column_axis: f"{j} {column}" if column_axis == "token" else column, value_name: float(values[i, j])}
                         for i, row in enumerate(rows) for j, column in enumerate(columns)])


def erasure_bars(probe: dict, mlm: dict, task: str, layer: str) -> Chart:
    """Amnesic probing: the probe's and the masked LM's accuracy before erasure, after LEACE and after a random
    erasure of the same rank (probe: {"before", "after", "majority", "random_control"}; mlm: the same but majority)."""
    groups = ["probe accuracy", "masked-LM accuracy"]
    series = {"before": ("before", "#7f7f7f"), "after": ("after erasing it (LEACE)", "#d62728"),
              "random_control": ("after a random erasure of the same rank", "#3b6fb6")}
    figure = go.Figure([go.Bar(x=groups, y=[probe[key], mlm[key]], name=name, marker_color=colour,
                               hovertemplate="%{x}, " + name + ": %{y:.3f}<extra></extra>")
                        for key, (name, colour) in series.items()])
    figure.add_hline(y=probe["majority"], line_dash="dot", line_color="#555555",
                     annotation_text=f"majority baseline {probe['majority']:.3f}", annotation_position="top left")
    layout(figure, f"Erasing {task} from the residual stream ({layer})", height=420, barmode="group", yaxis=dict(title="accuracy", range=[0, 1]),
           **legend_on_top())
    data = pd.DataFrame([{"measure": group, **{key: values[key] for key in series}, "majority": probe["majority"] if group == groups[0] else None}
                         for group, values in zip(groups, (probe, mlm))])
    return Chart(figure, data, f"erasure_{task}", "If the masked LM loses more after LEACE than after the random erasure, it "
                                                  "used this property at this layer (Elazar et al. 2021).")
