"""One word, many contexts: how alike are a word's vectors across sentences, layer by layer?

Ethayarajh (2019, "How Contextual are Contextualized Word Representations?") measures a word's *self-similarity*:
the mean cosine similarity between its vectors in different sentences, at each layer. A static embedding gives 1;
the lower it is, the more the vector depends on the context. Because all of a layer's vectors may point in a
common direction (*anisotropy*), it is read against a baseline: the mean cosine between random tokens of a corpus
at the same layer. For BERT he found that self-similarity falls in the upper layers while the baseline rises.

A word that the tokenizer splits into several pieces ("sur", "##f") is represented by the mean of its pieces'
vectors. Layers: 0 = the embedding output, i = the output of layer i (bert.analysis.corpus.batching.residual_hooks).

Axes: layer, sentence (one occurrence of the word per sentence), hidden.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import torch

from ...costs import Cost
from ...errors import InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer
from ..corpus.batching import batches_cost, gather_residuals
from ..cosine import cosine_similarity, pairwise_cosine_similarities

ETHAYARAJH_2019 = (
    "Ethayarajh (2019) found for BERT-base that a word's self-similarity falls in the upper layers (its vectors "
    "depend more on the context), while the average similarity between random words rises (every vector grows "
    "more alike): so a layer's self-similarity should be read against that layer's baseline."
)
ETHAYARAJH_2019_SOURCE = "K. Ethayarajh, How Contextual are Contextualized Word Representations?, EMNLP 2019"

# Hand-written for this project: each word in sentences that use it in different senses and surroundings.
EXAMPLES: dict[str, list[str]] = {
    "bank": [
        "She sat on the bank of the river and watched the boats.",
        "He went to the bank to open a savings account.",
        "The bank raised its interest rates again this spring.",
        "Grass grew thick along the muddy bank of the stream.",
    ],
    "play": [
        "The children play in the park after school.",
        "We saw a play about a king who lost his crown.",
        "She learned to play the violin when she was seven.",
        "The team made a clever play in the final minute.",
    ],
    "light": [
        "Turn off the light before you go to sleep.",
        "This bag is light enough for a child to carry.",
        "The morning light came through the kitchen window.",
        "He wore a light jacket because the evening was warm.",
    ],
    "bat": [
        "A bat flew out of the cave at dusk.",
        "He swung the bat and hit the ball over the fence.",
        "The little bat hung upside down from the branch.",
        "She bought a new cricket bat for the summer games.",
    ],
    "spring": [
        "The flowers bloom early in the spring.",
        "A spring in the old mattress poked into my back.",
        "They drank cold water from a mountain spring.",
        "The cat will spring onto the table if you look away.",
    ],
}


class WordNotFoundError(InvalidInputError):
    """The word does not occur (as a whole word) in one of the sentences."""

    def __init__(self, word: str, sentence_index: int, sentence: str):
        self.word, self.sentence_index, self.sentence = word, sentence_index, sentence
        super().__init__(
            f"'{word}' is not a word of sentence {sentence_index + 1}: “{sentence}”. Use the word as written in "
            f"every sentence (any letter case), or remove that sentence"
        )


@dataclass(frozen=True)
class WordContexts:
    """One word's vectors at every layer, one per sentence."""

    word: str
    vectors: torch.Tensor  # [layer, sentence, hidden]; a word of several pieces: the mean of its pieces
    pieces: list[list[str]]  # per sentence, the word pieces that were averaged (["bank"] or ["sur", "##f"])

    def self_similarity(self) -> torch.Tensor:
        """[layer] mean cosine similarity over all pairs of sentences."""
        return mean_pairwise_cosine(self.vectors)

    def cosines(self) -> torch.Tensor:
        """[layer, sentence, sentence] the cosine similarity of the word's vectors in every pair of sentences."""
        return pairwise_cosines(self.vectors)


def pairwise_cosines(vectors: torch.Tensor) -> torch.Tensor:
    """[..., n, hidden] -> [..., n, n]: the cosine similarity of every pair of rows (bert/analysis/cosine.py)."""
    return pairwise_cosine_similarities(vectors.float())


def mean_pairwise_cosine(vectors: torch.Tensor) -> torch.Tensor:
    """[..., n, hidden] -> [...]: the mean cosine similarity over the n(n-1)/2 pairs of distinct rows."""
    n = vectors.shape[-2]
    if n < 2:
        raise InvalidInputError(f"a mean pairwise cosine needs at least 2 vectors; got {n}")
    cosines = pairwise_cosines(vectors).double()  # [..., n, n]
    off_diagonal = cosines.sum(dim=(-1, -2)) - cosines.diagonal(dim1=-2, dim2=-1).sum(dim=-1)
    return (off_diagonal / (n * (n - 1))).float()


def find_word(word: str, sentence: str) -> tuple[int, int] | None:
    """The character span of the first whole-word occurrence of `word` in `sentence` (any case), or None."""
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, flags=re.IGNORECASE)
    return match.span() if match else None


