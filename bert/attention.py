"""Scaled dot-product attention as small pure functions with named axes.

Rotary position embeddings (Su et al. 2021; ModernBERT, Warner et al. 2024) turn each pair of q's and k's
dimensions by an angle that grows with the position (`rotate`), so that q·k depends on how far apart two tokens
are. A local layer's window (`window_band`) lets each query see the keys at most `window` positions away.

DeBERTa (He et al. 2021, 2023) adds to q·k two terms read from relative-position embeddings: `log_buckets` and
`relative_index` say which row each query-key pair reads, `content_to_position` and `position_to_content` compute
the terms.

Grouped-query attention (Ainslie et al. 2023; EuroBERT) gives several query heads one key and value head
(`share_across_heads`).

Axes: batch (sentences), seq (positions), query / key (positions seen from the attending and the attended
side), head (attention heads), head_dim (dimensions per head, hidden // heads = 64 in BERT-base).

The two products are `torch.matmul` over the named axes (einops.einsum routes through extra permutes and a
separate scaling pass, about 10% slower at 512 tokens); the scale is applied in place on the scores. Both take
`out=`: a recorded pass writes the scores (scaled as the product is written: `torch.baddbmm`'s alpha) and z
straight into the memory they are recorded in (`HookPoint.slot`), with no copy.

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


def share_across_heads(x: torch.Tensor, query_heads_per_key: int) -> torch.Tensor:
    """Grouped-query attention (Ainslie et al. 2023): keys or values of the key-value heads, [batch, key_value_head,
    seq, head_dim], as each query head reads them, [batch, head, seq, head_dim]: query head h reads key-value head
    h // query_heads_per_key (Hugging Face's repeat_kv). One key-value head per query head: x itself."""
    if query_heads_per_key == 1:
        return x
    return x.repeat_interleave(query_heads_per_key, dim=1)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """[batch, head, seq, head_dim] -> [batch, seq, hidden]: the heads' outputs side by side."""
    return rearrange(x, "batch head seq head_dim -> batch seq (head head_dim)")


