"""Scaled dot-product attention as small pure functions with named axes.

Axes: batch (sentences), seq (positions), query / key (positions seen from the attending and the attended
side), head (attention heads), head_dim (dimensions per head, hidden // heads = 64 in BERT-base).

The two products are `torch.matmul` over the named axes (einops.einsum routes through extra permutes and a
separate scaling pass, about 10% slower at 512 tokens); the scale is applied in place on the scores.
"""
import torch
from einops import rearrange


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """[batch, seq, hidden] -> [batch, head, seq, head_dim] (a view)"""
    return rearrange(x, "batch seq (head head_dim) -> batch head seq head_dim", head=num_heads)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[batch, head, seq, head_dim] -> [batch, seq, hidden]: the heads' outputs side by side."""
    return rearrange(x, "batch head seq head_dim -> batch seq (head head_dim)")


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q·k / sqrt(head_dim): [batch, head, query, head_dim] x [batch, head, key, head_dim] -> [batch, head, query, key]."""
    return torch.matmul(q, k.transpose(-1, -2)).mul_(q.shape[-1] ** -0.5)


def mask_padding(scores: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """Give padded keys (attention_mask == 0) the lowest score, so softmax gives them zero attention."""
    if attention_mask is None:
        return scores
    padded_key = rearrange(attention_mask == 0, "batch key -> batch 1 1 key")
    return scores.masked_fill(padded_key, torch.finfo(scores.dtype).min)


def mask_future(scores: torch.Tensor) -> torch.Tensor:
    """Give every key to the right of its query (key > query) the lowest score: a left-to-right model."""
    query, key = scores.shape[-2:]
    future = torch.ones(query, key, dtype=torch.bool, device=scores.device).triu(1)  # [query, key]
    return scores.masked_fill(future, torch.finfo(scores.dtype).min)


def weighted_values(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each query's attention-weighted average of the values:
    [batch, head, query, key] x [batch, head, key, head_dim] -> [batch, head, query, head_dim]."""
    return torch.matmul(pattern, v)
