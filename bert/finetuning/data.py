"""Labelled examples for fine-tuning, read from CSV, TSV or JSONL, checked line by line, and turned into batches.

Sentence tasks: columns `text`, optional `text_pair`, `label` (a class name, or a number for regression).
Token tasks: `tokens` and `labels`, one label per word (JSONL lists, or space-separated words in CSV/TSV);
each word's first word piece carries its label, the other pieces are ignored by the loss (IGNORE).
"""
from __future__ import annotations

import csv
import json
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

from ..errors import DataFileError
from ..tokenizer import BertTokenizer

log = logging.getLogger(__name__)

IGNORE = -100  # label of positions the loss skips: special tokens, padding, a word's later pieces
TASKS = ("classify", "regression", "tokens")


@dataclass(frozen=True)
class Example:
    text: str | list[str]  # a sentence, or (token tasks) its words
    pair: str | None  # sentence B of a pair task
    label: str | float | list[str]  # class name, number (regression) or one label per word
    where: str  # "file:line", for error messages


@dataclass(frozen=True)
class Features:
    input_ids: list[int]
    token_type_ids: list[int]
    label: int | float | list[int]  # class id, number, or per-token ids with IGNORE


def read_examples(path: str | Path, task: str) -> list[Example]:
    """Every row of a .csv, .tsv or .jsonl file as an Example; a DataFileError names the file and line of a bad one."""
    if task not in TASKS:
        raise DataFileError(f"task must be one of {TASKS}, not {task!r}")
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path} does not exist")
    rows = list(_rows(path))
    if not rows:
        raise DataFileError(f"{path} has no examples")
    return [_example(row, task, where) for where, row in rows]


def _rows(path: Path) -> Iterator[tuple[str, dict]]:
    suffix = path.suffix.lower()
    with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: a byte-order mark is not part of the first name
        if suffix == ".jsonl":
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DataFileError(f"{path}:{number}: not valid JSON ({error})") from error
                if not isinstance(row, dict):
                    raise DataFileError(f"{path}:{number}: each line must be a JSON object with the example's fields")
                yield f"{path}:{number}", row
        elif suffix in (".csv", ".tsv"):
            reader = csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ",")
            for row in reader:
                yield f"{path}:{reader.line_num}", row
        else:
            raise DataFileError(f"{path}: expected a .csv, .tsv or .jsonl file")


def _example(row: dict, task: str, where: str) -> Example:
    if task == "tokens":
        words, labels = _field(row, "tokens", where), _field(row, "labels", where)
        words, labels = (v.split() if isinstance(v, str) else v for v in (words, labels))
        if not isinstance(words, list) or not isinstance(labels, list) or len(words) != len(labels) or not words:
            raise DataFileError(f"{where}: `tokens` and `labels` must be non-empty lists of the same length (one label per word)")
        return Example([str(w) for w in words], None, [str(label) for label in labels], where)
    text, label = _field(row, "text", where), _field(row, "label", where)
    pair = row.get("text_pair") or None
    if task == "regression":
        try:
            label = float(label)
        except (TypeError, ValueError):
            raise DataFileError(f"{where}: label {label!r} is not a number (task regression)") from None
    return Example(str(text), None if pair is None else str(pair), label if task == "regression" else str(label), where)


def _field(row: dict, name: str, where: str):
    value = row.get(name)
    if value is None or value == "":
        raise DataFileError(f"{where}: no `{name}` (the file's fields are {sorted(k for k in row if k)})")
    return value


def label_names(examples: list[Example]) -> list[str]:
    """The classes seen in training, sorted: their order is the classifier's (id2label)."""
    names = set()
    for example in examples:
        names.update(example.label if isinstance(example.label, list) else [example.label])
    return sorted(names)


def split(examples: list[Example], dev_fraction: float, seed: int) -> tuple[list[Example], list[Example]]:
    """A seeded random train/dev split."""
    if not 0 < dev_fraction < 1:
        raise DataFileError(f"dev fraction must lie between 0 and 1, not {dev_fraction}")
    shuffled = examples[:]
    random.Random(seed).shuffle(shuffled)
    cut = max(1, round(len(shuffled) * dev_fraction))
    if cut >= len(shuffled):
        raise DataFileError(f"{len(examples)} examples are too few to split into train and dev")
    return shuffled[cut:], shuffled[:cut]