def attention_scores(q: torch.Tensor, k: torch.Tensor, scale: float | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    """q·k / scale (None: sqrt(head_dim)): [batch, head, query, head_dim] x [batch, head, key, head_dim] ->
    [batch, head, query, key], written into `out` where given (contiguous, that shape)."""
    factor = 1 / scale if scale is not None else q.shape[-1] ** -0.5
    if out is None or q.shape[:-2] != k.shape[:-2]:  # (leading axes that broadcast: matmul's own out=)
        return torch.matmul(q, k.transpose(-1, -2), out=out).mul_(factor)
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    flat = out.view(-1, seq_q, seq_k)  # [batch * head, query, key]
    # beta=0: flat's old contents are ignored; alpha scales the product as it is written, no second pass
    torch.baddbmm(flat, q.reshape(-1, seq_q, q.shape[-1]), k.reshape(-1, seq_k, k.shape[-1]).transpose(-1, -2), beta=0, alpha=factor, out=flat)
    return out


def padded_pairs(attention_mask: torch.Tensor, queries: bool = False) -> torch.Tensor:
    """bool [batch, 1, 1 or query, key]: True at padded keys (attention_mask == 0); with queries, at every key of a
    padded query too (DeBERTa: its row is all masked, so softmax spreads it evenly)."""
    padded = rearrange(attention_mask == 0, "batch key -> batch 1 1 key")
    return padded | rearrange(attention_mask == 0, "batch query -> batch 1 query 1") if queries else padded


def mask_padding(scores: torch.Tensor, attention_mask: torch.Tensor | None, queries: bool = False) -> torch.Tensor:
    """Give padded keys (attention_mask == 0) the lowest score, so softmax gives them zero attention (with
    queries: every key of a padded query as well)."""
    if attention_mask is None:
        return scores
    return scores.masked_fill(padded_pairs(attention_mask, queries), torch.finfo(scores.dtype).min)


def mask_future(scores: torch.Tensor) -> torch.Tensor:
    """Give every key to the right of its query (key > query) the lowest score: a left-to-right model."""
    query, key = scores.shape[-2:]
    future = torch.ones(query, key, dtype=torch.bool, device=scores.device).triu(1)  # [query, key]
    return scores.masked_fill(future, torch.finfo(scores.dtype).min)


def window_band(seq: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """bool [query, key]: True where |query - key| <= window, the keys a local layer's query sees (a band around
    the diagonal, 2 * window + 1 wide; ModernBERT's window = local_attention // 2)."""
    positions = torch.arange(seq, device=device)
    return (positions[:, None] - positions[None, :]).abs() <= window


def mask_outside_window(scores: torch.Tensor, window: int | None) -> torch.Tensor:
    """Give every key farther than `window` positions from its query the lowest score (None: no window)."""
    if window is None:
        return scores
    outside = ~window_band(scores.shape[-1], window, scores.device)  # [query, key]
    return scores.masked_fill(outside, torch.finfo(scores.dtype).min)


def rotary_angles(seq: int, head_dim: int, theta: float, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin), each [seq, head_dim]: position p turns dimension pair (i, i + head_dim / 2) by p * theta^(-2i / head_dim)
    (Su et al. 2021, in the half-split layout Hugging Face's checkpoints use)."""
    frequencies = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=device) / head_dim)  # [head_dim / 2]
    angles = torch.arange(seq, device=device, dtype=torch.float)[:, None] * frequencies  # [seq, head_dim / 2]
    angles = torch.cat((angles, angles), dim=-1)  # [seq, head_dim]
    return angles.cos(), angles.sin()


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """q or k [batch, head, seq, head_dim] turned by the rotary angles: x * cos + (-x2, x1) * sin, where x1 and x2
    are the first and second halves of head_dim (computed in float32, returned in x's dtype)."""
    first, second = x.float().chunk(2, dim=-1)
    turned = torch.cat((-second, first), dim=-1)
    return (x.float() * cos + turned * sin).to(x.dtype)


def mask_scores(scores: torch.Tensor, attention_mask: torch.Tensor | None, causal: bool = False, window: int | None = None,
                padded_queries: bool = False) -> torch.Tensor:
    """Scores with padded keys (with padded_queries, every key of a padded query too; if causal, the keys to the
    right of each query; with a window, the keys farther than it) at the lowest score: what hook_scores records."""
    scores = mask_outside_window(mask_padding(scores, attention_mask, padded_queries), window)
    return mask_future(scores) if causal else scores


def masked_scores(q: torch.Tensor, k: torch.Tensor, attention_mask: torch.Tensor | None, causal: bool = False,
                  window: int | None = None) -> torch.Tensor:
    """attention_scores, masked (mask_scores)."""
    return mask_scores(attention_scores(q, k), attention_mask, causal, window)


def attention_pattern(q: torch.Tensor, k: torch.Tensor, attention_mask: torch.Tensor | None = None,
                      causal: bool = False, window: int | None = None) -> torch.Tensor:
    """softmax of masked_scores, [batch, head, query, key]: what hook_pattern records, from q and k alone."""
    return masked_scores(q, k, attention_mask, causal, window).softmax(dim=-1)


def weighted_values(pattern: torch.Tensor, v: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Each query's attention-weighted average of the values:
    [batch, head, query, key] x [batch, head, key, head_dim] -> [batch, head, query, head_dim] (into `out` where given)."""
    return torch.matmul(pattern, v, out=out)


def padding_bias(attention_mask: torch.Tensor | None, dtype: torch.dtype, queries: bool = False) -> torch.Tensor | None:
    """[batch, 1, 1 or query, key], added to the scores: 0 for real keys, the dtype's minimum for padded ones
    (attention_mask == 0), as `mask_padding` gives them."""
    if attention_mask is None:
        return None
    padded = padded_pairs(attention_mask, queries)
    return torch.zeros(padded.shape, dtype=dtype, device=attention_mask.device).masked_fill_(padded, torch.finfo(dtype).min)


def fused_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None, dropout: float = 0.0,
    causal: bool = False, window: int | None = None, bias: torch.Tensor | None = None, scale: float | None = None,
    padded_queries: bool = False,
) -> torch.Tensor:
    """softmax(q·k / sqrt(head_dim) + padding) · v in one kernel: [batch, head, query, head_dim], what
    attention_scores, mask_padding, (mask_outside_window with a window, mask_future if causal,) softmax and
    weighted_values give (dropout: on the pattern, training only). bias: [batch, head, query, key] added to the
    scores (DeBERTa's position terms); scale: q·k's factor instead of 1 / sqrt(head_dim); padded_queries: mask
    every key of a padded query too (mask_padding's queries)."""
    extra, bias = bias, padding_bias(attention_mask, q.dtype, padded_queries)
    if extra is not None:
        bias = extra if bias is None else extra + bias
    if window is not None:  # the band as a [1 or batch, 1, query, key] bias
        seq = q.shape[-2]
        bias = mask_outside_window(q.new_zeros(1, 1, seq, seq) if bias is None else bias.expand(-1, -1, seq, -1), window)
    if causal and bias is not None:  # SDPA takes a mask or is_causal, not both: fold the future into the mask
        bias, causal = mask_future(bias.expand(-1, -1, q.shape[-2], -1)), False
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout, is_causal=causal, scale=scale)


def log_buckets(relative: torch.Tensor, buckets: int, max_distance: int) -> torch.Tensor:
    """DeBERTa's bucketed relative positions (He et al. 2023; Hugging Face's make_log_bucket_position): a distance
    d with |d| < buckets // 2 keeps its value; farther ones share log-spaced buckets, so that max_distance - 1
    lands in bucket buckets - 1 (same sign as d). Integer-valued float tensor, shaped like `relative`."""
    middle = buckets // 2
    sign = torch.sign(relative)
    near = (relative < middle) & (relative > -middle)
    distance = torch.where(near, torch.tensor(middle - 1).type_as(relative), relative.abs())
    log_position = torch.ceil(torch.log(distance / middle) / torch.tensor((max_distance - 1) / middle).log() * (middle - 1)) + middle
    return torch.where(distance <= middle, relative.type_as(log_position), log_position * sign)


def relative_index(seq: int, buckets: int, max_distance: int, span: int, device: torch.device | str | None = None) -> torch.Tensor:
    """LongTensor [query, key]: the row of DeBERTa's relative-position embeddings (2 * span rows) that a query
    reads for a key: (bucket of query - key) + span, clamped to the table (buckets 0: the exact distance)."""
    positions = torch.arange(seq, device=device)
    relative = positions[:, None] - positions[None, :]  # [query, key]
    if buckets > 0:
        relative = log_buckets(relative, buckets, max_distance)
    return torch.clamp(relative.long() + span, 0, 2 * span - 1)


def content_to_position(q: torch.Tensor, position_keys: torch.Tensor, index: torch.Tensor, scale: float) -> torch.Tensor:
    """DeBERTa's c2p term (He et al. 2021, eq. 2): each query's content against the key of its relative position
    to each key: q [batch, head, query, head_dim] x position_keys [head, 2 * span, head_dim], read at
    index [query, key] -> [batch, head, query, key], divided by `scale`."""
    every = torch.matmul(q, position_keys.transpose(-1, -2))  # [batch, head, query, 2 * span]
    return torch.gather(every, -1, index.expand(*every.shape[:2], -1, -1)) / scale


def position_to_content(k: torch.Tensor, position_queries: torch.Tensor, index: torch.Tensor, scale: float) -> torch.Tensor:
    """DeBERTa's p2c term: each key's content against the query of its relative position, k [batch, head, key,
    head_dim] x position_queries [head, 2 * span, head_dim] -> [batch, head, query, key] / `scale`. The relative
    position is query - key's as in content_to_position (the buckets are symmetric: bucket(-d) = -bucket(d))."""
    every = torch.matmul(k, position_queries.transpose(-1, -2))  # [batch, head, key, 2 * span]
    read = torch.gather(every, -1, index.transpose(0, 1).expand(*every.shape[:2], -1, -1))  # [batch, head, key, query]
    return read.transpose(-1, -2) / scale
