"""Markers that flow along a figure's route (viz_app/charts/flow.py): each keyframe's shift worked by hand from a
figure's axes, margins and height; paused until the script marks the page idle; no route, nothing written; reduced
motion, no animation."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from viz_app.charts.flow import LONGEST_S, SHORTEST_S, duration, element


def figure(route=None) -> go.Figure:
    """x from 0 to 10 and y from 0 to 5 in a figure 300 high, margins 10 left, 30 right, 40 top, 10 bottom: the plot
    is 250 px high and its width less 40 px wide."""
    layout = {"xaxis": {"range": [0, 10]}, "yaxis": {"range": [0, 5]}, "height": 300,
              "margin": {"l": 10, "r": 30, "t": 40, "b": 10}, **({"meta": {"flow": route}} if route else {})}
    return go.Figure({"data": [{"type": "scatter", "x": [6], "y": [3]}], "layout": layout})


def test_each_keyframe_shifts_the_markers_back_to_a_stop_of_the_route():
    html = element(figure([[2, 1], [4, 1], [6, 3]]), "chart_x 1")  # a space in a key: "-" in Streamlit's class
    frames = re.findall(r"([0-9.]+)% \{translate: calc\((-?[0-9.]+)% ([+-]) ([0-9.]+)px\) (-?[0-9.]+)px\}", html)
    # (2, 1) is 4 of the 10 units left of (6, 3): 40% of the width less 40 px margins, i.e. −40% + 16 px; 2 of the
    # 5 units lower: 2/5 of 250 px down. (4, 1): half that across, as far down. (6, 3): where they are drawn.
    assert [(float(at), float(percent), float(sign + pixels), float(down)) for at, percent, sign, pixels, down in frames] == [
        (0, -40, 16, 100), (50, -20, 8, 100), (100, 0, 0, 0)]
    dots = ".st-key-chart_x-1 .scatterlayer .trace:last-child .point"
    motion = html.split("@media (prefers-reduced-motion: no-preference) {")[1]  # only without reduced motion
    assert motion.startswith(f"{dots} {{transform-box: view-box; animation: flow-chart_x-1 0.60s ease-in-out both paused}}")
    assert f'body[data-flowing="chart_x-1"] {dots} {{animation-play-state: running}}' in motion  # two steps: 0.6 s
    assert 'document.body.dataset.flowing = "chart_x-1"' in html.split("<script data-flow>")[1]  # once idle


def test_no_route_no_style_and_a_long_route_keeps_its_time():
    assert element(figure(), "chart_x") == "" and element(figure([[6, 3]]), "chart_x") == ""
    assert duration(2) == SHORTEST_S and duration(100) == LONGEST_S
    assert duration(5) == pytest.approx(4 * 0.3)
