"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", section 2).

For layer l and input token j: set token j's value vectors to zero in every head of that layer (v_j = 0, bias
included), recompute the layer from its recorded input (attention with the recorded pattern, output projection,
residual, LN1, MLP, residual, LN2) and compare each token i's new output x̃_i^{¬j} with the original x̃_i:

    C_ij = 1 − cos(x̃_i^{¬j}, x̃_i),   rows normalised to sum to 1 (C_ij / Σ_k C_ik), as the paper does.

The distance is computed as ‖a/|a| − b/|b|‖² / 2 (bert/analysis/cosine.py): a token that barely changes has a
distance near 0, which `1 − cos` in float32 would bury under rounding.

The whole model: the rollout of the normalised matrices, C_L ··· C_1 (Abnar & Zuidema 2020's Eq. 1 with C for A),
with no extra residual (the residual is inside the recomputed layer); the paper's code rolls them out this way.

Batched: the n zeroings of a layer are one batch of n rows (`rows_per_pass` at a time, so memory stays at rows ×
seq × intermediate floats), each recomputing only what zeroing its token changes (`ZeroingParts`): attention's
output loses p^h_ij v^h_j W_O^h, and LN1, the MLP and LN2 follow, with the MLP's first map taken once per token and
head instead of once per (query, zeroed token) pair; never a full forward per token.
`value_zeroing_loop` does the same one token at a time through the model's own layer with an intervention on its
value hook, for the tests and the benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from ...activations import activate
from ...hooks import HookRun, active_run, hook_name
from ...stopping import checkpoint
from ..cosine import cosine_distance
from .mixing_parts import RecordedLayer, transformed_values, value_vectors

Progress = Callable[[int, int], None]  # (layer passes' rows done, total): also where a caller may stop the work
ROWS_BUDGET = 1 << 25  # floats of the widest tensor in one batched pass (rows × seq × intermediate)


def rows_per_pass(seq: int, width: int) -> int:
    return max(1, ROWS_BUDGET // (seq * width))


@torch.no_grad()
def zeroed_outputs(recorded: RecordedLayer, keep: torch.Tensor) -> torch.Tensor:
    """The layer's output when the value vectors of the tokens with keep == 0 are zeroed, one row per row of
    `keep` ([batch, key] of 0 and 1): [batch, query, hidden], the whole layer recomputed from its values (the
    definition; `value_zeroing` takes one token a row through ZeroingParts). A row of ones gives the layer's own output."""
    module = recorded.module
    values = value_vectors(module, recorded.x) * keep[:, None, :, None]  # [batch, head, key, head_dim]
    z = torch.matmul(recorded.pattern, values)  # [batch, head, query, head_dim]
    result = module.attention.mlp(rearrange(z, "batch head query head_dim -> batch query (head head_dim)"))
    return module.residual(module.attention.layer_norm(recorded.x + result))


@dataclass(frozen=True)
class ZeroingParts:
    """One layer's recorded pass split into what zeroing one token changes and what it does not (post-LN).

    Zeroing token j's values takes p^h_ij (v^h_j W_O^h) off what attention adds to token i, for each head h; the rest
    of the layer is LN1, the MLP and LN2 of that. LN1's mean and the MLP's first map are linear, so with C the
    centring, the MLP's pre-activation of i with j zeroed is
        (W1 (γ1 ⊙ C y_i) − Σ_h p^h_ij W1 (γ1 ⊙ C u^h_j)) / σ_ij + W1 β1 + b1,   u^h_j = v^h_j W_O^h,
    y_i the recorded sum before LN1 and σ_ij LN1's divisor from C y_i − Σ_h p^h_ij C u^h_j: every product with W1 is
    made once per token and head, not once per (i, j) pair; only the activation, the MLP's second map and LN2 run per pair."""

    centred: torch.Tensor  # [query, hidden] C y_i
    centred_values: torch.Tensor  # [head, key, hidden] C u^h_k
    pre: torch.Tensor  # [query, intermediate] W1 (γ1 ⊙ C y_i)
    pre_values: torch.Tensor  # [head, key, intermediate] W1 (γ1 ⊙ C u^h_k)
    pre_shift: torch.Tensor  # [intermediate] W1 β1 + b1

    @classmethod
    @torch.no_grad()
    def of(cls, recorded: RecordedLayer) -> "ZeroingParts":
        module = recorded.module
        norm, mlp1 = module.attention.layer_norm, module.residual.mlp1
        scale = norm.weight if norm.weight is not None else torch.ones_like(recorded.x[0])
        shift = norm.bias if norm.bias is not None else torch.zeros_like(recorded.x[0])
        summed = recorded.x + recorded.attention_result  # [query, hidden] before LN1
        centred = summed - summed.mean(-1, keepdim=True)
        values = transformed_values(module, recorded.x)  # [head, key, hidden]
        centred_values = values - values.mean(-1, keepdim=True)
        return cls(centred, centred_values, F.linear(scale * centred, mlp1.weight), F.linear(scale * centred_values, mlp1.weight),
                   mlp1(shift))

    @torch.no_grad()
    def outputs(self, recorded: RecordedLayer, keys: torch.Tensor | None) -> torch.Tensor:
        """The layer's output with the values of token keys[row] zeroed, one row each: [row, query, hidden]
        (None: nothing zeroed, one row)."""
        module = recorded.module
        norm, block = module.attention.layer_norm, module.residual
        if keys is None:
            centred, pre = self.centred[None], self.pre[None].clone()  # [1, query, ...]
        else:  # the widest tensors, [row, query, intermediate], are changed in place: one pass over them per step
            shares = recorded.pattern[:, :, keys].permute(2, 1, 0)  # [row, query, head]: p^h_i,keys[row]
            centred = self.centred - torch.bmm(shares, self.centred_values[:, keys].transpose(0, 1))  # [row, query, hidden]
            pre = torch.bmm(shares, self.pre_values[:, keys].transpose(0, 1))  # [row, query, intermediate]
            torch.sub(self.pre, pre, out=pre)
        inverse = torch.rsqrt(centred.square().mean(-1, keepdim=True) + norm.eps)  # [row, query, 1] LN1's 1 / σ
        normed = centred * inverse
        normed = normed if norm.weight is None else normed * norm.weight
        normed = normed if norm.bias is None else normed + norm.bias  # LN1's output
        post = activate(torch.addcmul(self.pre_shift, pre, inverse, out=pre), block.activation)
        return block.layer_norm(normed + block.mlp2(post))


@torch.no_grad()
def value_zeroing_layer(recorded: RecordedLayer, progress: Progress | None = None, done: int = 0, total: int = 0,
                        layer: int = 0, layers: int = 1) -> torch.Tensor:
    """C_ij for one layer, not yet normalised: [query, key]. Layer `layer` of `layers`: each batch tells a watcher
    (bert/stopping.py) its share of the batch's rows, so that over every layer it counts each zeroed row as one
    forward pass, as mixing_cost does."""
    seq = recorded.x.shape[0]
    width = recorded.module.residual.mlp1.out_features
    parts = ZeroingParts.of(recorded)
    original = parts.outputs(recorded, None)[0]
    distances = recorded.x.new_empty(seq, seq)
    step = rows_per_pass(seq, width)
    for start in range(0, seq, step):
        rows = min(start + step, seq) - start
        checkpoint(rows * (layer + 1) // layers - rows * layer // layers)  # a watcher may stop it here
        keys = torch.arange(start, min(start + step, seq), device=recorded.x.device)
        distances[:, keys] = cosine_distance(parts.outputs(recorded, keys), original).T
        if progress is not None:
            progress(done + int(keys[-1]) + 1, total)
    return distances


def normalise_rows(matrix: torch.Tensor) -> torch.Tensor:
    """Rows divided by their sums (a row of zeros stays zero)."""
    sums = matrix.sum(-1, keepdim=True)
    return torch.where(sums > 0, matrix / sums.clamp(min=torch.finfo(matrix.dtype).tiny), torch.zeros_like(matrix))


def value_zeroing(layers: list[RecordedLayer], progress: Progress | None = None) -> torch.Tensor:
    """Every layer's normalised C: [layer, query, key]. progress(rows done, rows in all) after each batched pass."""
    seq = layers[0].x.shape[0]
    total = seq * len(layers)
    return torch.stack([normalise_rows(value_zeroing_layer(recorded, progress, index * seq, total, index, len(layers)))
                        for index, recorded in enumerate(layers)])


@torch.no_grad()
def one_token_zeroed(model: nn.Module, recorded: RecordedLayer, key: int | None) -> torch.Tensor:
    """The model's own layer run on its recorded input with token `key`'s values zeroed by an intervention on the
    layer's value hook (None: nothing zeroed): [query, hidden]."""
    def zero_value(v: torch.Tensor, name: str) -> torch.Tensor:
        v = v.clone()
        v[:, :, key] = 0  # [batch, head, key, head_dim]
        return v

    interventions = {} if key is None else {hook_name("v", recorded.layer): [zero_value]}
    with active_run(HookRun(keep=lambda _: False, interventions=interventions, known=model.hook_names())):
        return recorded.module(recorded.x[None], None)[0]


def value_zeroing_loop(model: nn.Module, layers: list[RecordedLayer]) -> torch.Tensor:
    """The same as `value_zeroing`, one zeroed token per pass of the model's own layer (`one_token_zeroed`): seq
    passes per layer. [layer, query, key]."""
    matrices = []
    for recorded in layers:
        original = one_token_zeroed(model, recorded, None)
        distances = torch.stack([cosine_distance(one_token_zeroed(model, recorded, key), original)
                                 for key in range(recorded.x.shape[0])], dim=1)
        matrices.append(normalise_rows(distances))
    return torch.stack(matrices)
