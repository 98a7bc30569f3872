"""DeBERTa's relative positions (He et al. 2021, section 3.1; He et al. 2023): one table of relative-position
embeddings shared by every layer, which each attention layer reads as an additive bias on its scores
(bert/model.py's PureSelfAttentionLayer.position_terms; the terms: bert/attention.py)."""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from . import attention as attn
from .config import BertConfig
from .hooks import HookPoint


class RelativeInput(NamedTuple):
    """What DeBERTa's attention layers read of the relative positions, computed once per forward pass."""

    index: torch.Tensor  # LongTensor [query, key]: the row of `embeddings` for each query-key pair
    embeddings: torch.Tensor  # [2 * span, hidden] the relative-position embeddings after their LayerNorm


class RelativePositions(nn.Module):
    """DeBERTa's relative-position embeddings (He et al. 2021, section 3.1), one table shared by every layer
    (Hugging Face's encoder.rel_embeddings, then encoder.LayerNorm): 2k rows for the relative distances -k .. k - 1,
    which DeBERTa-v3 reaches through log buckets (attention.relative_index; k = position_buckets)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.span, self.buckets, self.max_distance = config.relative_span, config.position_buckets, config.relative_distance
        self.embedding = nn.Embedding(2 * self.span, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.hook_embeddings = HookPoint()  # [2 * span, hidden] after LayerNorm: what each layer projects to position keys and queries

    def extra_repr(self) -> str:
        return f"span={self.span}, buckets={self.buckets}, max_distance={self.max_distance}"

    def forward(self, seq: int) -> RelativeInput:
        device = self.embedding.weight.device
        index = attn.relative_index(seq, self.buckets, self.max_distance, self.span, device)
        return RelativeInput(index, self.dropout(self.hook_embeddings(self.layer_norm(self.embedding.weight))))
