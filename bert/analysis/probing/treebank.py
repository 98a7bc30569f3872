"""Labelled sentences for probing: CoNLL-U files (any Universal Dependencies language) and labelled-column files
(sentence_sets.py reads the built-in WordNet sentences and plain text into the same `Treebank`).

    treebank = read_treebank("en_ewt-ud-dev.conllu")      # or read_treebank(uploaded_bytes, name="mine.conllu")
    treebank = builtin_treebank("dev")                     # UD English EWT dev (or "test"), shipped in bert/data
    train, test = treebank.split(test_fraction=0.2, seed=0)   # by sentence, seeded
    treebank.tasks        # ["upos", "xpos", "deprel", "arcs", "distance", "depth"]: what this data supports
    treebank.skipped      # (SkippedSentence(line, reason), ...): sentences left out, with why

Two formats, told apart by the file's extension and content (`detect_format`):

- CoNLL-U (.conllu; .conll or .txt with 10 tab-separated columns and numeric ids), read with the maintained
  `conllu` package. Multiword-token lines ("1-2") and empty nodes ("8.1") are not words of the tree and are left
  out. Label columns: upos, xpos and deprel (each only when the file fills it in); heads give the tree.
- Columns (.tsv, .txt, .conll otherwise; e.g. CoNLL-2003): one token per line, its word first and one or more
  label columns after it, a blank line between sentences; every label column is a task. Columns are named
  "column2", "column3", ... or by a first line "# global.columns = WORD POS CHUNK NER" (CoNLL-U Plus style).
  "-DOCSTART-" lines are ignored.

A bad sentence (wrong column count, a word id out of order, a head outside the sentence, a cycle, no root or two)
is left out and recorded in `Treebank.skipped` with its line and what is wrong; a file with no usable sentence,
not UTF-8, empty or over `max_bytes` raises `TreebankError` naming the line. `strict=True` raises on the first bad
sentence instead.
"""
from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from ...errors import TreebankError, shortened
from .task_table import supported_tasks

log = logging.getLogger(__name__)

BUILTIN_FOLDER = Path(__file__).resolve().parents[2] / "data" / "ud_english_ewt"
BUILTIN_FILES = {"dev": "en_ewt-ud-dev.conllu", "test": "en_ewt-ud-test.conllu"}
BUILTIN_NAMES = ("ud-ewt", "ud-ewt-dev", "ud-ewt-test")  # what --data accepts for the shipped treebank
MAX_BYTES = 100_000_000  # default size limit of a file to read
MAX_ID_CHARACTERS = 12  # a CoNLL-U word id or head ("12", "3-4", "8.1") longer than this is refused unparsed
ID_COLUMN, HEAD_COLUMN = "word id (column 1)", "head (column 7)"
CONLLU_COLUMNS = 10
CONLLU_LABELS = ("upos", "xpos", "deprel")  # the label columns a CoNLL-U file can give
MISSING = "_"  # CoNLL's "no value"


@dataclass(frozen=True)
class TreebankSentence:
    """One sentence: its words and, per label column, one label per word (MISSING "_" where the file has none)."""

    words: tuple[str, ...]
    labels: dict[str, tuple[str, ...]]  # column name -> a label per word, e.g. {"upos": ("PRON", "VERB", ...)}
    heads: tuple[int, ...] | None = None  # per word its head's 1-based index, 0 for the root; None: no tree
    line: int = 0  # 1-based line of the sentence's first line in its file
    sent_id: str | None = None  # CoNLL-U "# sent_id = ..." when present

    def __len__(self) -> int:
        return len(self.words)

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class SkippedSentence:
    line: int  # 1-based line where the problem is
    reason: str  # what is wrong, e.g. "head 14 is outside the sentence (words 1..12)"


