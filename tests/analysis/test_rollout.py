"""Attention rollout and flow on cases whose answer is known by construction."""
import numpy as np
import pytest

from bert.analysis.rollout import FLOW_TOKEN_LIMIT, _LayeredGraph, attention_flow, attention_rollout, with_residual
from bert.errors import InvalidInputError


def random_attention(layers: int, seq: int, seed: int) -> np.ndarray:
    weights = np.random.default_rng(seed).random((layers, seq, seq)) ** 4
    return weights / weights.sum(-1, keepdims=True)


def test_rollout_of_identity_attention_is_identity():
    identity = np.broadcast_to(np.eye(5), (4, 5, 5))
    np.testing.assert_allclose(attention_rollout(identity), identity)


def test_rollout_is_the_product_of_residual_mixed_layers():
    attention = random_attention(3, 6, seed=0)
    mixed = [0.5 * a + 0.5 * np.eye(6) for a in attention]  # rows already sum to 1: no renormalising needed
    rolled = attention_rollout(attention)
    np.testing.assert_allclose(rolled[0], mixed[0])
    np.testing.assert_allclose(rolled[2], mixed[2] @ mixed[1] @ mixed[0])
    np.testing.assert_allclose(rolled.sum(-1), 1.0)


def test_with_residual_renormalises_rows():
    attention = np.array([[[2.0, 0.0], [1.0, 1.0]]])  # rows that do not sum to 1
    np.testing.assert_allclose(with_residual(attention).sum(-1), 1.0)


def test_flow_of_identity_attention_is_identity():
    identity = np.broadcast_to(np.eye(4), (3, 4, 4))
    np.testing.assert_allclose(attention_flow(identity, method="edmonds-karp"), np.eye(4), atol=1e-12)


def test_flow_through_one_layer_is_that_layer_mixed_attention():
    """One layer: the only path from input j to output i is the edge Ã[i, j]; rows of Ã already sum to 1."""
    attention = random_attention(1, 5, seed=1)
    flow = attention_flow(attention, method="edmonds-karp")
    np.testing.assert_allclose(flow, with_residual(attention)[0], atol=1e-9)


def test_edmonds_karp_on_a_hand_made_graph():
    """Two layers, two tokens. Capacities Ã1 = [[.5,.5],[.5,.5]], Ã2 = [[1,0],[.2,.8]] (row = to, column = from).
    From input 0 to output 0: edge paths 0->0->0 (min(.5,1)) and 0->1->0 (min(.5,0)): 0.5."""
    graph = _LayeredGraph(np.array([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [0.2, 0.8]]]))
    assert graph.max_flow(0, 0) == pytest.approx(0.5)
    # to output 1: 0->0->1 carries min(.5, .2) = .2 and 0->1->1 carries min(.5, .8) = .5
    assert graph.max_flow(0, 1) == pytest.approx(0.7)


def test_edmonds_karp_agrees_with_scipy():
    pytest.importorskip("scipy")
    attention = random_attention(2, 4, seed=2)
    np.testing.assert_allclose(
        attention_flow(attention, method="edmonds-karp"), attention_flow(attention, method="scipy"), atol=1e-7
    )


def test_flow_refuses_long_inputs():
    seq = FLOW_TOKEN_LIMIT["edmonds-karp"] + 1
    with pytest.raises(InvalidInputError, match="limited to"):
        attention_flow(np.broadcast_to(np.eye(seq), (2, seq, seq)), method="edmonds-karp")
