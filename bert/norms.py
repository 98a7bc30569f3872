"""The normalisation every sub-layer, the embeddings and the heads apply, as the config says: LayerNorm (Ba et al.
2016: subtract the mean, divide by the standard deviation, scale and shift; BERT and most of its family) or RMSNorm
(Zhang and Sennrich 2019: divide by the root mean square, scale; no mean, no shift; EuroBERT, as Llama)."""
from __future__ import annotations

from torch import nn

from .config import BertConfig


def norm_layer(config: BertConfig, width: int | None = None) -> nn.Module:
    """A fresh norm over `width` dimensions (None: hidden_size): nn.RMSNorm where config.rms_norm, else nn.LayerNorm
    (with a bias where config.norm_bias)."""
    width = config.hidden_size if width is None else width
    if config.rms_norm:
        return nn.RMSNorm(width, eps=config.layer_norm_eps)
    return nn.LayerNorm(width, eps=config.layer_norm_eps, bias=config.norm_bias)
