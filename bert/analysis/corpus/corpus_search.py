"""Corpus search: every token of a corpus, at every layer, and its nearest neighbours by cosine (as in exBERT).

    index = build_index(model, tokenizer, builtin_sentences())      # every hidden_states index: 0 = embeddings, i = after layer i-1
    index.search_token(model, tokenizer, "He sat on the bank of the river.", position=5, layer=6, k=10)
    heads = build_index(model, tokenizer, builtin_sentences(), layers=[], heads=[(3, 5)])  # head 5 of layer 3 (from 0)
    heads.search_token(model, tokenizer, "He sat on the bank of the river.", position=5, layer=3, k=10, head=5)

An index holds one matrix of unit-length rows per layer ([token, hidden], float32 or float16), and optionally
per attention head ([token, head_size]: what head h of layer n adds up from the values it attends to, before
the layer's output projection mixes the heads), and, per row, the token's sentence, position, token, whole word
and (where known) part of speech. Search is a matrix product
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

from ...data import PARTS_OF_SPEECH, LabelledSentence
from ...errors import InputTooLongError, InvalidInputError
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ...hooks import hook_name
from ...layers import head_label, residual_label
from .batching import ProgressCallback, hook_batches, residual_hooks
from .corpus_index_files import check_fingerprint, join_shards, read_index, save_index
from .model_fingerprint import model_fingerprint

Method = Literal["exact", "approximate"]
APPROXIMATE_FROM = 500_000  # rows per layer from which method=None searches approximately
PartOfSpeechSpans = Sequence[tuple[int, int, str]]  # (start, end, part of speech) character spans of a sentence
Key = int | tuple[int, int]  # what a matrix holds: hidden_states[i] (0 = embeddings), or (layer, head): that head's output


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
    layers: tuple[int, ...]  # hidden_states indices: 0 = embedding output, i = after layer i-1 (bert/layers.py)
    entries: Entries
    vectors: dict[Key, torch.Tensor]  # layer or (layer, head) -> [row, hidden or head_size], unit rows, on the CPU
    fingerprint: str  # of the model that made it (model_fingerprint)
    shard: tuple[int, int] | None = None  # (rank, world size) when one rank of a torchrun job made it
    heads: tuple[tuple[int, int], ...] = ()  # (layer, head), both from 0: that head's output in that layer
    _approximate: dict[Key, object] = field(default_factory=dict, repr=False)  # -> faiss index, built on demand
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    probes: int = 64  # inverted lists the approximate search visits (more: slower, better recall)

    def __post_init__(self):
        for key in self.keys:
            if self.vectors[key].shape[0] != len(self.entries):
                raise InvalidInputError(f"{_describe(key)} has {self.vectors[key].shape[0]} rows for {len(self.entries)} entries")

    @property
    def keys(self) -> tuple[Key, ...]:
        """Every matrix of the index: the layers, then the heads."""
        return self.layers + self.heads

    def __len__(self) -> int:
        """Tokens indexed (rows per layer)."""
        return len(self.entries)

    @property
    def hidden_size(self) -> int:
        """The width of the layers' vectors (a head's vectors are narrower: the head size)."""
        return self.vectors[self.layers[0]].shape[1] if self.layers else 0

    def hit(self, row: int, cosine: float) -> Hit:
        e = self.entries
        return Hit(e.sentence_index[row], e.position[row], e.token[row], e.word[row], cosine, e.part_of_speech[row])

    def search(
        self, layer: int, query_vector: torch.Tensor, k: int = 10, method: Method | None = None, head: int | None = None
    ) -> list[Hit]:
        """The k rows nearest to `query_vector` ([hidden], or [head_size] with `head`) by cosine at hidden_states[`layer`]
        (or, with `head`, at head `head` of transformer layer `layer`), nearest first (fewer if the index is smaller). method: "exact" (matrix
        product), "approximate" (faiss), None = exact below APPROXIMATE_FROM rows."""
        key = self._key(layer, head)
        if not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive whole number, not {k!r}")
        query = torch.as_tensor(query_vector).detach().float().cpu().reshape(-1)
        width = self.vectors[key].shape[1]
        if query.shape[0] != width:
            raise InvalidInputError(f"the query vector has {query.shape[0]} values; {_describe(key)}'s have {width}")
        query = F.normalize(query, dim=0)
        method = method or ("approximate" if len(self) >= APPROXIMATE_FROM else "exact")
        if method == "exact":
            cosines, rows = _exact_top_k(self.vectors[key], query, min(k, len(self)))
        elif method == "approximate":
            cosines, rows = self._approximate_top_k(key, query, min(k, len(self)))
        else:
            raise InvalidInputError(f"method must be 'exact' or 'approximate', not {method!r}")
        return [self.hit(int(r), float(c)) for c, r in zip(cosines, rows) if r >= 0]

    def search_token(
        self, model: Bert, tokenizer: BertTokenizer, text: str, position: int, layer: int, k: int = 10,
        method: Method | None = None, head: int | None = None,
    ) -> list[Hit]:
        """Neighbours of the token at `position` of `text` ([CLS] = 0), as the model sees it at `layer` (or as
        that layer's `head` sees it)."""
        key = self._key(layer, head)
        return self.search(layer, self.token_vectors(model, tokenizer, text, position, [key])[key], k, method, head)

    def token_vectors(
        self, model: Bert, tokenizer: BertTokenizer, text: str, position: int, keys: Sequence[Key] | None = None
    ) -> dict[Key, torch.Tensor]:
        """The token at `position` of `text` ([CLS] = 0) as this index's matrices hold it: {layer or (layer,
        head): vector}, for `keys` (None: all the index has), from one forward pass; each a query for `search`."""
        encoding = tokenizer.encode(text)
        return self.encoding_vectors(model, tokenizer, encoding, position, keys)

    def encoding_vectors(
        self, model: Bert, tokenizer: BertTokenizer, encoding: Encoding, position: int, keys: Sequence[Key] | None = None
    ) -> dict[Key, torch.Tensor]:
        """`token_vectors` of an input already encoded (one sentence, [CLS] A [SEP])."""
        self.check_model(model)
        keys = self.keys if keys is None else keys
        if not isinstance(position, int) or not 0 <= position < len(encoding):
            raise InvalidInputError(f"position {position!r} is outside this {len(encoding)}-token input (0 .. {len(encoding) - 1})")
        _, vectors = next(_vector_batches(model, [encoding], tokenizer.pad_id, list(keys)))
        return {key: vectors[key][0, position] for key in keys}

    def check_model(self, model: Bert) -> None:
        """StaleIndexError unless `model` is the one this index was built with."""
        check_fingerprint(self.fingerprint, model_fingerprint(model))

    def save(self, path: str | Path) -> Path:
        """A folder: vectors.safetensors, entries.parquet, sentences.parquet, index.json."""
        return save_index(self, Path(path))

    @classmethod
    def load(cls, path: str | Path, model: Bert | None = None) -> "CorpusIndex":
        """A saved index, or a folder of shards (as `load_shards`). With `model`: StaleIndexError if it differs."""
        fields = read_index(Path(path))
        index = cls._from_fields(fields) if isinstance(fields, dict) else cls._joined([cls._from_fields(f) for f in fields])
        if model is not None:
            index.check_model(model)
        return index

    @classmethod
    def load_shards(cls, paths: Sequence[str | Path], model: Bert | None = None) -> "CorpusIndex":
        """Shards written by ranks of one `torchrun` job, joined in rank order into one index."""
        index = cls._joined([cls.load(path) for path in paths])
        if model is not None:
            index.check_model(model)
        return index

    @classmethod
    def _from_fields(cls, fields: dict) -> "CorpusIndex":
        """An index from what corpus_index_files read or joined (entries as columns)."""
        return cls(**{**fields, "entries": Entries(**fields["entries"])})

    @classmethod
    def _joined(cls, shards: list["CorpusIndex"]) -> "CorpusIndex":
        if len(shards) == 1 and shards[0].shard is None:
            return shards[0]  # a whole index
        return cls._from_fields(join_shards(shards))

    def _key(self, layer: int, head: int | None) -> Key:
        key = layer if head is None else (layer, head)
        if key not in self.keys:
            heads = f" and heads (layer, head) {list(self.heads)}" if self.heads else ""
            raise InvalidInputError(f"{_describe(key)} is not in this index; it has hidden_states {list(self.layers)}{heads}")
        return key

    def _approximate_top_k(self, key: Key, query: torch.Tensor, k: int):
        with self._lock:  # built once per matrix, even when many sessions ask at the same time
            if key not in self._approximate:
                self._approximate[key] = _inverted_file_index(self.vectors[key])
        searcher = self._approximate[key]
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
    heads: Sequence[tuple[int, int]] = (),
) -> CorpusIndex:
    """Index every token of `sentences` (strings, or LabelledSentence: its headword carries its part of speech).

    layers: hidden_states indices, None = all (0 = embedding output, i = after layer i-1); one int or a list ([] with heads).
    heads: (layer, head) pairs, both from 0: also index that head's output in that layer.
    parts_of_speech: optional, one per sentence: (start, end, part of speech) character spans, or None.
    progress: optional callable(sentences done, total). Runs on the model's device, batched by length.
    """
    texts, spans = _texts_and_spans(sentences, parts_of_speech)
    heads = _check_heads(model, heads)
    layers = _check_layers(model, layers, allow_none=bool(heads))
    keys = layers + heads
    encodings = []
    for number, text in enumerate(texts):
        try:
            encodings.append(tokenizer.encode(text, max_length=model.config.max_position_embeddings))
        except InputTooLongError as error:
            raise InvalidInputError(f"sentence {number} is too long: {error}") from error
    per_sentence: dict[Key, list] = {key: [None] * len(encodings) for key in keys}
    for batch, vectors in _vector_batches(model, encodings, tokenizer.pad_id, keys, batch_size, progress):
        for key, batch_vectors in vectors.items():
            unit = F.normalize(batch_vectors.float(), dim=-1).to(dtype).cpu()  # [batch, seq, width]
            for batch_row, number in enumerate(batch):
                per_sentence[key][number] = unit[batch_row, : len(encodings[number])]
    return CorpusIndex(
        sentences=texts,
        layers=tuple(layers),
        entries=_entries(texts, encodings, spans),
        vectors={key: torch.cat(per_sentence[key]) for key in keys},
        fingerprint=model_fingerprint(model),
        heads=tuple(heads),
    )


