"""The saliency chart (saliency and sentence tasks pages): attributions per input token, by embedding part."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import PART_COLOURS, Chart, layout, legend_on_top, token_labels


def saliency_chart(result) -> Chart:
    """Bars per input token: one per embedding part for the gradient methods, one per token for perturbation ones."""
    parts = result.parts
    labels = token_labels(result.tokens)
    figure = go.Figure()
    for part, row in zip(parts, result.attributions):
        figure.add_bar(x=labels, y=row, name=part, marker_color=PART_COLOURS[part])
    method = result.method.replace("_", " ")
    where = "" if result.position == 0 else f" at position {result.position}"
    layout(figure, f"{method}: {explained_text(result)}{where}" + (", by embedding part" if len(parts) > 1 else ""),
           height=420, barmode="relative", xaxis=dict(tickangle=-45), yaxis=dict(title="attribution"), **legend_on_top())
    data = pd.DataFrame(result.attributions.T, columns=list(parts))
    data.insert(0, "input token", result.tokens)
    return Chart(figure, data, f"saliency_{result.method}")


def explained_text(result) -> str:
    """The explained score in words: "log p('dog')", "p('dog')" or "logit('she') − logit('he')"."""
    if result.foil is not None:
        return f"logit('{result.target.token}') − logit('{result.foil.token}')"
    score = "log p" if result.explained.score == "log_probability" else "p"
    return f"{score}('{result.target.token}')"
