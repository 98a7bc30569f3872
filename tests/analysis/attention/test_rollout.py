"""Attention rollout and flow on cases whose answer is known by construction."""
import numpy as np
import pytest

from bert.analysis.attention.rollout import (
    FLOW_RESOLUTION, FLOW_TOKEN_LIMIT, attention_flow, attention_rollout, layered_max_flow, with_residual,
)
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
    np.testing.assert_allclose(attention_flow(identity), np.eye(4), atol=1e-12)


def test_flow_through_one_layer_is_that_layer_mixed_attention():
    """One layer: the only path from input j to output i is the edge Ã[i, j]; rows of Ã already sum to 1."""
    attention = random_attention(1, 5, seed=1)
    flow = attention_flow(attention)
    np.testing.assert_allclose(flow, with_residual(attention)[0], atol=1e-8)


def test_max_flow_on_a_hand_made_two_layer_graph():
    """Two layers, two tokens. Capacities Ã1 = [[.5,.5],[.5,.5]], Ã2 = [[1,0],[.2,.8]] (row = to, column = from).
    From input 0 to output 0: paths 0->0->0 (min(.5, 1)) and 0->1->0 (min(.5, 0)): 0.5."""
    max_flow = layered_max_flow(np.array([[[0.5, 0.5], [0.5, 0.5]], [[1.0, 0.0], [0.2, 0.8]]]))
    assert max_flow(0, 0) == pytest.approx(0.5, abs=1e-8)
    # to output 1: 0->0->1 carries min(.5, .2) = .2 and 0->1->1 carries min(.5, .8) = .5
    assert max_flow(0, 1) == pytest.approx(0.7, abs=1e-8)


def test_max_flow_on_a_hand_made_graph_where_paths_compete():
    """Three layers, two tokens: nodes a0, a1 after layer 1, b0, b1 after layer 2.
    Input 0 sends .5 to a0 and .5 to a1; a0 -> b0 .9, a0 -> b1 .1, a1 -> b0 .1, a1 -> b1 .9.
    To output 0 (fed by b0 only, capacity 1): b0 can get min(.5, .9) + min(.5, .1) = .6, so 0.6.
    To output 1 (b0 -> .3, b1 -> .7): b1 gets at most .1 + .5 = .6 (a0's .1, all of a1), which leaves a0 .4 for
    b0, capped at .3 by its edge to the output: 0.9, more than any single path (the widest carries .5)."""
    mixed = np.array([[[0.5, 0.5], [0.5, 0.5]], [[0.9, 0.1], [0.1, 0.9]], [[1.0, 0.0], [0.3, 0.7]]])
    max_flow = layered_max_flow(mixed)
    assert max_flow(0, 0) == pytest.approx(0.6, abs=1e-8)
    assert max_flow(0, 1) == pytest.approx(0.9, abs=1e-8)
    assert widest_path(mixed)[1, 0] == pytest.approx(0.5)


def widest_path(mixed: np.ndarray) -> np.ndarray:
    """[output, input]: the largest bottleneck of a single path (dynamic programming, no max-flow solver)."""
    widest = mixed[0]  # [position after layer 1, input]
    for layer in mixed[1:]:
        widest = np.max(np.minimum(layer[:, :, None], widest[None, :, :]), axis=1)
    return widest


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_flow_lies_between_the_widest_path_and_the_end_cuts(seed):
    """Any one path is a feasible flow, so flow >= its bottleneck; the edges out of the input token and the edges
    into the output position are cuts, so flow <= each of their sums. Up to the integer resolution of the solver."""
    mixed = with_residual(random_attention(3, 6, seed=seed))
    max_flow = layered_max_flow(mixed)
    flow = np.array([[max_flow(source, output) for source in range(6)] for output in range(6)])
    slack = 100 * FLOW_RESOLUTION
    assert (flow >= widest_path(mixed) - slack).all()
    assert (flow <= mixed[0].sum(axis=0)[None, :] + slack).all()  # out of the input token
    assert (flow <= mixed[-1].sum(axis=1)[:, None] + slack).all()  # into the output position (each row sums to 1)
    assert (flow > widest_path(mixed) + 0.01).any()  # several paths together carry more than the widest


def test_flow_accepts_64_tokens_and_refuses_longer_inputs():
    assert FLOW_TOKEN_LIMIT >= 64
    seq = FLOW_TOKEN_LIMIT + 1
    with pytest.raises(InvalidInputError, match="limited to"):
        attention_flow(np.broadcast_to(np.eye(seq), (2, seq, seq)))
