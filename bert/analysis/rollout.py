"""Attention rollout and attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Raw attention says where one layer looks; these estimate how much each *input* token reaches each position after
several layers, treating the network as a graph whose edges are attention weights.

Residual convention (the paper's): a layer's output is half attention, half residual, so each layer's
head-averaged attention A becomes  Ã = 0.5·A + 0.5·I,  rows renormalised to sum to 1.

- rollout: multiply the Ã's, Ã_L ··· Ã_2 Ã_1: the share of paths from each input token to each position.
- flow: a max-flow problem per (output position, input token): nodes are the positions at layers 0..L, an edge
  from position j at layer l-1 to position i at layer l has capacity Ã_l[i, j]; the flow value from input token
  j to position i at the top is how much of i "comes from" j when the edges' capacities limit it. As in the
  paper's code, each output position's flows are then normalised to sum to 1.

Max flow: scipy's `maximum_flow` (Dinic's algorithm, compiled; capacities scaled to integers, 1e-9 resolution)
when scipy is installed, else our own Edmonds-Karp (shortest augmenting paths) in plain Python, which is exact
but slow, so its input limit is lower. Both are limited to short inputs: seq² max-flow problems per call.

Axes: layer, query (position attending / output position), key (position attended / input token).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import InvalidInputError

RESIDUAL_WEIGHT = 0.5  # Ã = (1 - w)·A + w·I
FLOW_TOKEN_LIMIT = {"scipy": 24, "edmonds-karp": 10}  # longest input attention flow accepts, by max-flow method
_SCALE = 1e9  # capacities (<= 1) become integers for scipy: int32 holds up to 2.1e9


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
    """Rollout after each layer: [layer, query, key] -> [layer, query, key], entry l = Ã_l ··· Ã_1.

    attention: each layer's attention (head-averaged), [layer, query, key]. Rows of the result sum to 1.
    """
    mixed = with_residual(attention, residual)
    rolled = np.empty_like(mixed)
    current = np.eye(mixed.shape[-1])
    for layer, a in enumerate(mixed):
        current = a @ current
        rolled[layer] = current
    return rolled


def flow_method() -> str:
    """"scipy" when scipy is installed, else "edmonds-karp" (ours, in plain Python)."""
    try:
        import scipy.sparse.csgraph  # noqa: F401
    except ImportError:
        return "edmonds-karp"
    return "scipy"


def attention_flow(
    attention: np.ndarray, residual: float = RESIDUAL_WEIGHT, layer: int | None = None, method: str | None = None,
) -> np.ndarray:
    """Attention flow to each position after `layer` (default: the last) from each input token: [query, key],
    each row normalised to sum to 1.

    attention: [layer, query, key], head-averaged. method: "scipy" or "edmonds-karp" (default: `flow_method()`).
    Costs seq² max-flow problems on a graph of (layer + 1)·seq nodes, so inputs longer than
    FLOW_TOKEN_LIMIT[method] are refused.
    """
    method = method or flow_method()
    if method not in FLOW_TOKEN_LIMIT:
        raise InvalidInputError(f"method must be one of {sorted(FLOW_TOKEN_LIMIT)}, not {method!r}")
    mixed = with_residual(attention, residual)
    layers, seq, _ = mixed.shape
    top = layers if layer is None else layer + 1
    if not 1 <= top <= layers:
        raise InvalidInputError(f"layer must lie in 0..{layers - 1}")
    if seq > FLOW_TOKEN_LIMIT[method]:
        raise InvalidInputError(
            f"attention flow ({method}) is limited to {FLOW_TOKEN_LIMIT[method]} tokens and this input has {seq}; "
            f"use rollout, or a shorter input"
        )
    max_flow = _scipy_max_flow(mixed[:top]) if method == "scipy" else _LayeredGraph(mixed[:top]).max_flow
    flow = np.array([[max_flow(source, output) for source in range(seq)] for output in range(seq)])
    return flow / flow.sum(axis=-1, keepdims=True)


def _scipy_max_flow(mixed: np.ndarray):
    """max_flow(source, sink) on the layered graph, by scipy (the graph is built once for all pairs)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    layers, seq, _ = mixed.shape
    nodes = (layers + 1) * seq
    capacity = np.zeros((nodes, nodes))
    for layer in range(layers):  # node layer·seq + position; edge (layer, j) -> (layer + 1, i) carries Ã[i, j]
        capacity[layer * seq : (layer + 1) * seq, (layer + 1) * seq : (layer + 2) * seq] = mixed[layer].T
    graph = csr_matrix(np.round(capacity * _SCALE).astype(np.int32))

    def max_flow(source: int, sink: int) -> float:
        return maximum_flow(graph, source, layers * seq + sink, method="dinic").flow_value / _SCALE

    return max_flow


class _LayeredGraph:
    """Nodes (layer, position) numbered layer·seq + position; edges only from layer l-1 to layer l."""

    def __init__(self, mixed: np.ndarray):
        self.layers, self.seq, _ = mixed.shape
        self.capacity = mixed  # capacity[l][i, j]: edge (l, j) -> (l + 1, i)

    def max_flow(self, source: int, sink: int) -> float:
        """Edmonds-Karp from input position `source` (layer 0) to position `sink` at the top layer."""
        seq, layers = self.seq, self.layers
        # flow[l][i, j] on edge (l, j) -> (l + 1, i); residual forward = capacity - flow, backward = flow
        flow = [np.zeros((seq, seq)) for _ in range(layers)]
        total = 0.0
        while True:
            parent = self._shortest_path(flow, source, sink)
            if parent is None:
                return total
            path, node = [], (layers, sink)
            while node != (0, source):
                previous = parent[node]
                path.append((previous, node))
                node = previous
            bottleneck = min(self._residual(flow, a, b) for a, b in path)
            for (la, pa), (lb, pb) in path:
                if lb == la + 1:
                    flow[la][pb, pa] += bottleneck
                else:  # undoing flow on the edge (lb, pb) -> (la, pa)
                    flow[lb][pa, pb] -= bottleneck
            total += bottleneck

    def _residual(self, flow, a, b) -> float:
        (la, pa), (lb, pb) = a, b
        if lb == la + 1:
            return self.capacity[la][pb, pa] - flow[la][pb, pa]
        return flow[lb][pa, pb]

    def _shortest_path(self, flow, source: int, sink: int, eps: float = 1e-12):
        """Breadth-first search in the residual graph; parent pointers, or None when the sink is unreachable."""
        start, goal = (0, source), (self.layers, sink)
        parent = {start: None}
        queue = deque([start])
        while queue:
            layer, position = queue.popleft()
            if layer < self.layers:  # forward edges to layer + 1
                room = self.capacity[layer][:, position] - flow[layer][:, position]
                for nxt in np.flatnonzero(room > eps):
                    node = (layer + 1, int(nxt))
                    if node not in parent:
                        parent[node] = (layer, position)
                        if node == goal:
                            return parent
                        queue.append(node)
            if layer > 0:  # backward edges (undo flow) to layer - 1
                for prev in np.flatnonzero(flow[layer - 1][position, :] > eps):
                    node = (layer - 1, int(prev))
                    if node not in parent:
                        parent[node] = (layer, position)
                        queue.append(node)
        return None
