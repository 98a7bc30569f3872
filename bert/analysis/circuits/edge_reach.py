"""Exact edge patching that recomputes only what an edge reaches.

A patched edge u -> r changes r's input and nothing before it: every stream before r's layer, every sender's live
output before r, and every other receiver's input in r's layer are the run's own. So the patched pass for one edge
(graph_run.py with that edge alone patched, the reference) is, here (Conmy et al. 2023 and Hanna et al. 2024 recompute
only downstream of a patch the same way):

1. r's own stream, rebuilt as graph_run.py rebuilds it: the run's stream before u's sub-layer, then each sub-layer's
   total from the run, u's (source - run) output added at u's sub-layer, through the model's LayerNorms (post-LN; in
   pre-norm ModernBERT the stream is a sum and this is the run's stream plus the one difference);
2. r's layer: a head's query, key or value input changes that head alone (the other heads' outputs are the run's);
   an MLP input changes the MLP; the output reads r's stream directly;
3. every later layer whole, the last one only at the [MASK] (the metric reads nothing else).

Rows: one edge each, batched across the edges whose receivers share a layer. Each row's metric equals
graph_run.py's one-edge pass (tests/families/test_edge_reach.py: every edge of tiny BERT and ModernBERT models,
both directions and metrics). Axes: row, seq, hidden.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from ...stopping import checkpoint
from .encoder_parts import EncoderParts
from .graph import CircuitGraph

Progress = Callable[[int, int], None]  # (rows done, rows in all)


@dataclass(frozen=True)
class RunStreams:
    """The run's residual stream before each sub-layer (attention of layer l: 2l, its MLP 2l + 1; the output 2 *
    layers) and what each sub-layer adds, [1, seq, hidden] each, rebuilt from the run's recorded outputs as
    graph_run.py sums them."""

    before: list[torch.Tensor]
    totals: list[torch.Tensor]
    heads: list[torch.Tensor]  # per layer [1, head, seq, hidden]: each head's output in the run

    @classmethod
    def of(cls, parts: EncoderParts, graph: CircuitGraph, embeddings: torch.Tensor, outputs: torch.Tensor) -> "RunStreams":
        before, totals, heads = [embeddings], [], []
        for layer, layer_parts in enumerate(parts.layers):
            head_senders, mlp_sender = graph.layer_senders(layer)
            layer_heads = outputs[:, head_senders.start:head_senders.stop]
            attention = layer_heads.sum(1) if layer_parts.output_bias is None else layer_heads.sum(1) + layer_parts.output_bias
            for total in (attention, outputs[:, mlp_sender]):
                totals.append(total)
                before.append(parts.stream_after(len(totals) - 1, before[-1] + total))
            heads.append(layer_heads)
        return cls(before, totals, heads)


def sender_sublayer(graph: CircuitGraph, sender: int) -> int:
    """The sub-layer whose sum a sender's output joins: -1 for the embeddings, 2l for a head of layer l, 2l + 1 for its MLP."""
    node = graph.senders[sender]
    return -1 if node.layer is None else 2 * node.layer + (node.kind == "mlp")


def receiver_sublayer(graph: CircuitGraph, receiver: int) -> int:
    """The sub-layer before which a receiver reads: 2l for a head's input in layer l, 2l + 1 for its MLP, 2 * layers
    for the output."""
    node = graph.receivers[receiver].node
    return 2 * graph.num_layers if node.layer is None else 2 * node.layer + (node.kind == "mlp")


