"""Ready-made interventions for `Bert.run_with_cache(..., interventions={hook name: fn})`.

Each returns fn(activation, hook_name) -> activation of the same shape. Head-wise ones act on a layer's
`hook_name("z", layer)` ([batch, head, query, head_dim]), the heads' outputs before the output projection mixes them.
"""
from __future__ import annotations

import torch

from .errors import InvalidInputError
from .hooks import Intervention, is_per_head


def zero_heads(*heads: int) -> Intervention:
    """Zero-ablate heads: they add nothing to the residual stream (their output bias share stays)."""

    def ablate(z: torch.Tensor, name: str) -> torch.Tensor:
        z = z.clone()
        z[:, list(heads)] = 0
        return z

    return ablate


def mean_heads(mean_z: torch.Tensor, *heads: int) -> Intervention:
    """Mean-ablate heads: replace their output by `mean_z` ([head, head_dim] or [head, query, head_dim]),
    for example hook_z averaged over a corpus's batch and positions."""

    def ablate(z: torch.Tensor, name: str) -> torch.Tensor:
        z = z.clone()
        mean = mean_z if mean_z.dim() == 3 else mean_z[:, None, :]
        z[:, list(heads)] = mean[list(heads)].to(z.device, z.dtype).expand_as(z[:, list(heads)])
        return z

    return ablate


def zero(activation: torch.Tensor, name: str) -> torch.Tensor:
    """Zero the whole activation (e.g. a layer's hook_result: remove what attention or the MLP adds)."""
    return torch.zeros_like(activation)


def patch(source: torch.Tensor, positions: list[int] | None = None) -> Intervention:
    """Activation patching: put `source` (the same hook's activation from another run) in place, at all
    positions or only at `positions` along the sequence axis (axis 1 for [batch, seq, ...] hooks,
    axis 2 for head-wise [batch, head, seq, ...] hooks)."""

    def patched(activation: torch.Tensor, name: str) -> torch.Tensor:
        if source.shape != activation.shape:
            raise InvalidInputError(f"patch for {name}: source has shape {tuple(source.shape)}, activation {tuple(activation.shape)}")
        if positions is None:
            return source.to(activation.device, activation.dtype)
        axis = 2 if is_per_head(name) else 1
        out = activation.clone()
        index = [slice(None)] * activation.dim()
        index[axis] = positions
        out[tuple(index)] = source[tuple(index)].to(activation.device, activation.dtype)
        return out

    return patched
