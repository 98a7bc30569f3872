"""A fixed random sample of N lines from the corpus that recipes/build_corpus.py builds, to index for corpus search.

    python recipes/build_corpus.py --out data/corpus        # once: the offline English corpus and its SOURCES.md
    python recipes/sample_corpus.py --corpus data/corpus --lines 20000 --out data/corpus_sample.txt
    python -m bert index --model minilm --sentences data/corpus_sample.txt --out data/corpus_index

The sample is the same for the same corpus, N and --seed (reservoir sampling: one pass, N lines in memory),
in corpus order; the corpus's SOURCES.md (sources and licences) is copied beside it, as the licences ask.
"""
from __future__ import annotations

import argparse
import random
import shutil
from pathlib import Path


def sample_lines(path: Path, count: int, seed: int = 0) -> list[str]:
    """`count` non-blank lines of `path` chosen uniformly at random (all of them if it has fewer), in file order."""
    chooser = random.Random(seed)
    kept: list[tuple[int, str]] = []
    seen = 0
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file):
            line = line.strip()
            if not line:
                continue
            seen += 1
            if len(kept) < count:
                kept.append((number, line))
            elif (slot := chooser.randrange(seen)) < count:
                kept[slot] = (number, line)
    return [line for _, line in sorted(kept)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("data/corpus"), help="build_corpus.py's --out folder")
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("data/corpus_sample.txt"))
    args = parser.parse_args()
    train = args.corpus / "train.txt"
    if not train.is_file():
        raise SystemExit(f"{train} is missing: build the corpus first (python recipes/build_corpus.py --out {args.corpus})")
    lines = sample_lines(train, args.lines, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if (args.corpus / "SOURCES.md").is_file():
        shutil.copyfile(args.corpus / "SOURCES.md", args.out.with_name(args.out.stem + "_SOURCES.md"))
    print(f"{args.out}: {len(lines):,} lines sampled from {train}")


if __name__ == "__main__":
    main()
