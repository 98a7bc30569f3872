"""One sentence's predicted tree against its gold tree, drawn as in Hewitt & Manning's (2019) figures: the gold
arcs above the words, the predicted arcs below. Arcs are undirected (a distance probe predicts which words are
joined, not which is the head). A predicted arc that is also in the gold tree is drawn solid in blue, one that
is not in red and dashed; a gold arc the prediction missed is dotted.

Coordinates: x is the word's index; y is in pixels from the middle line, so an arc's height (a function of how
many words it spans) does not depend on the sentence's length.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from viz_app.charts.base import HIGHLIGHT_COLOUR, WORD_COLOUR, Chart, layout, legend_on_top, token_labels

Edge = tuple[int, int]  # two word indices (0-based), in either order

GOLD_COLOUR = "#333333"
EXCLUDED_COLOUR = "#a0a0a0"  # words the score leaves out (punctuation)
POINTS_PER_ARC = 41
CHAR_PX = 7.5  # about one character's width at the chart's font size
HORIZONTAL_BUDGET_PX = 900  # words written across while they fit in about this width, else upright
STYLES = {  # (tree, kind) -> legend name, colour, dash, side (+1 above the words, -1 below)
    ("gold", "found"): ("gold arc, found by the probe", GOLD_COLOUR, "solid", 1),
    ("gold", "missed"): ("gold arc, missed", GOLD_COLOUR, "dot", 1),
    ("predicted", "correct"): ("predicted arc, in the gold tree", WORD_COLOUR, "solid", -1),
    ("predicted", "wrong"): ("predicted arc, not in the gold tree", HIGHLIGHT_COLOUR, "dash", -1),
}


def undirected(edges: Sequence[Edge]) -> set[frozenset[int]]:
    return {frozenset(edge) for edge in edges}


def arc_height(span: int) -> float:
    """Pixels: grows with the number of words spanned, slower for long arcs so they stay on screen."""
    return 16 + 24 * math.sqrt(span)


def arc_points(left: int, right: int, side: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """A half ellipse from word `left` to word `right`, starting `base` pixels from the middle line."""
    angle = np.linspace(np.pi, 0, POINTS_PER_ARC)
    middle, half = (left + right) / 2, (right - left) / 2
    return middle + half * np.cos(angle), side * (base + arc_height(right - left) * np.sin(angle))


def upright_words(words: Sequence[str]) -> bool:
    """True when the words would not fit written across, side by side."""
    return sum(len(word) + 2 for word in words) * CHAR_PX > HORIZONTAL_BUDGET_PX


def tree_chart(
    words: Sequence[str],
    gold: Sequence[Edge],
    predicted: Sequence[Edge],
    title: str,
    gold_labels: dict[frozenset[int], str] | None = None,
    excluded: Sequence[int] = (),
    name: str = "probe_tree",
) -> Chart:
    """words: the sentence's words; gold, predicted: undirected arcs as pairs of word indices; gold_labels: a
    label per gold arc (the dependency relation), shown on hover; excluded: words the score leaves out (drawn
    grey). The CSV has one row per arc."""
    gold_set, predicted_set = undirected(gold), undirected(predicted)
    labels = gold_labels or {}
    shown = token_labels(list(words))
    upright = upright_words(words)
    base = (max(map(len, words), default=1) * CHAR_PX / 2 + 8) if upright else 14  # half the band the words take
    groups: dict[tuple[str, str], list[frozenset[int]]] = {key: [] for key in STYLES}
    for arc in sorted(gold_set, key=sorted):
        groups["gold", "found" if arc in predicted_set else "missed"].append(arc)
    for arc in sorted(predicted_set, key=sorted):
        groups["predicted", "correct" if arc in gold_set else "wrong"].append(arc)

    figure = go.Figure()
    rows = []
    for (tree, kind), arcs in groups.items():
        legend, colour, dash, side = STYLES[tree, kind]
        xs, ys, hover = [], [], []
        for arc in arcs:
            left, right = sorted(arc)
            x, y = arc_points(left, right, side, base)
            label = labels.get(arc, "")
            text = f"{shown[left]} — {shown[right]}" + (f" ({label})" if label else "") + f"<br>{legend}"
            xs += [*x, None]
            ys += [*y, None]
            hover += [text] * len(x) + [None]
            rows.append({"tree": tree, "kind": kind, "word_a": left, "word_b": right, "form_a": words[left],
                         "form_b": words[right], "label": label})
        figure.add_scatter(x=xs, y=ys, mode="lines", name=legend, line=dict(color=colour, dash=dash, width=2),
                           hovertext=hover, hoverinfo="text", showlegend=True, visible=True if arcs else "legendonly")
    excluded_set = set(excluded)
    for index, word in enumerate(shown):
        figure.add_annotation(x=index, y=0, text=word, showarrow=False, textangle=-90 if upright else 0,
                              font=dict(color=EXCLUDED_COLOUR if index in excluded_set else "#111111", size=13))
    top = base + max((arc_height(abs(a - b)) for a, b in map(sorted, gold_set)), default=0) + 24  # room under the legend
    bottom = base + max((arc_height(abs(a - b)) for a, b in map(sorted, predicted_set)), default=0) + 10
    legend_args = legend_on_top()
    margin = legend_args["margin"]
    layout(figure, title, height=int(top + bottom + margin["t"] + margin["b"]),
           xaxis=dict(visible=False, range=[-0.6, len(words) - 0.4], fixedrange=True),
           yaxis=dict(visible=False, range=[-bottom, top], fixedrange=True), **legend_args)
    data = pd.DataFrame(rows, columns=["tree", "kind", "word_a", "word_b", "form_a", "form_b", "label"])
    return Chart(figure, data, name,
                 "Above the words: the gold tree. Below: the tree the probe predicts (the minimum spanning tree of its "
                 "distances). Blue, solid: a predicted arc that is in the gold tree; red, dashed: one that is not; a "
                 "dotted gold arc is one the probe missed. Grey words (punctuation) are left out of the score.")
