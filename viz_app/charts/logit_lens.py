"""The logit lens page's chart: where the final prediction ranks, layer by layer."""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import Chart, layout, legend_on_top


def lens_chart(lens, tokens: list[str]) -> Chart:
    names = [layer.name for layer in lens.layers]
    figure = go.Figure()
    figure.add_scatter(x=names, y=[layer.final_rank for layer in lens.layers], name="rank (left axis)", mode="lines+markers")
    figure.add_scatter(x=names, y=[layer.final_probability for layer in lens.layers], name="probability (right axis)",
                       mode="lines+markers", yaxis="y2")
    final = html.escape(lens.final.token, quote=False)
    layout(figure, f"Where '{lens.final.token}' (the final prediction at position {lens.position}) ranks, layer by layer",
           height=380, yaxis=dict(title="rank (1 = top)", type="log", autorange="reversed"),
           yaxis2=dict(title="probability", overlaying="y", side="right", range=[0, 1], tickformat=".0%",
                       tickvals=[0, 0.25, 0.5, 0.75, 1], showgrid=False),
           **legend_on_top())
    data = pd.DataFrame({"layer": names, "rank": [l.final_rank for l in lens.layers],
                         "probability": [l.final_probability for l in lens.layers], "final_prediction": final})
    return Chart(figure, data, f"logit_lens_{lens.position}",
                 "The LM head read at every layer's residual stream: rank 1 means that layer would already predict it.")
