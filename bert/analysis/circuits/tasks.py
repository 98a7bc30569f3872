"""Clean/counterfactual pairs for circuits: the built-in minimal pairs (bert/data/circuit_pairs.tsv, described in
bert/data/README_circuits.md) and the user's own, from a TSV or JSONL file.

A pair: a clean sentence with one [MASK], a counterfactual of the same number of word pieces with the [MASK] at the
same place, the answer the clean sentence favours and the foil the counterfactual favours (one vocabulary token
each). A file's problem is a DataFileError naming its 1-based line: one line of text, what to change.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ...errors import BertError, DataFileError
from ...tokenizer import BertTokenizer
from ..causal.patching import Contrast, prepare_contrast

PAIRS_FILE = Path(__file__).resolve().parents[2] / "data" / "circuit_pairs.tsv"
COLUMNS = ("clean", "corrupted", "answer", "foil")  # a user's file needs these; "task" is optional
TASKS = ("agreement-simple", "agreement-pp", "agreement-rc", "pronoun")


@dataclass(frozen=True)
class PairText:
    clean: str
    corrupted: str
    answer: str
    foil: str
    task: str = ""
    line: int = 0  # the 1-based line of its file (0: typed in)


def builtin_pairs(task: str | None = None) -> list[PairText]:
    """The shipped pairs, every task or one of TASKS."""
    if task is not None and task not in TASKS:
        raise DataFileError(f"unknown task {task!r}; the built-in tasks are {', '.join(TASKS)}")
    pairs = read_pairs(PAIRS_FILE)
    return [pair for pair in pairs if task is None or pair.task == task]


def read_pairs(path: str | Path) -> list[PairText]:
    """Pairs from a .tsv (a header row naming the columns clean, corrupted, answer, foil, optionally task) or a
    .jsonl file (one object with those keys a line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DataFileError(f"cannot read the pairs file {path.name}: {type(error).__name__}") from None
    rows = _jsonl_rows(text) if path.suffix == ".jsonl" else _tsv_rows(text)
    pairs = []
    for line, row in rows:
        missing = [column for column in COLUMNS if not str(row.get(column) or "").strip()]
        if missing:
            raise DataFileError(f"line {line}: the pair has no {', '.join(missing)}")
        pairs.append(PairText(*(str(row[column]).strip() for column in COLUMNS), str(row.get("task") or ""), line))
    if not pairs:
        raise DataFileError(f"{path.name} holds no pair: give a header row and one pair a line")
    return pairs


def _tsv_rows(text: str) -> list[tuple[int, dict]]:
    lines = text.splitlines()
    if not lines:
        return []
    header = next(csv.reader([lines[0]], delimiter="\t"))
    if not set(COLUMNS) <= set(header):
        raise DataFileError(f"line 1: the header must name the columns {', '.join(COLUMNS)} (tab-separated), not {header}")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if line.strip():
            values = next(csv.reader([line], delimiter="\t"))
            if len(values) != len(header):
                raise DataFileError(f"line {number}: {len(values)} tab-separated values, the header has {len(header)}")
            rows.append((number, dict(zip(header, values))))
    return rows


def _jsonl_rows(text: str) -> list[tuple[int, dict]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise DataFileError(f"line {number}: not a JSON object") from None
        if not isinstance(row, dict):
            raise DataFileError(f"line {number}: not a JSON object")
        rows.append((number, row))
    return rows


def contrasts(tokenizer: BertTokenizer, pairs: Sequence[PairText], max_length: int = 512) -> list[Contrast]:
    """Each pair checked and encoded (bert/analysis/causal/patching.py's prepare_contrast); a bad pair raises
    its error with its line in front."""
    checked = []
    for pair in pairs:
        try:
            checked.append(prepare_contrast(tokenizer, pair.clean, pair.corrupted, pair.answer, pair.foil, max_length))
        except BertError as error:
            if not pair.line:
                raise
            raise type(error)(f"line {pair.line}: {error}") from None
    return checked
