"""The page "Corpus search" (address `corpus_search`), as a spec (viz_app/specs/base.py): the corpora (built-in set,
uploads by content, within limits), its `Settings`, its two computations (the corpus index, built once per model
and corpus and shared by every visitor: `Computation.shared`; the search of one token), the matches in their
sentences (HTML, escaped), a summary of them and its `view`. The index itself is bert.analysis.corpus.corpus_search.
Plain Python."""
from __future__ import annotations

import hashlib
import html
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import torch

from bert.analysis.corpus.batching import batches_cost
from bert.analysis.corpus.corpus_search import CorpusIndex, Hit, build_index
from bert.costs import Cost
from bert.layers import layer_label, layer_labels, residual_labels
from bert.data import builtin_sentences
from bert.tokenizer import BertTokenizer, Encoding
from viz_app.charts.base import Chart
from viz_app.charts.corpus_search import by_layer_chart, match_words_chart
from viz_app.app.navigation import FIRST_SCREEN_SENTENCES
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "corpus_search"
LESSON_CHARTS = ("search_words", "search_by_layer")

MAX_LINES = 2000  # an uploaded corpus: at most this many sentences (lines) ...
MAX_TOKENS = 15_000  # ... and word pieces in all (a little more than the built-in set: about a minute on one CPU core)
BUILTIN = "builtin"  # the digest of the built-in corpus: "builtin-COUNT", its first COUNT sentences
BUILTIN_COUNTS = (FIRST_SCREEN_SENTENCES, 2 * FIRST_SCREEN_SENTENCES, len(builtin_sentences()))  # how many built-in
# sentences a search may read: the first screen's, twice as many, all of them
STORED = torch.float16  # index vectors are kept in half precision: half the memory, cosines to about 3 decimals
LAYER_OUTPUT, HEAD_OUTPUT = "layer", "head"
COMPARE_BY = {LAYER_OUTPUT: "a layer's output (the whole vector)", HEAD_OUTPUT: "one attention head's output"}


@dataclass(frozen=True)
class Corpus:
    sentences: tuple[str, ...]
    name: str  # "the built-in sentences" or the uploaded file's name (plain text, escape before display)
    digest: str  # identifies the text, for the cache

    @property
    def builtin(self) -> bool:
        """Whether these are (the first of) the built-in sentences."""
        return self.digest.startswith(BUILTIN)


@dataclass(frozen=True)
class QueryToken:
    position: int
    token: str
    word: str  # the whole word it belongs to, as written


@dataclass(frozen=True)
class Summary:
    words: Counter  # whole word (lower case) -> matches
    parts_of_speech: Counter  # "noun", ..., "unknown" -> matches
    positions: Counter  # token position in its sentence -> matches
    same_word: int  # matches that are the query's word (any case)


def builtin_corpus(count: int | None = None) -> Corpus:
    """The first `count` built-in sentences (they come in a shuffled order, so any first few are a fair sample of
    them); None: all of them."""
    sentences = tuple(s.text for s in builtin_sentences(count))
    every = len(builtin_sentences())
    name = (f"the {every} built-in sentences (WordNet examples)" if len(sentences) == every
            else f"the first {len(sentences)} of the {every} built-in sentences (WordNet examples)")
    return Corpus(sentences, name, f"{BUILTIN}-{len(sentences)}")


