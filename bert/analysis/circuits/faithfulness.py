"""Circuits from scores, and how much of the model's behaviour they keep (Mueller et al. 2025, MIB).

A circuit is a set of edges. Running it: the clean sentence, every edge in the circuit carrying its value in this
run, every edge outside it the counterfactual's (graph_run.py, direction "noise"). Its faithfulness

    f(C) = (m(C) - m(∅)) / (m(N) - m(∅))

with m(N) the full model's metric (the clean run), m(∅) the empty circuit's (every edge patched: the
counterfactual run), each the mean over the pairs. The faithfulness curve takes the top k edges by |score| for
the fractions k in MIB_FRACTIONS of all edges; CPR (circuit performance ratio) is the area under f over the
fraction of edges (higher is better), CMD (circuit-model distance) the area between f and 1, ∫ |1 - f| (lower is
better), both by the trapezoid rule from fraction 0 (f = 0 by definition) to 1 (f = 1). A random circuit (edges
in a seeded random order) is the baseline. Node-level circuits: a node out of the circuit has every outgoing edge
patched (the embeddings and the logits are always in).

A pruned circuit keeps, of the top n edges, those on a path from the embeddings to the logits within the circuit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ...config import BertConfig
from ...costs import Cost, pass_bytes
from ...model import Bert
from ..causal.patching import Contrast
from .edge_scores import EdgeScores, pair_runs, pair_runs_bytes, patched_metrics
from .encoder_parts import EncoderParts
from .graph_run import graph_run_bytes
from .graph import CircuitGraph

MIB_FRACTIONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)  # circuit sizes, as fractions of the edges


@dataclass(frozen=True)
class FaithfulnessCurve:
    sizes: list[int]  # edges (or nodes) in each circuit
    fractions: list[float]  # sizes / all edges (or nodes)
    kept: list[float]  # f(C) at each size
    cpr: float
    cmd: float
    ranking: str  # "eap-ig", "exact", "random (seed 0)", ...

    def to_rows(self, unit: str = "edges") -> list[dict]:
        return [{unit: size, "kept": kept} for size, kept in zip(self.sizes, self.kept)]


def area_scores(fractions: Sequence[float], kept: Sequence[float]) -> tuple[float, float]:
    """(CPR, CMD): the trapezoid areas of f and of |1 - f| over the fractions, with (0, 0) added in front when the
    first fraction is above 0."""
    x, f = list(fractions), list(kept)
    if x[0] > 0:
        x, f = [0.0] + x, [0.0] + f
    x_tensor, f_tensor = torch.tensor(x, dtype=torch.float64), torch.tensor(f, dtype=torch.float64)
    return float(torch.trapezoid(f_tensor, x_tensor)), float(torch.trapezoid((1 - f_tensor).abs(), x_tensor))


def faithfulness(clean: float, corrupted: float, circuit: torch.Tensor) -> torch.Tensor:
    """f = (m(C) - m(∅)) / (m(N) - m(∅)) for circuit metrics [size]."""
    return (circuit - corrupted) / (clean - corrupted)


def sizes_for(total: int, fractions: Sequence[float] = MIB_FRACTIONS) -> list[int]:
    """The number of items at each fraction (at least 1)."""
    return [max(1, round(fraction * total)) for fraction in fractions]


def faithfulness_curve(
    model: Bert, contrasts: Sequence[Contrast], ranking: torch.Tensor, metric: str = "logit-difference",
    fractions: Sequence[float] = MIB_FRACTIONS, nodes: bool = False, label: str = "", batch_size: int = 16,
) -> FaithfulnessCurve:
    """The curve of the circuits made of the top items of `ranking` (scores [edge], or [sender] with nodes=True;
    ranked by |score|), averaged over the pairs as f of the mean metrics."""
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    total = len(graph.senders) - 1 if nodes else len(graph)
    sizes = sizes_for(total, fractions)
    patched = torch.stack([~circuit_edges(graph, ranking, size, nodes) for size in sizes])
    means, clean, corrupted = torch.zeros(len(sizes)), 0.0, 0.0
    for contrast in contrasts:
        runs = pair_runs(parts, graph, contrast, metric)
        means += patched_metrics(parts, graph, runs, metric, "noise", patched, batch_size)
        clean, corrupted = clean + runs.metrics["clean"], corrupted + runs.metrics["corrupted"]
    count = len(contrasts)
    kept = faithfulness(clean / count, corrupted / count, means / count).tolist()
    cpr, cmd = area_scores(list(fractions), kept)
    return FaithfulnessCurve(sizes, list(fractions), kept, cpr, cmd, label)


def circuit_edges(graph: CircuitGraph, ranking: torch.Tensor, size: int, nodes: bool = False) -> torch.Tensor:
    """bool [edge]: the circuit of the `size` items of largest |score| (nodes: every edge of the chosen nodes and
    of the embeddings)."""
    if not nodes:
        keep = torch.zeros(len(graph), dtype=torch.bool)
        keep[ranking.abs().argsort(descending=True, stable=True)[:size]] = True
        return keep
    chosen = torch.zeros(len(graph.senders), dtype=torch.bool)
    chosen[0] = True  # the embeddings: always in
    chosen[1 + ranking[1:].abs().argsort(descending=True, stable=True)[:size]] = True
    return (graph.outgoing() & chosen[:, None]).any(dim=0)


def random_ranking(count: int, seed: int = 0) -> torch.Tensor:
    """Scores that rank `count` items in a seeded random order."""
    return torch.randperm(count, generator=torch.Generator().manual_seed(seed)).float() + 1


def pruned_circuit(graph: CircuitGraph, scores: EdgeScores | torch.Tensor, size: int) -> torch.Tensor:
    """bool [edge]: of the top `size` edges by |score|, those on a path from the embeddings to the logits that
    stays in the circuit (an edge goes when its sender receives nothing in the circuit, or its receiver's node
    sends nothing in it; repeated until nothing changes)."""
    values = scores.scores if isinstance(scores, EdgeScores) else scores
    keep = circuit_edges(graph, values, size)
    senders = [edge.sender.name for edge in graph.edges]
    receivers = [edge.receiver.node.name for edge in graph.edges]
    while True:
        reached = {"embeddings"} | {receivers[i] for i in range(len(graph)) if keep[i]}
        sending = {"logits"} | {senders[i] for i in range(len(graph)) if keep[i]}
        drop = [i for i in range(len(graph)) if keep[i] and (senders[i] not in reached or receivers[i] not in sending)]
        if not drop:
            return keep
        keep[drop] = False


def faithfulness_cost(config: BertConfig, tokens: int, pairs: int = 1, points: int = len(MIB_FRACTIONS),
                      batch_size: int = 16) -> Cost:
    """The rows `faithfulness_curve` runs: each pair's two recorded runs and one row per circuit size, `batch_size`
    rows a pass, each row's circuit patching edges into most receivers' streams (edge_scores_cost's memory
    without gradients)."""
    graph, rows = CircuitGraph.of(config), min(batch_size, points)
    peak = (pair_runs_bytes(graph, config.hidden_size, tokens, rows) + graph_run_bytes(graph, config.hidden_size, tokens, rows)
            + pass_bytes(config, tokens, rows))
    return Cost(pairs * (2 + points), tokens, ("fewer pairs", "fewer circuit sizes"), peak_bytes=peak, rows_at_once=0)
