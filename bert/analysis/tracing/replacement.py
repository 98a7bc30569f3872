"""The local replacement model of one sentence: every MLP replaced by its transcoder plus an error term, and
everything that is not linear in the residual stream frozen or linearised at the model's own run (Ameisen et al.
2025, "Circuit tracing", section 2; Dunefsky et al. 2024).

At their values in the run of the sentence, per position:
- every attention pattern (the softmax of q·k) is frozen: attention is then linear in what its values read, and no
  edge passes through a query or a key;
- every LayerNorm is replaced by its tangent at the run, LN(v0) + J (v − v0), with
  J u = γ (u − mean u − x̂ (x̂ · u) / n) / σ (x̂ and σ the run's; n the width). Post-LN (BERT, RoBERTa, DistilBERT,
  ALBERT, ELECTRA): the LayerNorm after each attention sub-layer and after each MLP sub-layer; pre-norm
  (ModernBERT): the LayerNorm before each attention (none in layer 0), before each MLP and the final one. Freezing
  only σ (circuit-tracer's choice) drops the term x̂ (x̂ · u) / n, the change of σ itself, which is of the first
  order: in a post-LN model a feature that writes along what the stream already holds is mostly divided away, and
  the frozen-σ edges overstate it (three times, for MiniLM's last-layer features; docs/circuits.md);
- the masked-LM head's activation is replaced by its tangent, act(u0) + act'(u0) (u − u0), and its LayerNorm as
  above; the embeddings' own LayerNorm comes before the input nodes and is not crossed;
- which features are active (the transcoders' top-k choice and ReLU): an active feature's activation is its
  pre-activation, a linear function of what its MLP reads.
Each MLP's output is then Σ active features' activation × decoder direction + the transcoder's bias + the error
(the MLP's real output minus the transcoder's), so with nothing changed the replacement model is the model itself,
and the target (a logit, or answer − foil, at one position) is an affine function of the sources: the input
embeddings of each token (what enters layer 0), the active features' activations and the errors. Its derivatives
are the real model's, attention frozen and the active set kept: a graph's prediction is exact to first order.

    frozen = freeze(model, transcoders, input_ids, token_type_ids, Target(position, answer_id, foil_id))
    frozen.target_value                         # the model's own logit (difference)
    replacement_outputs(frozen, sources)        # (each active feature's pre-activation, the target), linear maps
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ... import attention as attn
from ...activations import activate
from ...errors import InvalidInputError
from ...model import Bert
from ..circuits.encoder_parts import EncoderParts
from .transcoder import Transcoders, check_model


@dataclass(frozen=True)
class Target:
    position: int  # the token whose logits are read (the [MASK])
    token: int  # the answer's vocabulary id: the target is its logit ...
    foil: int | None = None  # ... minus the foil's, when given


@dataclass(frozen=True)
class Sources:
    """The replacement model's inputs, each a multiplier of what it carries in the run: ones give the run itself."""

    embeddings: torch.Tensor  # [seq] times each token's input embedding
    activations: list[torch.Tensor]  # per layer [active features there]: the features' activations (not multipliers)
    errors: torch.Tensor  # [layer, seq] times each MLP's error at each position


@dataclass
class FrozenRun:
    """One run of the model on one sentence, with what the replacement model freezes."""

    parts: EncoderParts
    transcoders: Transcoders
    target: Target
    embeddings: torch.Tensor  # [seq, hidden] what enters layer 0
    patterns: list[torch.Tensor]  # per layer [1, head, seq, seq]
    attention_norms: list[NormPoint | None]  # per layer, [1, seq, ...]: the attention sub-layer's LayerNorm at the run
    mlp_norms: list[NormPoint]  # per layer, [1, seq, ...]: the MLP sub-layer's LayerNorm at the run
    final_norm: NormPoint | None  # [1, ...] pre-norm: the final LayerNorm at the target
    head_slope: torch.Tensor  # [E] the masked-LM head's act'(u) at the target (its activation's tangent) ...
    head_offset: torch.Tensor  # [E] ... and act(u) − act'(u) u there
    head_norm: NormPoint  # [1, ...] the head's LayerNorm at the target
    features: list[torch.Tensor]  # per layer [active, 2]: (position, feature) of each active feature
    activations: list[torch.Tensor]  # per layer [active]: their activations (> 0)
    errors: torch.Tensor  # [layer, seq, hidden] MLP output − transcoder output
    target_value: float  # the model's own target: logit, or logit(answer) − logit(foil)
    target_probability: float  # the model's softmax probability of the answer there

    @property
    def num_layers(self) -> int:
        return len(self.patterns)

    @property
    def seq(self) -> int:
        return self.embeddings.shape[0]

    def unit_sources(self) -> Sources:
        """The sources of the run itself."""
        seq, layers = self.seq, self.num_layers
        return Sources(torch.ones(seq), [a.clone() for a in self.activations], torch.ones(layers, seq))