def upload_corpus(text: str, name: str, tokenizer: BertTokenizer, max_positions: int) -> Corpus | str:
    """One sentence per non-empty line, within MAX_LINES and MAX_TOKENS; else a message saying what to change."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if not lines:
        return "That file has no sentences (only empty lines). Upload a .txt file with one sentence per line."
    if len(lines) > MAX_LINES:
        return (f"That file has {len(lines):,} lines; the limit is {MAX_LINES:,} sentences (one per line). Upload a "
                "shorter text, or split it.")
    lengths = [len(ids) + 2 for ids in tokenizer.encode_plain(lines)]  # + [CLS] and [SEP]
    if sum(lengths) > MAX_TOKENS:
        return (f"That file makes {sum(lengths):,} tokens; the limit is {MAX_TOKENS:,} tokens (about "
                f"{MAX_TOKENS // 13:,} short sentences). Upload a shorter text.")
    too_long = next((number for number, length in enumerate(lengths) if length > max_positions), None)
    if too_long is not None:
        return (f"Line {too_long + 1} is {lengths[too_long]:,} tokens long; the model reads at most {max_positions}. "
                "Put one sentence per line.")
    return Corpus(tuple(lines), name, hashlib.sha1("\n".join(lines).encode()).hexdigest())


def query_tokens(encoding: Encoding, text: str) -> list[QueryToken]:
    """Every token but [CLS] and [SEP], with the whole word it belongs to."""
    words = encoding.word_spans()
    return [
        QueryToken(p, encoding.tokens[p], text[slice(*words[encoding.word_ids[p]])])
        for p in range(len(encoding)) if not encoding.special[p]
    ]


def default_position(tokens: list[QueryToken]) -> int:
    """The first token of a word of four letters or more (a content word, usually), else the first token."""
    return next((t.position for t in tokens if len(t.word) >= 4 and t.word.isalpha()), tokens[0].position)


def summarize(hits: list[Hit], query_word: str) -> Summary:
    return Summary(
        words=Counter(hit.word.lower() or hit.token for hit in hits),
        parts_of_speech=Counter(hit.part_of_speech or "unknown" for hit in hits),
        positions=Counter(hit.position for hit in hits),
        same_word=sum(hit.word.lower() == query_word.lower() for hit in hits),
    )


def highlighted(sentence: str, tokenizer: BertTokenizer, position: int) -> str:
    """The sentence as HTML, every part escaped, with the token at `position` in <mark> (its whole word in bold)."""
    encoding = tokenizer.encode(sentence, max_length=len(sentence) + 2)  # fits by construction: a piece per character at most
    return highlighted_in(sentence, encoding, position)


def highlighted_in(sentence: str, encoding: Encoding, position: int) -> str:
    """`highlighted` for a sentence already encoded ([CLS] sentence [SEP])."""
    if encoding.special[position]:
        return html.escape(sentence) + f" <mark>{html.escape(encoding.tokens[position])}</mark>"
    start, end = encoding.offsets[position]
    word_start, word_end = encoding.word_spans()[encoding.word_ids[position]]
    return (html.escape(sentence[:word_start]) + "<b>" + html.escape(sentence[word_start:start])
            + "<mark>" + html.escape(sentence[start:end]) + "</mark>" + html.escape(sentence[end:word_end]) + "</b>"
            + html.escape(sentence[word_end:]))


# ---- the spec: settings, the index (shared) and the search, the view -----------------------------------------------


@dataclass(frozen=True)
class Settings:
    corpus: Corpus  # the built-in sentences, or an uploaded text
    position: int  # the query token, in the input's first sentence ([CLS] = 0)
    by: str  # LAYER_OUTPUT or HEAD_OUTPUT
    layer: int  # a hidden_states index (LAYER_OUTPUT), or a layer from 0 whose heads are compared (HEAD_OUTPUT)
    k: int = 10  # matches
    head: int = 0  # HEAD_OUTPUT: the head

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs, corpus: Corpus | None = None) -> "Settings":
        """The settings a link or a lesson step gives (the first `search_count` built-in sentences unless `corpus`),
        clamped as the page's widgets would."""
        config = inputs.loaded.model.config
        by = setting(state, "search_by") if setting(state, "search_by") in COMPARE_BY else LAYER_OUTPUT
        layers = config.num_layers + 1 if by == LAYER_OUTPUT else config.num_layers
        tokens = query_tokens(inputs.prepared.base.first_sentence(), inputs.prepared.text)
        positions = [t.position for t in tokens]
        position = setting(state, "search_position")
        k = setting(state, "search_k")
        count = setting(state, "search_count")
        corpus = corpus or builtin_corpus(count if count in BUILTIN_COUNTS else FIRST_SCREEN_SENTENCES)
        return cls(corpus, position if position in positions else default_position(tokens), by,
                   within(setting(state, "search_layer"), layers, layers - 1), k if isinstance(k, int) and 5 <= k <= 50 else 10,
                   within(setting(state, "search_head"), config.num_heads, 0))

    @property
    def head_layer(self) -> int | None:
        """The layer whose heads the index holds; None: every layer's output."""
        return self.layer if self.by == HEAD_OUTPUT else None


@dataclass(frozen=True)
class IndexWork:
    corpus: Corpus = field(hash=False, compare=False)  # named by its digest in `key`
    head_layer: int | None = None  # None: every layer's output; else this layer's heads


@dataclass(frozen=True)
class SearchWork:
    index: IndexWork  # what the index holds
    position: int
    k: int
    built: CorpusIndex | None = field(default=None, hash=False, compare=False)  # INDEX's result; None: built here


