"""Published cloze benchmarks, scored the way their authors scored bert-base-uncased (see each module).

    rows = run_benchmarks(model, tokenizer, "data/external")   # one BenchmarkResult per benchmark
    benchmark_sentences("data/external")                      # every scored sentence, to keep out of training text

The external folder holds the published data sets, one subfolder each (docs/benchmarks.md says where each comes
from); they are never part of this repository.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..model import Bert
from ..pretraining.cloze_eval import EVERYDAY_CLOZE, everyday_cloze_accuracy, read_cloze
from ..tokenizer import BertTokenizer
from . import agreement, ettinger

PUBLISHED_MODEL = "bert-base-uncased"


@dataclass(frozen=True)
class BenchmarkResult:
    name: str
    metric: str
    hits: int
    items: int
    published: tuple[int, int] | None  # bert-base-uncased's (hits, items), read from the published files; None: none published
    per_item: list[dict] = field(repr=False)

    @property
    def score(self) -> float:
        return self.hits / self.items if self.items else 0.0


def agreement_benchmark(model: Bert, tokenizer: BertTokenizer, external: str | Path) -> BenchmarkResult:
    folder = Path(external) / agreement.FOLDER
    rows = agreement.score_pairs(model, tokenizer, agreement.read_pairs(folder))
    published = agreement.accuracy(agreement.read_published(folder, PUBLISHED_MODEL))
    return BenchmarkResult("Goldberg 2019 subject-verb agreement", "correct verb form's logit higher",
                           *agreement.accuracy(rows), published, rows)


def ettinger_benchmark(model: Bert, tokenizer: BertTokenizer, external: str | Path, test: ettinger.Test) -> BenchmarkResult:
    folder = Path(external) / ettinger.FOLDER
    rows = ettinger.score_test(model, tokenizer, ettinger.read_test(folder, test))
    metric = "true completion in top 5 (affirmative)" if test.key == "negsimp" else "expected word in top 5"
    return BenchmarkResult(f"Ettinger 2020 {test.name}", metric, sum(r["hit"] for r in rows), len(rows),
                           ettinger.read_published_accuracy(folder, test, PUBLISHED_MODEL), rows)


def everyday_benchmark(model: Bert, tokenizer: BertTokenizer, path: str | Path = EVERYDAY_CLOZE) -> BenchmarkResult:
    result = everyday_cloze_accuracy(model, tokenizer, path, k=5)
    rows = result["per_sentence"]
    return BenchmarkResult("everyday cloze (this project)", "an acceptable word in top 5",
                           sum(r["in_top_k"] for r in rows), len(rows), None, rows)


def run_benchmarks(model: Bert, tokenizer: BertTokenizer, external: str | Path) -> list[BenchmarkResult]:
    """The everyday set, Goldberg's agreement pairs, then Ettinger's CPRAG-34, ROLE-88 and NEG-136-SIMP."""
    return [everyday_benchmark(model, tokenizer), agreement_benchmark(model, tokenizer, external)] + [
        ettinger_benchmark(model, tokenizer, external, test) for test in ettinger.TESTS
    ]


def benchmark_sentences(external: str | Path, everyday: str | Path = EVERYDAY_CLOZE) -> list[str]:
    """Every sentence the benchmarks score, with "[MASK]" where the answer goes (the form build_corpus.py's
    Excluder takes): the everyday set, all 410 agreement pairs, and every context line of Ettinger's tests
    (affirmative and negated; NEG-136-NAT too, which is not scored). Sets missing under `external` are left out.
    No duplicates, in a stable order."""
    sentences = [item.sentence for item in read_cloze(everyday)]
    external = Path(external)
    if (external / agreement.FOLDER / agreement.STIMULI).is_file():
        sentences += [pair.sentence for pair in agreement.read_pairs(external / agreement.FOLDER)]
    inputs = external / ettinger.FOLDER / "inputs"
    for contexts in sorted(inputs.glob("*-contextlist")):
        sentences += [line + "." for line in contexts.read_text(encoding="utf-8").splitlines()]
    return list(dict.fromkeys(sentences))