def check_model_for_graphs(model: Bert) -> None:
    if model.config.relative_attention:
        raise InvalidInputError("attribution graphs do not read DeBERTa's disentangled attention yet: choose another model")
    if not model.has_mlm_head:
        raise InvalidInputError("an attribution graph explains a masked-LM logit: load a model with a masked-LM head")


@dataclass(frozen=True)
class NormPoint:
    """Where one LayerNorm was in the run, per position: what its tangent there needs."""

    sigma: torch.Tensor  # [..., 1] the standard deviation it divided by, sqrt(var + eps)
    normalised: torch.Tensor  # [..., hidden] its input centred and divided by sigma, x̂

    @classmethod
    def of(cls, norm: torch.nn.LayerNorm | None, v: torch.Tensor) -> "NormPoint | None":
        if norm is None:
            return None
        centred = v - v.mean(-1, keepdim=True)
        sigma = (centred.pow(2).mean(-1, keepdim=True) + norm.eps).sqrt()
        return cls(sigma, centred / sigma)


def _linear_norm(norm: torch.nn.LayerNorm | None, v: torch.Tensor, point: NormPoint | None) -> torch.Tensor:
    """LayerNorm replaced by its tangent at the run, affine in v and equal to it at the run's input v0:
    x̂ + J (v − v0) with J u = (u − mean u − x̂ (x̂ · u) / n) / σ (the derivative of σ included), times γ, plus β.
    Written without v0: (v − mean v) / σ − x̂ ((x̂ · v) / (n σ) − (x̂ · x̂) / n)."""
    if norm is None:
        return v
    x_hat, sigma = point.normalised, point.sigma
    radial = (x_hat * v).mean(-1, keepdim=True) / sigma - x_hat.pow(2).mean(-1, keepdim=True)
    out = (v - v.mean(-1, keepdim=True)) / sigma - x_hat * radial
    if norm.weight is not None:
        out = out * norm.weight
    return out if norm.bias is None else out + norm.bias


@torch.no_grad()
def freeze(model: Bert, transcoders: Transcoders, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None,
           target: Target, check_weights: bool = True) -> FrozenRun:
    """The model's own run of one sentence (input_ids [1, seq]), step by step, recording what is frozen, the
    transcoders' active features and each MLP's error. check_weights: refuse transcoders of other weights."""
    check_model_for_graphs(model)
    if check_weights:
        check_model(transcoders.config, model)
    if input_ids.shape[0] != 1 or not 0 <= target.position < input_ids.shape[1]:
        raise InvalidInputError("one sentence at a time, and the target's position inside it")
    parts = EncoderParts.of(model)
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    embedded = x = parts.embed(input_ids, token_type_ids, None)  # [1, seq, hidden]
    record = {"patterns": [], "attention_norms": [], "mlp_norms": []}
    features, activations, errors = [], [], []
    for layer, part in enumerate(parts.layers):
        attention_norm, mlp_norm = part.module.attention.layer_norm, part.module.residual.layer_norm
        if parts.pre_norm:
            point = NormPoint.of(attention_norm, x)
            read = _linear_norm(attention_norm, x, point)
        else:
            read = x
        pattern = part.pattern(read[:, None], read[:, None], None)
        total = _attention_total(part, pattern, read)
        if parts.pre_norm:
            x = x + total
            record["attention_norms"].append(point)
            mlp_point = NormPoint.of(mlp_norm, x)
            mlp_in = _linear_norm(mlp_norm, x, mlp_point)
        else:
            point = NormPoint.of(attention_norm, x + total)
            record["attention_norms"].append(point)
            x = mlp_in = _linear_norm(attention_norm, x + total, point)
        mlp_out = part.mlp(mlp_in)
        values, indices = transcoders.encode_sparse(mlp_in[0].float(), layer)  # [seq, k]
        errors.append(mlp_out[0] - transcoders.decode_sparse(values, indices, layer))
        active = (values > 0).nonzero()  # [active, 2]: (position, slot)
        features.append(torch.stack([active[:, 0], indices[active[:, 0], active[:, 1]]], dim=1))
        activations.append(values[active[:, 0], active[:, 1]])
        if not parts.pre_norm:
            mlp_point = NormPoint.of(mlp_norm, x + mlp_out)
            x = _linear_norm(mlp_norm, x + mlp_out, mlp_point)
        else:
            x = x + mlp_out
        record["patterns"].append(pattern)
        record["mlp_norms"].append(mlp_point)
    hidden = x[:, target.position]  # [1, hidden]
    final_point = None
    if parts.pre_norm:
        final_point = NormPoint.of(model.final_norm.layer_norm, hidden)
        hidden = _linear_norm(model.final_norm.layer_norm, hidden, final_point)
    head = model.lm_head
    u = head.mlp(hidden)[0]  # [E]
    with torch.enable_grad():
        at = u.detach().requires_grad_()
        activated = activate(at, head.activation)
        slope = torch.autograd.grad(activated.sum(), at)[0]  # elementwise: the activation's derivative at u
    offset = activated.detach() - slope * u
    head_point = NormPoint.of(head.layer_norm, activated.detach())
    logits = head.unembedding(head.layer_norm(activated.detach()))  # the model's own logits at the target ([vocab])
    return FrozenRun(parts, transcoders, target, embedded[0], record["patterns"], record["attention_norms"],
                     record["mlp_norms"], final_point, slope, offset, head_point, features, activations, torch.stack(errors),
                     float(read_target(logits, target)), float(logits.softmax(-1)[target.token]))


