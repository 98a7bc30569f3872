"""One forward pass over the circuit graph, in which every edge can carry another run's value.

Edge patching, recursively (Conmy et al. 2023; Hanna et al. 2024): a patched edge u -> r carries u's output from
the source run into r's input; an edge that is not patched carries u's output in this very run, which the patches
upstream may already have changed. `mask[row, r, u]` = 1 patches the edge, 0 leaves it; between 0 and 1 it mixes,
which is what the gradient methods differentiate at 0. Per position (Haklay et al. 2025 make edges position-aware):
`mask[row, r, u, position]` patches the edge at the sender's positions where it is 1, so an edge is a sender at
one position to a receiver (which reads every position, as attention does).

The LayerNorm treatment (post-LN families: BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA). After each sub-layer the
residual stream goes through a LayerNorm, so it is not a sum of the nodes' outputs. Here every receiver reads a
residual stream of its own, rebuilt from the senders' outputs as this receiver sees them, through the model's own
LayerNorms, recomputed (their scales are not frozen): embeddings, then for each earlier sub-layer
LayerNorm(stream + the sub-layer's outputs + its output bias). What it implies: (1) with no edge patched, every
receiver's stream is the model's own, so the run is the model's; with every edge patched, every receiver's stream
is the source run's, so the run is the source run (both exact, not approximations); (2) an edge's effect includes
what it does to the scales of the LayerNorms between sender and receiver, so the effects of edges do not add up:
patching two edges is not the sum of patching each, even to first order where they share a receiver; (3) the biases
of the output projections and MLPs and the LayerNorms' shifts belong to no node: they are in every stream.
Pre-norm ModernBERT: the residual stream is the sum of the embeddings and every output, each receiver applies its
own LayerNorm (none before layer 0's attention, ModernBERT's final_norm before the output) to its sum, so the same
rule is the usual one of decoders (Hanna et al. 2024) and an edge is one term of a sum.

Axes: row (a batch row: one set of patches), receiver, sender, seq, hidden.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...stopping import checkpoint
from .encoder_parts import EncoderParts
from .graph import CircuitGraph


@dataclass
class GraphPass:
    final: torch.Tensor  # [row, seq, hidden] what the output head reads (after the final LayerNorm in pre-norm models)
    outputs: torch.Tensor | None  # [row, sender, seq, hidden] every sender's output in this run (when recorded)


class _Streams:
    """The residual streams of the receivers that read a stream of their own (`active`, in computing order):
    [row, receiver, seq, hidden]; each is taken out when its receiver reads it."""

    def __init__(self, embeddings: torch.Tensor, active: list[int], mask, source, anchor):
        self.active, self.mask, self.source, self.anchor = active, mask, source, anchor
        self.streams = embeddings[:, None].expand(-1, len(active), -1, -1)

    def add(self, senders: list[int], live: torch.Tensor, total: torch.Tensor) -> None:
        """Every stream gets the sub-layer's `total` ([row, seq, hidden]), and where its edge from a sender in
        `senders` (live outputs [row, sender, seq, hidden]) is patched, the source's output instead of the live one."""
        self.streams = self.streams + total[:, None]
        if self.active and self.mask is not None:
            base = live if self.anchor is None else self.anchor[:, senders]
            difference = self.source[:, senders] - base  # [row, sender, seq, hidden]
            weights = self.mask[:, self.active][:, :, senders].to(difference.dtype)  # [row, receiver, sender(, seq)]
            pattern = "r a u s, r u s h -> r a s h" if weights.dim() == 4 else "r a u, r u s h -> r a s h"
            self.streams = self.streams + torch.einsum(pattern, weights, difference)

    def norm(self, layer_norm) -> None:
        self.streams = layer_norm(self.streams)

    def take(self, receiver: int) -> torch.Tensor | None:
        """The stream of `receiver` if it reads one of its own (it must be the next active one), else None."""
        if not self.active or self.active[0] != receiver:
            return None
        stream, self.streams, self.active = self.streams[:, 0], self.streams[:, 1:], self.active[1:]
        return stream