def corpus_texts(corpus: Corpus) -> list:
    """What the index reads: the built-in sentences as LabelledSentence (they carry their headword's part of
    speech), an upload's lines as text."""
    return builtin_sentences(len(corpus.sentences)) if corpus.builtin else list(corpus.sentences)


def index_cost(inputs: Inputs, work: IndexWork) -> Cost:
    """One pass over the corpus in batches of 32, sorted by length (bert/analysis/corpus/batching.py)."""
    tokenizer, longest = inputs.loaded.tokenizer, inputs.loaded.model.config.max_position_embeddings
    lengths = [len(tokenizer.encode(getattr(s, "text", s), max_length=longest)) for s in corpus_texts(work.corpus)]
    return batches_cost(lengths, 32, ("a smaller corpus (fewer or shorter sentences)",))


def index_title(work: IndexWork) -> str:
    text = work.corpus.name if work.corpus.builtin else "your text"
    if work.head_layer is None:
        return f"Indexing every token of {text} at every layer"
    return f"Indexing what each head of {layer_label(work.head_layer)} passes on, for every token of {text}"


def index(inputs: Inputs, work: IndexWork) -> CorpusIndex:
    """Every token of the corpus at every layer's output, or every head's output in one layer (half precision)."""
    model = inputs.loaded.model
    choice = {} if work.head_layer is None else {
        "layers": [], "heads": [(work.head_layer, head) for head in range(model.config.num_heads)]}
    return build_index(model, inputs.loaded.tokenizer, corpus_texts(work.corpus), dtype=STORED, **choice)


def search(inputs: Inputs, work: SearchWork) -> dict[int, list[Hit]]:
    """Every layer's (or every head's of `head_layer`) k tokens nearest to the query token of the input's first
    sentence: one forward pass for the query, then one search per layer or head."""
    loaded, searched, layer = inputs.loaded, work.built or index(inputs, work.index), work.index.head_layer
    vectors = searched.encoding_vectors(loaded.model, loaded.tokenizer, inputs.prepared.base.first_sentence(), work.position)
    if layer is None:
        return {layer: searched.search(layer, vectors[layer], work.k) for layer in searched.layers}
    return {head: searched.search(layer, vectors[(layer, head)], work.k, head=head) for _, head in searched.heads}


def _search_cost(inputs: Inputs, work: SearchWork) -> Cost:
    """The query's pass, and the index's when the search builds it."""
    query = Cost(1, len(inputs.prepared.base.first_sentence()))
    return query if work.built is not None else index_cost(inputs, work.index) + query


INDEX = Computation(
    "corpus_search.index", index_title,
    cost=index_cost, compute=index, per_model=True, shared=True,
    key=lambda work: (work.corpus.digest, work.head_layer), work=IndexWork)
SEARCH = Computation(
    "corpus_search.search", lambda work: "the search", cost=_search_cost, compute=search,
    key=lambda work: (INDEX.cache_key(work.index), work.position, work.k), work=SearchWork)


def index_work(settings: Settings) -> IndexWork:
    return IndexWork(settings.corpus, settings.head_layer)


def computations(settings: Settings, built: CorpusIndex | None = None) -> Planned:
    """"search", of the index `built` (the page runs INDEX first, built once per model and corpus and shared by
    every visitor), or of an index it builds itself (a lesson step)."""
    return {"search": (SEARCH, SearchWork(index_work(settings), settings.position, settings.k, built))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"search_words": the words among the matches; "search_by_layer": how many matches are the query's word,
    layer by layer (or head by head). `results["search"]`: the search's result (none: no chart)."""
    found = results.get("search")
    if found is None:
        return {}
    encoding = inputs.prepared.base.first_sentence()
    query = {t.position: t for t in query_tokens(encoding, inputs.prepared.text)}[settings.position]
    config = inputs.loaded.model.config
    if settings.head_layer is None:
        names = dict(enumerate(residual_labels(config.num_layers)))
        hits, by_layer = found[settings.layer], by_layer_chart(found, names, query.word)
    else:
        hits = found[settings.head]
        by_layer = by_layer_chart(found, {h: f"head {h}" for h in found}, query.word,
                                  f"head by head in {layer_labels(config.num_layers)[settings.layer]}")
    return {"search_words": match_words_chart(summarize(hits, query.word).words, query.word), "search_by_layer": by_layer}
