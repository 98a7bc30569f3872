"""The masked-LM logit lens: read every layer's residual stream at a [MASK] through the LM head.

The LM head (dense, GELU, LayerNorm, tied unembedding) is trained on the last layer's output only; applying it to
earlier layers asks "if the model stopped here, what would it predict?". For each [MASK] we report, layer by
layer, the top-k tokens, and the rank (1 = best) and probability of the final layer's prediction.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...predict import Candidate, make_candidate
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import residual_names, record_encoder


@dataclass(frozen=True)
class LensLayer:
    name: str  # "embeddings", "layer 1", ...
    top: list[Candidate]  # this layer's top-k, best first
    final_rank: int  # rank of the final prediction here (1 = this layer already predicts it)
    final_probability: float  # its probability here


@dataclass(frozen=True)
class MaskLens:
    position: int  # index of the [MASK] in the encoding
    final: Candidate  # what the full model predicts
    layers: list[LensLayer]  # embeddings first, last layer last


@torch.no_grad()
def logit_lens(model: Bert, tokenizer: BertTokenizer, encoding: Encoding, top_k: int = 5) -> list[MaskLens]:
    """The lens at every [MASK] of `encoding` (an empty list if it has none)."""
    if not model.has_mlm_head:
        raise InvalidInputError("the logit lens needs a model with a masked-LM head (this one is an encoder only)")
    if top_k < 1:
        raise InvalidInputError("top_k must be at least 1")
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    positions = tokenizer.mask_positions(encoding)
    if not positions:
        return []
    cache = record_encoder(model, input_ids, token_type_ids, None, [hook_name("embedding_out")], stacked=("layer_out",))
    hidden = cache.residual_stream()[:, 0, positions]  # [layer, mask, hidden]
    probabilities = model.mlm_logits(model.final_hidden(hidden)).float().softmax(-1).cpu()  # [layer, mask, vocab], float32
    final_ids = probabilities[-1].argmax(-1)  # [mask]
    final_probs = probabilities.gather(-1, final_ids.expand(len(hidden), -1)[..., None])[..., 0]  # [layer, mask]
    # rank = 1 + how many tokens are strictly more probable than the final prediction
    ranks = 1 + (probabilities > final_probs[..., None]).sum(-1)  # [layer, mask]
    best = probabilities.topk(min(top_k, probabilities.shape[-1]), dim=-1)
    names = residual_names(model)
    lenses = []
    for m, position in enumerate(positions):
        layers = [
            LensLayer(
                name=names[layer],
                top=[make_candidate(tokenizer, int(i), float(p)) for p, i in zip(best.values[layer, m], best.indices[layer, m])],
                final_rank=int(ranks[layer, m]),
                final_probability=float(final_probs[layer, m]),
            )
            for layer in range(len(hidden))
        ]
        final_id = int(final_ids[m])
        lenses.append(MaskLens(position, make_candidate(tokenizer, final_id, float(final_probs[-1, m])), layers))
    return lenses

