"""Top-k predictions for every [MASK] in a text: what the CLI prints and the app's first page shows."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .devices import model_device
from .errors import InvalidInputError
from .model import Bert
from .tokenizer import BertTokenizer, Encoding


@dataclass(frozen=True)
class Candidate:
    token: str
    token_id: int
    probability: float
    is_continuation: bool  # a "##" piece that only continues a word, not a word on its own


@dataclass(frozen=True)
class MaskPrediction:
    position: int  # index of the [MASK] in the encoded tokens
    candidates: list[Candidate]  # best first


@torch.no_grad()
def predict_masks(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, top_k: int = 5, interventions=None
) -> list[MaskPrediction]:
    """Run the model once, with the LM head only at the [MASK] positions (and `interventions`, as in
    `Bert.run_with_cache`, applied on the way)."""
    if not model.has_mlm_head:
        raise InvalidInputError("this model has no masked-LM head, so it cannot predict masked words")
    if top_k < 1:
        raise InvalidInputError("top_k must be at least 1")
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    at_masks = input_ids == tokenizer.mask_id
    if not at_masks.any():
        return []
    logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions=interventions, logit_mask=at_masks)
    probabilities = logits.float().softmax(-1).cpu()  # [masks, vocab], float32 whatever the model's dtype
    best = probabilities.topk(min(top_k, probabilities.shape[-1]), dim=-1)
    positions = at_masks[0].nonzero().flatten().tolist()
    return [
        MaskPrediction(position, [make_candidate(tokenizer, int(i), float(p)) for p, i in zip(probs, ids)])
        for position, probs, ids in zip(positions, best.values, best.indices)
    ]


def make_candidate(tokenizer: BertTokenizer, token_id: int, probability: float) -> Candidate:
    token = tokenizer.id_to_token(token_id)
    return Candidate(token, token_id, probability, token.startswith("##"))
