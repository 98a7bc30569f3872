"""Ship a fine-tuned model as only what differs from the weights it started from (Hugging Face names, fp16)."""
from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

from ..checkpoint import to_hf_state_dict
from ..model import Bert


def changed_tensors(model: Bert, base: dict[str, torch.Tensor], dtype: torch.dtype = torch.float16) -> dict[str, torch.Tensor]:
    """Every tensor of `model` (HF names, no `bert.` prefix) that is new or differs from `base`."""
    ours = {key.removeprefix("bert."): tensor for key, tensor in to_hf_state_dict(model).items()}
    return {
        key: tensor.to(dtype).contiguous()
        for key, tensor in ours.items()
        if key not in base or not torch.equal(tensor, base[key].to(tensor.dtype))
    }


def save_changed(model: Bert, base: dict[str, torch.Tensor], path: str | Path, metadata: dict[str, str] | None = None) -> dict[str, torch.Tensor]:
    changed = changed_tensors(model, base)
    save_file(changed, str(path), metadata={"format": "pt", **(metadata or {})})
    return changed
