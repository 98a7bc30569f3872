"""Edge scores on clean/counterfactual pairs: how much the metric at the [MASK] changes when one edge carries the
other run's value.

    contrast = prepare_contrast(tokenizer, "the keys to the cabinet [MASK] here .", "the key to the cabinet [MASK] here .",
                                answer="are", foil="is")
    scores = edge_scores(model, [contrast], method="eap-ig", steps=5)
    scores.top(10)          # [(Edge, score)], largest |score| first
    scores.nodes            # [sender] each node's score: all its outgoing edges at once

The metric (`metric`): "logit-difference", logit(answer) - logit(foil), or "probability", p(answer), at the [MASK]
(Vig et al. 2020; Heimersheim & Nanda 2024). Direction "noise" (the default, as MIB scores circuits) runs the clean
sentence and patches an edge with the counterfactual's value; "denoise" runs the counterfactual and patches the
clean value in. An edge's score is metric(patched) - metric(run), averaged over the pairs.

Methods:
- exact: one patched run per edge (graph_run.py's recursive edge patching), recomputing only what the edge reaches
  (edge_reach.py: from its receiver's layer on), `batch_size` edges a batch; then one whole run per node.
- eap: edge attribution patching (Syed et al. 2023): the first-order change, (source - run) output of the sender
  times the gradient of the metric at the receiver's input; one forward and one backward pass per pair.
- eap-ig: EAP with integrated gradients on the inputs (Hanna et al. 2024, "EAP-IG-inputs" in MIB): the gradient
  averaged over `steps` runs whose embeddings lie on the straight path between the source's (the baseline) and the
  run's, at k / steps of the way from the source, k = 0 .. steps - 1 (`input_path_fractions`), times the same fixed
  difference; `steps` forward and backward passes per pair. In the direction noise these are Hanna et al.'s points
  (their path starts at the counterfactual); in denoise the source is the clean run, so the path starts there.
- eap-ig-activations: integrated gradients on the senders' outputs instead of the input (MIB's EAP-IG-activations,
  Mueller et al. 2025; Marks et al. 2024): for each group of senders (`activation_groups`: the embeddings, each
  layer's heads, each MLP), `steps` runs of the run's input in which that group's outputs, in every receiver's
  stream, lie k / steps of the way from the run's to the source's (k = 0 .. steps - 1), every other group
  computing its output from what it reads; an edge's score is its sender group's gradient averaged over those
  runs, times the same difference (for the embeddings' group: eap-ig with the Riemann sum from the run's end).
  `steps` forward and backward passes per group and pair. MIB's code differs in two ways: it averages every
  group's runs into every edge's score, and its hook makes the interpolated output a constant (no gradient
  reaches the group's own inputs in its runs).
The gradients are taken with respect to the edge mask of graph_run.py at 0, which is the same product in a
pre-norm model and, in a post-LN one, includes the LayerNorms between sender and receiver.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ...config import BertConfig
from ...costs import Cost, pass_bytes
from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ..causal.patching import DIRECTIONS, Contrast
from .edge_reach import RunStreams, edge_metrics, reach_passes
from .encoder_parts import EncoderParts
from .graph import CircuitGraph, Edge
from .graph_run import graph_run_bytes, run_graph

METHODS = ("exact", "eap", "eap-ig", "eap-ig-activations")
INTEGRATED = ("eap-ig", "eap-ig-activations")  # the methods with integration steps
METRICS = ("logit-difference", "probability")
Progress = Callable[[int, int], None]  # (rows done, rows in all)


@dataclass(frozen=True)
class PairRuns:
    """One pair's two runs: embeddings [1, seq, hidden], every sender's output [1, sender, seq, hidden], metric."""

    contrast: Contrast
    embeddings: dict[str, torch.Tensor]  # "clean", "corrupted"
    outputs: dict[str, torch.Tensor]
    metrics: dict[str, float]

    def oriented(self, direction: str) -> tuple[str, str]:
        """(the run that is patched, the run the patches come from)."""
        return ("clean", "corrupted") if direction == "noise" else ("corrupted", "clean")


def read_metric(parts: EncoderParts, final: torch.Tensor, contrast: Contrast, metric: str) -> torch.Tensor:
    """[row] the metric at the [MASK] from a pass's final hidden states [row, seq, hidden]."""
    return mask_metric(parts, final[:, contrast.mask_position], contrast, metric)


def mask_metric(parts: EncoderParts, final: torch.Tensor, contrast: Contrast, metric: str) -> torch.Tensor:
    """[row] the metric from the final hidden states at the [MASK], [row, hidden]."""
    if metric == "probability":
        return parts.logits(final).float().softmax(dim=-1)[:, contrast.answer_id]  # over the whole vocabulary
    logits = parts.logits(final, [contrast.answer_id, contrast.foil_id]).float()  # [row, 2]
    return logits[:, 0] - logits[:, 1]


