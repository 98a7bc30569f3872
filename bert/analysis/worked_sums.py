"""A number of the recorded pass expanded into the sum that made it (the page "One pass, step by step" shows them
worked, as Transformer Explainer, Cho et al. 2024, does for GPT-2), from the values of bert/analysis/one_pass.py:

    projection_cell   Q[token, d] = Σ_i X[token, i] · W_Q[i, d] + b_Q[d]   (K and V alike; rotary: then turned)
    score_cell        score[query, key] = Σ_d Q[query, d] · K[key, d] ÷ √d
    softmax_cell      weight[query, key] = exp(score[query, key]) / Σ_j exp(score[query, j])

Each is computed in float64 from the recorded float32 values and carries `rounding`: how far the model's float32
result may lie from the exact sum, by the textbook bound for a sum of n products in precision u = 2^-24
(|error| <= n u Σ|x_i w_i|, Higham 2002, "Accuracy and Stability of Numerical Algorithms", 3.1) plus the
rounding of the result itself. tests/analysis/test_worked_sums.py checks that each worked value lies that close to
the hook's recorded one, and the weights to transformers' own modules. Plain numpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bert.analysis.one_pass import OnePass

UNIT_ROUNDOFF = float(np.finfo(np.float32).eps) / 2  # u = 2^-24: float32's relative rounding
PROJECTIONS = {"q": "Q", "k": "K", "v": "V"}  # the recorded arrays of OnePass and their matrices' names


@dataclass(frozen=True)
class WorkedSum:
    """value = (Σ_i left[i] · right[i] + bias) / divisor, every product kept (float64)."""

    left: np.ndarray  # [n] the row: X's row for the token, or the query
    right: np.ndarray  # [n] the column: W's column for the dimension, or the key
    bias: float  # 0.0 where the family has no bias
    divisor: float  # 1.0, or √d for a score
    recorded: float | None  # the hook's value it makes; None where no hook records it (rotary: q before its turn)
    masked: bool = False  # a score the model then sets to the lowest number (a key outside a local window, padding)

    @property
    def products(self) -> np.ndarray:
        return self.left.astype(np.float64) * self.right.astype(np.float64)

    @property
    def total(self) -> float:
        """Σ_i left[i] · right[i]."""
        return float(self.products.sum())

    @property
    def value(self) -> float:
        return (self.total + self.bias) / self.divisor

    def written(self, first: int = 3) -> str:
        """The sum of products as a reader works it: its first terms, "…", the last one, and the total."""
        terms = [f"{a:.3f} × {b:.3f}" for a, b in zip(self.left, self.right)]
        shown = terms if len(terms) <= first + 1 else [*terms[:first], "…", terms[-1]]
        return f"{' + '.join(shown)} = {self.total:.4f}  ({len(terms)} products)"

    @property
    def rounding(self) -> float:
        """The float32 rounding the model's value may carry: n u Σ|products| for the sum, u for the bias, the division
        and the result."""
        n = len(self.left)
        summed = n * UNIT_ROUNDOFF * float(np.abs(self.products).sum()) + UNIT_ROUNDOFF * abs(self.bias)
        return summed / self.divisor + 2 * UNIT_ROUNDOFF * abs(self.value)


@dataclass(frozen=True)
class Turn:
    """Rotary positions (Su et al. 2021): dimension d of q or k after the turn is own · cos + sign · partner · sin,
    partner being dimension d ± head_dim / 2 (sign −1 in the first half: bert/attention.py `rotate`)."""

    partner: int  # the dimension paired with the shown one
    partner_sum: WorkedSum  # that dimension before the turn, worked the same way
    cos: float
    sin: float
    sign: float  # −1 for the first half of the dimensions, +1 for the second

    def value(self, own: float) -> float:
        return own * self.cos + self.sign * self.partner_sum.value * self.sin


@dataclass(frozen=True)
class ProjectionCell:
    """One number of Q, K or V: its worked sum and, with rotary positions, the turn that follows."""

    kind: str  # "q", "k" or "v"
    token: int
    dimension: int
    sum: WorkedSum
    turn: Turn | None
    recorded: float  # the hook's value (hook_q, hook_k, hook_v)

    @property
    def value(self) -> float:
        return self.sum.value if self.turn is None else self.turn.value(self.sum.value)

    @property
    def rounding(self) -> float:
        if self.turn is None:
            return self.sum.rounding
        partner = self.turn.partner_sum
        return (self.sum.rounding + partner.rounding + 4 * UNIT_ROUNDOFF * (abs(self.sum.value) + abs(partner.value))
                + 2 * UNIT_ROUNDOFF * abs(self.value))


def _projection_sum(one: OnePass, kind: str, token: int, dimension: int, recorded: float | None) -> WorkedSum:
    bias = one.biases.get(kind)
    return WorkedSum(one.attention_in[token], one.weights[kind][:, dimension],
                     0.0 if bias is None else float(bias[dimension]), 1.0, recorded)


def projection_cell(one: OnePass, kind: str, token: int, dimension: int) -> ProjectionCell:
    """Q, K or V (`kind` "q", "k", "v") at (token, dimension) as the token's row of the attention's input X times
    the column of W, plus the bias; rotary q and k then turned by the token's position (v is never turned)."""
    recorded = float(getattr(one, kind)[token, dimension])
    if one.rotation is None or kind == "v":
        return ProjectionCell(kind, token, dimension, _projection_sum(one, kind, token, dimension, recorded), None, recorded)
    half = one.q.shape[-1] // 2
    partner = dimension + half if dimension < half else dimension - half
    cos, sin = one.rotation
    turn = Turn(partner, _projection_sum(one, kind, token, partner, None), float(cos[token, dimension]),
                float(sin[token, dimension]), -1.0 if dimension < half else 1.0)
    return ProjectionCell(kind, token, dimension, _projection_sum(one, kind, token, dimension, None), turn, recorded)


