"""The predicted-against-gold tree chart on a hand-made sentence: which arcs go above and below, which count as
correct, and that words reach plotly escaped."""
from __future__ import annotations

import numpy as np

from viz_app.charts.dependency_tree import arc_points, tree_chart

WORDS = ["The", "dog", "<b>barked</b>", "at", "the", "mailman", "."]
GOLD = [(0, 1), (1, 2), (3, 5), (4, 5), (5, 2)]  # UD: det, nsubj, case, det, obl (the full stop left out)
PREDICTED = [(1, 0), (1, 2), (2, 3), (4, 5), (3, 4)]  # 3 of 5 in the gold tree, one given as (dependent, head)


def _arcs(trace) -> list[tuple[float, float, float]]:
    """(left end, right end, furthest y) of each arc in a trace whose arcs are separated by None."""
    xs, ys, arcs, start = list(trace.x), list(trace.y), [], 0
    for end in [i for i, x in enumerate(xs) if x is None]:
        x, y = np.array(xs[start:end], float), np.array(ys[start:end], float)
        arcs.append((round(x.min(), 6), round(x.max(), 6), y[np.abs(y).argmax()]))
        start = end + 1
    return arcs


def test_gold_above_predicted_below_and_each_arc_sorted_by_correctness():
    chart = tree_chart(WORDS, GOLD, PREDICTED, "layer 4", {frozenset((1, 2)): "nsubj"}, excluded=[6])
    traces = {trace.name: trace for trace in chart.figure.data}
    found = _arcs(traces["gold arc, found by the probe"])
    missed = _arcs(traces["gold arc, missed"])
    correct = _arcs(traces["predicted arc, in the gold tree"])
    wrong = _arcs(traces["predicted arc, not in the gold tree"])
    assert [(a, b) for a, b, _ in found] == [(0, 1), (1, 2), (4, 5)]
    assert [(a, b) for a, b, _ in missed] == [(2, 5), (3, 5)]
    assert [(a, b) for a, b, _ in correct] == [(0, 1), (1, 2), (4, 5)]
    assert [(a, b) for a, b, _ in wrong] == [(2, 3), (3, 4)]
    assert all(top > 0 for *_, top in found + missed) and all(bottom < 0 for *_, bottom in correct + wrong)
    assert missed[0][2] > found[0][2]  # a longer arc rises higher
    styles = {name: (trace.line.color, trace.line.dash) for name, trace in traces.items()}
    assert len(set(styles.values())) == 4  # every kind of arc looks different


def test_words_are_escaped_and_punctuation_is_grey_and_the_csv_lists_every_arc():
    chart = tree_chart(WORDS, GOLD, PREDICTED, "layer 4", {frozenset((1, 2)): "nsubj"}, excluded=[6])
    texts = [a.text for a in chart.figure.layout.annotations]
    assert texts[2] == "&lt;b&gt;barked&lt;/b&gt;" and len(texts) == len(WORDS)
    colours = [a.font.color for a in chart.figure.layout.annotations]
    assert colours[6] != colours[0]
    assert [a.x for a in chart.figure.layout.annotations] == list(range(len(WORDS)))
    rows = chart.data
    assert len(rows) == len(GOLD) + len(PREDICTED)
    assert rows.query("tree == 'gold' and word_a == 1 and word_b == 2")["label"].item() == "nsubj"
    assert set(rows.query("tree == 'predicted'")["kind"]) == {"correct", "wrong"}
    assert (rows["word_a"] < rows["word_b"]).all()
    hover = " ".join(t for trace in chart.figure.data for t in trace.hovertext if t)
    assert "&lt;b&gt;" in hover and "<b>barked" not in hover


def test_a_perfect_prediction_has_no_wrong_or_missed_arcs_drawn():
    chart = tree_chart(WORDS, GOLD, [tuple(reversed(edge)) for edge in GOLD], "layer 4")
    traces = {trace.name: trace for trace in chart.figure.data}
    assert traces["predicted arc, not in the gold tree"].visible == "legendonly"
    assert traces["gold arc, missed"].visible == "legendonly"
    assert len(_arcs(traces["predicted arc, in the gold tree"])) == len(GOLD)


def test_an_arc_is_a_half_ellipse_between_its_words():
    x, y = arc_points(2, 6, side=-1, base=10)
    assert (x[0], x[-1]) == (2, 6) and np.allclose(x[len(x) // 2], 4)
    assert np.allclose(y[[0, -1]], -10) and y.min() == y[len(y) // 2] < -10
