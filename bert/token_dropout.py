"""ESM's token dropout (Rives et al. 2021; kept by ESM-2, Lin et al. 2023): in training, the masked tokens' embeddings
were dropped (zeroed) rather than replaced by a mask embedding, and the others scaled up as dropout scales what it
keeps. At inference the mask token's embedding is zeroed likewise and every embedding scaled by (1 - the training
share of masked tokens, 0.15 * 0.8) / (1 - this input's share of mask tokens), as Hugging Face's EsmEmbeddings do."""
from __future__ import annotations

import torch

TRAINED_MASK_SHARE = 0.15 * 0.8  # 15% of the tokens chosen, 80% of those masked: the share of mask tokens in training


def dropped_masks(token: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, mask_id: int) -> torch.Tensor:
    """token [batch, seq, E] with the mask token's rows zeroed and each row of the batch scaled by (1 - 0.12) / (1 -
    its share of mask tokens among its real tokens (attention_mask's, or all seq))."""
    masked = input_ids == mask_id
    lengths = attention_mask.sum(-1) if attention_mask is not None else input_ids.shape[1]
    share = masked.sum(-1).float() / lengths
    return (token.masked_fill(masked[..., None], 0.0) * (1 - TRAINED_MASK_SHARE) / (1 - share)[:, None, None]).to(token.dtype)