def encode(examples: list[Example], tokenizer: BertTokenizer, labels: list[str] | None, max_length: int) -> list[Features]:
    """Token ids and label ids. A label not among `labels` is a DataFileError naming its line. Examples longer
    than max_length are cut (the longer sentence loses its end) and the count is logged."""
    label_id = {name: i for i, name in enumerate(labels or [])}
    features, truncated = [], 0
    for example in examples:
        if isinstance(example.text, list):
            feature, cut = _encode_words(example, tokenizer, label_id, max_length)
        else:
            encoding = tokenizer.encode(example.text, example.pair, max_length=max_length, truncate=True)
            label = example.label if labels is None else _label_id(example.label, label_id, example.where)
            feature, cut = Features(encoding.input_ids, encoding.token_type_ids, label), encoding.truncated
        features.append(feature)
        truncated += cut > 0
    if truncated:
        log.warning("%d of %d examples were longer than %d tokens and were cut at the end", truncated, len(examples), max_length)
    return features


def _label_id(label: str, label_id: dict[str, int], where: str) -> int:
    if label not in label_id:
        raise DataFileError(f"{where}: label {label!r} is not among the training labels {sorted(label_id)}")
    return label_id[label]


def _encode_words(example: Example, tokenizer: BertTokenizer, label_id: dict[str, int], max_length: int) -> tuple[Features, int]:
    """[CLS] pieces [SEP]; each word's first piece has its label id, the others (and [CLS], [SEP]) IGNORE."""
    ids, labels = [tokenizer.cls_id], [IGNORE]
    for pieces, label in zip(tokenizer.encode_plain(example.text), example.label):
        label = _label_id(label, label_id, example.where)
        ids += pieces
        labels += ([label] + [IGNORE] * (len(pieces) - 1)) if pieces else []  # a word with no pieces has no label
    cut = max(0, len(ids) + 1 - max_length)
    ids, labels = ids[: len(ids) - cut] + [tokenizer.sep_id], labels[: len(labels) - cut] + [IGNORE]
    return Features(ids, [0] * len(ids), labels), cut


@dataclass(frozen=True)
class Batch:
    input_ids: torch.Tensor  # [batch, seq]
    token_type_ids: torch.Tensor  # [batch, seq]
    attention_mask: torch.Tensor  # [batch, seq]
    labels: torch.Tensor  # [batch] class ids (long) or numbers (float), or [batch, seq] token label ids

    def to(self, device: torch.device) -> "Batch":
        return Batch(*(t.to(device) for t in self._tensors()))

    def rows(self, index: torch.Tensor) -> "Batch":
        """The examples at `index` (a LongTensor of row numbers)."""
        return Batch(*(t[index] for t in self._tensors()))

    def _tensors(self) -> tuple[torch.Tensor, ...]:
        return self.input_ids, self.token_type_ids, self.attention_mask, self.labels


def collate(features: list[Features], pad_id: int) -> Batch:
    """Pad on the right to the longest in the batch."""
    longest = max(len(f.input_ids) for f in features)
    pad = lambda values, fill: values + [fill] * (longest - len(values))  # noqa: E731
    first = features[0].label
    if isinstance(first, list):
        labels = torch.tensor([pad(f.label, IGNORE) for f in features])
    else:
        labels = torch.tensor([f.label for f in features], dtype=torch.float if isinstance(first, float) else torch.long)
    return Batch(
        torch.tensor([pad(f.input_ids, pad_id) for f in features]),
        torch.tensor([pad(f.token_type_ids, 0) for f in features]),
        torch.tensor([pad([1] * len(f.input_ids), 0) for f in features]),
        labels,
    )


def epoch_batches(features: list[Features], batch_size: int, seed: int, epoch: int, pad_id: int) -> list[Batch]:
    """One epoch in an order drawn from (seed, epoch): a resumed run sees the same batches."""
    order = list(range(len(features)))
    random.Random(seed * 1_000_003 + epoch).shuffle(order)
    return [collate([features[i] for i in order[start : start + batch_size]], pad_id) for start in range(0, len(order), batch_size)]


def in_order_batches(features: list[Features], batch_size: int, pad_id: int) -> list[Batch]:
    return [collate(features[start : start + batch_size], pad_id) for start in range(0, len(features), batch_size)]
