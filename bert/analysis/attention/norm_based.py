"""Context mixing from the norms of each input token's part of a layer's output (the decomposition of
bert/analysis/attention/mixing_parts.py), for one layer of a recorded pass: [query, key] matrices.

- norm (Kobayashi et al. 2020, "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms",
  section 3, the norm-based analysis ‖αf(x)‖ of the whole multi-head block; GlobEnc restates it as its Eqs. 3-4):
      N_ij = ‖Σ_h α^h_ij f^h(x_j)‖,   f^h(x) = (x W_V^h + b_V^h) W_O^h.
  Summed over j (the vectors, not the norms) and with b_O added: the attention block's output before the residual.
- norm-residual (Kobayashi et al. 2021, "Incorporating Residual and Normalization Layers into Analysis of Masked
  Language Models", section 3.2, ATTN + RES + LN): the same parts with the residual added to token i's own and
  passed through LN1 with its recorded divisor (the block as a sum over inputs, Eq. 16; LN split by Eqs. 12-13;
  GlobEnc's Eq. 7):
      N_ij = ‖g1(Σ_h α^h_ij f^h(x_j) + δ_ij x_i)‖,   g1(z) = γ1 ⊙ (z − mean(z)) / s1_i.
- globenc (Modarressi et al. 2022, "GlobEnc: Quantifying Global Token Attribution by Incorporating the Whole
  Encoder Layer in Transformers", section 3): also through the second residual and LN2; the MLP's own output is
  left out, as the paper does (it bypasses the feed-forward network; Eqs. 9-10):
      N_ij = ‖g2(g1(Σ_h α^h_ij f^h(x_j) + δ_ij x_i))‖,   g2(z) = γ2 ⊙ (z − mean(z)) / s2_i    (Eq. 11).
  Rows normalised to sum to 1 and rolled out over the layers with no extra residual (it is inside already):
  the paper's Eq. 12 without Eq. 13's 0.5·A + 0.5·I.
- alti (Ferrando et al. 2022, "Measuring the Mixing of Contextual Information in the Transformer", section 3):
  T_i(x_j) = g1(Σ_h α^h_ij f^h(x_j) + δ_ij x_i), y_i = Σ_j T_i(x_j) (the biases left out, as the authors' code
  does), and the Manhattan-distance contribution
      c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁),  rows normalised to sum to 1,
  rolled out over the layers with no extra residual.

Keys go `key_chunk` at a time through the [query, key, hidden] parts, so memory stays at
query × key_chunk × hidden floats; before each chunk a watcher (bert/stopping.py) may stop the computation.
"""
from __future__ import annotations

import torch

from ...errors import InvalidInputError
from ...stopping import checkpoint
from .mixing_parts import (
    RecordedLayer, attention_parts, layer_norm_bias_part, layer_norm_parts, layer_norm_scale, residual_parts,
    transformed_values,
)

NORM_METHODS = ("norm", "norm-residual", "globenc", "alti")
PARTS_BUDGET = 1 << 25  # floats in one chunk of parts (128 MiB in float32)


def key_chunk(seq: int, hidden: int) -> int:
    return max(1, PARTS_BUDGET // (seq * hidden))


@torch.no_grad()
def token_parts(recorded: RecordedLayer, keys: slice, through: str) -> torch.Tensor:
    """Each key's part of each query's vector at a point of the layer, [query, key, hidden]:
    "attention" (Σ_h α f(x_j)), "ln1" (g1 of it with the residual), "ln2" (g2 of that)."""
    module = recorded.module
    parts = attention_parts(recorded.pattern, transformed_values(module, recorded.x), keys)
    if through == "attention":
        return parts
    ln1 = module.attention.layer_norm
    parts = layer_norm_parts(residual_parts(parts, recorded.x, keys), layer_norm_scale(recorded.x + recorded.attention_result, ln1), ln1)
    if through == "ln1":
        return parts
    ln2 = module.residual.layer_norm
    return layer_norm_parts(parts, layer_norm_scale(recorded.attention_out + recorded.mlp_result, ln2), ln2)


def bias_parts(recorded: RecordedLayer) -> dict[str, torch.Tensor]:
    """What no input token brings, [query, hidden] at each point: "attention" (b_O), "ln1" (b_O and β1 through
    LN1). With the token parts summed over every key they give attention_result and attention_out."""
    module = recorded.module
    b_output = module.attention.mlp.bias.expand_as(recorded.x)
    ln1 = module.attention.layer_norm
    scale = layer_norm_scale(recorded.x + recorded.attention_result, ln1)
    return {"attention": b_output, "ln1": layer_norm_bias_part(b_output, scale, ln1)}


@torch.no_grad()
def alti_contributions(recorded: RecordedLayer) -> torch.Tensor:
    """ALTI's c_ij for one layer, rows normalised to sum to 1: [query, key]."""
    seq, hidden = recorded.x.shape
    ln1 = recorded.module.attention.layer_norm
    total = recorded.x + recorded.attention_result - recorded.module.attention.mlp.bias  # Σ_j of the parts before LN1
    resultant = layer_norm_parts(total[:, None], layer_norm_scale(recorded.x + recorded.attention_result, ln1), ln1)[:, 0]
    contributions = torch.empty(seq, seq, dtype=recorded.x.dtype, device=recorded.x.device)
    size = key_chunk(seq, hidden)
    for start in range(0, seq, size):
        keys = slice(start, min(start + size, seq))
        checkpoint()  # a watcher may stop it here (bert/stopping.py)
        parts = token_parts(recorded, keys, "ln1")
        distance = (resultant[:, None] - parts).abs().sum(-1)
        contributions[:, keys] = (resultant.abs().sum(-1, keepdim=True) - distance).clamp(min=0)
    return contributions / contributions.sum(-1, keepdim=True)


@torch.no_grad()
def norm_matrix(recorded: RecordedLayer, method: str) -> torch.Tensor:
    """[query, key] for one layer: ‖part_ij‖ for norm, norm-residual, globenc (not normalised); ALTI's c_ij."""
    if method == "alti":
        return alti_contributions(recorded)
    through = {"norm": "attention", "norm-residual": "ln1", "globenc": "ln2"}.get(method)
    if through is None:
        raise InvalidInputError(f"method must be one of {NORM_METHODS}, not {method!r}")
    seq, hidden = recorded.x.shape
    norms = torch.empty(seq, seq, dtype=recorded.x.dtype, device=recorded.x.device)
    size = key_chunk(seq, hidden)
    for start in range(0, seq, size):
        keys = slice(start, min(start + size, seq))
        checkpoint()
        norms[:, keys] = token_parts(recorded, keys, through).norm(dim=-1)
    return norms