def reach_passes(graph: CircuitGraph) -> int:
    """Whole forward passes' worth of work in patching every edge once: each edge's row runs the layers from its
    receiver's layer on (its receiver's layer counted whole; none for the output), layers / num_layers a pass."""
    layers = sum(graph.num_layers - receiver_sublayer(graph, int(receiver)) // 2 for receiver in graph.edge_cells[0])
    return -(-layers // graph.num_layers)


@torch.no_grad()
def edge_metrics(parts: EncoderParts, graph: CircuitGraph, run_streams: RunStreams, difference: torch.Tensor,
                 read: Callable[[torch.Tensor], torch.Tensor], position: int, edges: Sequence[int],
                 batch_size: int, progress: Progress | None = None) -> torch.Tensor:
    """[edge] the metric (`read`: [row, hidden] at the [MASK] after the output's LayerNorm -> [row]) with each of
    `edges` alone patched: its sender's (source - run) output, `difference` [sender, seq, hidden], added in its
    receiver's stream."""
    receivers, senders = graph.edge_cells
    values = torch.empty(len(edges))
    by_layer: dict[int, list[int]] = {}
    for row, edge in enumerate(edges):
        by_layer.setdefault(receiver_sublayer(graph, int(receivers[edge])) // 2, []).append(row)
    done = 0
    for layer, rows in sorted(by_layer.items()):
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            checkpoint(len(chunk))  # whoever watches this thread's runs may stop here (bert/stopping.py)
            picked = torch.tensor([edges[row] for row in chunk])
            hidden = _patched_hidden(parts, graph, run_streams, difference, receivers[picked].tolist(),
                                     senders[picked].tolist(), layer, position)
            values[chunk] = read(parts.final(hidden)[:, 0]).float().cpu()
            done += len(chunk)
            if progress is not None:
                progress(done, len(edges))
    return values


def _own_streams(parts: EncoderParts, run_streams: RunStreams, difference: torch.Tensor, senders: list[int],
                 starts: list[int], stop: int) -> torch.Tensor:
    """[row, seq, hidden] each row's receiver stream before sub-layer `stop`: the run's, with its sender's
    difference added at its sub-layer (`starts`), through the sub-layers after it (graph_run.py's _Streams)."""
    first = min(starts)
    at = torch.tensor(starts, device=difference.device)[:, None, None]
    rows = difference[senders]  # [row, seq, hidden]
    if first == -1:
        stream, first = run_streams.before[0] + rows * (at == -1), 0
    else:
        stream = run_streams.before[first].expand(len(senders), -1, -1)
    for sublayer in range(first, stop):
        stream = parts.stream_after(sublayer, stream + run_streams.totals[sublayer] + rows * (at == sublayer))
    return stream


def _patched_hidden(parts: EncoderParts, graph: CircuitGraph, run_streams: RunStreams, difference: torch.Tensor,
                    receivers: list[int], senders: list[int], layer: int, position: int) -> torch.Tensor:
    """[row, 1, hidden] the stream after the last layer at the [MASK], each row with its one edge patched (every
    receiver in `layer`, or the output when `layer` is the number of layers)."""
    starts = [sender_sublayer(graph, sender) for sender in senders]
    last = len(parts.layers) - 1
    if layer > last:  # the output reads its own stream
        return _own_streams(parts, run_streams, difference, senders, starts, 2 * layer)[:, position:position + 1]
    first_receiver, mlp_receiver = graph.layer_receivers(layer)
    layer_parts = parts.layers[layer]
    heads_in = _own_streams(parts, run_streams, difference, senders, starts, 2 * layer)
    x = run_streams.before[2 * layer]  # [1, seq, hidden] the run's stream into the layer
    read = layer_parts.attention_norm(x) if parts.pre_norm else x  # what the heads read from it
    middle = run_streams.before[2 * layer + 1].expand(len(senders), -1, -1).clone()  # the stream after attention
    mlp_in = middle.clone()
    for receiver in sorted(set(receivers)):
        rows = [row for row, each in enumerate(receivers) if each == receiver]
        if receiver == mlp_receiver:  # its stream: one more sub-layer, the heads of this layer
            own = _own_streams(parts, run_streams, difference, [senders[row] for row in rows], [starts[row] for row in rows],
                               2 * layer + 1)
            mlp_in[rows] = own
            continue
        input_index, head = divmod(receiver - first_receiver.start, graph.num_heads)  # q, k or v of one head
        own = heads_in[rows] if not parts.pre_norm else layer_parts.attention_norm(heads_in[rows])
        inputs = [own[:, None] if index == input_index else read[:, None] for index in range(3)]  # a batch of 1 is shared
        output = layer_parts.head(head).head_outputs(*inputs, None)[:, 0]  # [row, seq, hidden]
        total = run_streams.totals[2 * layer] + (output - run_streams.heads[layer][:, head])
        middle[rows] = parts.attention_sublayer(layer, x, total)
        mlp_in[rows] = middle[rows]
    if layer == last:
        middle, mlp_in = middle[:, position:position + 1], mlp_in[:, position:position + 1]
    hidden = parts.mlp_sublayer(layer, middle, mlp_in)
    for later in range(layer + 1, last + 1):
        checkpoint()
        hidden = parts.layer(later, hidden, None, position if later == last else None)
    return hidden
