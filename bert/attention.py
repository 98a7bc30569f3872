"""Scaled dot-product attention as small pure functions with named axes.

Axes: batch (sentences), seq (positions), query / key (positions seen from the attending and the attended
side), head (attention heads), head_dim (dimensions per head, hidden // heads = 64 in BERT-base).

The two products are `torch.matmul` over the named axes (einops.einsum routes through extra permutes and a
separate scaling pass, about 10% slower at 512 tokens); the scale is applied in place on the scores.

`attention_pattern` gives a pattern from q and k alone (the app computes the patterns a page draws from the q and
k a fused pass recorded). `fused_attention` computes the same z in one call to PyTorch's `scaled_dot_product_attention` (flash and
memory-efficient kernels on a GPU, a fused kernel on the CPU), without a [query, key] tensor anyone could see:
the model takes it when nobody records or changes the scores or the pattern.
"""
import torch
import torch.nn.functional as F
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


def masked_scores(q: torch.Tensor, k: torch.Tensor, attention_mask: torch.Tensor | None, causal: bool = False) -> torch.Tensor:
    """attention_scores with padded keys (and, if causal, the keys to the right of each query) at the lowest score:
    what hook_scores records."""
    scores = mask_padding(attention_scores(q, k), attention_mask)
    return mask_future(scores) if causal else scores


def attention_pattern(q: torch.Tensor, k: torch.Tensor, attention_mask: torch.Tensor | None = None,
                      causal: bool = False) -> torch.Tensor:
    """softmax of masked_scores, [batch, head, query, key]: what hook_pattern records, from q and k alone."""
    return masked_scores(q, k, attention_mask, causal).softmax(dim=-1)


def weighted_values(pattern: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each query's attention-weighted average of the values:
    [batch, head, query, key] x [batch, head, key, head_dim] -> [batch, head, query, head_dim]."""
    return torch.matmul(pattern, v)


def padding_bias(attention_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """[batch, 1, 1, key], added to the scores: 0 for real keys, the dtype's minimum for padded ones
    (attention_mask == 0), as `mask_padding` gives them."""
    if attention_mask is None:
        return None
    padded_key = rearrange(attention_mask == 0, "batch key -> batch 1 1 key")
    return torch.zeros(padded_key.shape, dtype=dtype, device=attention_mask.device).masked_fill_(padded_key, torch.finfo(dtype).min)


def fused_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None, dropout: float = 0.0,
    causal: bool = False,
) -> torch.Tensor:
    """softmax(q·k / sqrt(head_dim) + padding) · v in one kernel: [batch, head, query, head_dim], what
    attention_scores, mask_padding, (mask_future if causal,) softmax and weighted_values give (dropout: on the
    pattern, training only)."""
    bias = padding_bias(attention_mask, q.dtype)
    if causal and bias is not None:  # SDPA takes a mask or is_causal, not both: fold the future into the mask
        bias, causal = mask_future(bias.expand(-1, -1, q.shape[-2], -1)), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout, is_causal=causal)
