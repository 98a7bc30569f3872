"""Faithfulness of a saliency map: the deletion curve (Petsiuk et al. 2018, RISE; for text, DeYoung et al. 2020).

Swap the input's tokens for [MASK] one at a time, in the order of their attribution (most supporting first), and
follow the explained output after each swap: p(answer), or logit(answer) - logit(foil) for a contrastive target.
An attribution that means something makes it fall faster than swapping in a random order. The area under the curve
(x = share of tokens swapped, 0 to 1, trapezoid rule) sums that up: lower is more faithful. [CLS], [SEP] and
[MASK] tokens are never swapped. The random order's curve is the mean over `random_orders` seeded orders.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...costs import Cost
from ...devices import as_numpy
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from .saliency import Saliency, swappable
from .target import TargetFunction


@dataclass(frozen=True)
class DeletionCurve:
    order: list[int]  # token positions, in the order they were swapped for [MASK]
    values: np.ndarray  # [swapped + 1]: the followed output with 0, 1, ..., all of them swapped
    random_values: np.ndarray  # [swapped + 1]: the same for random orders, their mean
    measure: str  # "probability" or "logit difference"

    @property
    def fraction_removed(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, len(self.values))

    @property
    def area(self) -> float:
        return _area(self.values)

    @property
    def random_area(self) -> float:
        return _area(self.random_values)

    @property
    def beats_random(self) -> bool:
        return self.area < self.random_area


def deletion_cost(tokens: int, swappable_tokens: int, random_orders: int = 10) -> Cost:
    """The passes `deletion_curve` makes: for the map's order and each random one, the input with 0, 1, ..., all
    swappable tokens swapped."""
    return Cost((1 + random_orders) * (swappable_tokens + 1), tokens, ("random orders", "a shorter text"))


def deletion_curve(
    model: Bert, tokenizer: BertTokenizer, encoding: Encoding, result: Saliency, random_orders: int = 10,
    seed: int = 0, batch_size: int = 64,
) -> DeletionCurve:
    """The deletion curve of `result` (a saliency of this encoding), and the random orders' mean curve."""
    if random_orders < 1:
        raise InvalidInputError(f"random_orders must be at least 1, not {random_orders}")
    if list(result.tokens) != list(encoding.tokens):
        raise InvalidInputError("the saliency was computed for another input than this one")
    candidates = [i for i, swap in enumerate(swappable(tokenizer, encoding)) if swap]
    if not candidates:
        raise InvalidInputError("there is no word token to remove: every token is [CLS], [SEP] or [MASK]")
    scores = result.token_attributions
    order = sorted(candidates, key=lambda i: (-scores[i], i))  # most supporting first; ties in reading order
    generator = np.random.default_rng(seed)
    random = [list(generator.permutation(candidates)) for _ in range(random_orders)]
    function = TargetFunction(model, encoding, result.explained)
    values = _follow(function, tokenizer.mask_id, [order, *random], batch_size)  # [1 + random_orders, steps + 1]
    measure = "logit difference" if result.explained.contrastive else "probability"
    return DeletionCurve(order, values[0], values[1:].mean(0), measure)


@torch.no_grad()
def _follow(function: TargetFunction, mask_id: int, orders: list[list[int]], batch_size: int) -> np.ndarray:
    """[order, steps + 1]: the followed output after swapping the first 0, 1, ... positions of each order."""
    rows = []
    for order in orders:
        ids = function.input_ids[0].clone()
        rows.append(ids.clone())
        for position in order:
            ids[position] = mask_id
            rows.append(ids.clone())
    inputs = torch.stack(rows)  # [orders * (steps + 1), seq]
    values = torch.cat([function.measured(function.logits_of_ids(inputs[start : start + batch_size]))
                        for start in range(0, len(inputs), batch_size)])
    return as_numpy(values).reshape(len(orders), len(orders[0]) + 1)


def _area(values: np.ndarray) -> float:
    x = np.linspace(0.0, 1.0, len(values))
    return float(np.sum((values[1:] + values[:-1]) / 2 * np.diff(x)))