def word_contexts(
    model: Bert, tokenizer: BertTokenizer, word: str, sentences: Sequence[str], batch_size: int = 32
) -> WordContexts:
    """`word`'s vectors at every layer in each sentence (its first occurrence in each). Raises WordNotFoundError
    naming the first sentence without it, InvalidInputError for an empty word or fewer than 2 sentences."""
    word = word.strip()
    if not word:
        raise InvalidInputError("type a word to compare across sentences")
    if len(sentences) < 2:
        raise InvalidInputError(f"self-similarity compares at least 2 sentences; got {len(sentences)}")
    max_length = model.config.max_position_embeddings
    encodings, picks, owners, pieces = [], [], [], []
    for index, sentence in enumerate(sentences):
        span = find_word(word, sentence)
        if span is None:
            raise WordNotFoundError(word, index, sentence)
        encoding = tokenizer.encode(sentence, max_length=max_length)
        positions = [
            p for p, (start, end) in enumerate(encoding.offsets)
            if not encoding.special[p] and start < span[1] and end > span[0]
        ]
        if not positions:  # e.g. characters the tokenizer drops
            raise WordNotFoundError(word, index, sentence)
        encodings.append(encoding)
        picks += [(index, p) for p in positions]
        owners += [index] * len(positions)
        pieces.append([encoding.tokens[p] for p in positions])
    residuals = gather_residuals(model, encodings, picks, tokenizer.pad_id, batch_size)  # [layer, pick, hidden]
    owner = torch.tensor(owners)
    sums = torch.zeros(residuals.shape[0], len(sentences), residuals.shape[-1]).index_add_(1, owner, residuals)
    counts = torch.bincount(owner, minlength=len(sentences)).to(sums.dtype)
    return WordContexts(word, sums / counts[None, :, None], pieces)


def word_contexts_cost(tokenizer: BertTokenizer, sentences: Sequence[str], max_positions: int, batch_size: int = 32) -> Cost:
    """The passes `word_contexts` makes over these sentences, before it starts: one each, padded to its batch's
    longest (a sentence longer than max_positions stops it before any pass: counted at that length)."""
    lengths = [len(tokenizer.encode(sentence, max_length=max_positions, truncate=True)) for sentence in sentences]
    return batches_cost(lengths, batch_size, ("the number of sentences", "shorter sentences"))


def word_self_similarity(model: Bert, tokenizer: BertTokenizer, word: str, sentences: Sequence[str]) -> torch.Tensor:
    """[layer] the mean pairwise cosine of `word`'s vectors between the sentences (layer 0 = embedding output)."""
    return word_contexts(model, tokenizer, word, sentences).self_similarity()


def random_pairs(count: int, samples: int, seed: int) -> torch.Tensor:
    """[samples, 2] pairs of distinct indices below `count`, drawn uniformly with a seeded generator."""
    if count < 2:
        raise InvalidInputError(f"random pairs need at least 2 tokens; got {count}")
    generator = torch.Generator().manual_seed(seed)
    first = torch.randint(count, (samples,), generator=generator)
    second = (first + torch.randint(1, count, (samples,), generator=generator)) % count  # never equal to first
    return torch.stack([first, second], dim=1)


def pair_cosines(vectors: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
    """[layer, token, hidden] and [pair, 2] -> [layer] the mean cosine similarity of the chosen pairs."""
    similarities = cosine_similarity(vectors[:, pairs[:, 0]].float(), vectors[:, pairs[:, 1]].float())  # [layer, pair]
    return similarities.double().mean(dim=-1).float()


def _baseline_plan(tokenizer: BertTokenizer, sentences: Sequence[str], max_positions: int, samples: int, seed: int):
    """(encodings that fit, their (encoding, position) tokens, the sampled pairs of tokens, the tokens used)."""
    if samples < 1:
        raise InvalidInputError(f"samples must be at least 1; got {samples}")
    encodings = [tokenizer.encode(sentence, max_length=max_positions, truncate=True) for sentence in sentences]
    encodings = [encoding for encoding in encodings if not encoding.truncated]
    tokens = [(i, p) for i, encoding in enumerate(encodings) for p, special in enumerate(encoding.special) if not special]
    pairs = random_pairs(len(tokens), samples, seed)
    used = sorted(set(pairs.flatten().tolist()))  # run the model only on sentences holding a sampled token
    return encodings, tokens, pairs, used


def anisotropy_baseline_cost(tokenizer: BertTokenizer, sentences: Sequence[str], max_positions: int, samples: int = 2000,
                             seed: int = 0, batch_size: int = 32) -> Cost:
    """The passes `anisotropy_baseline` makes: one for each sentence that holds a sampled token."""
    encodings, tokens, _, used = _baseline_plan(tokenizer, sentences, max_positions, samples, seed)
    holding = {tokens[t][0] for t in used}
    return batches_cost([len(encodings[i]) for i in sorted(holding)], batch_size, ("the number of sentences",))


def anisotropy_baseline(
    model: Bert, tokenizer: BertTokenizer, sentences: Sequence[str], samples: int = 2000, seed: int = 0,
    batch_size: int = 32,
) -> torch.Tensor:
    """[layer] the mean cosine similarity between `samples` random pairs of tokens of the sentences ([CLS] and
    [SEP] left out; a pair is two different occurrences, from any sentences; sentences longer than the model's
    positions are left out of the sample). Deterministic for a seed."""
    encodings, tokens, pairs, used = _baseline_plan(tokenizer, sentences, model.config.max_position_embeddings, samples, seed)
    residuals = gather_residuals(model, encodings, [tokens[t] for t in used], tokenizer.pad_id, batch_size)
    row = {t: r for r, t in enumerate(used)}
    return pair_cosines(residuals, pairs.apply_(row.__getitem__))
