"""The prediction chart is built from plain dicts without plotly's validation (it is drawn on every key press of
every student): plotly's own validation must accept those dicts and change nothing in them."""
from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from app_helpers import array
from viz_app.charts.prediction import prediction_bars
from viz_app.app.forward import MaskResult

MASKS = {
    "pieces, escaping and the original": MaskResult(
        3, ("dog", "##s", "cat", "<b>", "the"), np.array([0.5, 0.2, 0.1, 0.05, 0.01], dtype=np.float32),
        (False, True, False, False, False), "cat", 0.1, 3,
    ),
    "a typed [MASK], low probabilities": MaskResult(5, ("a", "b"), np.array([0.01, 0.005], dtype=np.float32), (False, False)),
}


def as_json(figure: dict) -> str:
    return json.dumps(figure, sort_keys=True, default=str)


@pytest.mark.parametrize("name", list(MASKS))
@pytest.mark.parametrize("top_k", [1, 3, 10])
def test_plotly_validation_accepts_the_chart_and_changes_nothing(name, top_k):
    mask = MASKS[name]
    chart = prediction_bars(mask, top_k, 1)
    unchecked = chart.figure.to_dict()
    assert as_json(go.Figure(unchecked).to_dict()) == as_json(unchecked)  # raises on any invalid property
    k = min(top_k, len(mask.tokens))
    shown = sorted((label, p) for trace in unchecked["data"] for label, p in zip(trace["y"], array(trace["x"])))
    ranks = sorted((int(label.split(".")[0]), p) for label, p in shown)
    np.testing.assert_allclose([p for _, p in ranks], mask.probabilities[:k], rtol=1e-6)
    assert chart.data["probability"].tolist() == pytest.approx(mask.probabilities[:k].tolist())


@pytest.mark.parametrize("filled", [(False, False, False), (False, True, False), (True, True, True)])
def test_plotly_validation_accepts_the_replaced_token_chart_and_it_draws_every_piece(filled):
    """ELECTRA's chart (viz_app/charts/replaced_tokens.py): each bar where its position says, the generator's
    words in their own trace, tokens escaped, a repeated token still its own bar."""
    from viz_app.charts.replaced_tokens import FILLED, replaced_token_bars

    probabilities = np.array([0.9, 0.02, 0.5], dtype=np.float32)
    chart = replaced_token_bars([1, 2, 3], ["<b>", "dog", "<b>"], probabilities, list(filled))
    unchecked = chart.figure.to_dict()
    assert as_json(go.Figure(unchecked).to_dict()) == as_json(unchecked)
    bars = sorted((label, float(p), trace["name"] == FILLED)
                  for trace in unchecked["data"] for label, p in zip(trace["x"], array(trace["y"])))
    assert [label.split()[0] for label, _, _ in bars] == ["1", "2", "3"] and all("<b>" not in label for label, _, _ in bars)
    np.testing.assert_allclose([p for _, p, _ in bars], probabilities, rtol=1e-6)
    assert tuple(f for _, _, f in bars) == filled
    assert chart.data["probability replaced"].tolist() == pytest.approx(probabilities.tolist())
