"""Evaluation sentences kept out of the corpus: the project's probe and cloze sentences (bert/data), and the
published evaluation sets in a folder the user names (--exclude-external DIR or BERT_INSIDE_EXTERNAL: Goldberg's
agreement pairs, Ettinger's diagnostics, LAMA), so that a model trained on the corpus is not scored on text it has
seen."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .clean import dedup_key, split_sentences

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_EXCLUDE = [str(REPO_ROOT / "bert" / "data" / name) for name in ("sentences.tsv", "everyday_cloze.tsv")]
EXTERNAL_VARIABLE = "BERT_INSIDE_EXTERNAL"  # names the folder of published evaluation data when no flag does


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


def external_sentences(folder: str | os.PathLike) -> dict[str, list[str]]:
    """{what: its sentences} for the evaluation data under `folder`, split into single sentences (so that a corpus
    line holding any one of them is caught), "[MASK]" where the answer goes:

    - "benchmarks": every sentence the project's cloze benchmarks score (`bert.evaluation.benchmark_sentences`:
      Goldberg's 410 agreement pairs, Ettinger's CPRAG, ROLE and NEG-136 (SIMP and NAT) contexts, the everyday cloze set);
    - "LAMA": the masked sentences of lama_squad/test.jsonl, when present.
    """
    from bert.evaluation import benchmark_sentences  # imports torch: only when the option is used

    found = {"benchmarks": benchmark_sentences(folder)}
    lama = Path(folder) / "lama_squad" / "test.jsonl"
    if lama.is_file():
        records = [json.loads(line) for line in lama.read_text(encoding="utf-8").splitlines() if line.strip()]
        found["LAMA"] = [sentence for record in records for sentence in record.get("masked_sentences", [])]
    return {what: list(dict.fromkeys(part for item in items for part in split_sentences(" ".join(item.split()))))
            for what, items in found.items()}
