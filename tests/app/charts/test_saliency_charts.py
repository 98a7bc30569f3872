"""The saliency page's chart builders: the bars and the deletion curve carry the library's numbers."""
import numpy as np

from bert.analysis.attribution.deletion import DeletionCurve
from viz_app.charts.saliency import deletion_chart


def test_deletion_chart_draws_both_curves_and_names_their_areas():
    curve = DeletionCurve(order=[3, 1], values=np.array([0.6, 0.2, 0.1]), random_values=np.array([0.6, 0.4, 0.1]),
                          measure="probability")
    chart = deletion_chart(curve, ["[CLS]", "dog", "[MASK]", "cat", "[SEP]"], "occlusion")
    ordered, random = chart.figure.data
    np.testing.assert_allclose(ordered.y, [0.6, 0.2, 0.1])
    np.testing.assert_allclose(random.y, [0.6, 0.4, 0.1])
    np.testing.assert_allclose(ordered.x, [0, 0.5, 1])
    assert list(ordered.text) == ["(none)", "cat", "dog"]
    assert "area 0.275" in ordered.name and "area 0.375" in random.name  # (0.6+0.2)/4 + (0.2+0.1)/4; (0.6+0.4)/4 + (0.4+0.1)/4
    assert "p(answer) falls faster than in a random order" in chart.caption
    assert list(chart.data["token masked last"]) == ["(none)", "cat", "dog"]


def test_deletion_chart_escapes_the_tokens_it_names():
    curve = DeletionCurve(order=[1], values=np.array([0.5, 0.1]), random_values=np.array([0.5, 0.1]), measure="probability")
    chart = deletion_chart(curve, ["[CLS]", "<b>", "[MASK]", "[SEP]"], "occlusion")
    assert list(chart.figure.data[0].text) == ["(none)", "&lt;b&gt;"]
    assert list(chart.data["token masked last"]) == ["(none)", "<b>"]  # the CSV keeps the token as it is
