"""The attention page's DeBERTa section: one head's scores split into their three terms, side by side."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bert.layers import head_label
from viz_app.charts.base import Chart, heatmap_height, layout, row_labels, token_labels
from viz_app.charts.query_key import DIVERGING

if TYPE_CHECKING:  # the analysis's result, read here, never imported at run time
    from bert.analysis.attention.score_terms import ScoreTerms

COLUMNS = {"c2c": "content_to_content", "c2p": "content_to_position", "p2c": "position_to_content"}  # the CSV's


def term_title(words: str, share: float) -> str:
    """"content → position<br>31% of the magnitude": two lines, so that three titles fit side by side."""
    return f"{words}<br>{share:.0%} of the magnitude"


def score_terms_heatmaps(terms: ScoreTerms, positions: list[int]) -> Chart:
    """Three [query, key] heatmaps of one head (content → content, content → position, position → content),
    restricted to `positions`, on one diverging colour scale centred on 0 with the same range for all three, so
    that their sizes compare; each panel's title gives its term's share of the total magnitude (over the shown
    tokens). The CSV has one row per (query, key) with the three terms and their sum."""
    matrices = {name: values[np.ix_(positions, positions)] for name, values in terms.terms().items()}
    magnitudes = {name: float(np.abs(values).sum()) for name, values in matrices.items()}
    total = sum(magnitudes.values())
    titles = [term_title(terms.words[name], magnitudes[name] / total if total else 0.0) for name in matrices]
    limit = max(max(float(np.abs(values).max(initial=0)) for values in matrices.values()), 1e-6)
    labels = token_labels([terms.tokens[p] for p in positions])
    figure = make_subplots(rows=1, cols=3, subplot_titles=titles, shared_yaxes=True, horizontal_spacing=0.04)
    for column, (name, values) in enumerate(matrices.items(), start=1):
        figure.add_trace(go.Heatmap(
            z=values, x=labels, y=labels, coloraxis="coloraxis", name=terms.words[name],
            hovertemplate=f"<b>%{{y}}</b> against <b>%{{x}}</b><br>{terms.words[name]}: %{{z:.3f}}<extra></extra>",
        ), row=1, col=column)
        figure.update_xaxes(type="category", tickangle=-60, title="key", row=1, col=column)
    # dtick 1: every token labelled (plotly otherwise skips every other label on a third of the page's width)
    figure.update_xaxes(dtick=1, tickfont=dict(size=10 if len(positions) > 20 else 12))
    figure.update_yaxes(type="category", autorange="reversed", dtick=1, tickfont=dict(size=10 if len(positions) > 20 else 12))
    figure.update_yaxes(title="query", row=1, col=1)
    figure.update_annotations(font=dict(size=13))  # the panels' titles
    layout(
        figure,
        f"{head_label(terms.layer, terms.head).capitalize()}: where each score comes from",
        height=heatmap_height(len(positions), per_row=18, least=400, most=700),
        coloraxis=dict(colorscale=DIVERGING, cmid=0, cmin=-limit, cmax=limit,
                       colorbar=dict(title="score part", thickness=12)),
        margin=dict(l=10, r=10, t=96, b=10),
    )
    every_row = row_labels(list(terms.tokens))
    names = [every_row[p] for p in positions]
    data = pd.DataFrame({
        "query": np.repeat(names, len(positions)),
        "key": np.tile(names, len(positions)),
        **{COLUMNS[name]: values.ravel() for name, values in matrices.items()},
        "score": sum(matrices.values()).ravel(),
    })
    return Chart(
        figure,
        data,
        f"score_terms_L{terms.layer}_H{terms.head}",
        caption="Red raises the score of a pair (row: the token looking, column: the token looked at), blue lowers it; "
        "the three panels add up to the score the softmax reads.",
    )
