"""What every corpus source declares: where its text comes from, its licence, and how to extract its lines."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .fetch import Fetcher


@dataclass(frozen=True)
class Source:
    name: str
    package: str  # e.g. "Debian wordnet-base" or "PyPI gensim"
    licence: str
    note: str
    extract: Callable[[Fetcher], tuple[str, Iterable[str]]]  # -> (package version, raw lines before cleaning)
    default: bool = True  # built unless --only names other sources
