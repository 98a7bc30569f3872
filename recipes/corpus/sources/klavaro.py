"""The English practice paragraphs of the klavaro typing tutor (Debian klavaro)."""
from __future__ import annotations

import os
from typing import Iterable

from ..clean import prose_lines
from ..fetch import Fetcher
from ..source import Source


def _klavaro(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    root, ver = fetch.deb("klavaro")
    out: list[str] = []
    for name in ("C.paragraphs", "en_GB.paragraphs"):
        path = os.path.join(root, "usr/share/klavaro", name)
        with open(path, encoding="utf-8", errors="replace") as f:
            for para in f.read().split("\n\n"):
                out.extend(prose_lines(para))
    return ver, out


SOURCES = [
    Source("klavaro", "Debian klavaro", "GPL-3+",
           "English practice paragraphs of the klavaro typing tutor (C/en_GB).", _klavaro),
]
