"""Words, not word pieces: attention and per-token scores merged over the pieces of each word.

Clark et al. 2019 ("What Does BERT Look At?", section 3) turn a token-level attention map into a word-level one:
attention *to* a split-up word is the sum of the attention to its pieces, attention *from* a split-up word is the
mean of its pieces' attention. Each row of the result still sums to 1:

    words[w_query, w_key] = mean over queries q in w_query of ( sum over keys k in w_key of attention[q, k] )

As matrices: with S [key, word] the 0/1 membership matrix and M [word, query] the mean of each word's rows,
words = M · attention · S.

A "word" here is what the tokenizer's pre-tokenizer splits off (whitespace and punctuation), in its own sentence
of a pair; [CLS] and each [SEP] are a word of their own.

Axes: query (position attending), key (position attended), word (a word of the input, in order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InvalidInputError
from ...tokenizer import Encoding

HOW = ("sum", "mean")  # how merge_scores joins a word's pieces


@dataclass(frozen=True)
class WordGroups:
    """The words of one input: which token positions make each word, and the word they spell."""

    positions: tuple[tuple[int, ...], ...]  # per word, its token positions (consecutive, in order)
    labels: tuple[str, ...]  # per word, its pieces joined ("play" + "##ing" -> "playing")
    tokens: int  # how many tokens the input has

    def __len__(self) -> int:
        return len(self.positions)

    def membership(self) -> np.ndarray:
        """[token, word]: 1 where the token is a piece of the word."""
        matrix = np.zeros((self.tokens, len(self)))
        for word, positions in enumerate(self.positions):
            matrix[list(positions), word] = 1.0
        return matrix

    def word_of(self, position: int) -> int:
        """The word a token position belongs to."""
        for word, positions in enumerate(self.positions):
            if position in positions:
                return word
        raise InvalidInputError(f"position {position} is not a token of this {self.tokens}-token input")


def word_groups(encoding: Encoding) -> WordGroups:
    """Group the tokens of `encoding` into words: the pieces sharing a word id in the same sentence; [CLS] and each
    [SEP] alone."""
    positions: list[list[int]] = []
    current = None  # (segment, word id) of the word being collected
    for position, (word_id, segment) in enumerate(zip(encoding.word_ids, encoding.sentences)):
        key = None if word_id is None else (segment, word_id)
        if key is None or key != current:
            positions.append([])
        positions[-1].append(position)
        current = key
    labels = [encoding.tokens[group[0]] if encoding.special[group[0]] else encoding.pieces.word([encoding.tokens[p] for p in group])
              for group in positions]
    return WordGroups(tuple(map(tuple, positions)), tuple(labels), len(encoding))


def merge_attention(attention: np.ndarray, groups: WordGroups) -> np.ndarray:
    """[..., query, key] -> [..., word, word]: attention to a word summed over its pieces, from a word averaged
    over its pieces (Clark et al. 2019). Rows that summed to 1 still do."""
    attention = np.asarray(attention, dtype=np.float64)
    _check_tokens(attention.shape[-2:], groups, "attention [..., query, key]")
    membership = groups.membership()  # [token, word]
    mean_rows = (membership / membership.sum(axis=0)).T  # [word, query]: each word's rows, averaged
    return mean_rows @ attention @ membership


def merge_scores(scores: np.ndarray, groups: WordGroups, how: str = "sum") -> np.ndarray:
    """[..., token] -> [..., word]: a per-token score of each word, the sum (an attribution: the word's share) or
    the mean (an activation) of its pieces' scores."""
    if how not in HOW:
        raise InvalidInputError(f"how must be one of {', '.join(HOW)}, not {how!r}")
    scores = np.asarray(scores, dtype=np.float64)
    _check_tokens(scores.shape[-1:], groups, "scores [..., token]")
    membership = groups.membership()
    if how == "mean":
        membership = membership / membership.sum(axis=0)
    return scores @ membership


def _check_tokens(shape: tuple[int, ...], groups: WordGroups, what: str) -> None:
    if any(size != groups.tokens for size in shape):
        raise InvalidInputError(f"{what} has shape {shape}, but the input has {groups.tokens} tokens")

