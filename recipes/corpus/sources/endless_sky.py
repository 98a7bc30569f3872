"""Mission dialogue and descriptions of the Endless Sky space game (Debian endless-sky-data)."""
from __future__ import annotations

import glob
import os
import re
from typing import Iterable

from ..clean import prose_lines
from ..fetch import Fetcher
from ..source import Source


def _endless_sky(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    root, ver = fetch.deb("endless-sky-data")
    out: list[str] = []
    for path in sorted(glob.glob(os.path.join(root, "usr/share/games/endless-sky/data/**/*.txt"),
                                 recursive=True)):
        text = open(path, encoding="utf-8", errors="replace").read()
        chunks = re.findall(r"`([^`]*)`", text)
        chunks += re.findall(r'^\s*description\s+"([^"\n]*)"', text, flags=re.M)
        for c in chunks:
            c = " ".join(c.split())
            if re.fullmatch(r"\((.*)\)", c):
                c = c[1:-1]
            if "<" in c or "[" in c:
                continue  # template placeholders (<first>, <planet>, [a, b] choices)
            out.extend(prose_lines(c))
    return ver, out


SOURCES = [
    Source("endless-sky", "Debian endless-sky-data", "GPL-3+ (game data text)",
           "Mission/conversation dialogue and descriptions from the Endless Sky space game; "
           "lines with template placeholders dropped.", _endless_sky),
]
