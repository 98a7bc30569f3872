"""The two text tasks that read inputs other than the sentences themselves, and their word-piece vectors:

- segment: consecutive sentences read as pairs, [CLS] A [SEP] B [SEP] (sentences 0 and 1, 2 and 3, ...);
- masked_identity: each sentence with one occurrence of a frequent whole word (one of the MASKED_VOCABULARY most
  frequent, chosen at random by the seed) replaced by [MASK].

Pairs or sentences too long for the model are left out (never cut).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import torch

from ...errors import InputTooLongError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import gather_residuals
from .task_table import MASKED_VOCABULARY
from .word_features import TokenFeatures, WordFeatures


def pair_encodings(tokenizer: BertTokenizer, sentences: Sequence, max_positions: int) -> list[Encoding]:
    """Each pair of consecutive sentences (0 and 1, 2 and 3, ...) as [CLS] A [SEP] B [SEP]; a pair too long for the
    model is left out."""
    encodings = []
    for a, b in zip(sentences[0::2], sentences[1::2]):
        try:
            encodings.append(tokenizer.encode(a.text, b.text, max_length=min(max_positions, tokenizer.model_max_length)))
        except InputTooLongError:
            continue
    return encodings


def pair_features(model: Bert, tokenizer: BertTokenizer, features: WordFeatures, batch_size: int = 32) -> TokenFeatures:
    """Every non-special word piece of each pair of consecutive kept sentences."""
    encodings = pair_encodings(tokenizer, features.sentences, model.config.max_position_embeddings)
    rows = [(index, position) for index, e in enumerate(encodings) for position, special in enumerate(e.special) if not special]
    return TokenFeatures(_gather(model, tokenizer, encodings, rows, batch_size), tuple(encodings), tuple(rows))


def masked_vocabulary(parts: Sequence[WordFeatures]) -> list[int]:
    """The ids of the MASKED_VOCABULARY most frequent whole words (letters only) of the sentences."""
    return vocabulary_of([part.encodings for part in parts])


def vocabulary_of(parts: Sequence[Sequence[Encoding]]) -> list[int]:
    """`masked_vocabulary` of the parts' encodings."""
    counts = Counter(
        encoding.input_ids[position]
        for encodings in parts
        for encoding in encodings
        for position, special in enumerate(encoding.special)
        if not special and encoding.tokens[position].isalpha()
    )
    return [token_id for token_id, _ in counts.most_common(MASKED_VOCABULARY)]


def maskable(encoding: Encoding, wanted: set[int]) -> list[int]:
    """The positions of `encoding` holding a word of the vocabulary: where masked_features may put its [MASK]."""
    return [p for p, token_id in enumerate(encoding.input_ids) if token_id in wanted and not encoding.special[p]]


def masked_features(model: Bert, tokenizer: BertTokenizer, features: WordFeatures, vocabulary: Sequence[int],
                    seed: int = 0, batch_size: int = 32) -> TokenFeatures:
    """The [MASK]'s vector in each kept sentence that has a word of `vocabulary` (one occurrence masked, chosen
    by the seed), and the word piece it replaced."""
    generator = torch.Generator().manual_seed(seed)
    wanted = set(vocabulary)
    masked, rows, originals = [], [], []
    for encoding in features.encodings:
        hits = maskable(encoding, wanted)
        if not hits:
            continue
        position = hits[int(torch.randint(len(hits), (1,), generator=generator))]
        rows.append((len(masked), position))
        originals.append(encoding.tokens[position])
        masked.append(encoding.with_masks([position], tokenizer.mask_id))
    return TokenFeatures(_gather(model, tokenizer, masked, rows, batch_size), tuple(masked), tuple(rows), tuple(originals))


def _gather(model, tokenizer, encodings, rows, batch_size) -> torch.Tensor:
    if not rows:
        return torch.empty(model.config.num_layers + 1, 0, model.config.hidden_size)
    return gather_residuals(model, encodings, rows, tokenizer.pad_id, batch_size)
