"""Prose fortunes (Debian fortunes, fortunes-min): quotations and jokes, formatted items and offensive ones dropped."""
from __future__ import annotations

import glob
import os
import re
from typing import Callable, Iterable, Iterator

from ..clean import OFFENSIVE, prose_lines
from ..fetch import Fetcher
from ..source import Source

# Whole files skipped: ascii art, ethnic jokes, code, nonsense, non-English.
FORTUNE_SKIP = {"ascii-art", "ethnic", "zippy", "translate-me", "perl", "linux",
                "linuxcookie", "debian", "knghtbrd", "drugs", "men-women", "startrek",
                "computers", "goedel"}


def _fortune_items(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    for item in re.split(r"\n%\n", text):
        yield item


def _fortunes_from(root: str) -> Iterator[str]:
    fdir = os.path.join(root, "usr/share/games/fortunes")
    for path in sorted(glob.glob(os.path.join(fdir, "*"))):
        base = os.path.basename(path)
        if "." in base or os.path.isdir(path) or base in FORTUNE_SKIP:
            continue
        for item in _fortune_items(path):
            lines = item.split("\n")
            # Drop attribution lines ("\t\t-- Author") and everything after them.
            body = []
            for ln in lines:
                if re.match(r"\s*(--|- )\s*\S", ln) and body:
                    break
                body.append(ln)
            if not body:
                continue
            # Formatted items (poems, dialogues, tables, code) are skipped.
            if sum(bool(re.match(r"\s{2,}\S", ln)) for ln in body) > 1:
                continue
            if any(re.match(r"\s*[A-Z][\w .]{0,20}:\s", ln) for ln in body):
                continue
            text = " ".join(ln.strip() for ln in body)
            if OFFENSIVE.search(text):
                continue
            yield from prose_lines(text)


def _fortunes(pkg: str) -> Callable[[Fetcher], tuple[str, Iterable[str]]]:
    def ex(fetch: Fetcher) -> tuple[str, Iterable[str]]:
        root, ver = fetch.deb(pkg)
        return ver, _fortunes_from(root)
    return ex


SOURCES = [
    Source("fortunes", "Debian fortunes", "BSD-3-Clause (fortune-mod); quotations as collected",
           "Prose fortunes from /usr/share/games/fortunes (not the offensive set); attributions, "
           "poems, dialogues, technical files and items matching an offensive-word list dropped.",
           _fortunes("fortunes")),
    Source("fortunes-min", "Debian fortunes-min", "BSD-3-Clause (fortune-mod); quotations as collected",
           "Same filters as 'fortunes' (mostly duplicates of it).", _fortunes("fortunes-min")),
]