@dataclass(frozen=True)
class Treebank:
    name: str  # file name, or "UD English EWT (dev)"
    format: str  # "conllu", "columns", or "text" (sentences read from text: bert.analysis.probing.sentence_sets)
    sentences: tuple[TreebankSentence, ...]
    label_columns: tuple[str, ...] = ()  # columns with labels, e.g. ("upos", "xpos", "deprel"); each is a word-tag task
    skipped: tuple[SkippedSentence, ...] = ()  # sentences left out, with their line and why
    has_trees: bool = False  # every sentence has heads: arcs, distance and depth can run

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def num_words(self) -> int:
        return sum(len(s) for s in self.sentences)

    @property
    def tasks(self) -> list[str]:
        """The probing tasks this data offers (task_table.supported_tasks): a treebank's label columns, then arcs,
        distance, depth when it has trees (arcs also needs a deprel column); text's text tasks and label columns."""
        return supported_tasks(self.format, self.label_columns, self.has_trees)

    def split(self, test_fraction: float = 0.2, seed: int = 0) -> tuple["Treebank", "Treebank"]:
        """(train, test): a seeded split by sentence, `test_fraction` of the sentences (at least one) held out;
        each side keeps the file order."""
        if not 0 < test_fraction < 1:
            raise TreebankError(f"test_fraction must lie between 0 and 1, not {test_fraction}")
        if len(self) < 2:
            raise TreebankError(f"{self.name}: {len(self)} sentence(s) cannot be split into training and test sentences")
        order = torch.randperm(len(self), generator=torch.Generator().manual_seed(seed)).tolist()
        held_out = set(order[: min(len(self) - 1, max(1, round(test_fraction * len(self))))])
        pick = lambda keep: tuple(s for i, s in enumerate(self.sentences) if (i in held_out) == keep)  # noqa: E731
        return replace(self, name=f"{self.name} (train part)", sentences=pick(False)), replace(
            self, name=f"{self.name} (test part)", sentences=pick(True)
        )

    def skipped_summary(self, limit: int = 5) -> str:
        """One line: how many sentences were left out and the first few reasons with their lines."""
        if not self.skipped:
            return ""
        first = "; ".join(f"line {s.line}: {s.reason}" for s in self.skipped[:limit])
        more = f"; and {len(self.skipped) - limit} more" if len(self.skipped) > limit else ""
        return f"{len(self.skipped)} sentence(s) of {self.name} left out ({first}{more})"


def read_treebank(
    source: str | Path | bytes, name: str | None = None, format: str | None = None, max_bytes: int = MAX_BYTES,
    strict: bool = False,
) -> Treebank:
    """A treebank from a path, or from an upload's bytes (give its file `name`, whose extension helps tell the
    format). format: "conllu", "columns" or None (detect from the extension and content). Built-in names
    ("ud-ewt-dev", "ud-ewt-test") load the shipped treebank."""
    if isinstance(source, str) and source in BUILTIN_NAMES:
        return builtin_treebank("test" if source.endswith("test") else "dev")
    if isinstance(source, bytes):
        data, name = source, name or "uploaded file"
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise TreebankError(f"{path} is not a file; give a .conllu file or a token-per-line file with label columns")
        _check_size(path.stat().st_size, path.name, max_bytes)  # before reading it
        data, name = path.read_bytes(), name or path.name
    text = decode(data, name, max_bytes)
    format = format or detect_format(name, text)
    if format == "conllu":
        return _read_conllu(text, name, strict)
    if format == "columns":
        return _read_columns(text, name, strict)
    raise TreebankError(f"unknown treebank format {format!r}: use conllu or columns")


def builtin_treebank(split: str = "dev") -> Treebank:
    """The shipped UD English EWT dev or test file (CC BY-SA 4.0; see bert/data/ud_english_ewt/README.md)."""
    if split not in BUILTIN_FILES:
        raise TreebankError(f"the built-in treebank has splits {sorted(BUILTIN_FILES)}, not {split!r}")
    return _builtin(split)


@functools.lru_cache(maxsize=2)
def _builtin(split: str) -> Treebank:
    treebank = read_treebank(BUILTIN_FOLDER / BUILTIN_FILES[split], format="conllu")
    return replace(treebank, name=f"UD English EWT ({split})")