def _vector_batches(model: Bert, encodings, pad_id: int, keys: list[Key], batch_size: int = 32, progress=None):
    """hook_batches, as (encoding indices, {key: [batch, seq, width]}): a layer's output, or one head's."""
    layer_hooks = residual_hooks(model)
    hooks = {key: hook_name("z", key[0]) if isinstance(key, tuple) else layer_hooks[key] for key in keys}
    for batch, cache in hook_batches(model, encodings, pad_id, list(dict.fromkeys(hooks.values())), batch_size, progress):
        # z: [batch, head, seq, head_size]
        yield batch, {key: cache[hooks[key]][:, key[1]] if isinstance(key, tuple) else cache[hooks[key]] for key in keys}


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


def _check_layers(model: Bert, layers, allow_none: bool = False) -> list[int]:
    last = model.config.num_layers
    layers = list(range(last + 1)) if layers is None else [layers] if isinstance(layers, int) else list(layers)
    bad = [layer for layer in layers if not isinstance(layer, int) or not 0 <= layer <= last]
    if (not layers and not allow_none) or bad or len(set(layers)) != len(layers):
        raise InvalidInputError(f"layers must be distinct hidden_states indices from 0 (embeddings) to {last}; got {layers}")
    return layers


def _check_heads(model: Bert, heads) -> list[tuple[int, int]]:
    config = model.config
    try:
        pairs = [(layer, head) for layer, head in heads]
    except (TypeError, ValueError):
        raise InvalidInputError(f"heads must be (layer, head) pairs, e.g. [(3, 5)]; got {heads!r}") from None
    bad = [p for p in pairs if not all(isinstance(v, int) for v in p)
           or not (0 <= p[0] < config.num_layers and 0 <= p[1] < config.num_heads)]
    if bad or len(set(pairs)) != len(pairs):
        raise InvalidInputError(f"heads must be distinct (layer, head) pairs, layer 0 .. {config.num_layers - 1}, head "
                                f"0 .. {config.num_heads - 1}; got {list(heads)}")
    return pairs


def _describe(key: Key) -> str:
    return head_label(*key) if isinstance(key, tuple) else f"hidden_states[{key}] ({residual_label(key)})"


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
