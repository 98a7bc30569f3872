"""The built-in sentence set (992 WordNet 3.0 example sentences, see README.md here) and user text as sentences."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

SENTENCES_FILE = Path(__file__).with_name("sentences.tsv")
PARTS_OF_SPEECH = {"n": "noun", "v": "verb", "a": "adjective", "r": "adverb"}  # WordNet's letters
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")


@dataclass(frozen=True)
class LabelledSentence:
    text: str
    headword: str | None = None  # the WordNet lemma this sentence is an example of ("fall")
    pos: str | None = None  # its part of speech in this sentence: n, v, a or r
    start: int = 0  # character span of the headword's form in `text` ("fell")
    end: int = 0


@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[LabelledSentence, ...]:
    rows = SENTENCES_FILE.read_text(encoding="utf-8").splitlines()[1:]
    sentences = []
    for row in rows:
        text, headword, pos, start = row.split("\t")
        start = int(start)
        end = _WORD.match(text, start).end()
        sentences.append(LabelledSentence(text, headword, pos, start, end))
    return tuple(sentences)


def builtin_sentences(limit: int | None = None) -> list[LabelledSentence]:
    """The shipped sentences, in a fixed order; the first `limit` of them if given."""
    return list(_builtin()[:limit])


def split_sentences(text: str, max_sentences: int = 2000, max_chars: int = 400) -> list[LabelledSentence]:
    """User text (for example an uploaded .txt) as unlabelled sentences: one per line, and lines split after
    . ! or ? followed by a capital. Empty lines are skipped; over-long sentences are cut at `max_chars`."""
    sentences = []
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line.strip()):
            piece = " ".join(piece.split())[:max_chars]
            if piece:
                sentences.append(LabelledSentence(piece))
                if len(sentences) == max_sentences:
                    return sentences
    return sentences
