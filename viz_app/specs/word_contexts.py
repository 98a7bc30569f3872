"""The "One word, many contexts" page's logic: reading the typed sentences, the cached analysis, the plain-words
reading of a result. The maths is bert.analysis.representations.self_similarity."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


MAX_SENTENCES = 20
BASELINE_SENTENCES, BASELINE_SAMPLES, BASELINE_SEED = 200, 2000, 0
# Measured with scripts/self_similarity.py on the built-in minilm (see docs/probing.md), written out for the page.
OUR_FINDING = (
    "On the built-in model (MiniLM, 6 layers), over five hand-written words in four sentences each (bank, play, "
    "light, bat, spring), self-similarity falls from 0.97 at the embeddings to 0.72 after layer 2, then rises "
    "again to 0.77 after layer 5; the random-token baseline rises from 0.06 to 0.19 after layer 3 and falls back to "
    "0.10 after layer 5. So ours agrees in the lower half (context matters more with each layer, and all vectors grow more "
    "alike) but not at the top, where BERT-base's vectors are the most context-specific. The MiniLM encoder as "
    "released (before this project trained its masked-LM head) is closer to the paper: its self-similarity is "
    "lowest after layer 5 (0.68), though its baseline also drops there (0.04). Five words are a small sample."
)


@dataclass(frozen=True)
class WordResult:
    layers: list[str]  # "embeddings", "layer 1", ...
    self_similarity: np.ndarray  # [layer]
    cosines: np.ndarray  # [layer, sentence, sentence]
    pieces: list[list[str]]  # per sentence, the word pieces averaged


def sentence_lines(text: str) -> list[str]:
    """One sentence per non-empty line, spaces tidied."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def reading(word: str, result: WordResult, base: np.ndarray) -> str:
    """Plain words for one result: where self-similarity is lowest, where the baseline is highest, the gap."""
    lowest = int(np.argmin(result.self_similarity[1:])) + 1  # the embedding layer is not contextual
    gap = result.self_similarity - base
    smallest_gap = int(np.argmin(gap[1:])) + 1
    return (
        f"“{word}” is least alike across these sentences at **{result.layers[lowest]}** "
        f"(self-similarity {result.self_similarity[lowest]:.2f}). Random tokens are most alike at "
        f"**{result.layers[int(np.argmax(base))]}** ({base.max():.2f}). Above the baseline, the word stands out "
        f"least at **{result.layers[smallest_gap]}** (self-similarity minus baseline {gap[smallest_gap]:+.2f}): "
        f"there the context shapes its vector most."
    )
