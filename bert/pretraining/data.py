"""Streaming training batches from plain text: one sentence or document per line, any corpus size.

Lines are read a chunk at a time, shuffled within the chunk, tokenized, grouped by length (little padding)
and cut into batches. The order depends only on (seed, epoch), so a resumed run skips to the same batch.
With next-sentence (or sentence-order) prediction, a blank line ends a document and each line is one segment.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import torch

from ..errors import DataFileError, InvalidInputError
from ..tokenizer import BertTokenizer
from .nsp import make_pairs

log = logging.getLogger(__name__)


@dataclass
class Batch:
    input_ids: torch.Tensor  # [batch, seq], before masking
    token_type_ids: torch.Tensor  # [batch, seq]
    attention_mask: torch.Tensor  # [batch, seq], 1 for real tokens, 0 for padding
    maskable: torch.Tensor  # [batch, seq] bool, False for [CLS], [SEP] and padding
    nsp_labels: torch.Tensor | None  # [batch], with next-sentence prediction only

    @property
    def num_tokens(self) -> int:
        return int(self.attention_mask.sum())

    def to(self, device: torch.device | str) -> "Batch":
        return Batch(*(None if t is None else t.to(device) for t in self._tensors()))

    def rows(self, index: torch.Tensor) -> "Batch":
        """The examples at `index` (a LongTensor of row numbers)."""
        return Batch(*(None if t is None else t[index] for t in self._tensors()))

    def sequence(self, row: int) -> "Batch":
        """Example `row` alone, a batch of one without its padding."""
        length = int(self.attention_mask[row].sum())
        return Batch(*(None if t is None else t[row : row + 1, :length] if t.dim() == 2 else t[row : row + 1] for t in self._tensors()))

    def _tensors(self) -> list[torch.Tensor | None]:
        return [getattr(self, field.name) for field in dataclasses.fields(self)]


@dataclass(frozen=True)
class DataConfig:
    max_length: int = 128  # tokens per example, [CLS] and [SEP] included; longer lines are cut at the end
    batch_size: int = 32  # examples per batch
    chunk_lines: int = 20000  # lines read, shuffled and tokenized together (bounds memory)
    next_sentence: bool = False  # build [CLS] A [SEP] B [SEP] pairs with NSP labels
    sentence_order: bool = False  # build pairs with sentence-order labels instead: label 1 is A and B swapped (ALBERT)
    full_sentences: bool = False  # pack consecutive lines into each example, up to max_length, no pairs (RoBERTa)

    def __post_init__(self):
        if self.next_sentence and self.sentence_order:
            raise InvalidInputError("choose next-sentence or sentence-order pairs, not both: they share one head")
        if self.full_sentences and self.pair_task:
            raise InvalidInputError("full-sentence inputs have no sentence pairs: drop next-sentence or sentence-order prediction")

    @property
    def pair_task(self) -> str | None:
        """"nsp", "sop", or None for single sentences."""
        return "sop" if self.sentence_order else "nsp" if self.next_sentence else None


def batches(path: str | Path, tokenizer: BertTokenizer, config: DataConfig, seed: int, epoch: int) -> Iterator[Batch]:
    """One epoch of batches over the file, in an order fixed by (seed, epoch)."""
    rng = random.Random(f"{seed}-{epoch}")
    with open(path, encoding="utf-8") as lines:
        while chunk := list(itertools.islice(lines, config.chunk_lines)):
            if config.pair_task:
                examples = pair_examples(chunk, tokenizer, config, rng)
            else:
                examples = (full_sentence_examples if config.full_sentences else single_examples)(chunk, tokenizer, config)
            rng.shuffle(examples)
            examples.sort(key=lambda e: len(e[0]))  # similar lengths together: little padding
            groups = [examples[i : i + config.batch_size] for i in range(0, len(examples), config.batch_size)]
            rng.shuffle(groups)
            for group in groups:
                yield collate(group, tokenizer)


def infinite_batches(path, tokenizer, config: DataConfig, seed: int, skip: int = 0) -> Iterator[Batch]:
    """Epoch after epoch; `skip` batches are passed over (cheaply) to resume where a run stopped."""
    produced = 0
    for epoch in itertools.count():
        any_batch = False
        for batch in batches(path, tokenizer, config, seed, epoch):
            any_batch = True
            produced += 1
            if produced > skip:
                yield batch
        if not any_batch:
            need = " in at least two documents (blank lines between them) for next-sentence pairs" if config.next_sentence else ""
            need = " in documents of two lines or more for sentence-order pairs" if config.sentence_order else need
            raise DataFileError(f"{path} holds no text to train on{need}")


def collate(examples: list[tuple[list[int], list[int], int]], tokenizer: BertTokenizer) -> Batch:
    """Right-pad (positions are absolute, Devlin et al. 2019, so pad on the right) and stack, on the CPU (the trainer
    moves each batch to the model's device)."""
    length = max(len(ids) for ids, _, _ in examples)
    ids = torch.full((len(examples), length), tokenizer.pad_id, device="cpu")
    types = torch.zeros((len(examples), length), dtype=torch.long, device="cpu")
    for row, (example_ids, example_types, _) in enumerate(examples):
        ids[row, : len(example_ids)] = torch.tensor(example_ids, device="cpu")
        types[row, : len(example_types)] = torch.tensor(example_types, device="cpu")
    attention_mask = (ids != tokenizer.pad_id).long()
    maskable = (ids != tokenizer.pad_id) & (ids != tokenizer.cls_id) & (ids != tokenizer.sep_id)
    labels = [label for _, _, label in examples]
    nsp = torch.tensor(labels, device="cpu") if labels[0] >= 0 else None
    return Batch(ids, types, attention_mask, maskable, nsp)


def single_examples(chunk: list[str], tokenizer: BertTokenizer, config: DataConfig):
    """[CLS] line [SEP] for each non-empty line, cut to max_length: (ids, segment ids, -1)."""
    texts = [line.strip() for line in chunk if line.strip()]
    room = config.max_length - 2
    return [
        ([tokenizer.cls_id] + ids[:room] + [tokenizer.sep_id], [0] * (min(len(ids), room) + 2), -1)
        for ids in tokenizer.encode_plain(texts)
        if ids
    ]


def full_sentence_examples(chunk: list[str], tokenizer: BertTokenizer, config: DataConfig):
    """RoBERTa's FULL-SENTENCES inputs (Liu et al. 2019, section 4.2): consecutive lines packed into
    [CLS] line line ... [SEP], up to max_length tokens, with no next-sentence pairs; where a document ends (a blank
    line) and the example goes on into the next, an extra [SEP] between them. A line longer than an example is cut.
    (ids, segment ids, -1), in the chunk's order."""
    room, examples, current = config.max_length - 2, [], []
    lines, ends = [], []  # each non-empty line, and whether a document ends after it
    for line in chunk:
        if line.strip():
            lines.append(line.strip())
            ends.append(False)
        elif ends:
            ends[-1] = True
    for ids, document_ends in zip(tokenizer.encode_plain(lines), ends):
        if not ids:
            continue
        ids = ids[:room]
        if current and len(current) + len(ids) > room:
            examples.append(current)
            current = []
        current = current + ids
        if document_ends and current and len(current) < room:
            current.append(tokenizer.sep_id)
    if current:
        examples.append(current)
    examples = [ids[:-1] if ids[-1] == tokenizer.sep_id else ids for ids in examples]  # [SEP] closes the example anyway
    return [([tokenizer.cls_id] + ids + [tokenizer.sep_id], [0] * (len(ids) + 2), -1) for ids in examples]


def pair_examples(chunk: list[str], tokenizer: BertTokenizer, config: DataConfig, rng: random.Random):
    """[CLS] A [SEP] B [SEP] for each adjacent pair of lines in a document (blank lines end documents), B
    replaced or A and B swapped as nsp.make_pairs draws: (ids, segment ids, label), in document order."""
    documents, current = [], []
    for line in chunk + [""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            documents.append(current)
            current = []
    encoded = [[ids for ids in tokenizer.encode_plain(doc) if ids] for doc in documents]
    encoded = [doc for doc in encoded if doc]
    if config.pair_task == "nsp" and len(encoded) < 2:  # e.g. the file's last chunk holds the tail of one document: no other to draw B from
        log.warning("a chunk of %d lines holds %d document(s); its next-sentence pairs are skipped", len(chunk), len(encoded))
        return []
    examples = []
    for pair in make_pairs(encoded, rng, config.pair_task):
        room = config.max_length - 3
        first = pair.first[: max(room // 2, room - len(pair.second))]
        second = pair.second[: room - len(first)]
        ids = [tokenizer.cls_id] + first + [tokenizer.sep_id] + second + [tokenizer.sep_id]
        examples.append((ids, [0] * (len(first) + 2) + [1] * (len(second) + 1), pair.label))
    return examples


def word_numbers(input_ids: torch.Tensor, maskable: torch.Tensor, tokenizer: BertTokenizer) -> torch.Tensor:
    """Number the words of a batch for whole-word masking: a "##" piece shares its word's number; -1 elsewhere."""
    starts = maskable & ~tokenizer.continuation_mask[input_ids]
    numbers = starts.flatten().cumsum(0).reshape(input_ids.shape) - 1
    return torch.where(maskable, numbers, -1)
