"""One layer of a recorded pass, taken apart by input token: the pieces the context-mixing measures
(bert/analysis/attention/mixing.py) are norms or distances of.

A BERT layer (post-LN, Devlin et al. 2019) computes, for the input vectors x_1 .. x_n of one sentence:

    attention_result_i = Σ_j Σ_h α^h_ij f^h(x_j) + b_O,   f^h(x) = (x W_V^h + b_V^h) W_O^h
    attention_out_i    = LN1(x_i + attention_result_i)
    layer_out_i        = LN2(attention_out_i + W_2 GELU(W_1 attention_out_i + b_1) + b_2)

where α^h is head h's attention pattern, W_V^h the head's columns of the value projection and W_O^h its rows of
the output projection (the first line is Eq. 2 of Modarressi et al. 2023). Everything but the softmax, GELU and
the LayerNorms' division is linear, so a vector that is a sum of parts (one per input token j) maps to a sum of
parts. A LayerNorm is linear too once its divisor is fixed at the recorded one (Kobayashi et al. 2021, section
3.2, Eqs. 12-13; here with a bias b kept as its own part):

    LN(Σ_j z_j + b) = Σ_j γ ⊙ (z_j − mean(z_j)) / s  +  γ ⊙ (b − mean(b)) / s + β,   s = sqrt(var(Σ_j z_j + b) + ε)

Axes: head, query (the position whose output is decomposed, i), key (the input token it takes from, j), hidden.
All for one sentence: the batch row and its real (unpadded) length are chosen when the layers are read.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from einops import einsum, rearrange
from torch import nn

from ...activation_cache import ActivationCache
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...shared_layers import LayerApplication

# what a recorded pass must keep for every method (the hook kinds of bert/hooks.py)
MIXING_KINDS = ("embedding_out", "pattern", "attention_result", "attention_out", "mlp_pre", "mlp_result", "layer_out")


@dataclass(frozen=True)
class RecordedLayer:
    """One layer of one sentence's recorded pass."""

    layer: int  # 0 is the first transformer layer
    module: nn.Module  # the model's BertLayer
    x: torch.Tensor  # [seq, hidden] the layer's input (the embeddings, or the previous layer's output)
    pattern: torch.Tensor  # [head, query, key]
    attention_result: torch.Tensor  # [seq, hidden] what attention adds to the residual stream (before LN1)
    attention_out: torch.Tensor  # [seq, hidden] after the residual and LN1
    mlp_pre: torch.Tensor  # [seq, intermediate] before GELU
    mlp_result: torch.Tensor  # [seq, hidden] what the MLP adds (before LN2)
    layer_out: torch.Tensor  # [seq, hidden]


def mixing_hook_names(num_layers: int) -> list[str]:
    """The hooks `recorded_layers` reads: pass them as run_with_cache's names."""
    return [hook_name(kind) if kind == "embedding_out" else hook_name(kind, layer)
            for kind in MIXING_KINDS for layer in ([None] if kind == "embedding_out" else range(num_layers))]


def recorded_layers(model: nn.Module, cache: ActivationCache, row: int = 0, length: int | None = None) -> list[RecordedLayer]:
    """Each layer of sentence `row` of a recorded pass, cut to its first `length` positions (its real tokens;
    None: all). The cache must hold `mixing_hook_names(model.config.num_layers)`."""
    missing = [name for name in mixing_hook_names(model.config.num_layers) if name not in cache]
    if missing:
        raise InvalidInputError(
            f"the recorded pass lacks {missing[0]!r} (and {len(missing) - 1} more): record it with "
            f"names=mixing_hook_names(num_layers), or use record_for_mixing"
        )
    seq = cache[hook_name("embedding_out")].shape[1]
    length = seq if length is None else length
    if not 1 <= length <= seq:
        raise InvalidInputError(f"length must lie in 1..{seq}, not {length}")

    def read(kind: str, layer: int | None = None) -> torch.Tensor:
        return cache[hook_name(kind, layer)][row]

    layers, x = [], read("embedding_out")[:length]
    for layer, module in enumerate(model.transformer):
        if isinstance(module, LayerApplication):  # ALBERT: the one shared BertLayer, applied at every depth
            module = module.layer
        layers.append(RecordedLayer(
            layer, module, x, read("pattern", layer)[:, :length, :length], read("attention_result", layer)[:length],
            read("attention_out", layer)[:length], read("mlp_pre", layer)[:length], read("mlp_result", layer)[:length],
            read("layer_out", layer)[:length],
        ))
        x = layers[-1].layer_out
    return layers


