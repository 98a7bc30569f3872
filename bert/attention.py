"""Scaled dot-product attention as small pure functions with named axes.

Axes: batch (sentences), seq (positions), query / key (positions seen from the attending and the attended
side), head (attention heads), head_dim (dimensions per head, hidden // heads = 64 in BERT-base).
"""
import torch
from einops import einsum, rearrange


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """[batch, seq, hidden] -> [batch, head, seq, head_dim]"""
    return rearrange(x, "batch seq (head head_dim) -> batch head seq head_dim", head=num_heads)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[batch, head, seq, head_dim] -> [batch, seq, hidden]: the heads' outputs side by side."""
    return rearrange(x, "batch head seq head_dim -> batch seq (head head_dim)")


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q·k / sqrt(head_dim): [batch, head, query, key]."""
    scores = einsum(q, k, "batch head query head_dim, batch head key head_dim -> batch head query key")
    return scores * q.shape[-1] ** -0.5


def mask_padding(scores: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """Give padded keys (attention_mask == 0) the lowest score, so softmax gives them zero attention."""
    if attention_mask is None:
        return scores
    padded_key = rearrange(attention_mask == 0, "batch key -> batch 1 1 key")
    return scores.masked_fill(padded_key, torch.finfo(scores.dtype).min)


def weighted_values(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each query's attention-weighted average of the values: [batch, head, query, head_dim]."""
    return einsum(pattern, v, "batch head query key, batch head key head_dim -> batch head query head_dim")
