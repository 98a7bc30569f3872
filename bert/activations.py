"""The activation functions of BERT's family, by the names bert/config.py's ACTIVATIONS gives them. A model has
two, named apart: the MLP's (config.activation: GELU in BERT, Hendrycks & Gimpel 2016) and its masked-LM head's
(config.lm_activation: RoBERTa's and ELECTRA's heads apply GELU whatever their MLP's)."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def activate(x: torch.Tensor, activation: str, out: torch.Tensor | None = None) -> torch.Tensor:
    """`activation` ("gelu", "gelu_tanh", "relu" or "silu") applied to x (written into `out` where given: a
    recorded pass's slot for hook_post, bert/hooks.py)."""
    if out is not None:
        if activation == "relu":
            return torch.clamp_min(x, 0, out=out)
        if activation == "silu":
            return torch.ops.aten.silu.out(x, out=out)
        return torch.ops.aten.gelu.out(x, approximate="tanh" if activation == "gelu_tanh" else "none", out=out)
    if activation == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if activation == "relu":
        return F.relu(x)
    if activation == "silu":
        return F.silu(x)
    return F.gelu(x)


def activate_(x: torch.Tensor, activation: str) -> torch.Tensor:
    """The same as `activate`, in place (returns `x`): for a wide tensor that is not needed afterwards."""
    if activation == "gelu_tanh":
        return torch.ops.aten.gelu_(x, approximate="tanh")
    if activation == "relu":
        return x.relu_()
    if activation == "silu":
        return F.silu(x, inplace=True)
    return torch.ops.aten.gelu_(x)
