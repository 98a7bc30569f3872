"""DecompX (Modarressi et al. 2023, "DecompX: Explaining Transformers Decisions by Propagating Token
Decomposition", section 3): each token's vector, from the embeddings to the output head's logit, kept as a sum of
one part per input token plus a part no token brings (the biases; the paper instead spreads the biases over the
token parts by its AbsDot weights, Eqs. 5-6).

Start: after the embeddings, token i's vector is all its own: x_i = Σ_k x_i[k] (Eq. 1) with x_i[k] = δ_ik x_i.
Through a layer, every step is applied to each part (mixing_parts.py has the notation):
- attention: z_i[k] = Σ_j Σ_h α^h_ij (x_j[k] W_V^h) W_O^h  (Eq. 4, its W_Att^h being W_V^h W_O^h; the biases
  b_V, b_O go to the bias part);
- residual: + x_i[k] (Eq. 7);  LN1: γ1 ⊙ (z − mean(z)) / s1_i with the recorded divisor (Eq. 8; β1 to the bias
  part);
- MLP (Eqs. 9, 11): W_1, then the MLP's activation (config.activation: GELU in BERT) made linear at the recorded
  pre-activation t, as the paper does (Eq. 10): each part is multiplied by act(t)/t (a line through zero that meets
  the activation at t, so the parts still sum to act(t)); W_2; residual; LN2 (Eq. 12).
The output head the same way: for the masked-LM head (not in the paper, whose head is the classifier), dense,
the head's own activation (config.lm_activation, which may differ from the MLP's; linear as above), LayerNorm, and
the dot product with the predicted token's embedding (+ its bias); for the classifier (Eq. 13), the pooler (dense,
tanh made linear the same way: tanh(t)/t) and the classifier's row of the predicted label, so the logit is a sum
over the input tokens (Eq. 14).

Exact: the parts (with the bias part) sum to the logit, to float rounding; nothing is approximated but the
reading of the activations and tanh as lines at the recorded point.

Per layer, the matrix is ‖x_i[k]‖ after that layer, rows normalised to sum to 1: how much of token i's vector comes
from each input token so far (cumulative from the input, not one layer's mixing). The whole model: for each
position, the predicted token's logit decomposed over the input tokens ([query, key]; the classifier: one row).

Input tokens go `parts_per_pass` at a time through the whole network (the parts never interact: the
softmax, the divisors and the activation slopes are the recorded pass's), so memory stays at
seq × parts × intermediate floats.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from einops import einsum, rearrange
from torch import nn

from ...errors import MissingHeadError
from ...activations import activate
from ...stopping import checkpoint
from .mixing_parts import RecordedLayer, layer_norm_parts, layer_norm_scale

Progress = Callable[[int, int], None]  # (input tokens done, all input tokens)
PARTS_BUDGET = 1 << 25  # floats of the widest tensor of one pass (seq × parts × intermediate)


@dataclass(frozen=True)
class DecompX:
    layers: torch.Tensor  # [layer, query, key] ‖x_i[k]‖ after each layer, rows normalised to sum to 1
    logit_parts: torch.Tensor  # [query, key] each input token's part of the predicted logit (classifier: [1, key])
    logit_bias: torch.Tensor  # [query] the part no input token brings
    targets: torch.Tensor  # [query] the decomposed logit's token id (masked LM) or label index (classifier)
    logits: torch.Tensor  # [query] the logits themselves, as the model computes them


def parts_per_pass(seq: int, width: int) -> int:
    return max(1, PARTS_BUDGET // (seq * width))


def _linear(parts: torch.Tensor, linear: nn.Linear, bias: bool) -> torch.Tensor:
    out = parts @ linear.weight.T
    return out + linear.bias if bias else out


def _layer_norm(parts: torch.Tensor, scale: torch.Tensor, layer_norm: nn.LayerNorm, bias: bool) -> torch.Tensor:
    normed = layer_norm_parts(parts, scale, layer_norm)
    return normed + layer_norm.bias if bias else normed


def linear_slope(activation: Callable[[torch.Tensor], torch.Tensor], point: torch.Tensor, at_zero: float) -> torch.Tensor:
    """activation(t) / t, the slope of the line through zero that meets the activation at t (`at_zero` where t = 0)."""
    safe = torch.where(point == 0, torch.ones_like(point), point)
    return torch.where(point == 0, torch.full_like(point, at_zero), activation(safe) / safe)


def through_layer(recorded: RecordedLayer, parts: torch.Tensor, bias: bool, config) -> torch.Tensor:
    """[query, part, hidden] before the layer -> after it. bias: these are the bias parts (the biases are added)."""
    module = recorded.module
    attention = module.attention.attention
    values = rearrange(_linear(parts, attention.project_value, bias), "key part (head head_dim) -> head key part head_dim",
                       head=attention.num_heads)
    z = einsum(recorded.pattern, values, "head query key, head key part head_dim -> query part head head_dim")
    mixed = _linear(rearrange(z, "query part head head_dim -> query part (head head_dim)"), module.attention.mlp, bias)
    scale1 = layer_norm_scale(recorded.x + recorded.attention_result, module.attention.layer_norm)
    after_attention = _layer_norm(mixed + parts, scale1, module.attention.layer_norm, bias)
    slope = linear_slope(lambda t: activate(t, config.activation), recorded.mlp_pre, 0.5)  # the MLP's; GELU'(0) = 1/2
    hidden = _linear(after_attention, module.residual.mlp1, bias) * slope[:, None]
    mlp = _linear(hidden, module.residual.mlp2, bias)
    scale2 = layer_norm_scale(recorded.attention_out + recorded.mlp_result, module.residual.layer_norm)
    return _layer_norm(mlp + after_attention, scale2, module.residual.layer_norm, bias)


def _mlm_head(model: nn.Module, final: torch.Tensor, parts: torch.Tensor, targets: torch.Tensor, bias: bool) -> torch.Tensor:
    """[query, part, hidden] after the last layer -> each part of the target logit: [query, part]."""
    head = model.lm_head
    pre = _linear(final, head.mlp, True)
    activation = model.config.lm_activation  # the head's own, which may differ from the MLP's (RoBERTa's: GELU)
    slope = linear_slope(lambda t: activate(t, activation), pre, 0.5)
    transformed = _linear(parts, head.mlp, bias) * slope[:, None]
    normed = _layer_norm(transformed, layer_norm_scale(activate(pre, activation), head.layer_norm), head.layer_norm, bias)
    logits = einsum(normed, head.unembedding.weight[targets], "query part hidden, query hidden -> query part")
    return logits + head.unembedding.bias[targets][:, None] if bias else logits


def _classifier_head(model: nn.Module, final: torch.Tensor, parts: torch.Tensor, targets: torch.Tensor, bias: bool) -> torch.Tensor:
    """The [CLS] row through the pooler (tanh made linear) and the classifier: [1, part]."""
    pre = _linear(final[:1], model.pooler.dense, True)
    slope = linear_slope(torch.tanh, pre, 1.0)
    pooled = _linear(parts[:1], model.pooler.dense, bias) * slope[:, None]
    logits = einsum(pooled, model.classifier.weight[targets], "query part hidden, query hidden -> query part")
    return logits + model.classifier.bias[targets][:, None] if bias else logits


def default_output(model: nn.Module) -> str:
    """The head DecompX decomposes when none is named: the masked-LM head where there is one, else the classifier."""
    if model.lm_head is not None:
        return "mlm"
    if model.classifier is not None:
        return "classifier"
    raise MissingHeadError("DecompX decomposes an output head's logit, and this model has neither a masked-LM head "
                           "nor a classifier: pick another method or another model")


@torch.no_grad()
def decompx(model: nn.Module, layers: list[RecordedLayer], output: str = "mlm", targets: torch.Tensor | None = None,
            progress: Progress | None = None) -> DecompX:
    """The decomposition of one recorded sentence. output: "mlm" (each position's logit of `targets`, [query] token
    ids; default: each position's top prediction) or "classifier" (the [CLS] logit of `targets`, [1] label index;
    default: the top label)."""
    final = layers[-1].layer_out
    if output == "mlm":
        if model.lm_head is None:
            raise MissingHeadError("this model has no masked-LM head: use output='classifier', or load a model with one")
        logits, head = model.lm_head(final), _mlm_head
    elif output == "classifier":
        if model.classifier is None:
            raise MissingHeadError("this model has no sequence classifier: use output='mlm', or load a classifier")
        logits, head = model.classifier(model.pooler(final[None]))[0][None], _classifier_head
    else:
        raise MissingHeadError(f"output must be 'mlm' or 'classifier', not {output!r}")
    targets = logits.argmax(-1) if targets is None else targets.to(final.device)
    seq, hidden = final.shape
    norms = final.new_empty(len(layers), seq, seq)
    logit_parts = final.new_empty(logits.shape[0], seq)
    step = parts_per_pass(seq, model.config.intermediate_size)
    for start in range(0, seq, step):
        checkpoint(min(start + step, seq) - start)  # these rows through every layer; a watcher may stop it here
        keys = torch.arange(start, min(start + step, seq), device=final.device)
        parts = final.new_zeros(seq, len(keys), hidden)
        parts[keys, torch.arange(len(keys))] = layers[0].x[keys]  # x_i[k] = δ_ik x_i
        for index, recorded in enumerate(layers):
            parts = through_layer(recorded, parts, False, model.config)
            norms[index][:, keys] = parts.norm(dim=-1)
        logit_parts[:, keys] = head(model, final, parts, targets, False)
        if progress is not None:
            progress(int(keys[-1]) + 1, seq)
    bias = final.new_zeros(seq, 1, hidden)
    for recorded in layers:
        bias = through_layer(recorded, bias, True, model.config)
    logit_bias = head(model, final, bias, targets, True)[:, 0]
    chosen = logits.gather(-1, targets[:, None])[:, 0]
    return DecompX(norms / norms.sum(-1, keepdim=True), logit_parts, logit_bias, targets, chosen)