def output_weight_per_head(module: nn.Module) -> torch.Tensor:
    """W_O split by head: [head, head_dim, hidden] (nn.Linear keeps [out, in])."""
    attention = module.attention.attention
    return rearrange(module.attention.mlp.weight, "hidden (head head_dim) -> head head_dim hidden", head=attention.num_heads)


def value_vectors(module: nn.Module, x: torch.Tensor, bias: bool = True) -> torch.Tensor:
    """x W_V (+ b_V) per head: [seq, hidden] -> [head, seq, head_dim]. `x` may carry leading axes: [..., seq, hidden]."""
    linear = module.attention.attention.project_value
    values = x @ linear.weight.T + (linear.bias if bias and linear.bias is not None else 0)  # ModernBERT: no biases
    return rearrange(values, "... seq (head head_dim) -> ... head seq head_dim", head=module.attention.attention.num_heads)


def transformed_values(module: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """f^h(x_j) = (x_j W_V^h + b_V^h) W_O^h, Kobayashi et al. 2020's transformed vectors: [head, key, hidden]."""
    return einsum(value_vectors(module, x), output_weight_per_head(module), "head key head_dim, head head_dim hidden -> head key hidden")


def attention_parts(pattern: torch.Tensor, transformed: torch.Tensor, keys: slice = slice(None)) -> torch.Tensor:
    """Σ_h α^h_ij f^h(x_j) for the keys j in `keys`: [query, key, hidden]. Summed over every key and with b_O
    added, this is the attention block's output before the residual (attention_result)."""
    return einsum(pattern[:, :, keys], transformed[:, keys], "head query key, head key hidden -> query key hidden")


def layer_norm_scale(total: torch.Tensor, layer_norm: nn.LayerNorm) -> torch.Tensor:
    """s = sqrt(var(total) + ε), the divisor a LayerNorm used for `total`: [..., hidden] -> [..., 1]."""
    return (total.var(dim=-1, unbiased=False, keepdim=True) + layer_norm.eps).sqrt()


def layer_norm_parts(parts: torch.Tensor, scale: torch.Tensor, layer_norm: nn.LayerNorm) -> torch.Tensor:
    """γ ⊙ (z − mean(z)) / s for each part z: the share of each part in LN(Σ parts + bias), the LayerNorm's bias β
    and the bias's own share left out. parts [query, ..., hidden]; scale [query, 1] (from layer_norm_scale)."""
    centred = parts - parts.mean(dim=-1, keepdim=True)  # a new tensor: scaled in place, no more copies
    return centred.mul_(layer_norm.weight).div_(scale.reshape(scale.shape[0], *([1] * (parts.dim() - 1))))


def layer_norm_bias_part(bias: torch.Tensor, scale: torch.Tensor, layer_norm: nn.LayerNorm) -> torch.Tensor:
    """γ ⊙ (b − mean(b)) / s + β: what of LN(Σ parts + b) no input token brings. bias [hidden] or [query, hidden]."""
    centred = bias - bias.mean(dim=-1, keepdim=True)
    return layer_norm.weight * centred / scale + layer_norm.bias


def residual_parts(parts: torch.Tensor, x: torch.Tensor, keys: slice = slice(None)) -> torch.Tensor:
    """parts_ij + δ_ij x_i: the attention parts with each token's own vector added through the residual
    connection, in place (returns `parts`). parts [query, key, hidden] for the keys in `keys`; x [seq, hidden]."""
    positions = torch.arange(x.shape[0], device=x.device)[keys]
    parts[positions, torch.arange(len(positions), device=x.device)] += x[positions]
    return parts
