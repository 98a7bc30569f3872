"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Raw attention says where one layer looks; these estimate how much each *input* token reaches each position after
several layers, treating the network as a graph whose edges are attention weights.

Residual convention (the paper's, section 3, unnumbered): a layer's output is half attention, half residual, so
each layer's head-averaged attention A becomes  Ã = 0.5·A + 0.5·I,  rows renormalised to sum to 1.

- rollout: multiply the Ã's, Ã_L ··· Ã_2 Ã_1 (Eq. 1; there Ã names the rollout and A the residual-mixed
  attention, our Ã): the share of paths from each input token to each position.
- flow (section 3, no numbered equation): a max-flow problem per (output position, input token): nodes are the
  positions at layers 0..L, an edge from position j at layer l-1 to position i at layer l has capacity Ã_l[i, j];
  the flow value from input token j to position i at the top is how much of i "comes from" j when the edges'
  capacities limit it. As in the paper's code, each output position's flows are then normalised to sum to 1.

Max flow: scipy's `maximum_flow` (Dinic's algorithm, compiled). It takes integer capacities, so the weights
(all <= 1) are scaled by 1e9 and rounded: a resolution of 1e-9 per edge, and a flow value within about
1e-9 x (edges in the minimum cut) of the exact one. seq² max-flow problems per call: at 64 tokens through six
layers, 6.7 s of CPU time (30 s wall on a loaded machine; docs/benchmarks.md, "Analyses").

Axes: layer, query (position attending / output position), key (position attended / input token).
"""
from __future__ import annotations

import math

import numpy as np

from ...costs import Cost
from ...errors import InvalidInputError
from ...stopping import checkpoint

RESIDUAL_WEIGHT = 0.5  # Ã = (1 - w)·A + w·I
FLOW_TOKEN_LIMIT = 64  # longest input attention flow accepts: seq² max-flow problems
FLOW_RESOLUTION = 1e-9  # capacities (<= 1) become integer multiples of this for scipy: int32 holds up to 2.1e9
FLOW_PASSES_AT_LIMIT = 10  # flow at 64 tokens: 13.2 s; one BERT-base pass of 64 tokens: 1.1-1.7 s (2 cores)


def with_residual(attention: np.ndarray, residual: float = RESIDUAL_WEIGHT) -> np.ndarray:
    """(1 - residual)·A + residual·I, rows renormalised: [..., query, key] -> same shape."""
    a = np.asarray(attention, dtype=np.float64)
    if a.shape[-1] != a.shape[-2]:
        raise InvalidInputError(f"attention must be [..., query, key] with query == key, got shape {a.shape}")
    mixed = (1 - residual) * a + residual * np.eye(a.shape[-1])
    return mixed / mixed.sum(axis=-1, keepdims=True)


def head_average(patterns: np.ndarray) -> np.ndarray:
    """[layer, head, query, key] -> [layer, query, key]: the attention of a layer as the mean of its heads."""
    return np.asarray(patterns, dtype=np.float64).mean(axis=1)


def attention_rollout(attention: np.ndarray, residual: float = RESIDUAL_WEIGHT) -> np.ndarray:
    """Rollout after each layer: [layer, query, key] -> [layer, query, key], entry l = Ã_l ··· Ã_1 (paper's Eq. 1).

    attention: each layer's attention (head-averaged), [layer, query, key]. Rows of the result sum to 1.
    """
    mixed = with_residual(attention, residual)
    rolled = np.empty_like(mixed)
    current = np.eye(mixed.shape[-1])
    for layer, a in enumerate(mixed):
        current = a @ current
        rolled[layer] = current
    return rolled


def attention_flow(attention: np.ndarray, residual: float = RESIDUAL_WEIGHT, layer: int | None = None) -> np.ndarray:
    """Attention flow to each position after `layer` (default: the last) from each input token: [query, key],
    each row normalised to sum to 1.

    attention: [layer, query, key], head-averaged. Costs seq² max-flow problems on a graph of (layer + 1)·seq
    nodes, so inputs longer than FLOW_TOKEN_LIMIT are refused.
    """
    mixed = with_residual(attention, residual)
    layers, seq, _ = mixed.shape
    top = layers if layer is None else layer + 1
    if not 1 <= top <= layers:
        raise InvalidInputError(f"layer must lie in 0..{layers - 1}")
    if seq > FLOW_TOKEN_LIMIT:
        raise InvalidInputError(
            f"attention flow is limited to {FLOW_TOKEN_LIMIT} tokens and this input has {seq}; "
            f"use rollout, or a shorter input"
        )
    max_flow = layered_max_flow(mixed[:top])
    flow = np.array([_flow_row(max_flow, output, seq) for output in range(seq)])
    return flow / flow.sum(axis=-1, keepdims=True)


def _flow_row(max_flow, output: int, seq: int) -> list[float]:
    """One output position's flow from every input token; a watcher (bert/stopping.py) may stop it before."""
    checkpoint(0)
    return [max_flow(source, output) for source in range(seq)]


def attention_flow_cost(tokens: int) -> Cost:
    """What attention_flow costs over `tokens` tokens, as the forward passes of a BERT-base model over them it takes
    as long as: FLOW_PASSES_AT_LIMIT at FLOW_TOKEN_LIMIT tokens, scaled by the cube of the length (tokens² max-flow
    problems, each on a graph that grows with the tokens: 2.15 s at 32 tokens, 0.25 s at 16), at least one."""
    return Cost(max(1, math.ceil(FLOW_PASSES_AT_LIMIT * (tokens / FLOW_TOKEN_LIMIT) ** 3)), tokens,
                ("a shorter text",))


def layered_max_flow(mixed: np.ndarray):
    """max_flow(source, sink): the max flow from input position `source` (below layer 0) to position `sink` after
    the last layer, on the graph whose edge (l, j) -> (l + 1, i) has capacity mixed[l][i, j]. The graph is built
    once for all pairs; scipy solves each pair."""
    from scipy.sparse import csr_matrix  # scipy's graphs imported when a flow is asked for
    from scipy.sparse.csgraph import maximum_flow

    layers, seq, _ = mixed.shape
    nodes = (layers + 1) * seq
    capacity = np.zeros((nodes, nodes))
    for layer in range(layers):  # node layer·seq + position; edge (layer, j) -> (layer + 1, i) carries Ã[i, j]
        capacity[layer * seq : (layer + 1) * seq, (layer + 1) * seq : (layer + 2) * seq] = mixed[layer].T
    graph = csr_matrix(np.round(capacity / FLOW_RESOLUTION).astype(np.int32))

    def max_flow(source: int, sink: int) -> float:
        return maximum_flow(graph, source, layers * seq + sink, method="dinic").flow_value * FLOW_RESOLUTION

    return max_flow