def _attention_total(part, pattern: torch.Tensor, read: torch.Tensor) -> torch.Tensor:
    """What the attention sub-layer adds, its heads reading `read` [1, seq, hidden] through `pattern`."""
    z = part.values_through(pattern, read[:, None])  # [1, head, seq, head_dim]
    total = attn.merge_heads(z) @ part.output.flatten(0, 1)
    return total if part.output_bias is None else total + part.output_bias


def read_target(logits: torch.Tensor, target: Target) -> torch.Tensor:
    return logits[..., target.token] - (0.0 if target.foil is None else logits[..., target.foil])


def replacement_outputs(frozen: FrozenRun, sources: Sources, follow: bool = False) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The replacement model from its sources: (per layer [active] each active feature's pre-activation,
    the target []), both affine in the sources. Differentiable: the attribution graph's edges are its gradients.
    follow: each active feature's activation is its pre-activation in this pass plus sources.activations (then
    offsets: zeros give the run), so that a change reaches the target through every later feature too."""
    parts, transcoders = frozen.parts, frozen.transcoders
    x = frozen.embeddings[None] * sources.embeddings[None, :, None]  # [1, seq, hidden]
    pre_activations = []
    for layer, part in enumerate(parts.layers):
        attention_norm, mlp_norm = part.module.attention.layer_norm, part.module.residual.layer_norm
        point = frozen.attention_norms[layer]
        read = _linear_norm(attention_norm, x, point) if parts.pre_norm else x
        total = _attention_total(part, frozen.patterns[layer], read)
        if parts.pre_norm:
            x = x + total
            mlp_in = _linear_norm(mlp_norm, x, frozen.mlp_norms[layer])
        else:
            x = mlp_in = _linear_norm(attention_norm, x + total, point)
        positions, features = frozen.features[layer].unbind(1)
        encoders = transcoders.W_enc[layer][:, features].T * transcoders.input_scale[layer]  # [active, hidden]
        pre_activations.append((mlp_in[0, positions] * encoders).sum(-1) + transcoders.b_enc[layer, features])
        activations = pre_activations[-1] + sources.activations[layer] if follow else sources.activations[layer]
        decoders = transcoders.W_dec[layer][features] / transcoders.output_scale[layer]  # [active, hidden]
        written = torch.zeros_like(x[0]).index_add(0, positions, decoders * activations[:, None])
        mlp_out = written + transcoders.b_dec[layer] / transcoders.output_scale[layer] + frozen.errors[layer] * sources.errors[layer][:, None]
        x = _linear_norm(mlp_norm, x + mlp_out[None], frozen.mlp_norms[layer]) if not parts.pre_norm else x + mlp_out[None]
    hidden = x[:, frozen.target.position]
    if parts.pre_norm:
        hidden = _linear_norm(parts.model.final_norm.layer_norm, hidden, frozen.final_norm)
    head = parts.model.lm_head
    activated = head.mlp(hidden)[0] * frozen.head_slope + frozen.head_offset  # [E] the activation's tangent
    transformed = _linear_norm(head.layer_norm, activated[None], frozen.head_norm)
    return pre_activations, read_target(head.unembedding(transformed)[0], frozen.target)
