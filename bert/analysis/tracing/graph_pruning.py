"""Influence, pruning and the two scores of an attribution graph, as circuit-tracer defines them (Ameisen et al.
2025, "Circuit tracing", sections 2.3 and 5; the open implementation's `prune_graph` and `compute_graph_scores`).

- Normalised adjacency: |adjacency| with each receiver's row divided by its sum, so a receiver's incoming shares
  add up to 1.
- Influence of a node on the target: the target's row through every path, w (Â + Â² + Â³ + ...) with w the
  target's indicator (the graph is acyclic, so the series ends after at most layers + 1 terms).
- Pruning: keep the nodes that carry `node_threshold` of the total influence (largest first, cumulative), and the
  embeddings and the target always; then, in the graph of those nodes, keep the edges that carry
  `edge_threshold` of the total edge influence (an edge's influence: its normalised weight times its receiver's
  influence, the target's counting 1); then drop, until nothing changes, every feature or error node left without
  an outgoing edge and every feature left without an incoming one.
- Replacement score: of the influence that reaches the target from the embeddings and the error nodes (the
  graph's sources), the share from the embeddings, i.e. through features only.
- Completeness score: every node's share of incoming weight from non-error nodes, averaged with the weights of
  each node's influence (the target's counting 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...errors import InvalidInputError
from .attribution_graph import AttributionGraph


def normalized(adjacency: torch.Tensor) -> torch.Tensor:
    absolute = adjacency.abs()
    return absolute / absolute.sum(dim=1, keepdim=True).clamp_min(1e-10)


def influence(adjacency: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """[node]: weights (A + A² + ...) for an acyclic A (rows receivers), weights [node] on the receivers."""
    total = torch.zeros_like(weights)
    current = weights @ adjacency
    for _ in range(len(weights) + 1):
        if not bool(current.any()):
            return total
        total, current = total + current, current @ adjacency
    raise InvalidInputError("the graph has a cycle: influence does not converge")


def _target_weights(graph: AttributionGraph) -> torch.Tensor:
    weights = torch.zeros(graph.num_nodes)
    weights[graph.target_index] = 1.0
    return weights


def node_influence(graph: AttributionGraph) -> torch.Tensor:
    """[node]: each node's influence on the target through the normalised graph."""
    return influence(normalized(graph.adjacency), _target_weights(graph))


def _cutoff(scores: torch.Tensor, share: float) -> torch.Tensor:
    """The smallest score among the largest ones that together carry `share` of the total."""
    ordered = scores.sort(descending=True).values
    cumulative = ordered.cumsum(0) / ordered.sum().clamp_min(1e-30)
    return ordered[min(int(torch.searchsorted(cumulative, torch.tensor(share))), len(ordered) - 1)]


@dataclass(frozen=True)
class PrunedGraph:
    nodes: torch.Tensor  # bool [node]: kept
    edges: torch.Tensor  # bool [node, node]: kept, [receiver, source]
    influence: torch.Tensor  # [node] each node's influence on the target (unpruned graph)
    cumulative: torch.Tensor  # [node] the share of total influence carried by the nodes at least as influential


def prune(graph: AttributionGraph, node_threshold: float = 0.8, edge_threshold: float = 0.98) -> PrunedGraph:
    """Keep the nodes and edges that carry the given shares of the influence (module docstring)."""
    for name, value in (("node threshold", node_threshold), ("edge threshold", edge_threshold)):
        if not 0.0 <= value <= 1.0:
            raise InvalidInputError(f"the {name} must lie between 0 and 1, not {value}")
    weights = _target_weights(graph)
    scores = node_influence(graph)
    keep = scores >= _cutoff(scores, node_threshold)
    keep[graph.embedding_start:] = True  # the embeddings and the target stay
    kept = graph.adjacency * keep[:, None] * keep[None, :]
    kept_normalized = normalized(kept)
    edge_scores = kept_normalized * (influence(kept_normalized, weights) + weights)[:, None]
    edges = edge_scores >= _cutoff(edge_scores.flatten(), edge_threshold)
    edges &= edge_scores > 0
    inner = slice(0, graph.embedding_start)  # features and errors
    while True:
        before = keep.clone()
        edges &= keep[:, None] & keep[None, :]
        keep[inner] &= edges[:, inner].any(0)  # an outgoing edge
        keep[: graph.num_features] &= edges[: graph.num_features].any(1)  # a feature: an incoming edge
        if bool((keep == before).all()):
            break
    order = scores.sort(descending=True)
    cumulative = torch.zeros_like(scores)
    cumulative[order.indices] = order.values.cumsum(0) / order.values.sum().clamp_min(1e-30)
    return PrunedGraph(keep, edges, scores, cumulative)


def graph_scores(graph: AttributionGraph) -> tuple[float, float]:
    """(replacement score, completeness score) of the unpruned graph (module docstring)."""
    weights = _target_weights(graph)
    matrix = normalized(graph.adjacency)
    scores = influence(matrix, weights)
    errors = slice(graph.error_start, graph.embedding_start)
    from_embeddings = scores[graph.embedding_start : graph.target_index].sum()
    from_errors = scores[errors].sum()
    replacement = from_embeddings / (from_embeddings + from_errors).clamp_min(1e-30)
    non_error = 1 - matrix[:, errors].sum(1)
    weighted = scores + weights
    completeness = (non_error * weighted).sum() / weighted.sum()
    return float(replacement), float(completeness)