def score_cell(one: OnePass, query: int, key: int) -> WorkedSum:
    """The query's q times the key's k, ÷ the scale: the recorded score (DeBERTa: its content-to-content term). A
    masked score (`masked`: outside a local window, a padded key) records the lowest number instead (`recorded` None)."""
    recorded = one.score_terms["c2c"] if "c2c" in one.score_terms else one.scores
    masked = bool(one.scores[query, key] <= np.finfo(np.float32).min / 2)
    return WorkedSum(one.q[query], one.k[key], 0.0, one.scale, None if masked else float(recorded[query, key]), masked)


@dataclass(frozen=True)
class SoftmaxEntry:
    """weight[query, key] = exp(score[key]) / Σ_j exp(score[j]) over the query's row of scores (float64; a key
    outside a local window or padded has the dtype's lowest score, whose exp is 0)."""

    scores: np.ndarray  # [key] the query's row of recorded scores
    key: int
    recorded: float  # the hook's weight (hook_pattern)

    @property
    def exps(self) -> np.ndarray:
        return np.exp(np.clip(self.scores.astype(np.float64), -745.0, 700.0))  # exp(-745) is 0 in float64

    @property
    def total(self) -> float:
        return float(self.exps.sum())

    @property
    def value(self) -> float:
        return float(self.exps[self.key]) / self.total

    def written(self, first: int = 3) -> str:
        """The row's sum of exps as a reader works it: its first terms, "…", the last one, and the total."""
        terms = [f"exp({score:.3f})" if np.isfinite(exp) and exp > 0 else "0" for score, exp in zip(self.scores, self.exps)]
        shown = terms if len(terms) <= first + 1 else [*terms[:first], "…", terms[-1]]
        return f"{' + '.join(shown)} = {self.total:.4f}  ({len(terms)} keys)"

    @property
    def rounding(self) -> float:
        """float32 softmax after subtracting the row's maximum: each exp's argument rounded (u · |s − max|), the exp,
        the n-term sum and the division."""
        kept = self.scores[self.exps > 0].astype(np.float64)
        spread = float(np.abs(kept - kept.max()).max()) if len(kept) else 0.0
        return self.value * UNIT_ROUNDOFF * (spread + len(self.scores) + 4)


def softmax_cell(one: OnePass, query: int, key: int) -> SoftmaxEntry:
    return SoftmaxEntry(one.scores[query], key, float(one.pattern[query, key]))
