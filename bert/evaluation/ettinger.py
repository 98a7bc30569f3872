"""Ettinger (2020)'s psycholinguistic cloze diagnostics, scored for "is the expected word among the top 5?".

CPRAG-34 (commonsense and pragmatic inference: 34 contexts, each with one expected word), ROLE-88 (who did what to
whom: 88 contexts, some with several expected words), NEG-136-SIMP affirmative (18 "A robin is a [MASK]." contexts,
true completion expected). Inputs are the folder's `inputs/<test>-contextlist` lines (the exact strings the
published outputs were computed on) + ".", tokenized with [CLS]/[SEP]; the top 5 are the five most probable tokens
at the [MASK] over the whole vocabulary. The expected words come from `datasets/*.tsv` (ROLE-88's "a|b" means either);
this reproduces the published accuracies from the published top-5 files (github.com/aetting/lm-diagnostics).

The folder is EXTERNAL/ettinger2020_psycholinguistic_cloze (published data, never part of this repository).
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataFileError
from ..model import Bert
from ..tokenizer import BertTokenizer
from .masked import logits_at_mask

FOLDER = "ettinger2020_psycholinguistic_cloze"
K = 5


@dataclass(frozen=True)
class Test:
    name: str  # as the paper names it
    key: str  # the folder's file stem: inputs/<key>-contextlist, outputs/<model>/modelpreds-<key>
    dataset: str  # datasets/<dataset>.tsv
    lines_per_item: int  # contextlist lines per dataset row; the item's own context is the first of them
    expected_column: str


TESTS = (
    Test("CPRAG-34", "cprag", "CPRAG-102", 3, "expected"),  # 3 lines per item: expected, within-, between-category
    Test("ROLE-88", "role", "ROLE-88", 1, "expected"),
    Test("NEG-136-SIMP", "negsimp", "NEG-136-SIMP", 4, "target_aff"),  # affirmative/negated x true/false target
)


@dataclass(frozen=True)
class ClozeProbe:
    test: str
    context: str  # ends in "[MASK]"; the model reads context + "."
    expected: tuple[str, ...]  # any of these in the top 5 counts


def read_test(folder: str | Path, test: Test) -> list[ClozeProbe]:
    folder = Path(folder)
    contexts = (folder / "inputs" / f"{test.key}-contextlist").read_text(encoding="utf-8").splitlines()
    with (folder / "datasets" / f"{test.dataset}.tsv").open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    if len(contexts) != len(rows) * test.lines_per_item:
        raise DataFileError(f"{folder}: {len(contexts)} {test.key} contexts for {len(rows)} {test.dataset} rows")
    return [
        ClozeProbe(test.name, contexts[i * test.lines_per_item], tuple(row[test.expected_column].strip().split("|")))
        for i, row in enumerate(rows)
    ]


def top_k_tokens(model: Bert, tokenizer: BertTokenizer, context: str, k: int = K) -> list[str]:
    encoding = tokenizer.encode(context + ".")
    logits = logits_at_mask(model, encoding.input_ids, tokenizer.mask_id)
    return [tokenizer.id_to_token(int(i)) for i in logits.topk(k).indices]


def score_test(model: Bert, tokenizer: BertTokenizer, probes: list[ClozeProbe], k: int = K) -> list[dict]:
    rows = []
    for probe in probes:
        top = top_k_tokens(model, tokenizer, probe.context, k)
        rows.append({"context": probe.context, "expected": list(probe.expected), "top": top,
                     "hit": any(word in top for word in probe.expected)})
    return rows


def hits(probes: list[ClozeProbe], top_lists: list[list[str]]) -> int:
    """How many probes have an expected word among their top-k list."""
    return sum(any(word in top for word in probe.expected) for probe, top in zip(probes, top_lists, strict=True))


def read_published_accuracy(folder: str | Path, test: Test, model: str = "bert-base-uncased") -> tuple[int, int]:
    """(hits, items) as results/<model>/prediction_accuracy-<key>.txt states them, e.g. "... 0.529 (18/34)"."""
    text = (Path(folder) / "results" / model / f"prediction_accuracy-{test.key}.txt").read_text(encoding="utf-8")
    found = re.search(r"in top 5 predictions: [\d.]+ \((\d+)/(\d+)\)", text, re.IGNORECASE)
    if found is None:
        raise DataFileError(f"no top-5 accuracy line in {folder}/results/{model}/prediction_accuracy-{test.key}.txt")
    return int(found[1]), int(found[2])
