"""Do a word's nearest neighbours share its sense? The ambiguous-word set (bert/data/senses.tsv: 8 words, two
senses each, 11 sentences per sense) indexed with `build_index`; for each occurrence, its k nearest other
occurrences of the same word by cosine, layer by layer, and the share of them that have the same sense.

At the embedding layer a word's vector is its token plus its position, so neighbours share the sense only by
chance; if the layers above read context, the share rises.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.corpus_search import build_index
from ..cosine import pairwise_cosine_distances

SENSES_FILE = Path(__file__).parents[2] / "data" / "senses.tsv"


@dataclass(frozen=True)
class SenseSentence:
    word: str  # the ambiguous word, as written in the sentence ("bank")
    sense: str  # a short label of its sense here ("river")
    text: str
    start: int  # character span of the word in `text`
    end: int


@dataclass(frozen=True)
class SenseAgreement:
    layers: tuple[int, ...]
    k: int
    share: dict[int, float]  # layer -> mean share of the k nearest other occurrences that have the query's sense
    by_word: dict[int, dict[str, float]]  # layer -> word -> the same, for that word's queries only
    chance: float  # the share expected from neighbours drawn at random among the other occurrences


def load_senses(path: str | Path = SENSES_FILE) -> list[SenseSentence]:
    """Rows of word, sense, sentence; the word must occur exactly once in its sentence (any case)."""
    sentences = []
    with open(path, encoding="utf-8", newline="") as file:
        for number, row in enumerate(csv.DictReader(file, delimiter="\t"), start=2):
            found = list(re.finditer(rf"\b{re.escape(row['word'])}\b", row["sentence"], re.IGNORECASE))
            if len(found) != 1:
                raise InvalidInputError(f"{path} line {number}: '{row['word']}' occurs {len(found)} times, not once")
            sentences.append(SenseSentence(row["word"], row["sense"], row["sentence"], *found[0].span()))
    return sentences


def sense_agreement(
    model: Bert, tokenizer: BertTokenizer, sentences: list[SenseSentence], k: int = 10, layers=None
) -> SenseAgreement:
    """For every occurrence, its k nearest other occurrences of the same word (cosine at each layer)."""
    index = build_index(model, tokenizer, [s.text for s in sentences], layers)
    rows = [index.entries.rows(i)[_first_token(tokenizer, s)] for i, s in enumerate(sentences)]
    words = [s.word.lower() for s in sentences]
    senses = [s.sense for s in sentences]
    same_word = torch.tensor([[a == b for b in words] for a in words]) & ~torch.eye(len(words), dtype=torch.bool)
    same_sense = torch.tensor([[a == b for b in senses] for a in senses]) & same_word
    if int(same_word.sum(1).min()) < k:
        raise InvalidInputError(f"every word needs more than {k} occurrences for a top-{k} comparison")
    share, by_word = {}, {}
    for layer in index.layers:
        vectors = index.vectors[layer][rows].float()  # [occurrence, hidden], unit rows
        distances = pairwise_cosine_distances(vectors).masked_fill(~same_word, 3.0)  # other words: beyond the farthest (2)
        nearest = distances.topk(k, dim=1, largest=False).indices  # [occurrence, k]
        agree = same_sense.gather(1, nearest).float().mean(1)  # [occurrence]
        share[layer] = float(agree.mean())
        by_word[layer] = {w: float(agree[[i for i, x in enumerate(words) if x == w]].mean()) for w in dict.fromkeys(words)}
    chance = float((same_sense.sum(1) / same_word.sum(1)).mean())
    return SenseAgreement(index.layers, k, share, by_word, chance)


def _first_token(tokenizer: BertTokenizer, sentence: SenseSentence) -> int:
    """Position of the word's first piece in the sentence's encoding."""
    encoding = tokenizer.encode(sentence.text)
    for position, (start, end) in enumerate(encoding.offsets):
        if not encoding.special[position] and start <= sentence.start < end:
            return position
    raise InvalidInputError(f"no token starts '{sentence.word}' in: {sentence.text}")
