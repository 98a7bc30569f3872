"""Corpus search: every token of a corpus, at every layer, and its nearest neighbours by cosine (as in exBERT).

    index = build_index(model, tokenizer, builtin_sentences())      # all layers: 0 = embeddings, n = layer n
    index.search_token(model, tokenizer, "He sat on the bank of the river.", position=5, layer=6, k=10)

An index holds one matrix of unit-length rows per layer ([token, hidden], float32 or float16) and, per row, the
token's sentence, position, token, whole word and (where known) part of speech. Search is a matrix product
(exact) or, for large indexes, an inverted-file index from faiss (approximate). `save` / `CorpusIndex.load`
write safetensors and Parquet (nothing that can run code), keyed by a fingerprint of the model.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import torch
import torch.nn.functional as F

from ..data import PARTS_OF_SPEECH, LabelledSentence
from ..errors import InputTooLongError, InvalidInputError
from ..model import Bert
from ..tokenizer import BertTokenizer, Encoding
from .corpus import ProgressCallback, residual_batches
from .model_fingerprint import model_fingerprint

Method = Literal["exact", "approximate"]
APPROXIMATE_FROM = 500_000  # rows per layer from which method=None searches approximately
PartOfSpeechSpans = Sequence[tuple[int, int, str]]  # (start, end, part of speech) character spans of a sentence


@dataclass(frozen=True)
class Hit:
    """One neighbour: a token of the corpus and its cosine similarity to the query."""

    sentence_index: int
    position: int  # token position in its encoding, [CLS] = 0
    token: str  # the word piece ("##ing")
    word: str  # the whole word it belongs to, as written in the sentence ("" for [CLS] and [SEP])
    cosine: float
    part_of_speech: str | None = None  # "noun", "verb", ... where the corpus says; None when unknown


@dataclass(frozen=True)
class Entries:
    """What each row of the index is, one list entry per row, sentences in order, tokens in order within each."""

    sentence_index: list[int]
    position: list[int]
    token: list[str]
    word: list[str]
    part_of_speech: list[str | None]

    def __len__(self) -> int:
        return len(self.token)

    def rows(self, sentence_index: int) -> range:
        """The rows of one sentence (they are contiguous)."""
        start = _bisect(self.sentence_index, sentence_index)
        return range(start, _bisect(self.sentence_index, sentence_index + 1))


@dataclass(eq=False)  # compare indexes by their parts (entries, vectors), not as a whole
class CorpusIndex:
    """Token vectors of a corpus at chosen layers. Read-only once built: safe to share between threads."""

    sentences: list[str]
    layers: tuple[int, ...]  # 0 = embedding output, n = output of layer n
    entries: Entries
    vectors: dict[int, torch.Tensor]  # layer -> [row, hidden], unit rows, on the CPU
    fingerprint: str  # of the model that made it (model_fingerprint)
    shard: tuple[int, int] | None = None  # (rank, world size) when one rank of a torchrun job made it
    _approximate: dict[int, object] = field(default_factory=dict, repr=False)  # layer -> faiss index, built on demand
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    probes: int = 64  # inverted lists the approximate search visits (more: slower, better recall)

    def __post_init__(self):
        for layer in self.layers:
            if self.vectors[layer].shape[0] != len(self.entries):
                raise InvalidInputError(f"layer {layer} has {self.vectors[layer].shape[0]} rows for {len(self.entries)} entries")

    def __len__(self) -> int:
        """Tokens indexed (rows per layer)."""
        return len(self.entries)

    @property
    def hidden_size(self) -> int:
        return self.vectors[self.layers[0]].shape[1]

    def hit(self, row: int, cosine: float) -> Hit:
        e = self.entries
        return Hit(e.sentence_index[row], e.position[row], e.token[row], e.word[row], cosine, e.part_of_speech[row])

    def search(self, layer: int, query_vector: torch.Tensor, k: int = 10, method: Method | None = None) -> list[Hit]:
        """The k rows nearest to `query_vector` ([hidden]) by cosine at `layer`, nearest first (fewer if the
        index is smaller). method: "exact" (matrix product), "approximate" (faiss), None = exact below
        APPROXIMATE_FROM rows."""
        self._check_layer(layer)
        if not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive whole number, not {k!r}")
        query = torch.as_tensor(query_vector).detach().float().cpu().reshape(-1)
        if query.shape[0] != self.hidden_size:
            raise InvalidInputError(f"the query vector has {query.shape[0]} values; this index has {self.hidden_size}")
        query = F.normalize(query, dim=0)
        method = method or ("approximate" if len(self) >= APPROXIMATE_FROM else "exact")
        if method == "exact":
            cosines, rows = _exact_top_k(self.vectors[layer], query, min(k, len(self)))
        elif method == "approximate":
            cosines, rows = self._approximate_top_k(layer, query, min(k, len(self)))
        else:
            raise InvalidInputError(f"method must be 'exact' or 'approximate', not {method!r}")
        return [self.hit(int(r), float(c)) for c, r in zip(cosines, rows) if r >= 0]

    def search_token(
        self, model: Bert, tokenizer: BertTokenizer, text: str, position: int, layer: int, k: int = 10,
        method: Method | None = None,
    ) -> list[Hit]:
        """Neighbours of the token at `position` of `text` ([CLS] = 0), as the model sees it at `layer`."""
        self._check_layer(layer)
        self.check_model(model)
        encoding = tokenizer.encode(text, max_length=model.config.max_position_embeddings)
        if not isinstance(position, int) or not 0 <= position < len(encoding):
            raise InvalidInputError(f"position {position!r} is outside this {len(encoding)}-token input (0 .. {len(encoding) - 1})")
        _, stacked = next(residual_batches(model, [encoding], tokenizer.pad_id, layers=[layer]))
        return self.search(layer, stacked[0, 0, position], k, method)

    def check_model(self, model: Bert) -> None:
        """StaleIndexError unless `model` is the one this index was built with."""
        from .corpus_index_files import check_fingerprint

        check_fingerprint(self.fingerprint, model_fingerprint(model))

    def save(self, path: str | Path) -> Path:
        """A folder: vectors.safetensors, entries.parquet, sentences.parquet, index.json."""
        from .corpus_index_files import save_index

        return save_index(self, Path(path))

    @classmethod
    def load(cls, path: str | Path, model: Bert | None = None) -> "CorpusIndex":
        """A saved index, or a folder of shards (as `load_shards`). With `model`: StaleIndexError if it differs."""
        from .corpus_index_files import load_index

        index = load_index(Path(path))
        if model is not None:
            index.check_model(model)
        return index

    @classmethod
    def load_shards(cls, paths: Sequence[str | Path], model: Bert | None = None) -> "CorpusIndex":
        """Shards written by ranks of one `torchrun` job, joined in rank order into one index."""
        from .corpus_index_files import join_shards, load_index

        index = join_shards([load_index(Path(p)) for p in paths])
        if model is not None:
            index.check_model(model)
        return index

    def _check_layer(self, layer: int) -> None:
        if layer not in self.layers:
            raise InvalidInputError(f"layer {layer!r} is not in this index; it has layers {list(self.layers)}")

    def _approximate_top_k(self, layer: int, query: torch.Tensor, k: int):
        with self._lock:  # built once per layer, even when many sessions ask at the same time
            if layer not in self._approximate:
                self._approximate[layer] = _inverted_file_index(self.vectors[layer])
        searcher = self._approximate[layer]
        searcher.nprobe = self.probes
        cosines, rows = searcher.search(query[None].numpy(), k)
        return cosines[0], rows[0]


def build_index(
    model: Bert,
    tokenizer: BertTokenizer,
    sentences: Sequence[str | LabelledSentence],
    layers: int | Sequence[int] | None = None,
    batch_size: int = 32,
    parts_of_speech: Sequence[PartOfSpeechSpans | None] | None = None,
    progress: ProgressCallback | None = None,
    dtype: torch.dtype = torch.float32,
) -> CorpusIndex:
    """Index every token of `sentences` (strings, or LabelledSentence: its headword carries its part of speech).

    layers: None = all (0 = embedding output, n = output of layer n, 1 .. N); one int or a list.
    parts_of_speech: optional, one per sentence: (start, end, part of speech) character spans, or None.
    progress: optional callable(sentences done, total). Runs on the model's device, batched by length.
    """
    texts, spans = _texts_and_spans(sentences, parts_of_speech)
    layers = _check_layers(model, layers)
    encodings = []
    for number, text in enumerate(texts):
        try:
            encodings.append(tokenizer.encode(text, max_length=model.config.max_position_embeddings))
        except InputTooLongError as error:
            raise InvalidInputError(f"sentence {number} is too long: {error}") from error
    per_sentence: list[torch.Tensor | None] = [None] * len(encodings)
    for batch, stacked in residual_batches(model, encodings, tokenizer.pad_id, batch_size, layers, progress):
        unit = F.normalize(stacked.float(), dim=-1).to(dtype).cpu()  # [layer, batch, seq, hidden]
        for batch_row, number in enumerate(batch):
            per_sentence[number] = unit[:, batch_row, : len(encodings[number])]
    matrix = torch.cat(per_sentence, dim=1)  # [layer, row, hidden]
    return CorpusIndex(
        sentences=texts,
        layers=tuple(layers),
        entries=_entries(texts, encodings, spans),
        vectors={layer: matrix[i].contiguous() for i, layer in enumerate(layers)},
        fingerprint=model_fingerprint(model),
    )


def _texts_and_spans(sentences, parts_of_speech) -> tuple[list[str], list[list[tuple[int, int, str]]]]:
    if isinstance(sentences, (str, LabelledSentence)):
        raise InvalidInputError("sentences must be a list of sentences, not one sentence")
    if len(sentences) == 0:
        raise InvalidInputError("the corpus is empty: give at least one sentence")
    if parts_of_speech is not None and len(parts_of_speech) != len(sentences):
        raise InvalidInputError(f"parts_of_speech has {len(parts_of_speech)} entries for {len(sentences)} sentences")
    texts, spans = [], []
    for number, sentence in enumerate(sentences):
        text = sentence.text if isinstance(sentence, LabelledSentence) else sentence
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"sentence {number} is {'empty' if isinstance(text, str) else type(text).__name__}: give text")
        own = []
        if isinstance(sentence, LabelledSentence) and sentence.pos:
            own.append((sentence.start, sentence.end, PARTS_OF_SPEECH.get(sentence.pos, sentence.pos)))
        texts.append(text)
        spans.append(own + list((parts_of_speech or [None] * len(sentences))[number] or []))
    return texts, spans


def _check_layers(model: Bert, layers) -> list[int]:
    last = model.config.num_layers
    layers = list(range(last + 1)) if layers is None else [layers] if isinstance(layers, int) else list(layers)
    bad = [layer for layer in layers if not isinstance(layer, int) or not 0 <= layer <= last]
    if not layers or bad or len(set(layers)) != len(layers):
        raise InvalidInputError(f"layers must be distinct whole numbers from 0 (embeddings) to {last}; got {layers}")
    return layers


def _entries(texts: list[str], encodings: list[Encoding], spans) -> Entries:
    columns: tuple[list, ...] = ([], [], [], [], [])
    for number, (text, encoding, tagged) in enumerate(zip(texts, encodings, spans)):
        words = encoding.word_spans()
        for position, token in enumerate(encoding.tokens):
            word_id = encoding.word_ids[position]
            start, end = words.get(word_id, (0, 0))
            pos = next((tag for s, e, tag in tagged if word_id is not None and s <= start and end <= e), None)
            for column, value in zip(columns, (number, position, token, text[start:end], pos)):
                column.append(value)
    return Entries(*columns)


def _exact_top_k(matrix: torch.Tensor, query: torch.Tensor, k: int):
    cosines, rows = (matrix @ query.to(matrix.dtype)).float().topk(k)  # float16 rows: a float16 product, 3x faster
    return cosines.tolist(), rows.tolist()


def _inverted_file_index(matrix: torch.Tensor):
    """faiss inverted-file index on inner products (= cosines of unit rows): about 2 sqrt(n) clusters, trained
    on 50 rows per cluster (k-means), each row stored in full in its nearest cluster's list."""
    import faiss

    rows = matrix.float().numpy()
    lists = max(1, min(int(2 * math.sqrt(len(rows))), len(rows) // 39))  # faiss wants >= 39 training rows a list
    quantizer = faiss.IndexFlatIP(rows.shape[1])
    searcher = faiss.IndexIVFFlat(quantizer, rows.shape[1], lists, faiss.METRIC_INNER_PRODUCT)
    sample = rows[torch.randperm(len(rows), generator=torch.Generator().manual_seed(0))[: lists * 50].numpy()]
    searcher.train(sample)
    searcher.add(rows)
    return searcher


def _bisect(sorted_values: list[int], value: int) -> int:
    import bisect

    return bisect.bisect_left(sorted_values, value)