@torch.no_grad()
def pair_runs(parts: EncoderParts, graph: CircuitGraph, contrast: Contrast, metric: str) -> PairRuns:
    """The clean and the counterfactual run of a pair, every sender's output recorded."""
    device = model_device(parts.model)
    embeddings, outputs, metrics = {}, {}, {}
    for name, encoding in (("clean", contrast.clean), ("corrupted", contrast.corrupted)):
        input_ids, token_type_ids = encoding.tensors(device)
        embeddings[name] = parts.embed(input_ids, token_type_ids, None)
        run = run_graph(parts, graph, embeddings[name], None, record=True)
        outputs[name], metrics[name] = run.outputs, float(read_metric(parts, run.final, contrast, metric)[0])
    return PairRuns(contrast, embeddings, outputs, metrics)


@dataclass(frozen=True)
class EdgeScores:
    graph: CircuitGraph
    scores: torch.Tensor  # [edge], mean over the pairs
    nodes: torch.Tensor  # [sender]: patching all of a node's outgoing edges (exact) or the sum of their scores (eap, eap-ig)
    method: str
    metric: str
    direction: str
    steps: int | None
    clean_metric: float  # mean over the pairs
    corrupted_metric: float
    pairs: int
    positions: torch.Tensor | None = None  # [edge, seq] per sender position (eap, eap-ig with per_position); sums to scores
    tokens: list[str] | None = None  # the first pair's clean tokens

    def position_shares(self) -> torch.Tensor:
        """[sender column, seq]: where the |score| of the edges sent from each column lies, as shares over the
        positions (column 0 the embeddings, column l + 1 the heads and MLP of layer l); needs per_position."""
        if self.positions is None:
            raise InvalidInputError("position shares need per-position scores: edge_scores(..., per_position=True)")
        columns = torch.tensor([0 if edge.sender.layer is None else edge.sender.layer + 1 for edge in self.graph.edges])
        magnitude = torch.zeros(self.graph.num_layers + 1, self.positions.shape[1]).index_add_(0, columns, self.positions.abs())
        return magnitude / magnitude.sum(dim=1, keepdim=True).clamp_min(torch.finfo(magnitude.dtype).tiny)

    def top(self, count: int) -> list[tuple[Edge, float]]:
        """The `count` edges of largest |score|, largest first."""
        order = self.scores.abs().argsort(descending=True, stable=True)[:count].tolist()
        return [(self.graph.edges[index], float(self.scores[index])) for index in order]


def check_settings(method: str, metric: str, direction: str, steps: int | None) -> None:
    for name, value, choices in (("method", method, METHODS), ("metric", metric, METRICS), ("direction", direction, DIRECTIONS)):
        if value not in choices:
            raise InvalidInputError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    if method in INTEGRATED and (steps is None or steps < 1):
        raise InvalidInputError(f"EAP-IG needs at least 1 integration step, not {steps}")


def edge_scores(
    model: Bert, contrasts: Sequence[Contrast], method: str = "eap-ig", metric: str = "logit-difference",
    direction: str = "noise", steps: int = 5, batch_size: int = 32, progress: Progress | None = None,
    per_position: bool = False,
) -> EdgeScores:
    """Every edge's score (and every node's), averaged over the pairs; the cost is `edge_scores_cost`'s.
    batch_size: exact patching's rows per forward pass (the gradient methods run one row at a time).
    per_position (eap, eap-ig; pairs of one length): also each edge's score split over its sender's positions."""
    check_settings(method, metric, direction, steps)
    if not contrasts:
        raise InvalidInputError("give at least one clean/counterfactual pair")
    if per_position and (method == "exact" or len({len(c.clean) for c in contrasts}) > 1):
        raise InvalidInputError("per-position scores come from EAP or EAP-IG on pairs of one length (exact patching per "
                                "position would take a pass per edge and position)")
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be at least 1, not {batch_size}")
    parts, graph = EncoderParts.of(model), CircuitGraph.of(model.config)
    edge_total, node_total, position_total, metrics = 0, 0, 0, {"clean": 0.0, "corrupted": 0.0}
    for number, contrast in enumerate(contrasts):
        runs = pair_runs(parts, graph, contrast, metric)
        if method == "exact":
            edges, nodes = _exact(parts, graph, runs, metric, direction, batch_size, progress, number, len(contrasts))
        else:
            attribution = _activation_attribution if method == "eap-ig-activations" else _attribution
            positions = attribution(parts, graph, runs, metric, direction, steps if method in INTEGRATED else None, per_position)
            edges = positions.sum(-1) if per_position else positions
            position_total = position_total + positions if per_position else None
            nodes = (graph.outgoing().float() @ edges[:, None]).flatten()
        edge_total, node_total = edge_total + edges, node_total + nodes
        metrics = {name: metrics[name] + runs.metrics[name] for name in metrics}
        if progress is not None and method != "exact":
            progress(number + 1, len(contrasts))
    count = len(contrasts)
    return EdgeScores(graph, edge_total / count, node_total / count, method, metric, direction,
                      steps if method in INTEGRATED else None, metrics["clean"] / count, metrics["corrupted"] / count, count,
                      position_total / count if per_position else None, list(contrasts[0].clean.tokens))


