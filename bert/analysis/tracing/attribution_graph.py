"""The attribution graph of one sentence and one target (Ameisen et al. 2025, "Circuit tracing").

Nodes, in circuit-tracer's order: every active transcoder feature (by layer, then position, then feature), one
error node per MLP and position (by layer, then position), the input embeddings of each token (what enters layer
0), and the target (a logit, or answer − foil, at one position). An edge's weight is the source's direct linear
effect on the receiver's input in the local replacement model (replacement.py): a feature's input is its
pre-activation, the target's the target itself. Direct: along the residual stream, through frozen attention and
the LayerNorms' tangents at the run, never through another feature or error node (an MLP's output *is* its
nodes). It is the gradient of the receiver's input with respect to the source, times the source's value (its
activation; an embedding and an error count as 1 × what they carry), one backward pass per receiver, batched.

The replacement model is affine, so every receiver's input is exactly the sum of its incoming edges plus its
`bias`: what every bias, LayerNorm shift and tangent's offset contributes through those maps (the replacement
model with every source zero). Nothing is approximated; the only rounding is float32's.

    graph = attribution_graph(model, tokenizer, transcoders, "the keys to the cabinet [MASK] on the table .", "are", "is")
    graph.adjacency[graph.target_index]          # every source's edge into the target
    pruned = prune(graph)                        # graph_pruning.py
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...costs import Cost, pass_bytes
from ...devices import model_device
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from .feature_cap import cap_features
from .replacement import FrozenRun, Sources, Target, check_model_for_graphs, freeze, replacement_outputs
from .transcoder import Transcoders


@dataclass
class AttributionGraph:
    tokens: list[str]  # the sentence's word pieces
    input_ids: list[int]
    target: Target
    target_label: str  # e.g. "are" or "are − is"
    features: torch.Tensor  # [feature node, 3]: (layer, position, feature)
    activations: torch.Tensor  # [feature node]
    num_layers: int
    adjacency: torch.Tensor  # [node, node]: adjacency[receiver, source], the direct effect
    bias: torch.Tensor  # [node]: each receiver's input not carried by any edge (biases, LayerNorm shifts); 0 for sources
    inputs: torch.Tensor  # [node]: each receiver's input in the run (feature pre-activation, the target); 0 for sources
    target_probability: float  # softmax probability of the answer at the target position
    text: str = ""  # the sentence as typed
    folded: int = 0  # active features left out by a cap (feature_cap.py), their output in the error nodes

    @property
    def seq(self) -> int:
        return len(self.tokens)

    @property
    def num_features(self) -> int:
        return len(self.features)

    @property
    def error_start(self) -> int:
        return self.num_features

    @property
    def embedding_start(self) -> int:
        return self.num_features + self.num_layers * self.seq

    @property
    def target_index(self) -> int:
        return self.embedding_start + self.seq

    @property
    def num_nodes(self) -> int:
        return self.target_index + 1

    def error_index(self, layer: int, position: int) -> int:
        return self.error_start + layer * self.seq + position

    def feature_index(self, layer: int, position: int, feature: int) -> int:
        """The node of an active feature; InvalidInputError when it is not active there."""
        match = ((self.features == torch.tensor([layer, position, feature])).all(1)).nonzero()
        if len(match) == 0:
            raise InvalidInputError(f"feature {feature} of layer {layer} is not active at position {position}")
        return int(match[0, 0])

    def describe(self, node: int) -> dict:
        """What a node is: {"kind": "feature"|"error"|"embedding"|"target", "layer", "position", "feature"}."""
        if node < self.error_start:
            layer, position, feature = self.features[node].tolist()
            return {"kind": "feature", "layer": layer, "position": position, "feature": feature}
        if node < self.embedding_start:
            layer, position = divmod(node - self.error_start, self.seq)
            return {"kind": "error", "layer": layer, "position": position, "feature": None}
        if node < self.target_index:
            return {"kind": "embedding", "layer": None, "position": node - self.embedding_start, "feature": None}
        return {"kind": "target", "layer": self.num_layers, "position": self.target.position, "feature": None}


def graph_cost(config, tokens: int, k: int, batch_rows: int = 64, max_features: int | None = None) -> Cost:
    """One forward pass, then one batched backward pass per `batch_rows` receivers (at most k features per layer
    and position, or `max_features` when fewer, plus the target; one backward pass more to rank the features when
    the cap may bite), and the dense adjacency's memory (float32, nodes²). Peak: the adjacency, the replacement
    model's pass kept for its gradients (one row, no output head at every position: the target reads one), and
    one layer's gradients for each of the `batch_rows` receivers a backward pass takes at once."""
    active = k * config.num_layers * tokens
    capped = max_features is not None and max_features < active
    features = max_features if capped else active
    nodes = features + (config.num_layers + 1) * tokens + 1
    kept = 4 * nodes * nodes
    peak = kept + pass_bytes(config, tokens, gradient=True, head=False) + batch_rows * pass_bytes(config, tokens, head=False)
    lower = ("tokens", "features kept") if max_features is not None else ("tokens", "features kept per token")
    return Cost(forward_passes=1, tokens=tokens, lower=lower, backward_passes=-(-(features + 1) // batch_rows) + int(capped),
                kept_bytes=kept, peak_bytes=peak, rows_at_once=0)


def target_for(tokenizer: BertTokenizer, encoding, answer: str, foil: str | None = None) -> Target:
    """The target at the sentence's one [MASK]: the answer's logit, or answer − foil."""
    masks = tokenizer.mask_positions(encoding)
    if len(masks) != 1:
        raise InvalidInputError(f"the sentence has {len(masks)} [MASK]; it needs exactly one, where the answer goes")
    token = tokenizer.one_token_id(answer, "target")
    foil_id = None if foil is None else tokenizer.one_token_id(foil, "foil")
    if foil_id == token:
        raise InvalidInputError(f"the target and the foil are the same token ({answer!r}): give two different words")
    return Target(masks[0], token, foil_id)


def attribution_graph(model: Bert, tokenizer: BertTokenizer, transcoders: Transcoders, text: str, answer: str,
                      foil: str | None = None, batch_rows: int = 64, max_features: int | None = None) -> AttributionGraph:
    """The full (unpruned) graph of `text` (one [MASK]) for the answer's logit there, or answer − foil.
    max_features: keep only that many active features, the most influential, the others folded into the error
    nodes (feature_cap.py); None keeps every one."""
    encoding = tokenizer.encode(text, max_length=model.config.max_position_embeddings)
    graph = graph_of_encoding(model, tokenizer, transcoders, encoding, answer, foil, batch_rows, max_features)
    graph.text = text
    return graph


def graph_of_encoding(model: Bert, tokenizer: BertTokenizer, transcoders: Transcoders, encoding, answer: str,
                      foil: str | None = None, batch_rows: int = 64, max_features: int | None = None) -> AttributionGraph:
    """attribution_graph of an encoded input (one [MASK]; a sentence pair's segments as encoded)."""
    check_model_for_graphs(model)
    target = target_for(tokenizer, encoding, answer, foil)
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    frozen = freeze(model, transcoders, input_ids, token_type_ids, target)
    active = sum(len(a) for a in frozen.activations)
    if max_features is not None:
        frozen = cap_features(frozen, max_features)
    label = tokenizer.id_to_token(target.token) + ("" if foil is None else f" − {tokenizer.id_to_token(target.foil)}")
    graph = graph_of(frozen, list(encoding.tokens), list(encoding.input_ids), label, batch_rows)
    graph.folded = active - graph.num_features
    return graph


def graph_of(frozen: FrozenRun, tokens: list[str], input_ids: list[int], label: str, batch_rows: int = 64) -> AttributionGraph:
    """The graph of a frozen run: the adjacency from batched backward passes, the biases from the replacement
    model with every source zero."""
    unit = frozen.unit_sources()
    embeddings = unit.embeddings.requires_grad_()
    activations = [a.requires_grad_() for a in unit.activations]
    errors = unit.errors.requires_grad_()
    values = torch.cat([*(a.detach() for a in frozen.activations), torch.ones(errors.numel() + embeddings.numel())]).float().cpu()
    num_features = sum(len(a) for a in frozen.activations)
    nodes = len(values) + 1
    receiver_rows = list(range(num_features)) + [nodes - 1]
    adjacency = torch.zeros(nodes, nodes)  # filled a batch of receivers at a time: nothing else of this size is held
    with torch.enable_grad():
        pre_activations, target = replacement_outputs(frozen, Sources(embeddings, activations, errors))
        receivers = torch.cat([*pre_activations, target[None]])  # [feature nodes + 1]
        leaves = [*activations, errors, embeddings]
        for start in range(0, len(receivers), batch_rows):
            stop = min(start + batch_rows, len(receivers))
            adjacency[receiver_rows[start:stop], : nodes - 1] = _jacobian_rows(receivers, leaves, start, stop).float().cpu() * values
    with torch.no_grad():
        zero = frozen.unit_sources()
        zero = Sources(torch.zeros_like(zero.embeddings), [torch.zeros_like(a) for a in zero.activations], torch.zeros_like(zero.errors))
        zero_pre, zero_target = replacement_outputs(frozen, zero)
    bias, inputs = torch.zeros(nodes), torch.zeros(nodes)
    bias[receiver_rows] = torch.cat([*zero_pre, zero_target[None]]).float().cpu()
    inputs[receiver_rows] = receivers.detach().float().cpu()
    features = torch.cat([torch.cat([torch.full((len(f), 1), layer), f.cpu()], 1) for layer, f in enumerate(frozen.features)])
    return AttributionGraph(tokens, input_ids, frozen.target, label, features.long(),
                            torch.cat([a.detach().cpu() for a in frozen.activations]), frozen.num_layers, adjacency, bias,
                            inputs, frozen.target_probability)


def _jacobian_rows(receivers: torch.Tensor, leaves: list[torch.Tensor], start: int, stop: int) -> torch.Tensor:
    """d receivers[start:stop] / d leaves, flattened over the leaves: [stop − start, sources]."""
    cotangents = torch.zeros(stop - start, len(receivers), dtype=receivers.dtype, device=receivers.device)
    cotangents[torch.arange(stop - start), torch.arange(start, stop)] = 1.0
    grads = torch.autograd.grad(receivers, leaves, grad_outputs=cotangents, is_grads_batched=True, retain_graph=True,
                                allow_unused=True, materialize_grads=True)
    return torch.cat([g.reshape(stop - start, -1) for g in grads], dim=1)
