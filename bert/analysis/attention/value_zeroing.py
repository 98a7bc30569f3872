"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", section 2).

For layer l and input token j: set token j's value vectors to zero in every head of that layer (v_j = 0, bias
included), recompute the layer from its recorded input (attention with the recorded pattern, output projection,
residual, LN1, MLP, residual, LN2) and compare each token i's new output x̃_i^{¬j} with the original x̃_i:

    C_ij = 1 − cos(x̃_i^{¬j}, x̃_i),   rows normalised to sum to 1 (C_ij / Σ_k C_ik), as the paper does.

The distance is computed as ‖a/|a| − b/|b|‖² / 2 (bert/analysis/cosine.py): a token that barely changes has a
distance near 0, which `1 − cos` in float32 would bury under rounding.

The whole model: the rollout of the normalised matrices, C_L ··· C_1 (Abnar & Zuidema 2020's Eq. 1 with C for A),
with no extra residual (the residual is inside the recomputed layer); the paper's code rolls them out this way.

Batched: the n zeroings of a layer go `rows_per_pass` tokens at a time (a batch's widest tensor, rows × seq ×
intermediate floats, stays within ROWS_BUDGET), each recomputing only what zeroing its token changes
(`ZeroingParts`): attention's output loses p^h_ij v^h_j W_O^h (one rank-one change per head), and LN1, the MLP and
LN2 follow, with the MLP's first map taken once per token and head instead of once per (query, zeroed token)
pair; never an earlier layer, never a full forward per token. What it holds at most, tensor by tensor:
`zeroing_bytes`.
`value_zeroing_loop` does the same one token at a time through the model's own layer with an intervention on its
value hook, for the tests and the benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from einops import einsum, rearrange
from torch import nn

from ...activations import activate_
from ...config import BertConfig
from ...costs import FLOAT_BYTES
from ...hooks import HookRun, active_run, hook_name
from ...stopping import checkpoint
from ..cosine import cosine_distance
from .mixing_parts import RecordedLayer, output_weight_per_head, value_vectors

Progress = Callable[[int, int], None]  # (layer passes' rows done, total): also where a caller may stop the work
# floats of the widest tensor in one batched pass (rows × seq × intermediate): 16 MiB, two zeroed tokens at 512
# tokens of BERT-base, as fast as wider batches (bench/mixing.py) and a small part of the recorded pass's memory
ROWS_BUDGET = 1 << 22


def rows_per_pass(seq: int, width: int) -> int:
    return max(1, ROWS_BUDGET // (seq * width))


def zeroing_bytes(tokens: int, config: BertConfig) -> int:
    """The most `value_zeroing` holds at once over T = `tokens` tokens, besides the recorded layers it reads, in
    bytes (FLOAT_BYTES a number): the tensors below, named as the code makes them (H hidden, I intermediate, A
    heads, L layers, R = rows_per_pass(T, I) zeroed tokens a batch). Measured against PyTorch's own count of its
    allocations: tests/analysis/attention/test_value_zeroing_memory.py.
    - Always: the earlier layers' normalised matrices, (L − 1)·T², and this layer's distances, T².
    - Setting up a layer (ZeroingParts.of): y, C y, γ1 ⊙ C y or x W_V and the values (4·T·H), W1 (γ1 ⊙ C y) (T·I),
      W1 β1 + b1 (I).
    - Then ZeroingParts (C y and the values, 2·T·H; W1 (γ1 ⊙ C y), T·I; W1 β1 + b1, I), the unchanged output (T·H)
      and one batch at its widest, the larger of
      - the pre-activation, activated in place (R·T·I), LN1's input turned output in place (R·T·H), its square or
        the MLP's output (R·T·H), LN1's mean square and divisor (2·R·T);
      - the shares of the batch's tokens, indexed and made contiguous (2·A·T·R), each head's change and its LN1
        scaling (2·R·A·H), its change of the pre-activation (R·A·I), with LN1's input and the pre-activation;
      - the cosine distance: the output, its unit vectors, their difference and its square (4·R·T·H), the
        unchanged output's unit vectors (T·H), the norms and the distances (3·R·T).
    - At the end of a layer (normalise_rows): the distances, their quotients, zeros and the result (4·T²); at the
      end (torch.stack): every layer's matrix twice (2·L·T²)."""
    T, H, I, A, L = tokens, config.hidden_size, config.intermediate_size, config.num_heads, config.num_layers
    R = min(T, rows_per_pass(T, I))
    held = (L - 1) * T * T + T * T
    setup = 4 * T * H + T * I + I
    parts = 2 * T * H + T * I + I + T * H
    batch = max(R * T * I + 2 * R * T * H + 2 * R * T,
                2 * A * T * R + 2 * R * A * H + R * A * I + R * T * I + R * T * H,
                4 * R * T * H + T * H + 3 * R * T)
    end = max((L - 1) * T * T + 4 * T * T, 2 * L * T * T)
    return FLOAT_BYTES * max(held + setup, held + parts + batch, end)


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

    Zeroing token j's values takes p^h_ij u^h_j off what attention adds to token i, u^h_j = v^h_j W_O^h, for each
    head h (a rank-one change of each head's output); the rest of the layer is LN1, the MLP and LN2 of that. LN1's
    mean and the MLP's first map are linear, so with C the centring, the MLP's pre-activation of i with j zeroed is
        (W1 (γ1 ⊙ C y_i) − Σ_h p^h_ij W1 (γ1 ⊙ C u^h_j)) / σ_ij + W1 β1 + b1,
    y_i the recorded sum before LN1 and σ_ij LN1's divisor from C y_i − Σ_h p^h_ij C u^h_j: W1 meets each query once
    (here) and each zeroed token's heads once (in `outputs`), never a (query, zeroed token) pair; only the
    activation, the MLP's second map and LN2 run per pair. Nothing of an earlier layer is recomputed."""

    centred: torch.Tensor  # [query, hidden] C y_i
    pre: torch.Tensor  # [query, intermediate] W1 (γ1 ⊙ C y_i)
    pre_shift: torch.Tensor  # [intermediate] W1 β1 + b1
    values: torch.Tensor  # [head, key, head_dim] v^h_k (with the value bias)

    @classmethod
    @torch.no_grad()
    def of(cls, recorded: RecordedLayer) -> "ZeroingParts":
        module = recorded.module
        mlp1 = module.residual.mlp1
        summed = recorded.x + recorded.attention_result  # [query, hidden] before LN1
        centred = summed - summed.mean(-1, keepdim=True)
        return cls(centred, F.linear(_ln1_scaled(module, centred), mlp1.weight), mlp1(_ln1_shift(module, centred)),
                   value_vectors(module, recorded.x))

    @torch.no_grad()
    def outputs(self, recorded: RecordedLayer, keys: torch.Tensor | None) -> torch.Tensor:
        """The layer's output with the values of token keys[row] zeroed, one row each: [row, query, hidden]
        (None: nothing zeroed, one row). Holds at most `zeroing_bytes`' per-row tensors for each row."""
        module = recorded.module
        norm, block = module.attention.layer_norm, module.residual
        if keys is None:
            centred, pre = self.centred[None].clone(), self.pre[None].clone()  # [1, query, ...]
        else:
            shares = recorded.pattern[:, :, keys].permute(2, 1, 0).contiguous()  # [row, query, head]: p^h_i,keys[row]
            changes = einsum(self.values[:, keys], output_weight_per_head(module),
                             "head row head_dim, head head_dim hidden -> row head hidden")  # u^h_k
            changes -= changes.mean(-1, keepdim=True)  # C u^h_k
            pre_changes = F.linear(_ln1_scaled(module, changes), block.mlp1.weight)  # [row, head, intermediate]
            rows = len(keys)
            centred = torch.baddbmm(self.centred.expand(rows, -1, -1), shares, changes, alpha=-1)  # [row, query, hidden]
            pre = torch.baddbmm(self.pre.expand(rows, -1, -1), shares, pre_changes, alpha=-1)  # [row, query, intermediate]
            del shares, changes, pre_changes
        inverse = torch.rsqrt(centred.square().mean(-1, keepdim=True) + norm.eps)  # [row, query, 1] LN1's 1 / σ
        # the widest tensor, [row, query, intermediate], changes in place from here: pre-activation, then activation
        post = activate_(torch.addcmul(self.pre_shift, pre, inverse, out=pre), block.activation)
        normed = centred.mul_(inverse)  # LN1's output, in place
        normed = normed if norm.weight is None else normed.mul_(norm.weight)
        normed = normed if norm.bias is None else normed.add_(norm.bias)
        summed = block.mlp2(post).add_(normed)  # [row, query, hidden] before LN2
        del post, normed, centred, pre
        return block.layer_norm(summed)


def _ln1_scaled(module: nn.Module, centred: torch.Tensor) -> torch.Tensor:
    """γ1 ⊙ (a centred vector): LN1's scale without its divisor."""
    weight = module.attention.layer_norm.weight
    return centred if weight is None else weight * centred


def _ln1_shift(module: nn.Module, like: torch.Tensor) -> torch.Tensor:
    """β1 (zeros where LN1 has no bias): [hidden]."""
    bias = module.attention.layer_norm.bias
    return bias if bias is not None else torch.zeros_like(like[0])


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
