"""What Bert checks before a forward pass or before growing a head: typed errors that say what is wrong."""
from __future__ import annotations

import torch

from .config import BertConfig
from .errors import InputTooLongError, InvalidInputError
from .families.registry import family_of


def check_inputs(cfg: BertConfig, input_ids, token_type_ids, attention_mask) -> torch.Tensor:
    """Checks a forward pass's inputs against the config; returns token_type_ids (zeros when None)."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
        raise InvalidInputError("input_ids must be a LongTensor of shape [batch, seq]")
    if input_ids.numel() == 0:
        raise InvalidInputError(f"input_ids {tuple(input_ids.shape)} is empty: the model needs at least one token")
    if input_ids.shape[1] > cfg.max_position_embeddings:
        raise InputTooLongError(input_ids.shape[1], cfg.max_position_embeddings)
    check_ids("input_ids", input_ids, cfg.vocab_size)
    if token_type_ids is None:
        token_type_ids = torch.zeros_like(input_ids)
    if not isinstance(token_type_ids, torch.Tensor) or token_type_ids.shape != input_ids.shape or token_type_ids.dtype != torch.long:
        raise InvalidInputError(f"token_type_ids must be a LongTensor shaped like input_ids {tuple(input_ids.shape)}")
    check_ids("token_type_ids", token_type_ids, max(cfg.type_vocab_size, 1))  # without segments: all 0
    if attention_mask is not None and attention_mask.shape != input_ids.shape:
        raise InvalidInputError(f"attention_mask must be shaped like input_ids {tuple(input_ids.shape)}")
    return token_type_ids


def check_heads(config: BertConfig, nsp_head: bool, discriminator: bool) -> None:
    """The heads a model of this config may have: NSP needs a pooler; a replaced-token head, a family that has one."""
    if nsp_head and not config.pooler:
        raise InvalidInputError(f"a {config.family} model has no pooler, so no next-sentence head")
    if discriminator and not family_of(config).discriminator:
        raise InvalidInputError(f"a {config.family} model has no replaced-token (discriminator) head: only ELECTRA's family has")


def check_ids(name: str, ids: torch.Tensor, limit: int) -> None:
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= limit:
        raise InvalidInputError(f"{name} must lie in [0, {limit}); got values from {low} to {high}")
