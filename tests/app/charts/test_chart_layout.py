"""The charts' common layout (viz_app/charts/base.py: layout) sets each key by itself instead of through
update_layout: the figure it leaves must be the one plotly's own update_layout leaves, on the kinds of figure the
pages draw (one plot, subplots whose axes are already set, annotations and shapes already there, a legend on top)."""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from viz_app.charts.base import layout, layout_spec, legend_on_top


def _heatmap() -> go.Figure:
    return go.Figure(go.Heatmap(z=np.arange(12.0).reshape(3, 4), x=list("abcd"), y=list("xyz")))


def _subplots() -> go.Figure:
    figure = make_subplots(rows=1, cols=2, subplot_titles=("left", "right"))
    figure.add_trace(go.Bar(x=[1, 2], y=[3, 4]), row=1, col=1)
    figure.add_trace(go.Scatter(x=[1, 2], y=[4, 3]), row=1, col=2)
    figure.update_xaxes(tickangle=30, title="pieces", row=1, col=1)
    return figure


def _with_marks() -> go.Figure:
    figure = _heatmap()
    figure.add_hline(y=1, line_dash="dot")
    figure.add_annotation(text="a note", x=1, y=1, showarrow=False)
    return figure


CASES = {
    "title and height": (_heatmap, dict(height=300)),
    "axes merged into a heatmap's": (_heatmap, dict(height=260, xaxis=dict(tickangle=-45, side="top"),
                                                   yaxis=dict(autorange="reversed", title="query"))),
    "axes merged into set subplot axes": (_subplots, dict(xaxis=dict(title=dict(text="tokens")), yaxis=dict(range=[0, 5]))),
    "a subplot axis the figure lacks": (_heatmap, dict(xaxis2=dict(overlaying="x", side="top"))),
    "lists into annotations and shapes already there": (_with_marks, dict(
        annotations=[dict(text="replaced?", x=2, y=2, showarrow=False)], shapes=[dict(type="line", x0=0, x1=1, y0=0, y1=1)])),
    "a legend on top and its margin": (_subplots, legend_on_top(title_text="")),
    "a magic-underscore path": (_heatmap, dict(xaxis_title_text="keys", plot_bgcolor="white")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_layout_leaves_the_figure_update_layout_leaves(case):
    build, more = CASES[case]
    ours, plotlys = build(), build()
    layout(ours, "Layer 2 <b>head</b> 5", **dict(more))
    plotlys.update_layout(**layout_spec("Layer 2 <b>head</b> 5", more.get("height"),
                                        **{key: value for key, value in more.items() if key != "height"}))
    assert json.loads(ours.to_json()) == json.loads(plotlys.to_json())
    assert ours.layout.title.text == "Layer 2 &lt;b&gt;head&lt;/b&gt; 5"  # the title as text, never markup
