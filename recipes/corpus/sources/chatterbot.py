"""English conversations of the chatterbot-corpus wheel (YAML files)."""
from __future__ import annotations

import zipfile
from typing import Iterable, Iterator

import yaml

from ..clean import MAX_WORDS, pack
from ..fetch import Fetcher
from ..source import Source

VERSION = "1.3.3"


def conversations(text: str) -> Iterator[list[str]]:
    """The conversations of one chatterbot-corpus YAML file ("conversations": a list of lists of turns). An entry
    that is not a list (a slip in the source, e.g. trivia.yml's bingo question, whose answer YAML reads as part
    of the question) is skipped."""
    for conversation in yaml.safe_load(text).get("conversations") or []:
        if isinstance(conversation, list):
            yield [" ".join(str(turn).split()) for turn in conversation if turn is not None]


def _chatterbot(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    path, ver = fetch.wheel("chatterbot-corpus", VERSION), VERSION
    out: list[str] = []
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            if "/english/" not in name or not name.endswith(".yml"):
                continue
            if name.rsplit("/", 1)[-1] in ("coding.yml", "tech_support.yml", "botprofile.yml"):
                continue
            for conv in conversations(z.read(name).decode("utf-8", "replace")):
                turns = [t if t[-1:] in ".!?\"'" else t + "." for t in conv if t]
                out.extend(pack(turns, limit=MAX_WORDS))
    return ver, out


SOURCES = [
    Source("chatterbot-corpus", "PyPI chatterbot-corpus", "BSD-3-Clause",
           "English conversation YAML files (coding/tech-support/bot-profile left out); each "
           "exchange packed into one line.", _chatterbot),
]
