"""Next-sentence pairs (seed 003): B follows A half of the time, and is a random segment otherwise."""
from __future__ import annotations

import random
from dataclasses import dataclass

IS_NEXT, IS_RANDOM = 0, 1  # the label order of BERT's (and Hugging Face's) NSP head


@dataclass(frozen=True)
class SentencePair:
    first: list[int]  # token ids of segment A
    second: list[int]  # token ids of segment B
    label: int  # IS_NEXT or IS_RANDOM


def make_pairs(documents: list[list[list[int]]], rng: random.Random) -> list[SentencePair]:
    """For each adjacent (A, B) in a document, keep B (IS_NEXT) or swap in a segment of another document."""
    if len(documents) < 2:
        raise ValueError("next-sentence pairs need at least two documents to draw random segments from")
    pairs = []
    for doc_index, segments in enumerate(documents):
        for a, b in zip(segments, segments[1:]):
            if rng.random() < 0.5:
                pairs.append(SentencePair(a, b, IS_NEXT))
            else:
                other = rng.randrange(len(documents) - 1)
                other += other >= doc_index  # any document but this one
                pairs.append(SentencePair(a, rng.choice(documents[other]), IS_RANDOM))
    return pairs
