"""Supernodes: nodes of an attribution graph grouped by hand into one named node, as circuit-tracer's users group
features in its viewer (Ameisen et al. 2025, "Circuit tracing", its "supernodes"). The graph with each group as one
node: an edge from a group is the sum of its members' edges to the same receiver, an edge into it the sum of the
edges into its members (the group's input is the sum of theirs), and edges among a group's members drop out.

    merged, groups = merge_nodes(graph.adjacency, [Supernode("plural", (12, 40, 41))])
    groups[i]                      # the old nodes new node i stands for, in order of their first member
    merged[i, j]                   # the summed edge from new node j into new node i

In circuit-tracer's graph JSON a supernode is a list, its name then its members' node ids, in `qParams.supernodes`
(graph_json.py); its viewer merges them among the pinned nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ...errors import InvalidInputError


@dataclass(frozen=True)
class Supernode:
    name: str  # what the visitor calls the group (plain text)
    members: tuple[int, ...]  # node indices of the graph


def groups_of(nodes: int, supernodes: Sequence[Supernode]) -> list[tuple[int, ...]]:
    """Each new node's old nodes: every node outside a supernode alone, each supernode's members together, ordered
    by their first member. InvalidInputError for an empty group, a node outside 0 .. nodes − 1, or one in two."""
    owner: dict[int, int] = {}
    for number, supernode in enumerate(supernodes):
        if not supernode.members:
            raise InvalidInputError(f"the supernode {supernode.name!r} has no members: pick at least one node")
        for node in supernode.members:
            if not 0 <= node < nodes:
                raise InvalidInputError(f"node {node} is not in the graph (0 .. {nodes - 1})")
            if owner.setdefault(node, number) != number:
                raise InvalidInputError(f"node {node} is in two supernodes; a node belongs to one at most")
    groups, seen = [], set()
    for node in range(nodes):
        if node not in owner:
            groups.append((node,))
        elif owner[node] not in seen:
            seen.add(owner[node])
            groups.append(tuple(sorted(set(supernodes[owner[node]].members))))
    return groups


def merge_nodes(adjacency: torch.Tensor, supernodes: Sequence[Supernode]) -> tuple[torch.Tensor, list[tuple[int, ...]]]:
    """(merged [group, group], groups) from adjacency [receiver, source]: merged = P A Pᵀ with P [group, node] the
    membership, its diagonal (edges inside a group) zero."""
    groups = groups_of(adjacency.shape[0], supernodes)
    membership = torch.zeros(len(groups), adjacency.shape[0], dtype=adjacency.dtype, device=adjacency.device)
    for group, members in enumerate(groups):
        membership[group, list(members)] = 1.0
    merged = membership @ adjacency @ membership.T
    merged.fill_diagonal_(0.0)
    return merged, groups
