"""How faithful each context-mixing method is on MiniLM: Spearman correlation with occlusion at the [MASK].

    OMP_NUM_THREADS=1 python -m bench.mixing_faithfulness [--sentences 200] [--json out/mixing_faithfulness.json]

As Mohebbi et al. 2023 (section 5) compare value zeroing with blank-out: each built-in sentence
(bert/data/sentences.tsv, in its fixed order) gets its WordNet headword replaced by one [MASK]; occlusion
(Captum, through bert.analysis.attribution.saliency: each word token swapped for [MASK] in turn, the drop in log
p of the model's top prediction there) scores the input tokens, and each method's [MASK] row of its whole-model
matrix (bert.analysis.attention.mixing) scores them too; the Spearman correlation (scipy) is taken over the tokens
occlusion perturbs. Methods whose paper has no whole-model aggregate (norm, norm-residual) use their last layer's
row; "attention (last layer)" and "attention rollout" are the baselines; value zeroing's last layer is shown beside
its rollout. Printed: the mean and median correlation
per method, the number of sentences, and the load of the machine.
"""
from __future__ import annotations

import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

import bert  # noqa: E402
from bert.analysis.attention.mixing import METHODS, context_mixing, record_for_mixing  # noqa: E402
from bert.analysis.attribution.saliency import saliency, swappable  # noqa: E402
from bert.data import builtin_sentences  # noqa: E402
from bench.common import bench_parser, machine_line, use_omp_threads  # noqa: E402

ROWS = ("attention (last layer)", "attention rollout", *[method for method in METHODS if method != "attention"],
        "value-zeroing (last layer)")


def mask_rows(model, cache, mask: int) -> dict[str, np.ndarray]:
    """Each row of the table: the [MASK]'s scores over the input tokens."""
    rows = {}
    for method in METHODS:
        mixing = context_mixing(model, cache, method)
        if method == "attention":
            rows["attention (last layer)"] = mixing.layers[-1][mask]
            rows["attention rollout"] = mixing.whole_model[mask]
        else:
            rows[method] = (mixing.layers[-1] if mixing.whole_model is None else mixing.whole_model)[mask]
        if method == "value-zeroing":  # its rollout smears the row (no residual added): the last layer beside it
            rows["value-zeroing (last layer)"] = mixing.layers[-1][mask]
    return rows


def main() -> None:
    parser = bench_parser(__doc__, "also write the per-sentence correlations here")
    parser.add_argument("--sentences", type=int, default=200, help="the first N built-in sentences (at most 992)")
    args = parser.parse_args()
    use_omp_threads()
    model, tokenizer = bert.load_pretrained("minilm")
    print(f"{machine_line()}; load average (1 min) at the start {os.getloadavg()[0]:.1f}", flush=True)
    correlations: dict[str, list[float]] = {row: [] for row in ROWS}
    start, skipped = time.perf_counter(), 0
    for sentence in builtin_sentences(args.sentences):
        encoding = tokenizer.encode(sentence.text[: sentence.start] + "[MASK]" + sentence.text[sentence.end :])
        perturbed = np.array(swappable(tokenizer, encoding))
        if perturbed.sum() < 3:  # a rank correlation over fewer than three tokens says nothing
            skipped += 1
            continue
        occlusion = saliency(model, tokenizer, encoding, "occlusion").token_attributions
        mask = encoding.tokens.index("[MASK]")
        _, cache = record_for_mixing(model, *encoding.tensors())
        for row, scores in mask_rows(model, cache, mask).items():
            correlations[row].append(float(spearmanr(scores[perturbed], occlusion[perturbed]).statistic))
    sentences = len(correlations[ROWS[0]])
    print(f"\n{sentences} sentences ({skipped} with fewer than three word tokens skipped), "
          f"{time.perf_counter() - start:.0f} s; load average (1 min) at the end {os.getloadavg()[0]:.1f}")
    print(f"{'method':<27} {'mean rho':>9} {'median':>8} {'sd':>6}")
    summary = {}
    for row, values in correlations.items():
        values = np.array(values, dtype=float)
        summary[row] = {"mean": float(np.nanmean(values)), "median": float(np.nanmedian(values)),
                        "sd": float(np.nanstd(values)), "sentences": int(np.isfinite(values).sum())}
        print(f"{row:<27} {summary[row]['mean']:>9.3f} {summary[row]['median']:>8.3f} {summary[row]['sd']:>6.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "correlations": correlations}, indent=1))


if __name__ == "__main__":
    main()