@torch.no_grad()
def patched_metrics(parts: EncoderParts, graph: CircuitGraph, runs: PairRuns, metric: str, direction: str,
                    patched: torch.Tensor | Callable[[int, int], torch.Tensor], batch_size: int,
                    progress: Progress | None = None, rows: int | None = None) -> torch.Tensor:
    """[row] the metric with the edges `patched` (bool or 0/1 [row, edge], or a function (start, stop) giving
    those rows, with their number in `rows`) carrying the source's outputs."""
    run, source = runs.oriented(direction)
    rows = patched.shape[0] if rows is None else rows
    values = torch.empty(rows)
    for start in range(0, rows, batch_size):
        stop = min(start + batch_size, rows)
        chunk = (patched[start:stop] if isinstance(patched, torch.Tensor) else patched(start, stop)).float()
        embeddings = runs.embeddings[run].expand(stop - start, -1, -1)
        result = run_graph(parts, graph, embeddings, None, graph.mask(chunk.to(embeddings.device)), runs.outputs[source])
        values[start:stop] = read_metric(parts, result.final, runs.contrast, metric).cpu()
        if progress is not None:
            progress(stop, rows)
    return values


def exact_edge_metrics(parts: EncoderParts, graph: CircuitGraph, runs: PairRuns, metric: str, direction: str,
                       edges: Sequence[int] | None = None, batch_size: int = 32, progress: Progress | None = None) -> torch.Tensor:
    """[edge] the metric with each of `edges` (None: every edge) alone patched, as `patched_metrics` gives it with
    one edge a row, recomputing only what the edge reaches (edge_reach.py)."""
    run, source = runs.oriented(direction)
    streams = RunStreams.of(parts, graph, runs.embeddings[run], runs.outputs[run])
    difference = (runs.outputs[source] - runs.outputs[run])[0]  # [sender, seq, hidden]
    return edge_metrics(parts, graph, streams, difference, lambda final: mask_metric(parts, final, runs.contrast, metric),
                        runs.contrast.mask_position, range(len(graph)) if edges is None else edges, batch_size, progress)


def _exact(parts, graph, runs: PairRuns, metric, direction, batch_size, progress, number, pairs):
    """Each edge's and each node's exact score: one patched row per edge (from its receiver's layer on), then one
    per node (a whole pass)."""
    run, _ = runs.oriented(direction)
    total = len(graph) + len(graph.senders)

    def pair_progress(first: int) -> Progress:
        def report(done: int, _: int) -> None:
            if progress is not None:
                progress(number * total + first + done, pairs * total)
        return report

    edges = exact_edge_metrics(parts, graph, runs, metric, direction, None, batch_size, pair_progress(0))
    nodes = patched_metrics(parts, graph, runs, metric, direction, graph.outgoing(), batch_size, pair_progress(len(graph)))
    return edges - runs.metrics[run], nodes - runs.metrics[run]


def _attribution(parts, graph, runs: PairRuns, metric, direction, steps: int | None, per_position: bool = False) -> torch.Tensor:
    """EAP (steps None: the gradient at the run itself) or EAP-IG: d metric / d mask at 0, averaged over the runs
    whose embeddings lie at `input_path_fractions(steps)` of the way to the source's; [edge] (per_position: [edge, seq])."""
    fractions = [0.0] if steps is None else input_path_fractions(steps)
    total = sum(mask_gradient(parts, graph, runs, metric, direction, fraction, per_position) for fraction in fractions)
    return graph.edge_values(total[None])[0].cpu() / len(fractions)


def _activation_attribution(parts, graph, runs: PairRuns, metric, direction, steps: int, per_position: bool = False) -> torch.Tensor:
    """EAP-IG-activations: each edge's gradient averaged over the runs in which its sender's group lies k / steps
    of the way from the run's outputs to the source's (k = 0 .. steps - 1); [edge] (per_position: [edge, seq])."""
    shape = (len(graph.receivers), len(graph.senders)) + ((runs.embeddings["clean"].shape[1],) if per_position else ())
    total = torch.zeros(shape)
    for group in activation_groups(graph):
        for k in range(steps):
            at = torch.zeros(shape)
            at[:, group] = k / steps  # the group's outputs, k / steps of the way to the source's, in every stream
            total[:, group] += mask_gradient(parts, graph, runs, metric, direction, 0.0, per_position, at).cpu()[:, group]
    return graph.edge_values(total[None])[0] / steps


