"""How faithful each attribution method is on MiniLM: deletion curves on the built-in sentences.

    OMP_NUM_THREADS=1 python -m bench.deletion_curves [--sentences 200] [--random-orders 10] [--json out/deletion.json]

Each sentence (bert/data/sentences.tsv, in its fixed order) gets its WordNet headword replaced by one [MASK]; the
model's top prediction there is explained by every method (bert.analysis.attribution.saliency), and each map's
deletion curve (bert.analysis.attribution.deletion: word tokens swapped for [MASK] in attribution order, p of the
prediction after each swap) is compared with the mean curve of `--random-orders` random orders. Printed per
method: the share of sentences whose curve has a smaller area than the random orders' ("beats random"), with a
95% Wilson interval, the mean areas, and the time spent. Sentences whose only word token is the masked one are
skipped (nothing to delete).
"""
from __future__ import annotations

import json
import math
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import bert  # noqa: E402
from bert.analysis.attribution.deletion import deletion_curve  # noqa: E402
from bert.analysis.attribution.saliency import METHODS, saliency, swappable  # noqa: E402
from bert.data import builtin_sentences  # noqa: E402
from bench.common import bench_parser, machine_line, use_omp_threads  # noqa: E402


def wilson(successes: int, total: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a share."""
    if total == 0:
        return (float("nan"), float("nan"))
    share = successes / total
    centre = (share + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return centre - half, centre + half


def main() -> None:
    parser = bench_parser(__doc__, "also write the per-sentence figures here")
    parser.add_argument("--sentences", type=int, default=200, help="the first N built-in sentences (at most 992)")
    parser.add_argument("--random-orders", type=int, default=10)
    parser.add_argument("--steps", type=int, default=32, help="integrated gradients' steps")
    parser.add_argument("--samples", type=int, default=25, help="Shapley value sampling's random orders")
    args = parser.parse_args()
    use_omp_threads()
    model, tokenizer = bert.load_pretrained("minilm", pack_for_cpu=True)
    print(f"{machine_line()}; {args.sentences} sentences, {args.random_orders} random orders, IG {args.steps} steps, Shapley {args.samples} orders",
          flush=True)
    rows, seconds = [], {method: 0.0 for method in METHODS}
    for number, sentence in enumerate(builtin_sentences(args.sentences)):
        encoding = tokenizer.encode(sentence.text[: sentence.start] + "[MASK]" + sentence.text[sentence.end :])
        if not any(swappable(tokenizer, encoding)):
            continue
        row = {"sentence": sentence.text}
        for method in METHODS:
            start = time.perf_counter()
            result = saliency(model, tokenizer, encoding, method, steps=args.steps, samples=args.samples)
            curve = deletion_curve(model, tokenizer, encoding, result, random_orders=args.random_orders, seed=number)
            seconds[method] += time.perf_counter() - start
            row[method] = {"area": curve.area, "random_area": curve.random_area, "beats_random": curve.beats_random}
        row["prediction"] = result.target.token
        rows.append(row)
        if len(rows) % 20 == 0:
            print(f"  {len(rows)} sentences, load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n{len(rows)} sentences; load average (1 min) at the end {os.getloadavg()[0]:.1f}")
    print(f"{'method':<24} {'beats random':>13} {'95% interval':>15} {'mean area':>10} {'random':>8} {'s/sentence':>11}")
    summary = {}
    for method in METHODS:
        wins = sum(row[method]["beats_random"] for row in rows)
        low, high = wilson(wins, len(rows))
        area = float(np.mean([row[method]["area"] for row in rows]))
        random_area = float(np.mean([row[method]["random_area"] for row in rows]))
        summary[method] = {"beats_random": wins, "sentences": len(rows), "interval": [low, high], "mean_area": area,
                           "mean_random_area": random_area, "seconds_per_sentence": seconds[method] / max(len(rows), 1)}
        print(f"{method:<24} {wins:>5} / {len(rows):<3} {wins / len(rows):>4.0%} {f'{low:.0%}-{high:.0%}':>15} "
              f"{area:>10.3f} {random_area:>8.3f} {seconds[method] / len(rows):>11.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "sentences": rows}, indent=1))


if __name__ == "__main__":
    main()
