"""Top-k predictions for every [MASK] in a text: what the CLI prints and the app's first page shows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

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
    is_continuation: bool  # a piece that only continues a word ("##ing"; RoBERTa's "ing" without "Ġ"), not a word on its own


@dataclass(frozen=True)
class MaskPrediction:
    position: int  # index of the [MASK] in the encoded tokens
    candidates: list[Candidate]  # best first
    original_id: int | None = None  # the token that was masked here, when the caller said which
    original_probability: float | None = None  # the model's probability for it
    original_rank: int | None = None  # 1 = the model's first guess (1 + how many tokens are more probable)


@torch.no_grad()
def predict_masks(
    model: Bert,
    tokenizer: BertTokenizer,
    encoding: Encoding,
    top_k: int = 5,
    interventions=None,
    originals: Mapping[int, int] | None = None,
) -> list[MaskPrediction]:
    """Run the model once, with the LM head only at the [MASK] positions (and `interventions`, as in
    `Bert.run_with_cache`, applied on the way). `originals`: {mask position: the token id that was there},
    to report that token's probability and rank."""
    if not model.has_mlm_head:
        raise InvalidInputError("this model has no masked-LM head, so it cannot predict masked words")
    check_top_k(top_k)
    positions = tokenizer.mask_positions(encoding)
    if not positions:
        return []
    device = model_device(model)
    input_ids, token_type_ids = encoding.tensors(device)
    at_masks = at_positions(positions, len(encoding), device)
    logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions=interventions, logit_mask=at_masks)
    return mask_predictions(logits, positions, tokenizer, top_k, originals)


def mask_predictions(
    logits: torch.Tensor, positions: list[int], tokenizer: BertTokenizer, top_k: int, originals: Mapping[int, int] | None = None
) -> list[MaskPrediction]:
    """Predictions from the LM head's logits at the masks ([mask, vocab], one row per entry of `positions`)."""
    check_top_k(top_k)
    originals = originals or {}
    probabilities = logits.float().softmax(-1).cpu()  # [masks, vocab], float32 whatever the model's dtype
    best = probabilities.topk(min(top_k, probabilities.shape[-1]), dim=-1)
    predictions = []
    for row, position in enumerate(positions):
        candidates = [make_candidate(tokenizer, int(i), float(p)) for p, i in zip(best.values[row], best.indices[row])]
        original_id = originals.get(position)
        if original_id is None:
            predictions.append(MaskPrediction(position, candidates))
            continue
        probability = probabilities[row, original_id]
        rank = int((probabilities[row] > probability).sum()) + 1
        predictions.append(MaskPrediction(position, candidates, int(original_id), float(probability), rank))
    return predictions


def at_positions(positions: list[int], seq: int, device: torch.device | str | None = None) -> torch.Tensor:
    """bool [1, seq]: True at `positions` (a `logit_mask` for one input), on `device`."""
    chosen = torch.zeros(1, seq, dtype=torch.bool, device=device)
    chosen[0, positions] = True
    return chosen


def check_top_k(top_k: int) -> None:
    if top_k < 1:
        raise InvalidInputError("top_k must be at least 1")


def make_candidate(tokenizer: BertTokenizer, token_id: int, probability: float) -> Candidate:
    token = tokenizer.id_to_token(token_id)
    return Candidate(token, token_id, probability, tokenizer.pieces.is_continuation(token))