def activation_groups(graph: CircuitGraph) -> list[list[int]]:
    """The sender groups EAP-IG-activations moves one at a time: the embeddings, then each layer's heads and its MLP."""
    groups = [[0]]
    for layer in range(graph.num_layers):
        heads, mlp = graph.layer_senders(layer)
        groups += [list(heads), [mlp]]
    return groups


def input_path_fractions(steps: int) -> list[float]:
    """EAP-IG's points, as fractions of the way from the run's embeddings to the source's: the points k / steps of
    the way from the source, k = 0 .. steps - 1 (a Riemann sum that takes the source's end and leaves the run's
    out), i.e. 1, (steps - 1) / steps, ..., 1 / steps."""
    return [1 - k / steps for k in range(steps)]


def mask_gradient(parts, graph, runs: PairRuns, metric, direction, fraction: float, per_position: bool = False,
                  at: torch.Tensor | None = None) -> torch.Tensor:
    """[receiver, sender(, seq)]: d metric / d mask in the run whose embeddings lie `fraction` of the way from the
    run's to the source's, the mask at 0 (or at `at`, [receiver, sender(, seq)]); each cell is the gradient at the
    receiver's input times the sender's (source - run) output, the outputs of the pair's own two runs (fixed
    differences, as Hanna et al. 2024)."""
    run, source = runs.oriented(direction)
    start, end = runs.embeddings[run], runs.embeddings[source]
    shape = (len(graph.receivers), len(graph.senders)) + ((start.shape[1],) if per_position else ())
    embeddings = start + fraction * (end - start)  # [1, seq, hidden]
    mask = (torch.zeros(shape, device=start.device) if at is None else at.to(start.device))[None].clone().requires_grad_()
    with torch.enable_grad():  # one run at a time: every receiver's stream is kept for the backward pass
        result = run_graph(parts, graph, embeddings, None, mask, runs.outputs[source], anchor=runs.outputs[run])
        value = read_metric(parts, result.final, runs.contrast, metric).sum()
        (gradient,) = torch.autograd.grad(value, [mask])
    return gradient[0]


def edge_scores_cost(config: BertConfig, tokens: int, method: str, steps: int | None = None, pairs: int = 1,
                     batch_size: int = 32, per_position: bool = False) -> Cost:
    """The passes `edge_scores` makes for `pairs` pairs of `tokens` tokens: each pair's two recorded runs, then
    exact: one row per node and, for the edges, the layers each edge's row runs (`reach_passes`; `batch_size` rows
    at once); eap: one pass and its backward pass; eap-ig: `steps` of each; eap-ig-activations: `steps` of each per
    sender group (1 + 2 per layer). Its peak (`pair_runs_bytes` + `graph_run_bytes` + `pass_bytes`) is one pass's,
    whatever the steps and pairs: each step's autograd graph is freed before the next. per_position (eap, eap-ig)
    holds the [receiver, sender, seq] mask, its gradient and the running sum: three of them more, the same passes."""
    graph = CircuitGraph.of(config)
    lower = ("fewer pairs", "a shorter pair of sentences")
    if method == "exact":
        rows = min(batch_size, len(graph) + len(graph.senders))
        peak = (pair_runs_bytes(graph, config.hidden_size, tokens, rows)
                + graph_run_bytes(graph, config.hidden_size, tokens, rows) + pass_bytes(config, tokens, rows))
        return Cost(pairs * (2 + reach_passes(graph) + len(graph.senders)), tokens,
                    lower + ("EAP-IG instead of exact patching",), peak_bytes=peak, rows_at_once=0)
    rows = 1 if method == "eap" else steps * (len(activation_groups(graph)) if method == "eap-ig-activations" else 1)
    peak = (pair_runs_bytes(graph, config.hidden_size, tokens) + graph_run_bytes(graph, config.hidden_size, tokens, gradient=True)
            + pass_bytes(config, tokens, gradient=True))
    if per_position:
        peak += 3 * len(graph.receivers) * len(graph.senders) * tokens * 4
    return Cost(pairs * (2 + rows), tokens, lower + (("integration steps",) if method in INTEGRATED else ()),
                backward_passes=pairs * rows, peak_bytes=peak, rows_at_once=0)


def pair_runs_bytes(graph: CircuitGraph, hidden: int, tokens: int, rows: int = 1) -> int:
    """What a pair's two recorded runs (`pair_runs`) hold while the others run, in float32 bytes: every sender's
    output in both runs, [2, sender, seq, hidden], and the (source - run) differences of `rows` rows the patches
    read: (2 + rows) · senders · T · hidden."""
    return (2 + rows) * len(graph.senders) * tokens * hidden * 4
