"""The head ablation page's chart: the effect of ablating each head alone."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from bert.devices import as_numpy

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.causal import ablation

from viz_app.charts.base import Chart, heatmap_height, layout


def head_effect_heatmap(ranking: ablation.HeadRanking) -> Chart:
    effect = as_numpy(ranking.effect)
    layers, heads = effect.shape
    bound = float(np.abs(effect).max()) or 1.0
    figure = go.Figure(go.Heatmap(
        z=effect, x=[f"H{h}" for h in range(heads)], y=[f"L{l}" for l in range(layers)], zmid=0, zmin=-bound, zmax=bound,
        colorscale="RdBu_r", colorbar=dict(title="Δ log p"),
        hovertemplate="layer %{y}, head %{x}<br>log p intact - ablated: %{z:.3f}<extra></extra>",
    ))
    layout(figure, f"Effect of ablating each head alone on p('{ranking.target.token}')", height=heatmap_height(layers, 36),
           yaxis=dict(autorange="reversed"))
    data = pd.DataFrame([{"layer": l, "head": h, "effect": e, "ablated_probability": float(ranking.ablated_probability[l, h])}
                         for l, h, e in ranking.ranked()])
    return Chart(figure, data, "head_ablation_ranking",
                 "Red: the head helps this prediction (ablating it lowers the log-probability); blue: it works against it.")