def run_graph(
    parts: EncoderParts, graph: CircuitGraph, embeddings: torch.Tensor, attention_mask: torch.Tensor | None,
    mask: torch.Tensor | None = None, source: torch.Tensor | None = None, anchor: torch.Tensor | None = None,
    record: bool = False,
) -> GraphPass:
    """The pass from `embeddings` ([row, seq, hidden], the embeddings node's live output) with the patches of
    `mask` ([row, receiver, sender], or [row, receiver, sender, seq] per position) carrying `source`'s outputs ([1 or row, sender, seq, hidden]). anchor None:
    a patched edge carries the source's output (exact patching); a tensor like source: it carries the live output
    plus (source - anchor), fixed differences for the gradient methods. record: also return every live output."""
    checkpoint(embeddings.shape[0])  # whoever watches this thread's runs may stop here (bert/stopping.py)
    active = _active_receivers(mask, graph)
    streams = _Streams(embeddings, active, mask, source, anchor)
    streams.add([0], embeddings[:, None], torch.zeros_like(embeddings))
    x, outputs = embeddings, [embeddings[:, None]]
    for layer, layer_parts in enumerate(parts.layers):
        head_receivers, mlp_receiver = graph.layer_receivers(layer)
        head_senders, mlp_sender = graph.layer_senders(layer)
        read = x if not parts.pre_norm else layer_parts.attention_norm(x)
        inputs = [_head_inputs(streams, read, head_receivers[i * graph.num_heads:(i + 1) * graph.num_heads],
                               layer_parts.attention_norm if parts.pre_norm else None) for i in range(3)]
        heads = layer_parts.head_outputs(*inputs, attention_mask)  # [row, head, seq, hidden]
        total = heads.sum(1) if layer_parts.output_bias is None else heads.sum(1) + layer_parts.output_bias
        x = x + total if parts.pre_norm else layer_parts.attention_norm(x + total)
        streams.add(list(head_senders), heads, total)
        if not parts.pre_norm:
            streams.norm(layer_parts.attention_norm)
        own = streams.take(mlp_receiver)
        mlp_in = x if own is None else own
        mlp = layer_parts.mlp(layer_parts.mlp_norm(mlp_in) if parts.pre_norm else mlp_in)
        x = x + mlp if parts.pre_norm else layer_parts.mlp_norm(x + mlp)
        streams.add([mlp_sender], mlp[:, None], mlp)
        if not parts.pre_norm:
            streams.norm(layer_parts.mlp_norm)
        outputs += [heads, mlp[:, None]]
        checkpoint()
    own = streams.take(len(graph.receivers) - 1)
    final = parts.final(x if own is None else own)
    return GraphPass(final, torch.cat(outputs, dim=1) if record else None)


def graph_run_bytes(graph: CircuitGraph, hidden: int, tokens: int, rows: int = 1, gradient: bool = False) -> int:
    """The receivers' streams a `run_graph` of `rows` rows of `tokens` tokens (T) holds at most, in float32 bytes
    ([row, receiver, seq, hidden] tensors of the R receivers whose streams are still to be read; every receiver's
    when the mask takes gradients or every one has a patched edge):

    - without gradients: three such tensors at once (the streams, the sum being made, the patches' einsum):
      3 · rows · R · T · hidden;
    - with gradients (one row): autograd keeps, at each of the two LayerNorms of layer l, the normalised streams'
      input and output (the output, because the receivers that read it take views of it), of the R_l receivers
      still to be read: 4 · Σ_l R_l · T · hidden, R_l = R - (3 · heads + 1) · l.

    What the embeddings, sender outputs and the sub-layers themselves hold is priced apart (`pass_bytes`,
    edge_scores_cost)."""
    receivers, per_layer = len(graph.receivers), 3 * graph.num_heads + 1
    if not gradient:
        return 3 * rows * receivers * tokens * hidden * 4
    remaining = sum(receivers - per_layer * layer for layer in range(graph.num_layers))
    return 4 * rows * remaining * tokens * hidden * 4


def _active_receivers(mask: torch.Tensor | None, graph: CircuitGraph) -> list[int]:
    """The receivers that read a stream of their own: every one when the mask takes gradients, else those with a
    patched edge in some row."""
    if mask is None:
        return []
    if mask.requires_grad:
        return list(range(len(graph.receivers)))
    return torch.nonzero(mask.detach().ne(0).flatten(2).any(dim=-1).any(dim=0)).flatten().tolist()


def _head_inputs(streams: _Streams, read: torch.Tensor, receivers: range, norm) -> torch.Tensor:
    """One of q, k, v's inputs for every head: [row, head, seq, hidden], or [row, 1, seq, hidden] when every head
    reads the model's stream. norm: the pre-norm LayerNorm each head applies to a stream of its own."""
    own = [streams.take(receiver) for receiver in receivers]
    if all(stream is None for stream in own):
        return read[:, None]
    shared = read
    return torch.stack([shared if stream is None else (stream if norm is None else norm(stream)) for stream in own], dim=1)
