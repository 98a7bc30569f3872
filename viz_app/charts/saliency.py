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


def deletion_chart(curve, tokens: list[str], method: str) -> Chart:
    """The deletion curve of one map against the random orders' mean, each with its area under the curve."""
    swapped = ["(none)"] + [tokens[i] for i in curve.order]
    labels = token_labels(tokens)  # escaped: plotly reads a few tags in text
    figure = go.Figure()
    ordered = f"{method.replace('_', ' ')} order (area {curve.area:.3f})"
    figure.add_scatter(x=curve.fraction_removed, y=curve.values, mode="lines+markers", name=ordered,
                       text=["(none)"] + [labels[i] for i in curve.order],
                       hovertemplate="%{text}: %{y:.3f}<extra></extra>", line=dict(color=PART_COLOURS["token"]))
    figure.add_scatter(x=curve.fraction_removed, y=curve.random_values, mode="lines", line=dict(color=PART_COLOURS["sum"], dash="dash"),
                       name=f"random order (area {curve.random_area:.3f})")
    measure = "p(answer)" if curve.measure == "probability" else "logit difference"
    layout(figure, f"Deletion curve: {measure} as tokens become [MASK], most important first", height=360,
           xaxis=dict(title="share of word tokens masked", tickformat=".0%"), yaxis=dict(title=measure), **legend_on_top())
    data = pd.DataFrame({"share masked": curve.fraction_removed, "token masked last": swapped,
                         "attribution order": curve.values, "random order (mean)": curve.random_values})
    verdict = "falls faster than" if curve.beats_random else "does not fall faster than"
    caption = (f"Word tokens masked one at a time, the map's strongest first: {measure} {verdict} in a random order "
               f"(area under the curve {curve.area:.3f} against {curve.random_area:.3f}, the dashed mean of random orders; "
               "smaller means the map found what the prediction depends on; Petsiuk et al. 2018).")
    return Chart(figure, data, f"deletion_{method}", caption=caption)
