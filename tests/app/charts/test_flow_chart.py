"""Markers that flow along a figure's route (viz_app/charts/flow.py): each keyframe's shift worked by hand from a
figure's axes, margins and height; no route, no style; reduced motion, no animation."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from viz_app.charts.flow import LONGEST_S, SHORTEST_S, duration, style


def figure(route=None) -> go.Figure:
    """x from 0 to 10 and y from 0 to 5 in a figure 300 high, margins 10 left, 30 right, 40 top, 10 bottom: the plot
    is 250 px high and its width less 40 px wide."""
    layout = {"xaxis": {"range": [0, 10]}, "yaxis": {"range": [0, 5]}, "height": 300,
              "margin": {"l": 10, "r": 30, "t": 40, "b": 10}, **({"meta": {"flow": route}} if route else {})}
    return go.Figure({"data": [{"type": "scatter", "x": [6], "y": [3]}], "layout": layout})


def test_each_keyframe_shifts_the_markers_back_to_a_stop_of_the_route():
    css = style(figure([[2, 1], [4, 1], [6, 3]]), ".st-key-chart_x")
    frames = re.findall(r"([0-9.]+)% \{translate: calc\((-?[0-9.]+)% ([+-]) ([0-9.]+)px\) (-?[0-9.]+)px\}", css)
    # (2, 1) is 4 of the 10 units left of (6, 3): 40% of the width less 40 px margins, i.e. −40% + 16 px; 2 of the
    # 5 units lower: 2/5 of 250 px down. (4, 1): half that across, as far down. (6, 3): where they are drawn.
    assert [(float(at), float(percent), float(sign + pixels), float(down)) for at, percent, sign, pixels, down in frames] == [
        (0, -40, 16, 100), (50, -20, 8, 100), (100, 0, 0, 0)]
    assert "@media (prefers-reduced-motion: no-preference) {.st-key-chart_x .scatterlayer .trace:last-child .point" in css
    assert re.search(r"animation: flow-st-key-chart_x 0\.60s ease-in-out both", css)  # two steps: the shortest flow


def test_no_route_no_style_and_a_long_route_keeps_its_time():
    assert style(figure(), ".st-key-chart_x") == "" and style(figure([[6, 3]]), ".st-key-chart_x") == ""
    assert duration(2) == SHORTEST_S and duration(100) == LONGEST_S
    assert duration(5) == pytest.approx(4 * 0.3)
