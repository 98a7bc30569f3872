"""The Corpus search page's logic: the corpora (built-in set, uploads by content, within limits), the matches in
their sentences (HTML, escaped) and a summary of them. The index itself is bert.analysis.corpus.corpus_search;
viz_app/cache.py builds it once per model and corpus."""
from __future__ import annotations

import hashlib
import html
from collections import Counter
from dataclasses import dataclass

import torch

from bert.analysis.corpus.corpus_search import Hit
from bert.data import builtin_sentences
from bert.tokenizer import BertTokenizer, Encoding

MAX_LINES = 2000  # an uploaded corpus: at most this many sentences (lines) ...
MAX_TOKENS = 15_000  # ... and word pieces in all (a little more than the built-in set: about a minute on one CPU core)
BUILTIN = "builtin"  # the digest of the built-in corpus
STORED = torch.float16  # index vectors are kept in half precision: half the memory, cosines to about 3 decimals
LAYER_OUTPUT, HEAD_OUTPUT = "layer", "head"
COMPARE_BY = {LAYER_OUTPUT: "a layer's output (the whole vector)", HEAD_OUTPUT: "one attention head's output"}


@dataclass(frozen=True)
class Corpus:
    sentences: tuple[str, ...]
    name: str  # "the built-in sentences" or the uploaded file's name (plain text, escape before display)
    digest: str  # identifies the text, for the cache


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


def builtin_corpus() -> Corpus:
    sentences = tuple(s.text for s in builtin_sentences())
    return Corpus(sentences, f"the {len(sentences)} built-in sentences (WordNet examples)", BUILTIN)


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


