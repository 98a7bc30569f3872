"""Charts for the attention page's neuron view: q, k and q×k dimension by dimension, and one query's scores."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go

if TYPE_CHECKING:  # the analyses' results, read here, never imported at run time
    from bert.analysis.attention.query_key import QueryKeyProduct

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, layout, token_labels

DIVERGING = "RdBu_r"  # red: positive, blue: negative, white: zero


def query_key_terms(terms: QueryKeyProduct, tokens: list[str], layer: int, head: int) -> Chart:
    """Three rows over the head's dimensions: the query's q, the key's k, and their product; the products'
    sum is q·k. Red and red (or blue and blue) make a red product, which raises the score."""
    query, key = tokens[terms.query], tokens[terms.key]
    rows = np.stack([terms.query_vector, terms.key_vector, terms.products])
    names = [f"q of “{query}”", f"k of “{key}”", "q × k"]
    labels = token_labels(names)
    limit = max(float(np.abs(rows).max(initial=0)), 1e-6)
    dims = np.arange(rows.shape[1])
    figure = go.Figure(
        go.Heatmap(
            z=rows,
            x=dims,
            y=labels,
            colorscale=DIVERGING,
            zmid=0,
            zmin=-limit,
            zmax=limit,
            colorbar=dict(title="value", thickness=12),
            hovertemplate="%{y}, dimension %{x}: %{z:.3f}<extra></extra>",
        )
    )
    layout(
        figure,
        f"Layer {layer}, head {head}: “{query}” (query, position {terms.query}) against "
        f"“{key}” (key, position {terms.key})",
        height=260,
        xaxis=dict(title="dimension of the head", dtick=8 if len(dims) > 16 else 1),
        yaxis=dict(type="category", autorange="reversed"),
    )
    data = pd.DataFrame({"dimension": dims, "q": rows[0], "k": rows[1], "q_times_k": rows[2]})
    return Chart(
        figure,
        data,
        f"query_key_L{layer}_H{head}_q{terms.query}_k{terms.key}",
        caption="Each column is one dimension of the head. Where q and k have the same sign the product is red and "
        "raises the score; opposite signs make it blue and lower it.",
    )


def query_scores(terms: QueryKeyProduct, tokens: list[str], positions: list[int], layer: int, head: int) -> Chart:
    """The query's scaled score against every shown key, the chosen key in red; the hover adds the attention."""
    labels = token_labels([tokens[p] for p in positions])
    scores, weights = terms.scores[positions], terms.weights[positions]
    figure = go.Figure(
        go.Bar(
            x=labels,
            y=scores,
            marker_color=[HIGHLIGHT_COLOUR if p == terms.key else WORD_COLOUR for p in positions],
            customdata=weights,
            hovertemplate="<b>%{x}</b>: score %{y:.2f}, attention %{customdata:.1%}<extra></extra>",
        )
    )
    layout(
        figure,
        f"Layer {layer}, head {head}: the scores of “{tokens[terms.query]}” for every key (q·k / {terms.divisor})",
        height=300,
        xaxis=dict(type="category", tickangle=-45, title="key"),
        yaxis=dict(title="score before softmax"),
    )
    data = pd.DataFrame({"position": positions, "key": [tokens[p] for p in positions], "score": scores, "attention": weights})
    return Chart(
        figure,
        data,
        f"query_scores_L{layer}_H{head}_q{terms.query}",
        caption="Softmax turns these scores into the row of the pattern above: a score 1 higher gets e ≈ 2.7 times "
        "the attention.",
    )
