"""Why a head looks where it does: one query vector against one key vector, dimension by dimension.

This is the "neuron view" of bertviz (Vig 2019): a head's score for (query, key) is the dot product of the query's
q vector and the key's k vector, that is the sum of their elementwise products, scaled by 1/sqrt(head_dim)
(Vaswani et al. 2017); a softmax over the keys turns one query's scores into its row of the attention pattern.
The products show which dimensions push the score up (same sign in q and k) and which pull it down.

Axes: query, key (positions), head_dim (the dimensions of one head, 64 in BERT-base).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError


@dataclass(frozen=True)
class QueryKeyProduct:
    query: int  # position of the token looking
    key: int  # position of the token looked at
    query_vector: np.ndarray  # [head_dim] q of the query token, as the forward pass computed it
    key_vector: np.ndarray  # [head_dim] k of the key token
    products: np.ndarray  # [head_dim] query_vector * key_vector, elementwise
    dot: float  # products.sum(): q·k, the score before scaling
    scale: float  # 1 / sqrt(head_dim) (DeBERTa: 1 / sqrt(head_dim * score_scale))
    scores: np.ndarray  # [key] this query's scaled score against every key: q·k * scale, before softmax
    score_scale: int = 1  # DeBERTa's 3: q·k is one of three terms (content to content), each divided by sqrt(3 d)
    recorded: np.ndarray | None = None  # [key] the head's recorded attention row, where it holds more than q·k

    @property
    def divisor(self) -> str:
        """What q·k is divided by, as a page writes it: "√64", or DeBERTa's "√(3 × 64)"."""
        size = len(self.products)
        return f"√{size}" if self.score_scale == 1 else f"√({self.score_scale} × {size})"

    @property
    def score(self) -> float:
        """The scaled score of this (query, key): what the softmax reads."""
        return float(self.scores[self.key])

    @property
    def weights(self) -> np.ndarray:
        """[key] this query's row of the attention pattern: the recorded row when given (DeBERTa's position terms,
        a local layer's window, padding), else softmax of `scores`."""
        if self.recorded is not None:
            return self.recorded
        shifted = np.exp(self.scores - self.scores.max())
        return shifted / shifted.sum()

    @property
    def weight(self) -> float:
        """The attention this query pays to this key."""
        return float(self.weights[self.key])


def query_key_product(queries: np.ndarray, keys: np.ndarray, query: int, key: int, score_scale: int = 1,
                      recorded: np.ndarray | None = None) -> QueryKeyProduct:
    """One head's q [query, head_dim] and k [key, head_dim] (a recorded pass's hook_q and hook_k for one head):
    the terms of the score of (query, key), in float64 so that the sum shown is the sum of the products shown.

    score_scale: config.score_scale (DeBERTa: q·k is its content-to-content term, divided by sqrt(3 head_dim));
    recorded: the head's recorded attention row for `query` [key], what `weights` returns instead of softmax(q·k)."""
    if queries.ndim != 2 or keys.ndim != 2 or queries.shape[1] != keys.shape[1]:
        raise InvalidInputError(
            f"queries and keys must be [position, head_dim] of one head, got {queries.shape} and {keys.shape}"
        )
    for name, position, count in (("query", query, len(queries)), ("key", key, len(keys))):
        if not 0 <= position < count:
            raise InvalidInputError(f"{name} position {position} is outside the input's {count} tokens")
    q = np.asarray(queries, dtype=np.float64)
    k = np.asarray(keys, dtype=np.float64)
    scale = (q.shape[1] * score_scale) ** -0.5
    products = q[query] * k[key]
    return QueryKeyProduct(
        query=query,
        key=key,
        query_vector=q[query],
        key_vector=k[key],
        products=products,
        dot=float(products.sum()),
        scale=scale,
        scores=(k @ q[query]) * scale,
        score_scale=score_scale,
        recorded=None if recorded is None else np.asarray(recorded, dtype=np.float64),
    )
