"""Subject-verb agreement as a cloze (Goldberg 2019, on the Gulordava et al. 2018 pairs).

Mask the verb, compare the masked-LM logits of its correct and its wrong number ("represents" vs "represent").
The procedure follows Goldberg's eval_bert.py (github.com/yoavg/bert-syntax, read not copied):
lower-case the sentence, drop "<eos>", put [MASK] at word `len_prefix`, tokenize the words before and after it
separately; skip pairs whose correct form is is/are and pairs where either form is not one vocabulary token.
With bert-base-uncased's vocabulary, 383 of the 410 pairs are scored.

The folder is EXTERNAL/goldberg2019_gulordava_agreement (published data, never part of this repository).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataFileError
from ..model import Bert
from ..tokenizer import BertTokenizer
from .masked import logits_at_mask

FOLDER = "goldberg2019_gulordava_agreement"
STIMULI = "generated.tab"
PUBLISHED = {"bert-base-uncased": "gulordava_results_bert_base_uncased.txt",
             "bert-large-uncased": "gulordava_results_bert_large_uncased.txt"}
SKIPPED_FORMS = ("is", "are")  # Goldberg leaves these out: they are too easy


@dataclass(frozen=True)
class AgreementPair:
    words: tuple[str, ...]  # lower-cased sentence without <eos>, the verb replaced by "[MASK]"
    mask_index: int  # which word is the verb
    correct: str  # the verb form that agrees with the subject
    wrong: str  # the same verb in the other number
    attractors: int  # n_attr: nouns of the other number between subject and verb
    kind: str  # "original" (natural sentence) or "generated" (nonce "colorless green" variant)

    @property
    def sentence(self) -> str:
        return " ".join(self.words)


def read_pairs(folder: str | Path) -> list[AgreementPair]:
    """All 410 pairs of generated.tab: consecutive rows `correct` then `wrong` that differ only in the verb."""
    path = Path(folder) / STIMULI
    with path.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(file, delimiter="\t"))
    pairs = []
    for good, bad in zip(rows[::2], rows[1::2]):
        if (good["class"], bad["class"]) != ("correct", "wrong") or good["sent"] != bad["sent"]:
            raise DataFileError(f"{path}: rows must come in pairs (correct, then wrong) of the same sentence: {good['sent']!r}")
        words = good["sent"].lower().split()[:-1]  # drop <eos>
        index = int(good["len_prefix"])
        words[index] = "[MASK]"
        pairs.append(AgreementPair(tuple(words), index, good["form"], bad["form"], int(good["n_attr"]), good["type"]))
    return pairs


def skip_reason(pair: AgreementPair, tokenizer: BertTokenizer) -> str | None:
    """Why Goldberg's procedure leaves a pair out, or None when it is scored."""
    if pair.correct in SKIPPED_FORMS:
        return "is/are"
    if any(tokenizer.token_to_id(form) is None for form in (pair.correct, pair.wrong)):
        return "a form is not one vocabulary token"
    return None


def input_ids(pair: AgreementPair, tokenizer: BertTokenizer) -> list[int]:
    """[CLS] + word pieces of the words before the verb + [MASK] + word pieces of the words after + [SEP]."""
    before, after = tokenizer.encode_plain([" ".join(pair.words[:pair.mask_index]), " ".join(pair.words[pair.mask_index + 1:])])
    return [tokenizer.cls_id, *before, tokenizer.mask_id, *after, tokenizer.sep_id]


def score_pairs(model: Bert, tokenizer: BertTokenizer, pairs: list[AgreementPair]) -> list[dict]:
    """One row per pair: skipped (reason or None), and for scored pairs the two logits and whether correct wins."""
    rows = []
    for pair in pairs:
        row = {"sentence": pair.sentence, "correct": pair.correct, "wrong": pair.wrong, "attractors": pair.attractors,
               "kind": pair.kind, "skipped": skip_reason(pair, tokenizer)}
        if row["skipped"] is None:
            logits = logits_at_mask(model, input_ids(pair, tokenizer), tokenizer.mask_id)
            row["correct_logit"] = float(logits[tokenizer.token_to_id(pair.correct)])
            row["wrong_logit"] = float(logits[tokenizer.token_to_id(pair.wrong)])
            row["agrees"] = row["correct_logit"] > row["wrong_logit"]
        rows.append(row)
    return rows


def accuracy(rows: list[dict]) -> tuple[int, int]:
    """(pairs where the correct form wins, pairs scored)."""
    scored = [r for r in rows if r.get("skipped") is None]
    return sum(r["agrees"] for r in scored), len(scored)


def read_published(folder: str | Path, model: str = "bert-base-uncased") -> list[dict]:
    """Goldberg's per-pair results for a model, one row per pair in generated.tab order, in score_pairs' format."""
    path = Path(folder) / PUBLISHED[model]
    lines = path.read_text(encoding="utf-8").splitlines()[1:]  # line 1 is a library warning
    rows = []
    for line in lines:
        if line.startswith("skipping"):
            rows.append({"skipped": line.removeprefix("skipping ").strip()})
            continue
        agrees, attractors, correct, correct_logit, wrong, wrong_logit, _ = line.split("\t")
        rows.append({"skipped": None, "agrees": agrees == "True", "attractors": int(attractors), "correct": correct,
                     "correct_logit": float(correct_logit), "wrong": wrong, "wrong_logit": float(wrong_logit)})
    return rows
