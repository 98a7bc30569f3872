"""Activation patching on a BERT-base-shaped model: the batched exact sweep against a loop of single patched
passes (one forward pass per cell, as TransformerLens's patching utilities run), and attribution patching against
the exact sweep (time and correlation).

    OMP_NUM_THREADS=1 nice -n 10 python -m bench.patching [--tokens 24] [--repeats 3] [--long 512] [--json out/patching.json]

- sweep: the residual-stream sweep (13 layers x `--tokens` positions) of a random BERT-base
  (bench/make_random_bert.py; speed does not depend on the values), batched (bert.analysis.causal.patching,
  64 cells per pass) against the loop (bert.interventions.patch, one cell per pass); each `--repeats` times,
  alternating; median and spread (min-max).
- attribution: one forward and one backward pass for all four sweeps, at `--tokens` and at `--long` tokens.
- correlation: Pearson's r between attribution and exact values, cell by cell, for each sweep, on the random
  BERT-base and on the built-in model (trained weights: "The doctor said that [MASK] was tired." he/she against
  "The nurse ..."), where the non-linearity the approximation ignores is real.
Prints the load average beside the figures: the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from bench.make_random_bert import make_random_bert  # noqa: E402
from bert import load_pretrained  # noqa: E402
from bert.analysis.causal.patching import (  # noqa: E402
    SITES, Contrast, attribution_sweep, patching_sweep, prepare_contrast, record_runs, site_hook, sweep_patches,
)
from bert.interventions import patch  # noqa: E402

WORDS = "the doctor said that [MASK] was tired after the long night shift at the city hospital near the old river bridge".split()


def contrast_of_length(model, tokenizer, tokens: int) -> Contrast:
    """Clean and corrupted sentences of `tokens` word pieces (doctor -> nurse); answer and foil the two words whose
    logit difference the corruption moves most (any two whole words of the vocabulary)."""
    filler = [word for word in WORDS if word != "[MASK]"]
    words = (WORDS + filler * (tokens // len(filler) + 1))[: tokens - 2]
    clean = " ".join(words)
    corrupted = clean.replace("doctor", "nurse", 1)
    ids = [tokenizer.encode(text).tensors() for text in (clean, corrupted)]
    mask = tokenizer.encode(clean).tokens.index("[MASK]")
    with torch.no_grad():
        clean_logits, corrupted_logits = (model(*pair)[0, mask] for pair in ids)
    change = clean_logits - corrupted_logits
    whole = [i for i in change.argsort(descending=True).tolist() if tokenizer.subwords(tokenizer.id_to_token(i)) == [tokenizer.id_to_token(i)]
             and tokenizer.id_to_token(i).isalpha()]
    return prepare_contrast(tokenizer, clean, corrupted, tokenizer.id_to_token(whole[0]), tokenizer.id_to_token(whole[-1]))


@torch.no_grad()
def loop_sweep(model, contrast: Contrast) -> torch.Tensor:
    """The residual sweep with one forward pass per cell."""
    hooks = [site_hook("residual", layer) for layer in range(model.config.num_layers + 1)]
    clean, _, clean_metric, corrupted_metric = record_runs(model, contrast, hooks)
    input_ids, token_type_ids = contrast.corrupted.tensors()
    values = []
    for cell in sweep_patches(model, "residual", len(contrast.clean)):
        name = site_hook("residual", cell.layer)
        logits, _ = model.run_with_cache(input_ids, token_type_ids, names=[], interventions={name: patch(clean[name], [cell.position])})
        values.append(float(logits[0, contrast.mask_position, contrast.answer_id] - logits[0, contrast.mask_position, contrast.foil_id]))
    return (torch.tensor(values) - corrupted_metric) / (clean_metric - corrupted_metric)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}"


def correlations(model, contrast: Contrast) -> dict[str, float]:
    exact = patching_sweep(model, contrast)
    approx = attribution_sweep(model, contrast)
    return {site: float(torch.corrcoef(torch.stack([getattr(exact, site).flatten(), getattr(approx, site).flatten()]))[0, 1])
            for site in SITES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=24, help="sentence length for the sweeps (word pieces)")
    parser.add_argument("--long", type=int, default=512, help="sentence length for attribution patching alone")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    with tempfile.TemporaryDirectory() as folder:
        make_random_bert(Path(folder))
        model, tokenizer = load_pretrained(folder, pack_for_cpu=True)
    contrast = contrast_of_length(model, tokenizer, args.tokens)
    long_contrast = contrast_of_length(model, tokenizer, args.long)
    cells = len(sweep_patches(model, "residual", args.tokens))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); random BERT-base, {args.tokens} tokens, "
          f"residual sweep of {cells} cells; answer {contrast.answer!r}, foil {contrast.foil!r}", flush=True)
    batched_times, loop_times, attribution_times = [], [], []
    for _ in range(args.repeats):  # alternating, so drift in the machine's load hits both alike
        seconds, batched = timed(lambda: patching_sweep(model, contrast, sites=["residual"], batch_size=64).residual)
        batched_times.append(seconds)
        seconds, looped = timed(lambda: loop_sweep(model, contrast))
        loop_times.append(seconds)
        attribution_times.append(timed(lambda: attribution_sweep(model, contrast))[0])
        print(f"  batched {batched_times[-1]:.2f} s, loop {loop_times[-1]:.2f} s, attribution {attribution_times[-1]:.2f} s, "
              f"largest difference batched - loop {float((batched.flatten() - looped).abs().max()):.1e}", flush=True)
    long_times = [timed(lambda: attribution_sweep(model, long_contrast))[0] for _ in range(args.repeats)]
    results = {
        "tokens": args.tokens, "cells": cells, "repeats": args.repeats,
        "batched_s": statistics.median(batched_times), "batched_spread": spread(batched_times),
        "loop_s": statistics.median(loop_times), "loop_spread": spread(loop_times),
        "attribution_s": statistics.median(attribution_times), "attribution_spread": spread(attribution_times),
        "long_tokens": args.long, "attribution_long_s": statistics.median(long_times), "attribution_long_spread": spread(long_times),
        "correlation_random_bert_base": correlations(model, contrast),
    }
    minilm, minilm_tokenizer = load_pretrained("minilm", pack_for_cpu=True)
    he_she = prepare_contrast(minilm_tokenizer, "The doctor said that [MASK] was tired.", "The nurse said that [MASK] was tired.", "he", "she")
    results["correlation_minilm"] = correlations(minilm, he_she)
    results["load_average_1min"] = round(os.getloadavg()[0], 2)
    print(f"\n| {args.tokens} tokens, BERT-base shape | median (s) | spread (s) |\n|---|---|---|")
    print(f"| residual sweep, batched (64 cells per pass) | {results['batched_s']:.2f} | {results['batched_spread']} |")
    print(f"| residual sweep, one pass per cell | {results['loop_s']:.2f} | {results['loop_spread']} |")
    print(f"| attribution patching, all four sweeps | {results['attribution_s']:.2f} | {results['attribution_spread']} |")
    print(f"| attribution patching, {args.long} tokens | {results['attribution_long_s']:.2f} | {results['attribution_long_spread']} |")
    print(f"\nloop / batched: {results['loop_s'] / results['batched_s']:.1f}x")
    for name in ("correlation_random_bert_base", "correlation_minilm"):
        print(f"{name}: " + ", ".join(f"{site} {r:.3f}" for site, r in results[name].items()))
    print(f"load average (1 min): {results['load_average_1min']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
