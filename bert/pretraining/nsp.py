"""Sentence-pair tasks for pre-training, read by the same two-way head over the pooled [CLS]:

- next-sentence prediction (BERT, Devlin et al. 2019): B follows A half of the time, and is a random segment otherwise;
- sentence-order prediction (ALBERT, Lan et al. 2020): B follows A half of the time, and otherwise the two adjacent
  segments are swapped, so the model cannot tell the classes apart by topic alone.
"""
from __future__ import annotations

import random

from ..errors import InvalidInputError
from dataclasses import dataclass

IS_NEXT, IS_RANDOM = 0, 1  # the label order of BERT's (and Hugging Face's) NSP head
IN_ORDER, SWAPPED = 0, 1  # sentence order: index 0 again means "B follows A"
TASKS = ("nsp", "sop")


@dataclass(frozen=True)
class SentencePair:
    first: list[int]  # token ids of segment A
    second: list[int]  # token ids of segment B
    label: int  # IS_NEXT or IS_RANDOM (nsp); IN_ORDER or SWAPPED (sop)


def make_pairs(documents: list[list[list[int]]], rng: random.Random, task: str = "nsp") -> list[SentencePair]:
    """For each adjacent (A, B) in a document, keep it (label 0) or, with odds 1/2 (label 1): swap in a segment
    of another document as B (task "nsp"), or swap A and B (task "sop")."""
    if task not in TASKS:
        raise InvalidInputError(f"task must be one of {TASKS}, not {task!r}")
    if task == "nsp" and len(documents) < 2:
        raise InvalidInputError("next-sentence pairs need at least two documents to draw random segments from")
    pairs = []
    for doc_index, segments in enumerate(documents):
        for a, b in zip(segments, segments[1:]):
            if rng.random() < 0.5:
                pairs.append(SentencePair(a, b, IS_NEXT))
            elif task == "sop":
                pairs.append(SentencePair(b, a, SWAPPED))
            else:
                other = rng.randrange(len(documents) - 1)
                other += other >= doc_index  # any document but this one
                pairs.append(SentencePair(a, rng.choice(documents[other]), IS_RANDOM))
    return pairs
