"""ALBERT's n-gram masking (Lan et al. 2020, section 4.1): span lengths against p(n) = (1/n) / sum_k 1/k with
scipy's chi-square test, spans that never touch or cross a special token, and ~15% of the tokens masked."""
from __future__ import annotations

from fractions import Fraction

import torch

from bert.pretraining.ngram_masking import choose_ngrams, draw_spans, ngram_probabilities

CLS, SEP, PAD = 101, 102, 0


def pair_batch(rows: int = 200, seq: int = 128, seed: int = 0) -> torch.Tensor:
    """maskable [rows, seq] of [CLS] A [SEP] B [SEP] [PAD]...: two runs of ordinary tokens per row."""
    g = torch.Generator().manual_seed(seed)
    maskable = torch.zeros(rows, seq, dtype=torch.bool)
    for row in range(rows):
        length = int(torch.randint(60, seq + 1, (1,), generator=g))
        middle = int(torch.randint(10, length - 10, (1,), generator=g))
        maskable[row, 1:length - 1] = True
        maskable[row, middle] = False  # the [SEP] between A and B
    return maskable


def test_the_formula():
    assert [Fraction(float(p)).limit_denominator(100) for p in ngram_probabilities(3)] == [Fraction(6, 11), Fraction(3, 11), Fraction(2, 11)]


def test_span_lengths_follow_one_over_n():
    from scipy import stats  # here: every test worker collects this module, and scipy.stats takes a second

    maskable = pair_batch()
    spans = draw_spans(maskable, torch.Generator().manual_seed(0))
    lengths = torch.tensor([n for row in spans for _, n in row])
    observed = torch.bincount(lengths, minlength=4)[1:].double()
    expected = ngram_probabilities(3) * len(lengths)
    assert len(lengths) > 1500
    assert stats.chisquare(observed.numpy(), expected.numpy()).pvalue > 0.01


def test_spans_stay_inside_runs_of_ordinary_tokens_and_cover_about_fifteen_percent():
    maskable = pair_batch(rows=100, seed=1)
    generator = torch.Generator().manual_seed(2)
    spans = draw_spans(maskable, generator)
    chosen = choose_ngrams(maskable, torch.Generator().manual_seed(2))
    for row, row_spans in enumerate(spans):
        positions = torch.nonzero(maskable[row]).flatten().tolist()  # the row's units are its maskable positions
        covered = []
        for start, n in row_spans:
            span = positions[start : start + n]
            assert len(span) == n and span == list(range(span[0], span[0] + n)), "a span crossed a special token"
            covered += span
        assert len(covered) == len(set(covered)), "two spans overlap"
        assert sorted(covered) == torch.nonzero(chosen[row]).flatten().tolist(), "the mask is the spans' union"
        target = 0.15 * len(positions)
        assert target <= len(covered) < target + 3  # drawn until 15% is reached; the last span passes it by 2 at most
    assert not (chosen & ~maskable).any()
    share = float(chosen.sum() / maskable.sum())
    assert 0.15 <= share < 0.15 + 3 * len(spans) / float(maskable.sum())


def test_whole_words_are_the_units_with_word_ids():
    maskable = torch.tensor([[False] + [True] * 12 + [False]])
    word_ids = torch.tensor([[-1, 0, 0, 1, 2, 2, 2, 3, 4, 5, 5, 6, 7, -1]])
    for seed in range(20):
        chosen = choose_ngrams(maskable, torch.Generator().manual_seed(seed), probability=0.3, word_ids=word_ids)
        for word in range(8):
            pieces = chosen[0][word_ids[0] == word]
            assert pieces.all() or not pieces.any(), "a word was only partly chosen"
