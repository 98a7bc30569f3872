"""Cosine similarity and distance in a form that keeps small distances in float32.

`1 − a·b / (|a| |b|)` subtracts two numbers near 1 when a and b point almost the same way: in float32 the result
keeps only the digits above 2^-24, so a distance of 1e-6 comes out as noise (value zeroing's [CLS] row was off by
4e-2 after normalising, against float64). The same distance as half the squared gap between the unit vectors,

    d(a, b) = ‖a/|a| − b/|b|‖² / 2 = 1 − cos(a, b),

sums squares of small differences instead: every digit of a small distance is kept. Every cosine distance and
similarity in bert/analysis goes through here. A zero vector has no direction: its unit vector is zero, so its
distance to any other vector is 1/2 (and to itself 0).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def unit(vectors: torch.Tensor) -> torch.Tensor:
    """[..., hidden] divided by their lengths (a zero vector stays zero)."""
    return F.normalize(vectors, dim=-1)


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[..., hidden] and [..., hidden] (broadcast) -> [...]: 1 − cos(a, b) as ‖a/|a| − b/|b|‖² / 2."""
    return (unit(a) - unit(b)).square().sum(dim=-1) / 2


def cosine_similarity(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """[..., hidden] and [..., hidden] (broadcast) -> [...]: cos(a, b), as 1 − cosine_distance(a, b)."""
    return 1 - cosine_distance(a, b)


def pairwise_cosine_distances(vectors: torch.Tensor) -> torch.Tensor:
    """[..., n, hidden] -> [..., n, n]: the cosine distance of every pair of rows (zeros on the diagonal)."""
    rows = unit(vectors)
    gaps = torch.cdist(rows, rows, compute_mode="donot_use_mm_for_euclid_dist")  # differences, not 2 − 2 u·v
    return gaps.square() / 2


def pairwise_cosine_similarities(vectors: torch.Tensor) -> torch.Tensor:
    """[..., n, hidden] -> [..., n, n]: the cosine similarity of every pair of rows."""
    return 1 - pairwise_cosine_distances(vectors)
