"""The saliency chart (saliency and sentence tasks pages): attributions per input token, by embedding part."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import PART_COLOURS, Chart, layout, legend_on_top, token_labels


def saliency_chart(result, parts: tuple[str, ...]) -> Chart:
    labels = token_labels(result.tokens)
    figure = go.Figure()
    for part, row in zip(parts, result.attributions):
        figure.add_bar(x=labels, y=row, name=part, marker_color=PART_COLOURS[part])
    method = result.method.replace("_", " ")
    where = "" if result.position == 0 else f" at position {result.position}"
    layout(figure, f"{method}: log p('{result.target.token}'){where}, by embedding part",
           height=420, barmode="relative", xaxis=dict(tickangle=-45), yaxis=dict(title="attribution"), **legend_on_top())
    data = pd.DataFrame(result.attributions.T, columns=list(parts))
    data.insert(0, "input token", result.tokens)
    return Chart(figure, data, f"saliency_{result.method}")
