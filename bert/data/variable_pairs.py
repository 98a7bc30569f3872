"""Pairs for interchange interventions: a base and a source sentence that differ in one causal variable.

    pairs = read_pairs("my_pairs.tsv")      # or .jsonl; columns base, source, base_answer, source_answer

Each sentence has one [MASK] where the variable decides the word: the base sentence's answer there is
`base_answer`, the source's `source_answer` (the subject's number decides "is" or "are"). Swapping the variable from
the source into the base should make the base say `source_answer` (Geiger et al. 2021, interchange interventions).
Generated tasks (bert/data/variable_tasks.py) fill in the words that carry the variable and the template; a user
file's pairs take the words where base and source differ, and no template.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataFileError, quoted

COLUMNS = ("base", "source", "base_answer", "source_answer")  # what a pairs file must have
MAX_PAIRS_FILE_BYTES = 20_000_000


@dataclass(frozen=True)
class VariablePair:
    base: str  # a sentence with one [MASK]
    source: str  # the same sentence with the variable's other value, the [MASK] at the same place
    base_answer: str  # the word the base sentence should give at the [MASK]
    source_answer: str
    base_word: str = ""  # the word that carries the variable in the base ("dogs"); control labels go by it
    source_word: str = ""
    base_value: str = ""  # the variable's value in each sentence ("plural"); a file's pairs: the answer
    source_value: str = ""
    template: str = ""  # which template made it (the held-out split goes by template); "" for a file's pairs
    base_item: str = ""  # the word's lexical item ("dog" for "dogs"): the held-out split goes by item
    source_item: str = ""
    line: int = 0  # the line of the file it came from (0: generated)
    subject: int = -1  # which whitespace-separated word (from 0) is the subject, from the template; -1: none named
    # (a file's pairs), the first word that differs stands for it


def differing_words(base: str, source: str) -> tuple[str, str]:
    """The whitespace-separated words where two sentences differ, joined (("dog", "dogs")); ("", "") when the
    word counts differ."""
    a, b = base.split(), source.split()
    if len(a) != len(b):
        return "", ""
    pairs = [(x, y) for x, y in zip(a, b) if x != y]
    return " ".join(x for x, _ in pairs), " ".join(y for _, y in pairs)


def first_differing_word(base: str, source: str) -> int:
    """The index (from 0) of the first whitespace-separated word where two sentences differ; 0 when none does."""
    return next((i for i, (x, y) in enumerate(zip(base.split(), source.split())) if x != y), 0)


def read_pairs(path: str | Path) -> list[VariablePair]:
    """A .tsv file with a header, or a .jsonl file (one object a line), with the columns base, source,
    base_answer, source_answer. DataFileError names the file and the line of any problem. Whether the two
    sentences have the same word pieces and one [MASK] at the same place is the model's tokenizer's to say
    (bert/analysis/causal/alignment.py checks it, with the line)."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"no pairs file at {path}: give a .tsv (with a header) or .jsonl file")
    if path.stat().st_size > MAX_PAIRS_FILE_BYTES:
        raise DataFileError(f"{path.name} is over {MAX_PAIRS_FILE_BYTES // 1_000_000} MB: keep a pairs file smaller")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise DataFileError(f"{path.name} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    return pairs_from_text(path.name, text)


def pairs_from_text(name: str, text: str) -> list[VariablePair]:
    """The pairs of a file's text (an upload's): JSON lines when `name` ends in .jsonl, else a .tsv with a header.
    DataFileError names the file and the line of any problem."""
    rows = _jsonl_rows(name, text) if name.endswith(".jsonl") else _tsv_rows(name, text)
    pairs = [_pair(name, line, row) for line, row in rows]
    if not pairs:
        raise DataFileError(f"{name} has no pairs: one line per pair, with {', '.join(COLUMNS)}")
    return pairs


def _tsv_rows(name: str, text: str):
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise DataFileError(f"{name} is empty: its first line is the header {chr(9).join(COLUMNS)}")
    header = [column.strip() for column in lines[0].split("\t")]
    missing = [column for column in COLUMNS if column not in header]
    if missing:
        raise DataFileError(f"{name}, line 1: the header lacks {', '.join(missing)} (tab-separated: {', '.join(COLUMNS)})")
    for number, row in enumerate(csv.reader(io.StringIO("\n".join(lines[1:])), delimiter="\t", quoting=csv.QUOTE_NONE), 2):
        if not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise DataFileError(f"{name}, line {number}: {len(row)} columns where the header has {len(header)}")
        yield number, dict(zip(header, row))


def _jsonl_rows(name: str, text: str):
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DataFileError(f"{name}, line {number}: not JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise DataFileError(f"{name}, line {number}: a JSON object with {', '.join(COLUMNS)} is needed, not {quoted(row)}")
        yield number, row


def _pair(name: str, line: int, row: dict) -> VariablePair:
    values = {}
    for column in COLUMNS:
        value = row.get(column)
        if not isinstance(value, str) or not value.strip():
            raise DataFileError(f"{name}, line {line}: {column} is missing or empty (got {quoted(value)})")
        values[column] = value.strip()
    if values["base_answer"] == values["source_answer"]:
        raise DataFileError(f"{name}, line {line}: base_answer and source_answer are both {quoted(values['base_answer'])}: "
                            f"the variable must change the answer")
    base_word, source_word = differing_words(values["base"], values["source"])
    if not base_word:
        raise DataFileError(f"{name}, line {line}: base and source must have the same words except where the variable "
                            f"differs (the same number of words, at least one different)")
    return VariablePair(**values, base_word=base_word, source_word=source_word, base_value=values["base_answer"],
                        source_value=values["source_answer"], base_item=base_word, source_item=source_word, line=line)
