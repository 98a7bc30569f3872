"""Data sets of R packages (Debian r-cran-*): the Harvard sentences, Jane Austen's novels, Moby Dick.

An installed R package keeps its data sets in a lazy-load database: data/Rdata.rdx (an index: the byte range of
each object in data/Rdata.rdb) and data/Rdata.rdb (the objects, each compressed on its own). The `rdata` package
(PyPI) reads R's serialization format; this file only finds each object's bytes and decompresses them.
"""
from __future__ import annotations

import bz2
import lzma
import os
import re
import warnings
import zlib
from typing import Iterable, Iterator

import rdata

from ..clean import prose_lines
from ..fetch import Fetcher
from ..source import Source


def read_r_object(serialized: bytes):
    """An R object from its serialized bytes (gzip-compressed or not), as Python/numpy/pandas values."""
    with warnings.catch_warnings():  # rdata warns that a bare serialization has no file-type header
        warnings.simplefilter("ignore", UserWarning)
        return rdata.conversion.convert(rdata.parser.parse_data(serialized))


def _decompress(body: bytes, compression: int) -> bytes:
    """One object's bytes in Rdata.rdb, after its 4-byte length: zlib (compression 1), or a type byte then
    zlib ('1'), bzip2 ('2'), xz ('Z') or nothing ('0') (compression 2 and 3)."""
    if compression not in (2, 3):
        return zlib.decompress(body)
    kind, body = body[:1], body[1:]
    if kind == b"Z":
        if body[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(body)
        return lzma.decompress(body, format=lzma.FORMAT_RAW,
                               filters=[{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}])
    return {b"2": bz2.decompress, b"1": zlib.decompress, b"0": bytes}[kind](body)


def r_lazyload(datadir: str) -> dict:
    """Every object of an R package's data/Rdata.rdb lazy-load database: {name: value}."""
    with open(os.path.join(datadir, "Rdata.rdx"), "rb") as f:
        index = read_r_object(f.read())
    compression = int(index["compressed"][0])
    with open(os.path.join(datadir, "Rdata.rdb"), "rb") as f:
        database = f.read()
    objects = {}
    for name, (offset, length) in index["variables"].items():
        offset, length = int(offset), int(length)
        objects[str(name)] = read_r_object(_decompress(database[offset + 4 : offset + length], compression))
    return objects


def _r_data(fetch: Fetcher, pkg: str, rname: str) -> tuple[str, dict]:
    root, ver = fetch.deb(pkg)
    return ver, r_lazyload(os.path.join(root, "usr/lib/R/site-library", rname, "data"))


def _book_paragraphs(lines: Iterable[str]) -> Iterator[str]:
    """Join hard-wrapped book lines into paragraphs, dropping headings."""
    para: list[str] = []
    for ln in lines:
        ln = ln.strip()
        if not ln:
            if para:
                yield " ".join(para)
            para = []
            continue
        para.append(ln)
    if para:
        yield " ".join(para)


def _book_lines(paragraphs: Iterable[str]) -> Iterator[str]:
    for para in paragraphs:
        if re.match(r"(CHAPTER|Chapter|VOLUME|BOOK|ETYMOLOGY|EXTRACTS)\b", para) and len(para.split()) < 8:
            continue
        para = re.sub(r"(?<!\w)_(\w[^_]*)_(?!\w)", r"\1", para)  # _emphasis_
        yield from prose_lines(para)


def _janeausten(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, objs = _r_data(fetch, "r-cran-janeaustenr", "janeaustenr")
    out: list[str] = []
    for name in ("emma", "mansfieldpark", "northangerabbey", "persuasion",
                 "prideprejudice", "sensesensibility"):
        out.extend(_book_lines(_book_paragraphs(str(s) for s in objs[name])))
    return ver, out


def _mobydick(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, objs = _r_data(fetch, "r-cran-tokenizers", "tokenizers")
    text = str(objs["mobydick"][0]).replace("\r\n", "\n")
    start = text.find("*** START OF")
    end = text.find("*** END OF")
    if start >= 0:
        text = text[text.index("\n", start) + 1:end if end > 0 else None]
    return ver, list(_book_lines(_book_paragraphs(text.split("\n"))))


def _harvard(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, objs = _r_data(fetch, "r-cran-stringr", "stringr")
    return ver, [str(s) for s in objs["sentences"] if s]


SOURCES = [
    Source("harvard-sentences", "Debian r-cran-stringr (data set `sentences`)",
           "MIT (stringr); Harvard sentences (IEEE 1969), public domain",
           "The 720 Harvard phonetically balanced everyday sentences.", _harvard),
    Source("janeausten", "Debian r-cran-janeaustenr", "MIT (package); novels public domain",
           "Jane Austen's six novels, paragraphs sentence-split and packed.", _janeausten),
    Source("mobydick", "Debian r-cran-tokenizers (data set `mobydick`)",
           "MIT (package); Project Gutenberg text, public domain",
           "Moby Dick (Melville), Gutenberg header/footer removed, sentence-split and packed.",
           _mobydick),
]
