"""Where a DeBERTa head's score comes from: its three terms, content and position, one [query, key] matrix each.

DeBERTa's disentangled attention (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled Attention",
eq. 4) adds no position table to the input. A head's score for a query token i and a key token j is the sum of
three terms, each divided by sqrt(3 * head_dim):

- content → content: q_i · k_j, the words alone (BERT's whole score);
- content → position: q_i · k_r(i, j), the query's content against the key map of their relative distance;
- position → content: q_r(i, j) · k_j, the key's content against the query map of that distance.

Distances are relative (i − j) and bucketed: exact up to half the buckets, then logarithmic (deberta-v3-base: 256
buckets, 512 positions). The model records each term on a hook of its own (bert/model.py's
PureSelfAttentionLayer: hook_scores_c2c, hook_scores_c2p, hook_scores_p2c), already scaled, so that their sum is the
score the softmax reads (before the padding mask). `score_terms` runs one pass that keeps just those hooks.

Axes: layer, head, query (the token looking: a row), key (the token looked at: a column).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ...config import BertConfig
from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError, NoPositionTermsError
from ...hooks import hook_name
from ...tokenizer import Encoding

TERMS = {  # hook kind's suffix -> the term in words, as the app titles it
    "c2c": "content → content",
    "c2p": "content → position",
    "p2c": "position → content",
}


@dataclass(frozen=True)
class ScoreTerms:
    """One head's score split into its three terms, each [query, key] in float64, as they enter the softmax (a term
    the model does not compute, e.g. p2c in a c2p-only DeBERTa, is zeros)."""

    layer: int
    head: int
    tokens: tuple[str, ...]  # the input's tokens: the queries (rows) and the keys (columns)
    content_to_content: np.ndarray  # [query, key] q_i · k_j / sqrt(3 * head_dim)
    content_to_position: np.ndarray  # [query, key] q_i · (key map of distance i − j) / sqrt(3 * head_dim)
    position_to_content: np.ndarray  # [query, key] (query map of distance i − j) · k_j / sqrt(3 * head_dim)
    words: ClassVar[dict[str, str]] = TERMS  # each term in words, for whoever draws them without importing this

    def terms(self) -> dict[str, np.ndarray]:
        """{"c2c", "c2p", "p2c"} -> its [query, key] matrix (the keys of TERMS)."""
        return {"c2c": self.content_to_content, "c2p": self.content_to_position, "p2c": self.position_to_content}

    @property
    def scores(self) -> np.ndarray:
        """[query, key] the sum of the three terms: the head's scores before the padding mask and the softmax."""
        return self.content_to_content + self.content_to_position + self.position_to_content

    def shares(self) -> dict[str, float]:
        """Each term's share of the head's total magnitude: the sum of its absolute values over all three terms'
        (the shares add up to 1; all zero when every term is)."""
        sizes = {name: float(np.abs(values).sum()) for name, values in self.terms().items()}
        total = sum(sizes.values())
        return {name: size / total if total else 0.0 for name, size in sizes.items()}


def check_has_terms(config: BertConfig) -> None:
    """Raises NoPositionTermsError, saying how the model takes positions instead, unless it is a DeBERTa."""
    if config.relative_attention:
        return
    if config.rotary:
        how = "This model turns each head's q and k by their positions (rotary, as ModernBERT does)"
    elif config.absolute_positions:
        how = "This model adds absolute positions to its input (as BERT does)"
    else:
        how = "This model reads no positions in its attention"
    raise NoPositionTermsError(f"{how}; only DeBERTa splits a head's score into content and position terms. "
                               "Load a DeBERTa model (family deberta-v2) to see them.")


def score_terms_cost(tokens: int) -> Cost:
    """What `score_terms` costs over an input of `tokens` tokens: one forward pass (one layer's terms or all)."""
    return Cost(1, tokens, ("a shorter text",))


def score_terms(model: torch.nn.Module, encoding: Encoding, layer: int | None = None) -> dict[tuple[int, int], ScoreTerms]:
    """Every head's three score terms in `layer` (None: in every layer) for one input, from one pass that keeps just
    those hooks: {(layer, head): ScoreTerms}. Raises NoPositionTermsError for a model without relative attention."""
    config = model.config
    check_has_terms(config)
    layers = range(config.num_layers) if layer is None else [layer]
    if layer is not None and not 0 <= layer < config.num_layers:
        raise InvalidInputError(f"layer {layer} is outside the model's {config.num_layers} layers (0 to {config.num_layers - 1})")
    known = set(model.hook_names())
    wanted = {(at, term): hook_name(f"scores_{term}", at) for at in layers for term in TERMS}
    names = [name for name in wanted.values() if name in known]
    input_ids, token_type_ids = encoding.tensors(model_device(model))
    with torch.inference_mode():
        nowhere = torch.zeros_like(input_ids, dtype=torch.bool)  # the masked-LM head runs at no position
        _, cache = model.run_with_cache(input_ids, token_type_ids, names=names, logit_mask=nowhere)
    tokens = tuple(encoding.tokens)
    seq = len(tokens)
    result = {}
    for at in layers:
        matrices = {term: (cache[wanted[at, term]][0].double().cpu().numpy() if wanted[at, term] in known
                           else np.zeros((config.num_heads, seq, seq))) for term in TERMS}
        for head in range(config.num_heads):
            result[at, head] = ScoreTerms(at, head, tokens, *(_read_only(matrices[term][head]) for term in TERMS))
    return result


def _read_only(values: np.ndarray) -> np.ndarray:
    values = np.ascontiguousarray(values)
    values.flags.writeable = False
    return values
