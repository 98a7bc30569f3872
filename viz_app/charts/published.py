"""Published values drawn beside the loaded model's: Clark et al. 2019's Figure 2 on the head-statistics chart."""
from __future__ import annotations

from typing import TYPE_CHECKING

import dataclasses

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.attention.head_stats import PublishedValues

from viz_app.charts.base import Chart

PUBLISHED_COLOUR = "#7f7f7f"


def published_table(values: PublishedValues) -> pd.DataFrame:
    """One row per layer (from 0; the paper's layer 1 is layer 0): the published layer mean (when the paper drew one)
    and strongest head."""
    table = pd.DataFrame({"layer": np.arange(len(values.strongest_head))})
    if values.layer_mean is not None:
        table["published layer mean"] = values.layer_mean
    table["published strongest head"] = values.strongest_head
    return table


def with_published_values(chart: Chart, values: PublishedValues) -> Chart:
    """The by-layer chart (x = layer from 0) with the published layer mean as a dashed line and each layer's
    published strongest head as a cross; their numbers join the chart's CSV as columns."""
    figure = chart.figure
    layers = np.arange(len(values.strongest_head))
    if values.layer_mean is not None:
        figure.add_scatter(x=layers, y=values.layer_mean, mode="lines+markers", name="Clark et al. 2019: layer mean",
                           line=dict(color=PUBLISHED_COLOUR, dash="dash"),
                           hovertemplate="Clark et al. 2019, layer %{x} mean: %{y:.2f}<extra></extra>")
    figure.add_scatter(x=layers, y=values.strongest_head, mode="markers", name="Clark et al. 2019: strongest head",
                       marker=dict(symbol="x", size=9, color=PUBLISHED_COLOUR),
                       hovertemplate="Clark et al. 2019, layer %{x} strongest head: %{y:.2f}<extra></extra>")
    data = chart.data.merge(published_table(values), on="layer", how="left")
    return dataclasses.replace(chart, figure=figure, data=data)
