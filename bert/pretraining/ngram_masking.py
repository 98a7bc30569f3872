"""ALBERT's n-gram masking (Lan et al. 2020, section 4.1, after Joshi et al. 2019): the masked-LM targets are
spans of n consecutive word pieces (or words, with whole-word masking), n up to 3, with

    p(n) = (1/n) / sum_{k=1..N} 1/k        (N = 3: p = 6/11, 3/11, 2/11)

so short spans stay the most common. Per sequence, spans are drawn until 15% of its maskable tokens are
covered (the last span may pass the mark by up to N - 1 tokens); a span never covers or crosses [CLS], [SEP] or
padding, and never overlaps another. Each span's length is drawn first, then its place, uniformly among the
places it fits: every span's length follows p(n).
"""
from __future__ import annotations

import torch

MAX_NGRAM = 3  # ALBERT's N


def ngram_probabilities(max_n: int = MAX_NGRAM) -> torch.Tensor:
    """[max_n]: p(n) for n = 1..max_n, proportional to 1/n."""
    inverse = 1.0 / torch.arange(1, max_n + 1, dtype=torch.float64)
    return inverse / inverse.sum()


def draw_spans(
    maskable: torch.Tensor, generator: torch.Generator, probability: float = 0.15, max_n: int = MAX_NGRAM,
    word_ids: torch.Tensor | None = None,
) -> list[list[tuple[int, int]]]:
    """Per row of maskable (bool [batch, seq]): the spans chosen, as (first unit, n) in the row's units: its
    maskable positions, or its words with word_ids (int [batch, seq], -1 where not maskable). Units next to each
    other in a run of maskable positions are consecutive; a special token between two units ends the run."""
    probabilities = ngram_probabilities(max_n).float()
    spans = []
    for row in range(maskable.shape[0]):
        units, runs = _units(maskable[row], None if word_ids is None else word_ids[row])
        target = probability * sum(len(unit) for unit in units)
        free, row_spans, covered = [True] * len(units), [], 0
        while covered < target:
            n = int(torch.multinomial(probabilities, 1, generator=generator)) + 1
            places = [start for start in range(len(units) - n + 1)
                      if runs[start] == runs[start + n - 1] and all(free[start : start + n])]
            if not places:
                break  # a short sequence with no room left for this span
            start = places[int(torch.randint(len(places), (1,), generator=generator))]
            free[start : start + n] = [False] * n
            covered += sum(len(unit) for unit in units[start : start + n])
            row_spans.append((start, n))
        spans.append(row_spans)
    return spans


def choose_ngrams(
    maskable: torch.Tensor, generator: torch.Generator, probability: float = 0.15, max_n: int = MAX_NGRAM,
    word_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """bool [batch, seq]: the positions the spans of draw_spans cover (for masking.corrupt)."""
    chosen = torch.zeros_like(maskable)
    for row, row_spans in enumerate(draw_spans(maskable, generator, probability, max_n, word_ids)):
        units, _ = _units(maskable[row], None if word_ids is None else word_ids[row])
        for start, n in row_spans:
            for unit in units[start : start + n]:
                chosen[row, unit] = True
    return chosen


def _units(maskable: torch.Tensor, word_ids: torch.Tensor | None) -> tuple[list[list[int]], list[int]]:
    """A row's units (each a list of positions: one piece, or one word's pieces) and the run each belongs to
    (runs are split by the positions that are not maskable)."""
    units, runs, run, previous = [], [], 0, None
    for position, ok in enumerate(maskable.tolist()):
        if not ok:
            run += 1
            previous = None
            continue
        word = None if word_ids is None else int(word_ids[position])
        if word is not None and word == previous:
            units[-1].append(position)
        else:
            units.append([position])
            runs.append(run)
        previous = word
    return units, runs
