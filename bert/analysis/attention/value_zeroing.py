"""Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", section 2).

For layer l and input token j: set token j's value vectors to zero in every head of that layer (v_j = 0, bias
included), recompute the layer from its recorded input (attention with the recorded pattern, output projection,
residual, LN1, MLP, residual, LN2) and compare each token i's new output x̃_i^{¬j} with the original x̃_i:

    C_ij = 1 − cos(x̃_i^{¬j}, x̃_i),   rows normalised to sum to 1 (C_ij / Σ_k C_ik), as the paper does.

The distance is computed as ‖a/|a| − b/|b|‖² / 2 (bert/analysis/cosine.py): a token that barely changes has a
distance near 0, which `1 − cos` in float32 would bury under rounding.

The whole model: the rollout of the normalised matrices, C_L ··· C_1 (Abnar & Zuidema 2020's Eq. 1 with C for A),
with no extra residual (the residual is inside the recomputed layer); the paper's code rolls them out this way.

Batched: the n zeroings of a layer are one batch of n copies of that layer (`rows_per_pass` at a time, so memory
stays at rows × seq × intermediate floats): one layer pass per layer over all j, never a full forward per token.
`value_zeroing_loop` does the same one token at a time through the model's own layer with an intervention on its
value hook, for the tests and the benchmark.
"""
from __future__ import annotations

from typing import Callable

import torch
from einops import rearrange
from torch import nn

from ...hooks import HookRun, active_run, hook_name
from ...stopping import checkpoint
from ..cosine import cosine_distance
from .mixing_parts import RecordedLayer, value_vectors

Progress = Callable[[int, int], None]  # (layer passes' rows done, total): also where a caller may stop the work
ROWS_BUDGET = 1 << 25  # floats of the widest tensor in one batched pass (rows × seq × intermediate)


def rows_per_pass(seq: int, width: int) -> int:
    return max(1, ROWS_BUDGET // (seq * width))


@torch.no_grad()
def zeroed_outputs(recorded: RecordedLayer, keep: torch.Tensor) -> torch.Tensor:
    """The layer's output when the value vectors of the tokens with keep == 0 are zeroed, one row per row of
    `keep` ([batch, key] of 0 and 1): [batch, query, hidden]. A row of ones gives the layer's own output."""
    module = recorded.module
    values = value_vectors(module, recorded.x) * keep[:, None, :, None]  # [batch, head, key, head_dim]
    z = torch.matmul(recorded.pattern, values)  # [batch, head, query, head_dim]
    result = module.attention.mlp(rearrange(z, "batch head query head_dim -> batch query (head head_dim)"))
    return module.residual(module.attention.layer_norm(recorded.x + result))


@torch.no_grad()
def value_zeroing_layer(recorded: RecordedLayer, progress: Progress | None = None, done: int = 0, total: int = 0,
                        layer: int = 0, layers: int = 1) -> torch.Tensor:
    """C_ij for one layer, not yet normalised: [query, key]. Layer `layer` of `layers`: each batch tells a watcher
    (bert/stopping.py) its share of the batch's rows, so that over every layer it counts each zeroed row as one
    forward pass, as mixing_cost does."""
    seq = recorded.x.shape[0]
    width = recorded.module.residual.mlp1.out_features
    original = zeroed_outputs(recorded, recorded.x.new_ones(1, seq))[0]
    distances = recorded.x.new_empty(seq, seq)
    step = rows_per_pass(seq, width)
    for start in range(0, seq, step):
        rows = min(start + step, seq) - start
        checkpoint(rows * (layer + 1) // layers - rows * layer // layers)  # a watcher may stop it here
        keys = torch.arange(start, min(start + step, seq), device=recorded.x.device)
        keep = torch.ones(len(keys), seq, dtype=recorded.x.dtype, device=recorded.x.device)
        keep[torch.arange(len(keys)), keys] = 0
        distances[:, keys] = cosine_distance(zeroed_outputs(recorded, keep), original).T
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
