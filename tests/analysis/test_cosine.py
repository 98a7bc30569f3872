"""Cosine distances and similarities (bert/analysis/cosine.py) in float32 against float64 numpy, on vectors that
differ by a little (where `1 − cos` in float32 is all rounding) and by a lot, and through each analysis that reads
them: value zeroing (tests/analysis/test_mixing_value_zeroing.py), self-similarity and the anisotropy baseline,
sense neighbours."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert.analysis.cosine import cosine_distance, cosine_similarity, pairwise_cosine_distances, pairwise_cosine_similarities
from bert.analysis.representations.self_similarity import mean_pairwise_cosine, pair_cosines

HIDDEN = 384
STEPS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)  # how far the second vector is moved: distances from about 1e-11 to 1


def _reference_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """1 − cos in float64, from the definition."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return 1 - (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


def _pairs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """[step, 8, hidden] float32 vectors of a residual stream's scale and those vectors moved by each step."""
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(8, HIDDEN, generator=generator) * 3
    moves = torch.randn(len(STEPS), 8, HIDDEN, generator=generator)
    b = a + torch.tensor(STEPS)[:, None, None] * moves * a.norm(dim=-1, keepdim=True) / HIDDEN ** 0.5
    return a.expand_as(b), b


def _float32_bound(distance: np.ndarray) -> np.ndarray:
    """What float32 allows: each unit vector is rounded by about eps of its length 1, so their gap |Δ| = √(2d) is
    off by a few eps and d = |Δ|²/2 by a few eps·|Δ| (the naive 1 − cos is off by eps whatever d is)."""
    eps = np.finfo(np.float32).eps
    distance = np.abs(distance)  # the float64 reference of a zero distance may be -1e-16
    return 4 * eps * (np.sqrt(2 * distance) + distance) + 1e-15


def test_small_and_large_distances_match_float64_to_float32_rounding():
    a, b = _pairs()
    expected = _reference_distance(a.numpy(), b.numpy())
    got = cosine_distance(a, b).numpy()
    assert got.dtype == np.float32
    assert np.all(np.abs(got - expected) <= _float32_bound(expected)), np.abs(got - expected).max()
    naive = (1 - torch.nn.functional.cosine_similarity(a, b, dim=-1)).numpy()
    assert np.abs(naive[0] - expected[0]).max() > 1e3 * np.abs(got[0] - expected[0]).max()  # the form that cancels
    assert np.all(np.abs(cosine_similarity(a, b).numpy() - (1 - expected)) <= _float32_bound(expected) + np.finfo(np.float32).eps)


def test_pairwise_distances_match_float64_for_every_pair():
    a, b = _pairs(seed=1)
    rows = torch.cat([a[0, :3], b[:, 0]])  # three unrelated rows and one row moved by every step
    expected = _reference_distance(rows.numpy()[:, None], rows.numpy()[None])
    got = pairwise_cosine_distances(rows).numpy()
    assert np.all(np.abs(got - expected) <= _float32_bound(expected))
    assert np.all(np.diag(got) == 0)
    similarities = pairwise_cosine_similarities(rows[None])[0].numpy()
    assert np.all(np.abs(similarities - (1 - expected)) <= _float32_bound(expected) + np.finfo(np.float32).eps)


def test_hand_computed_cases():
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0], [3.0, 3.0], [2.0, 0.0]])
    b = torch.tensor([[0.0, 5.0], [-2.0, 0.0], [1.0, 0.0], [7.0, 0.0]])
    assert cosine_distance(a, b).tolist() == pytest.approx([1.0, 2.0, 1 - 2 ** -0.5, 0.0], abs=1e-7)


def test_self_similarity_and_the_anisotropy_pairs_match_float64():
    a, b = _pairs(seed=2)
    vectors = torch.stack([a[0, :4], b[0, :4], b[3, :4]])  # [layer, vector, hidden]: spread, nearly equal, moved
    numpy = vectors.numpy()
    cosines = 1 - _reference_distance(numpy[:, :, None], numpy[:, None])
    expected = (cosines.sum((-1, -2)) - np.trace(cosines, axis1=1, axis2=2)) / (4 * 3)
    np.testing.assert_allclose(mean_pairwise_cosine(vectors).numpy(), expected, atol=2e-6, rtol=0)  # a mean of similarities: a few float32 units of 1
    pairs = torch.tensor([[0, 1], [2, 3], [1, 3]])
    expected_pairs = (1 - _reference_distance(numpy[:, pairs[:, 0]], numpy[:, pairs[:, 1]])).mean(-1)
    np.testing.assert_allclose(pair_cosines(vectors, pairs).numpy(), expected_pairs, atol=2e-6, rtol=0)  # a mean of similarities: a few float32 units of 1


def test_sense_neighbours_rank_by_the_float64_distance():
    """The nearest occurrences as sense_neighbours picks them: by ascending distance, the same order as float64's
    on rows whose distances differ by less than float32's spacing near 1."""
    a, b = _pairs(seed=3)
    rows = torch.nn.functional.normalize(b[:4, 0], dim=-1)  # one vector moved by 1e-5 .. 1e-2: distances 1e-11 .. 1e-5
    anchor = torch.nn.functional.normalize(a[0, :1], dim=-1)
    both = torch.cat([anchor, rows])
    order = pairwise_cosine_distances(both)[0, 1:].argsort().tolist()
    expected = np.argsort(_reference_distance(anchor.numpy(), rows.numpy())).tolist()
    assert order == expected == [0, 1, 2, 3]
