"""Published cloze benchmarks for any model, beside bert-base-uncased's published figures.

    OMP_NUM_THREADS=1 python -m bench.cloze_benchmarks --model minilm --external DIR [--json out/b.json]

--model: minilm, a Hugging Face folder, or a hub id in the local cache. --external: the folder with the published
data (goldberg2019_gulordava_agreement/, ettinger2020_psycholinguistic_cloze/; docs/benchmarks.md says where each
comes from), or set BERT_INSIDE_EXTERNAL. The scoring lives in bert/evaluation/ (each module's docstring says how it
follows the authors' scoring);
bert-base-uncased's figures are read from the published per-item and result files in the same folder.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import bert  # noqa: E402
from bert.evaluation import run_benchmarks  # noqa: E402
from bert.cli_arguments import add_model_argument

EXTERNAL_VARIABLE = "BERT_INSIDE_EXTERNAL"


def table(results, model_name: str) -> str:
    lines = [f"| benchmark | metric | {model_name} | bert-base-uncased (published) |", "| --- | --- | ---: | ---: |"]
    for r in results:
        published = f"{r.published[0] / r.published[1]:.1%} ({r.published[0]}/{r.published[1]})" if r.published else "not published"
        lines.append(f"| {r.name} | {r.metric} | {r.score:.1%} ({r.hits}/{r.items}) | {published} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--external", default=os.environ.get(EXTERNAL_VARIABLE),
                        help=f"folder of the published data sets (default: ${EXTERNAL_VARIABLE})")
    parser.add_argument("--json", help="also write every per-item result to this file")
    args = parser.parse_args(argv)
    if args.external is None or not Path(args.external).is_dir():
        where = "no folder given" if args.external is None else f"{args.external} is not a folder"
        print(f"error: {where}; pass --external DIR (or set {EXTERNAL_VARIABLE}) with the published data sets",
              file=sys.stderr)
        return 2
    try:
        model, tokenizer = bert.load_pretrained(args.model, pack_for_cpu=True)
        results = run_benchmarks(model, tokenizer, args.external)
    except (bert.BertError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(table(results, args.model))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(
            [{"name": r.name, "metric": r.metric, "hits": r.hits, "items": r.items, "published": r.published,
              "per_item": r.per_item} for r in results], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
