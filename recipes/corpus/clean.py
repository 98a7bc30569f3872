"""The shared cleaning steps: sentence splitting, packing into passages, normalising, the acceptance filter and
the key lines are de-duplicated and matched by."""
from __future__ import annotations

import re
import unicodedata
from typing import Iterable, Iterator

MIN_WORDS = 4
MAX_WORDS = 60
PACK_WORDS = 45  # prose is packed into passages of up to this many words

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
    """Lowercase, letters, digits and single spaces: lines equal under this are duplicates."""
    k = re.sub(r"[^a-z0-9 ]+", "", line.lower())
    return " ".join(k.split())


# Items matching this are dropped by the sources of jokes, quotations and dialogue.
OFFENSIVE = re.compile(
    r"\b(sex\w*|fuck\w*|shit\w*|cunt|dick|cock|pussy|bitch\w*|bastard|whore|slut|rape\w*|"
    r"nigg\w*|fag\w*|queer|dyke|porn\w*|nazi\w*|hitler|penis|vagina|breasts?|tits?|boobs?|"
    r"orgasm\w*|masturbat\w*|nude|naked|erect\w*|lesbian\w*|homosexual\w*|gay|jew\w*|"
    r"damn\w*|ass|asses|arse|crap|piss\w*|retard\w*|suicide|"
    r"drunk\w*|booze|blondes?|virgin\w*|prostitut\w*)\b",
    re.I)

