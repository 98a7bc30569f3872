"""The head statistics page's chart: a statistic by layer, every head as a dot, published findings shaded."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.attention import head_stats

from viz_app.charts.base import HIGHLIGHT_COLOUR, Chart, layout, legend_on_top


def statistic_by_layer_chart(values: np.ndarray, statistic: str, findings: list[head_stats.PublishedFinding]) -> Chart:
    """Every head as a dot, the layer mean as a line (layers from 0, as everywhere: bert/layers.py); published findings
    shaded (their layers converted from the paper's count from 1)."""
    layers, heads = values.shape
    figure = go.Figure()
    for finding in findings:
        figure.add_vrect(x0=min(finding.layers) - 0.5, x1=max(finding.layers) + 0.5, fillcolor="#f2c14e", opacity=0.25,
                         line_width=0, annotation_text="Clark et al. 2019: " + finding.claim, annotation_position="top left")
    xs = np.repeat(np.arange(layers), heads)
    figure.add_scatter(x=xs, y=values.flatten(), mode="markers", name="one head", marker=dict(size=6, opacity=0.6),
                       customdata=np.tile(np.arange(heads), layers), hovertemplate="layer %{x}, head %{customdata}: %{y:.3f}<extra></extra>")
    figure.add_scatter(x=np.arange(layers), y=np.nanmean(values, axis=1), mode="lines+markers", name="layer mean",
                       line=dict(color=HIGHLIGHT_COLOUR))
    layout(figure, f"{statistic} by layer (from 0)", height=420,
           xaxis=dict(title="layer", dtick=1), yaxis=dict(title=statistic), **legend_on_top())
    data = pd.DataFrame({"layer": xs, "head": np.tile(np.arange(heads), layers), statistic: values.flatten()})
    return Chart(figure, data, f"corpus_{statistic}_by_layer")
