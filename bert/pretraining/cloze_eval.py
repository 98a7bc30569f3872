"""Everyday cloze: does the model fill "I brushed my [MASK] before going to bed." with "teeth"?

A small, hand-written check of what masked-LM pre-training (the cloze procedure of Devlin et al. 2019) gives a model,
on plain sentences rather than the training corpus' held-out text:

    python -m bert.pretraining.cloze_eval --model minilm      # score, then every sentence's top 5

The set is bert/data/everyday_cloze.tsv (see bert/data/README_cloze.md): a sentence with one [MASK], then the
acceptable answers, tab-separated. A sentence counts for top-k when any acceptable answer is among the k best.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataFileError
from ..model import Bert
from ..predict import predict_masks
from ..tokenizer import BertTokenizer
from ..cli_arguments import add_model_argument

log = logging.getLogger(__name__)

EVERYDAY_CLOZE = Path(__file__).resolve().parent.parent / "data" / "everyday_cloze.tsv"


@dataclass(frozen=True)
class ClozeItem:
    sentence: str  # with exactly one [MASK]
    answers: tuple[str, ...]  # acceptable fillers, lower case; the first is the word the sentence was written with
    topic: str  # from the last "# topic: NAME" line above it


def read_cloze(path: str | Path = EVERYDAY_CLOZE) -> list[ClozeItem]:
    """Rows of `sentence<TAB>answer<TAB>answer...`; "#" lines are comments, "# topic: NAME" names a section."""
    items, topic = [], ""
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("# topic:"):
            topic = line.removeprefix("# topic:").strip()
        if not line.strip() or line.startswith("#"):
            continue
        sentence, *answers = [field.strip() for field in line.split("\t")]
        answers = [a.lower() for a in answers if a]
        if sentence.count("[MASK]") != 1 or not answers:
            raise DataFileError(f"{path}:{number}: a row needs exactly one [MASK] and at least one answer after a tab: {line!r}")
        items.append(ClozeItem(sentence, tuple(answers), topic))
    return items


def everyday_cloze_accuracy(model: Bert, tokenizer: BertTokenizer, path: str | Path = EVERYDAY_CLOZE, k: int = 5) -> dict:
    """{"top1", f"top{k}", "sentences", "k", "per_sentence": [one dict per sentence]} for a model with an MLM head.

    Each per-sentence row: sentence, topic, answers, predictions (the k best tokens, best first), probabilities,
    rank (1-based rank of the best acceptable answer within the k, or None), top1 and in_top_k (bools).
    """
    items = read_cloze(path)
    unknown = sorted({a for item in items for a in item.answers if tokenizer.token_to_id(a) is None})
    if unknown:
        log.warning("answers not in this vocabulary as one token (they can never be predicted): %s", ", ".join(unknown))
    rows = []
    for item in items:
        encoding = tokenizer.encode(item.sentence)
        (prediction,) = predict_masks(model, tokenizer, encoding, top_k=k)
        tokens = [c.token.lower() for c in prediction.candidates]
        rank = next((i for i, token in enumerate(tokens, 1) if token in item.answers), None)
        rows.append({
            "sentence": item.sentence, "topic": item.topic, "answers": list(item.answers), "predictions": tokens,
            "probabilities": [c.probability for c in prediction.candidates], "rank": rank,
            "top1": rank == 1, "in_top_k": rank is not None,
        })
    count = max(len(rows), 1)
    return {
        "top1": sum(r["top1"] for r in rows) / count,
        f"top{k}": sum(r["in_top_k"] for r in rows) / count,
        "sentences": len(rows),
        "k": k,
        "per_sentence": rows,
    }


def format_report(result: dict) -> str:
    k = result["k"]
    lines = [f"everyday cloze: top-1 {result['top1']:.1%}, top-{k} {result[f'top{k}']:.1%} of {result['sentences']} sentences", ""]
    for row in result["per_sentence"]:
        mark = "1" if row["top1"] else (str(row["rank"]) if row["rank"] else "-")
        guesses = ", ".join(f"{t} {p:.1%}" for t, p in zip(row["predictions"], row["probabilities"]))
        lines.append(f"[{mark}] {row['sentence']}  ({'/'.join(row['answers'])})  ->  {guesses}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bert.pretraining.cloze_eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--path", default=str(EVERYDAY_CLOZE), help="a cloze TSV (default: the everyday set)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from ..errors import BertError
    from ..pretrained import load_pretrained

    try:
        model, tokenizer = load_pretrained(args.model, pack_for_cpu=True)
        result = everyday_cloze_accuracy(model, tokenizer, args.path, args.top_k)
    except BertError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
