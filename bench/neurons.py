"""Speed of the neuron and feature analyses on the built-in model, one thread:

1. the top examples (and histograms) of EVERY neuron of one layer over UD English EWT (dev + test), from one
   batched pass over the corpus, against recording that layer one sentence at a time (what a per-sentence loop
   costs before any neuron is looked at);
2. the features of a new sentence with the shipped sparse autoencoder (a pass as far as its layer, then the
   encoder), and those plus the [MASK] guess before and after switching a feature off (what the Features page
   computes for a new sentence with a [MASK]), against one recorded forward pass of the whole model on that
   sentence (median of --repeats, with the interquartile range; the three alternate).

    OMP_NUM_THREADS=1 python -m bench.neurons [--layer 3] [--repeats 30] [--json out/neurons.json]

Wall time depends on what else the machine runs: the process's CPU time and the load average are printed beside it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import bert  # noqa: E402
from bert.hooks import hook_name  # noqa: E402
from bert.analysis.features.corpora import load_corpus  # noqa: E402
from bert.analysis.features.feature_pages import mask_guess_change  # noqa: E402
from bert.analysis.features.neurons import scan_neurons, top_examples  # noqa: E402
from bert.analysis.features.residuals import residual_at  # noqa: E402
from bert.analysis.features.sae import encode_tokens, load_sae  # noqa: E402
from bert.analysis.features.shipped import SHIPPED_SAE  # noqa: E402

SENTENCES = ["The teacher wrote the answer on the board before the bell rang.",
             "Birds flew south when the winter came early that year.",
             "She forgot her umbrella, so she waited in the station until the rain stopped."]


def timed(fn) -> tuple[object, float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu, os.getloadavg()[0]


def alternated(functions, repeats: int) -> list[tuple[float, float]]:
    """(median, interquartile range) in seconds of each function: they run in turn, so that a change of load on
    the shared machine falls on all alike."""
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(repeats):
        for fn, kept in zip(functions, times):
            start = time.perf_counter()
            fn()
            kept.append(time.perf_counter() - start)
    summary = []
    for kept in times:
        quartiles = statistics.quantiles(kept, n=4)
        summary.append((statistics.median(kept), quartiles[2] - quartiles[0]))
    return summary


def scan_corpus(model, tokenizer, layer: int, results: dict) -> None:
    """Part 1: every neuron of `layer` over UD EWT from one batched pass, against recording the same layer one
    sentence at a time (what a loop over the sentences costs before any neuron is looked at)."""
    corpus = load_corpus("ud-ewt", tokenizer)
    results |= {"corpus": corpus.name, "sentences": len(corpus), "tokens": corpus.num_tokens}
    scan, wall, cpu, load = timed(lambda: scan_neurons(model, corpus, layer, tokenizer.pad_id, k=20))
    top_examples(scan, corpus, 0)
    results["scan_every_neuron"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2),
                                    "neurons": scan.num_units}
    print(f"every neuron of layer {layer} ({scan.num_units}) over {corpus.num_tokens} tokens: wall {wall:.1f} s, "
          f"cpu {cpu:.1f} s, load {load:.1f}", flush=True)

    hook = hook_name("mlp_post", layer)

    def per_sentence():  # the same recording, one sentence at a time (no masked-LM head, as in the scan)
        with torch.no_grad():
            for encoding in corpus.encodings:
                input_ids, token_type_ids = encoding.tensors()
                model.run_with_cache(input_ids, token_type_ids, names=[hook], logit_mask=torch.zeros_like(input_ids, dtype=torch.bool))

    _, wall, cpu, load = timed(per_sentence)
    results["forward_per_sentence"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2)}
    print(f"the same layer recorded one sentence at a time: wall {wall:.1f} s, cpu {cpu:.1f} s, load {load:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layer", type=int, default=3, help="0-based layer whose neurons to scan")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only-sentences", action="store_true", help="only part 2: a new sentence's features")
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tokenizer = bert.load_pretrained("minilm", pack_for_cpu=True)
    results = {"machine": "2-core AMD EPYC VM", "threads": 1, "layer": args.layer}
    if not args.only_sentences:
        scan_corpus(model, tokenizer, args.layer, results)
    sae = load_sae(SHIPPED_SAE, model)
    for sentence in SENTENCES:
        encoding = tokenizer.encode(sentence)
        masked = encoding.with_masks([2], tokenizer.mask_id)  # the second word piece hidden, for the guess
        input_ids, token_type_ids = encoding.tensors()

        def forward():
            with torch.no_grad():
                model.run_with_cache(input_ids, token_type_ids)

        def features():
            encode_tokens(sae, model, encoding)

        def features_and_guess():  # what the page computes for a new sentence with a [MASK] (viz_app/cache.py)
            with torch.no_grad():
                hidden = residual_at(model, sae.config.layer, *masked.tensors())
                sae.encode(hidden[0])
            mask_guess_change(model, tokenizer, masked, sae, 0, 0.0, hidden=hidden)

        for fn in (forward, features, features_and_guess):
            fn()  # warm-up
        (full, full_iqr), (alone, alone_iqr), (page, page_iqr) = alternated([forward, features, features_and_guess], args.repeats)
        results.setdefault("features_vs_forward", []).append(
            {"tokens": len(encoding), "forward_s": round(full, 5), "forward_iqr_s": round(full_iqr, 5),
             "features_s": round(alone, 5), "features_iqr_s": round(alone_iqr, 5), "features_ratio": round(alone / full, 3),
             "with_guess_s": round(page, 5), "with_guess_iqr_s": round(page_iqr, 5), "with_guess_ratio": round(page / full, 3)})
        print(f"{len(encoding)} tokens: recorded forward {full * 1e3:.1f} ms (IQR {full_iqr * 1e3:.1f}); features "
              f"{alone * 1e3:.1f} ms (IQR {alone_iqr * 1e3:.1f}), ratio {alone / full:.2f}; features and the [MASK] guess "
              f"before/after {page * 1e3:.1f} ms (IQR {page_iqr * 1e3:.1f}), ratio {page / full:.2f}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