def decode(data: bytes, name: str, max_bytes: int = MAX_BYTES) -> str:
    """UTF-8 text of a file's bytes (a byte-order mark dropped); TreebankError for too large, empty, or not UTF-8."""
    _check_size(len(data), name, max_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise TreebankError(f"{name}, line {line}: not UTF-8 text (byte {data[error.start]:#04x}); save the file as UTF-8", line) from error
    if not text.strip():
        raise TreebankError(f"{name} is empty; give sentences, one token per line, a blank line between them")
    return text


def _check_size(size: int, name: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise TreebankError(f"{name} is {size:,} bytes, over the limit of {max_bytes:,} bytes; split it into smaller files")


def detect_format(name: str, text: str) -> str:
    """"conllu" for .conllu files, and for others whose first token line has 10 tab-separated columns and an
    integer (or range or decimal) id first; "columns" otherwise."""
    if name.lower().endswith(".conllu"):
        return "conllu"
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            columns = line.rstrip("\r\n").split("\t")
            return "conllu" if len(columns) == CONLLU_COLUMNS and re.fullmatch(r"\d+([-.]\d+)?", columns[0]) else "columns"
    return "columns"


# ---- reading ----------------------------------------------------------------------------------------------------


class _BadSentence(Exception):
    def __init__(self, line: int, reason: str):
        self.line, self.reason = line, reason
        super().__init__(f"line {line}: {reason}")


def _blocks(text: str):
    """(first line number, [(line number, line), ...]) for each blank-line-separated block."""
    block: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            block.append((number, line.rstrip("\r\n")))
        elif block:
            yield block[0][0], block
            block = []
    if block:
        yield block[0][0], block


def _collect(name: str, fmt: str, text: str, parse, strict: bool, **extra) -> Treebank:
    sentences, skipped = [], []
    for first, block in _blocks(text):
        try:
            sentence = parse(first, block)
        except _BadSentence as bad:
            if strict:
                raise TreebankError(f"{name}, {bad}", bad.line) from None
            skipped.append(SkippedSentence(bad.line, bad.reason))
            continue
        if sentence is not None:
            sentences.append(sentence)
    if not sentences:
        why = f": line {skipped[0].line}: {skipped[0].reason}" if skipped else ""
        raise TreebankError(f"{name} has no usable sentence{why}", skipped[0].line if skipped else None)
    if skipped:
        log.warning("%s: %d sentence(s) left out, the first at line %d: %s", name, len(skipped), skipped[0].line, skipped[0].reason)
    return Treebank(name, fmt, tuple(sentences), skipped=tuple(skipped), **extra)


def _read_conllu(text: str, name: str, strict: bool) -> Treebank:
    from conllu.exceptions import ParseException
    from conllu.parser import DEFAULT_FIELDS, parse_line

    def parse(first: int, block) -> TreebankSentence | None:
        sent_id, rows = None, []
        for number, line in block:
            if line.startswith("#"):
                key, _, value = line[1:].partition("=")
                sent_id = value.strip() if key.strip() == "sent_id" else sent_id
                continue
            columns = line.split("\t")
            if len(columns) != CONLLU_COLUMNS:
                raise _BadSentence(number, f"{len(columns)} tab-separated columns; CoNLL-U has {CONLLU_COLUMNS}")
            for column, value in ((ID_COLUMN, columns[0]), (HEAD_COLUMN, columns[6])):
                if len(value) > MAX_ID_CHARACTERS:
                    raise _BadSentence(number, f"the {column} is {len(value):,} characters long; ids are small "
                                               "whole numbers (1, 2, 3, ...)")
            try:
                token = parse_line(line, DEFAULT_FIELDS)
            except (ParseException, ValueError) as error:
                raise _BadSentence(number, shortened(str(error))) from None
            if isinstance(token["id"], int):  # "1-2" multiword tokens and "8.1" empty nodes are tuples
                rows.append((number, token))
        if not rows:
            return None
        for expected, (number, token) in enumerate(rows, 1):
            if token["id"] != expected:
                raise _BadSentence(number, f"word id {token['id']} where {expected} was due; ids run 1, 2, 3, ...")
        heads = [token["head"] for _, token in rows]
        if any(h is None for h in heads):
            if not all(h is None for h in heads):
                number = next(n for n, t in rows if t["head"] is None)
                raise _BadSentence(number, "no head (\"_\") while other words of the sentence have one")
            heads = None
        else:
            check_tree(heads, [n for n, _ in rows])
        labels = {column: tuple(_label(token[column]) for _, token in rows) for column in CONLLU_LABELS}
        return TreebankSentence(tuple(t["form"] for _, t in rows), labels, None if heads is None else tuple(heads), first, sent_id)

    treebank = _collect(name, "conllu", text, parse, strict)
    columns = tuple(c for c in CONLLU_LABELS if any(l != MISSING for s in treebank.sentences for l in s.labels[c]))
    sentences = tuple(replace(s, labels={c: s.labels[c] for c in columns}) for s in treebank.sentences)
    has_trees = all(s.heads is not None for s in sentences)
    return replace(treebank, sentences=sentences, label_columns=columns, has_trees=has_trees)


def _label(value) -> str:
    return MISSING if value is None else str(value)


def check_tree(heads: list[int], lines: list[int]) -> None:
    """heads (1-based, 0 = root) must make one tree: every head inside the sentence, exactly one root, no cycle.
    Raises _BadSentence naming the line of the offending word."""
    n = len(heads)
    for head, number in zip(heads, lines):
        if not 0 <= head <= n:
            raise _BadSentence(number, f"head {head} is outside the sentence (words 1..{n}, 0 for the root)")
    roots = [i for i, h in enumerate(heads) if h == 0]
    if not roots:
        raise _BadSentence(lines[0], "no root: no word has head 0")
    if len(roots) > 1:
        raise _BadSentence(lines[roots[1]], f"two roots (words {roots[0] + 1} and {roots[1] + 1}); a tree has one")
    for start in range(n):
        seen, word = [], start
        while heads[word] != 0:
            seen.append(word)
            word = heads[word] - 1
            if word in seen:
                cycle = seen[seen.index(word):]
                path = " -> ".join(str(i + 1) for i in cycle + [word])
                raise _BadSentence(lines[min(cycle)], f"a cycle of heads: words {path}")


def _read_columns(text: str, name: str, strict: bool) -> Treebank:
    lines = text.splitlines()
    header = next((l for l in lines[:1] if l.startswith("# global.columns")), None)
    names = header.partition("=")[2].split() if header else None
    separator = "\t" if any("\t" in l for l in lines if l.strip() and not l.startswith("#")) else None
    first_row = next(((n, l) for n, l in enumerate(lines, 1) if l.strip() and not _ignored(l, separator)), None)
    if first_row is None:
        raise TreebankError(f"{name} has no token lines (only comments or -DOCSTART-)")
    width = len(first_row[1].split(separator))
    if width < 2:
        raise TreebankError(f"{name}, line {first_row[0]}: one column only; give a word and at least one label column per line", first_row[0])
    names = [n.lower() for n in names] if names and len(names) == width else [f"column{i}" for i in range(1, width + 1)]
    label_columns = tuple(names[1:])

    def parse(first: int, block) -> TreebankSentence | None:
        words, labels = [], [[] for _ in label_columns]
        for number, line in block:
            if _ignored(line, separator):
                continue
            columns = line.split(separator)
            if len(columns) != width:
                raise _BadSentence(number, f"{len(columns)} columns; the file's first token line (line {first_row[0]}) has {width}")
            words.append(columns[0])
            for values, value in zip(labels, columns[1:]):
                values.append(value)
        if not words:
            return None
        return TreebankSentence(tuple(words), dict(zip(label_columns, map(tuple, labels))), None, first)

    return _collect(name, "columns", text, parse, strict, label_columns=label_columns)


def _ignored(line: str, separator: str | None) -> bool:
    return line.startswith("#") or line.split(separator)[0] == "-DOCSTART-"
