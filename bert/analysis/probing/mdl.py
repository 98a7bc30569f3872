"""Minimum description length probing, Voita & Titov (2020), "Information-Theoretic Probing with Minimum
Description Length": the online (prequential) code.

The training examples, in a seeded random order, are sent in blocks ending at the portions PORTIONS of the data
(0.1%, 0.2%, ..., 50%, 100%, as in the paper). The first block is sent with the uniform code (log2 K bits per
label, K classes); every later block with a probe trained on all examples before it:

    codelength = t_1 log2 K + sum_i sum_{j in block i+1} -log2 p_i(y_j | x_j)      (bits)
    compression = uniform codelength / codelength = N log2 K / codelength

A representation that makes the labels easy to learn from few examples gives a short code (a high compression);
a control task (Hewitt & Liang 2019) gives the same measure for memorised labels. The probe is the layer probes'
logistic regression (linear_probes.logistic_probe). It only knows the classes it has seen: each probability is mixed
with the uniform one, (1 - EPSILON) p + EPSILON / K, so a label unseen so far costs about log2(K / EPSILON) bits
instead of infinitely many.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from ...errors import InvalidInputError
from .linear_probes import logistic_probe

PORTIONS = (0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.0625, 0.125, 0.25, 0.5, 1.0)  # Voita & Titov's blocks
EPSILON = 1e-3  # weight of the uniform distribution mixed into each probability


@dataclass(frozen=True)
class OnlineCode:
    codelength: float  # bits, the online code of all N labels
    uniform_codelength: float  # bits, N log2 K
    num_examples: int  # N
    num_classes: int  # K

    @property
    def compression(self) -> float:
        return self.uniform_codelength / self.codelength


def block_ends(num_examples: int, portions=PORTIONS) -> list[int]:
    """The examples sent by the end of each block: increasing, at least 1, the last = num_examples."""
    ends = sorted({min(num_examples, max(1, round(p * num_examples))) for p in portions} | {num_examples})
    return ends


def online_codelength(
    x: np.ndarray, y: np.ndarray, num_classes: int, seed: int = 0, portions=PORTIONS, weight_decay: float = 1e-3,
    max_iter: int = 50, tolerance: float = 1e-3,
) -> OnlineCode:
    """The online code of labels y ([example], 0..K-1) given features x ([example, hidden], standardised)."""
    if len(x) != len(y) or len(y) < 2:
        raise InvalidInputError(f"MDL needs matching features and labels, two or more; got {len(x)} and {len(y)}")
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], np.asarray(y)[order]
    ends = block_ends(len(y), portions)
    bits = ends[0] * math.log2(num_classes)
    from sklearn.exceptions import ConvergenceWarning  # scikit-learn imported when a code is measured

    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("ignore", "The number of unique classes", UserWarning)  # small first blocks
        for sent, end in zip(ends[:-1], ends[1:]):
            bits += _block_bits(x[:sent], y[:sent], x[sent:end], y[sent:end], num_classes, weight_decay, max_iter, tolerance)
    return OnlineCode(bits, len(y) * math.log2(num_classes), len(y), num_classes)


def _block_bits(train_x, train_y, block_x, block_y, num_classes, weight_decay, max_iter, tolerance) -> float:
    """-sum log2 p(y | x) over a block, p from a probe trained on the examples before it."""
    seen = np.unique(train_y)
    probabilities = np.zeros((len(block_y), num_classes))
    if len(seen) == 1:
        probabilities[:, seen[0]] = 1.0
    else:
        probe = logistic_probe(len(train_y), weight_decay, max_iter, tolerance)
        probe.warm_start = False  # the classes seen change from block to block
        probe.fit(train_x, train_y)
        probabilities[:, probe.classes_] = probe.predict_proba(block_x)
    mixed = (1 - EPSILON) * probabilities[np.arange(len(block_y)), block_y] + EPSILON / num_classes
    return float(-np.log2(mixed).sum())
