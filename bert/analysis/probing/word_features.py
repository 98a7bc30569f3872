"""Every layer's vector for every word of a treebank: words to word pieces, one forward pass per batch.

    features = extract_word_features(model, tokenizer, treebank.sentences, pieces="first")
    features.vectors            # [hidden_states index, word, hidden]: 0 = embeddings, i = after layer i-1
    features.sentence(3)        # [layer, words of sentence 3, hidden]
    features.sentences          # the sentences kept (in the order given)
    features.skipped            # (SkippedSentence, ...): longer than the model's positions, never cut
    features.encodings[3]       # sentence 3 as the model read it (word pieces, word ids)
    extract_word_features(..., tokens=True).tokens   # TokenFeatures: every word piece's vector too (text tasks)

A word's vector is its first word piece's ("first", the default, as in Hewitt & Manning 2019 and most probing
work), the mean of its pieces ("mean") or its last piece ("last"). The model runs on its own device; the vectors
come back to the CPU (float32, or float16 with dtype=torch.float16 to halve the memory).

Under torchrun (a process group initialised) each rank runs the model over its contiguous share of the sentences
and the shares are gathered, so every rank ends with the same features as one process would.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.distributed as dist

from ...errors import InputTooLongError, InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import ProgressCallback, residual_names, residual_batches
from .task_table import MAX_POSITION
from .treebank import SkippedSentence, TreebankSentence

log = logging.getLogger(__name__)

PIECES = ("first", "mean", "last")  # how a word's vector is made from its word pieces


@dataclass(frozen=True)
class TokenFeatures:
    """Word-piece vectors, for the text tasks: row r of `vectors` is position rows[r][1] of encodings[rows[r][0]]."""

    vectors: torch.Tensor  # [layer, row, hidden] on the CPU
    encodings: tuple[Encoding, ...]  # the inputs (a sentence, a pair of sentences, or a sentence with a [MASK])
    rows: tuple[tuple[int, int], ...]  # (encoding index, token position) of each row
    originals: tuple[str, ...] = ()  # masked inputs: the word piece each row's [MASK] replaced


@dataclass(frozen=True)
class WordFeatures:
    vectors: torch.Tensor  # [hidden_states index, word, hidden], the kept sentences' words one after another, on the CPU
    starts: tuple[int, ...]  # sentence i's words are vectors[:, starts[i]:starts[i + 1]]; len = sentences + 1
    sentences: tuple[TreebankSentence, ...]  # the sentences kept
    residual_names: tuple[str, ...]  # "embeddings", "after layer 0", ... (bert/layers.py)
    pieces: str  # "first", "mean" or "last"
    skipped: tuple[SkippedSentence, ...] = ()  # sentences left out (too long for the model), with why
    encodings: tuple[Encoding, ...] = ()  # the kept sentences as the model read them
    tokens: TokenFeatures | None = None  # every word piece's vector (up to MAX_POSITION, and every non-special one)
    pairs: TokenFeatures | None = None  # consecutive sentences read as pairs A, B (the segment task)
    masked: TokenFeatures | None = None  # one frequent word per sentence masked (the masked_identity task)

    def sentence(self, index: int) -> torch.Tensor:
        """[layer, word, hidden] of one kept sentence."""
        return self.vectors[:, self.starts[index] : self.starts[index + 1]]

    @property
    def num_layers(self) -> int:
        return self.vectors.shape[0]


def word_pieces(encoding: Encoding, num_words: int, pieces: str = "first") -> list[list[int]]:
    """For each word, the token positions its vector is made from: [first piece], [all pieces] or [last piece]."""
    if pieces not in PIECES:
        raise InvalidInputError(f"pieces must be one of {', '.join(PIECES)}, not {pieces!r}")
    positions: list[list[int]] = [[] for _ in range(num_words)]
    for position, word in enumerate(encoding.word_ids):
        if word is not None:
            positions[word].append(position)
    if pieces == "first":
        return [p[:1] for p in positions]
    if pieces == "last":
        return [p[-1:] for p in positions]
    return positions


def encode_sentences(
    tokenizer: BertTokenizer, sentences: Sequence[TreebankSentence], max_length: int
) -> tuple[list[int], list[Encoding], list[SkippedSentence]]:
    """(indices of the sentences that fit, their encodings, the ones skipped as too long)."""
    kept, encodings, skipped = [], [], []
    for index, sentence in enumerate(sentences):
        try:
            encodings.append(tokenizer.encode_words(list(sentence.words), max_length))
        except InputTooLongError as error:
            skipped.append(SkippedSentence(sentence.line, f"{error.num_tokens} word pieces, over the model's {max_length} positions"))
            continue
        kept.append(index)
    return kept, encodings, skipped


def extract_word_features(
    model: Bert, tokenizer: BertTokenizer, sentences: Sequence[TreebankSentence], pieces: str = "first",
    batch_size: int = 32, dtype: torch.dtype = torch.float32, progress: ProgressCallback | None = None,
    tokens: bool = False,
) -> WordFeatures:
    """Every layer's word vectors for `sentences` (see the module docstring), and with tokens=True every word
    piece's vector too, from the same forward pass. Deterministic: the model in eval mode, batches of similar
    length. Under torchrun each rank takes a share and the shares are gathered."""
    if pieces not in PIECES:
        raise InvalidInputError(f"pieces must be one of {', '.join(PIECES)}, not {pieces!r}")
    if dtype not in (torch.float32, torch.float16):
        raise InvalidInputError(f"word features are stored as float32 or float16, not {dtype}")
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    if world == 1:
        return _extract(model, tokenizer, sentences, pieces, batch_size, dtype, progress, tokens)
    from ...pretraining.distributed import Ranks, my_rows

    share = my_rows(len(sentences), Ranks.current()).tolist()
    mine = _extract(model, tokenizer, [sentences[i] for i in share], pieces, batch_size, dtype, progress, tokens)
    shares: list[WordFeatures | None] = [None] * world
    dist.all_gather_object(shares, mine)
    return join_features(shares)


def join_features(parts: Sequence[WordFeatures]) -> WordFeatures:
    """Features of consecutive shares of a sentence list as one (the shares in order)."""
    starts, offset = [0], 0
    for part in parts:
        starts += [offset + s for s in part.starts[1:]]
        offset += part.starts[-1]
    first = parts[0]
    tokens = None
    if first.tokens is not None:
        rows, offset = [], 0
        for part in parts:
            rows += [(offset + index, position) for index, position in part.tokens.rows]
            offset += len(part.tokens.encodings)
        tokens = TokenFeatures(torch.cat([p.tokens.vectors for p in parts], dim=1),
                               tuple(e for p in parts for e in p.tokens.encodings), tuple(rows))
    return WordFeatures(
        torch.cat([p.vectors for p in parts], dim=1), tuple(starts), tuple(s for p in parts for s in p.sentences),
        first.residual_names, first.pieces, tuple(s for p in parts for s in p.skipped),
        tuple(e for p in parts for e in p.encodings), tokens,
    )


def token_rows(encoding: Encoding) -> list[int]:
    """The positions of an input whose vectors the text tasks read: the first MAX_POSITION + 1, and every
    non-special word piece."""
    return [p for p, special in enumerate(encoding.special) if p <= MAX_POSITION or not special]


def _extract(model, tokenizer, sentences, pieces, batch_size, dtype, progress, tokens) -> WordFeatures:
    max_length = model.config.max_position_embeddings
    kept, encodings, skipped = encode_sentences(tokenizer, sentences, max_length)
    if skipped:
        log.warning("%d sentence(s) skipped: longer than the model's %d positions", len(skipped), max_length)
    kept_sentences = tuple(sentences[i] for i in kept)
    lengths = [len(s) for s in kept_sentences]
    starts = [0]
    for n in lengths:
        starts.append(starts[-1] + n)
    layers, hidden = model.config.num_layers + 1, model.config.hidden_size
    vectors = torch.empty(layers, starts[-1], hidden, dtype=dtype, device="cpu")
    token_positions = [token_rows(e) for e in encodings] if tokens else []
    token_starts = [0]
    for positions in token_positions:
        token_starts.append(token_starts[-1] + len(positions))
    token_vectors = torch.empty(layers, token_starts[-1], hidden, dtype=dtype, device="cpu") if tokens else None
    for batch, stacked in residual_batches(model, encodings, tokenizer.pad_id, batch_size, progress=progress):
        words, rows, positions, weights = [], [], [], []
        for row, index in enumerate(batch):
            for word, word_positions in enumerate(word_pieces(encodings[index], lengths[index], pieces)):
                for position in word_positions:
                    words.append(starts[index] + word)
                    rows.append(row)
                    positions.append(position)
                    weights.append(1 / len(word_positions))
        device = stacked.device
        picked = stacked[:, torch.tensor(rows, device=device), torch.tensor(positions, device=device)].float()
        picked = picked * torch.tensor(weights, device=device)[None, :, None]
        targets = torch.tensor(words, device=device)
        unique, inverse = targets.unique(return_inverse=True)  # the batch's words, and each piece's word among them
        summed = torch.zeros(layers, len(unique), hidden, device=device).index_add_(1, inverse, picked)
        vectors[:, unique.cpu()] = summed.to("cpu", dtype)
        if tokens:
            for row, index in enumerate(batch):
                wanted = torch.tensor(token_positions[index], device=device)
                token_vectors[:, token_starts[index] : token_starts[index + 1]] = stacked[:, row, wanted].to("cpu", dtype)
    token_features = None
    if tokens:
        rows = tuple((index, position) for index, positions in enumerate(token_positions) for position in positions)
        token_features = TokenFeatures(token_vectors, tuple(encodings), rows)
    return WordFeatures(vectors, tuple(starts), kept_sentences, tuple(residual_names(model)), pieces, tuple(skipped),
                        tuple(encodings), token_features)
