"""The one forward pass every cloze benchmark needs: a token-id sequence with one [MASK] -> the MLM logits there."""
from __future__ import annotations

import torch

from ..devices import model_device
from ..errors import InvalidInputError
from ..model import Bert


@torch.no_grad()
def logits_at_mask(model: Bert, input_ids: list[int], mask_id: int) -> torch.Tensor:
    """Logits [vocab] (float32, on the CPU) at the single [MASK] of `input_ids` ([CLS] ... [SEP], one segment, batch 1)."""
    if not model.has_mlm_head:
        raise InvalidInputError("this model has no masked-LM head, so it cannot be scored on cloze benchmarks")
    if input_ids.count(mask_id) != 1:
        raise InvalidInputError(f"a cloze input needs exactly one [MASK], this one has {input_ids.count(mask_id)}")
    if len(input_ids) > model.config.max_position_embeddings:
        raise InvalidInputError(f"{len(input_ids)} tokens, more than the model's {model.config.max_position_embeddings} positions")
    ids = torch.tensor([input_ids], device=model_device(model))
    logits = model(ids, torch.zeros_like(ids), logit_mask=ids == mask_id)  # [1, vocab]
    return logits[0].float().cpu()
