"""Speed of the neuron and feature analyses on the built-in model, one thread:

1. the top examples (and histograms) of EVERY neuron of one layer over UD English EWT (dev + test), from one pass
   over the corpus, against one recorded forward pass per sentence over the same corpus (what a per-sentence
   loop costs before any neuron is looked at);
2. the features of a new sentence with the shipped sparse autoencoder (a pass as far as its layer, then the
   encoder), against one recorded forward pass of the whole model on that sentence (median of --repeats, with
   the spread).

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
from bert.analysis.features.corpora import load_corpus  # noqa: E402
from bert.analysis.features.neurons import scan_neurons, top_examples  # noqa: E402
from bert.analysis.features.sae import encode_tokens, load_sae  # noqa: E402
from bert.analysis.features.shipped import SHIPPED_SAE  # noqa: E402

SENTENCES = ["The teacher wrote the answer on the board before the bell rang.",
             "Birds flew south when the winter came early that year.",
             "She forgot her umbrella, so she waited in the station until the rain stopped."]


def timed(fn) -> tuple[object, float, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu, os.getloadavg()[0]


def median_time(fn, repeats: int) -> tuple[float, float]:
    """(median, interquartile range) of `repeats` wall times, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    quartiles = statistics.quantiles(times, n=4)
    return statistics.median(times), quartiles[2] - quartiles[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layer", type=int, default=3, help="0-based layer whose neurons to scan")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tokenizer = bert.load_pretrained("minilm")
    corpus = load_corpus("ud-ewt", tokenizer)
    results = {"machine": "2-core AMD EPYC VM", "threads": 1, "corpus": corpus.name, "sentences": len(corpus),
               "tokens": corpus.num_tokens, "layer": args.layer}
    scan, wall, cpu, load = timed(lambda: scan_neurons(model, corpus, args.layer, tokenizer.pad_id, k=20))
    top_examples(scan, corpus, 0)
    results["scan_every_neuron"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2),
                                    "neurons": scan.num_units}
    print(f"every neuron of layer {args.layer} ({scan.num_units}) over {corpus.num_tokens} tokens: wall {wall:.1f} s, "
          f"cpu {cpu:.1f} s, load {load:.1f}", flush=True)

    def per_sentence():
        with torch.no_grad():
            for encoding in corpus.encodings:
                model.run_with_cache(*encoding.tensors(), names=[])

    _, wall, cpu, load = timed(per_sentence)
    results["forward_per_sentence"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2)}
    print(f"one recorded forward pass per sentence, same corpus: wall {wall:.1f} s, cpu {cpu:.1f} s, load {load:.1f}", flush=True)

    sae = load_sae(SHIPPED_SAE, model)
    for sentence in SENTENCES:
        encoding = tokenizer.encode(sentence)
        input_ids, token_type_ids = encoding.tensors()

        def forward():
            with torch.no_grad():
                model.run_with_cache(input_ids, token_type_ids)

        features, features_spread = median_time(lambda: encode_tokens(sae, model, encoding), args.repeats)
        full, full_spread = median_time(forward, args.repeats)
        results.setdefault("features_vs_forward", []).append(
            {"tokens": len(encoding), "features_s": round(features, 5), "features_iqr_s": round(features_spread, 5),
             "forward_s": round(full, 5), "forward_iqr_s": round(full_spread, 5), "ratio": round(features / full, 3)})
        print(f"{len(encoding)} tokens: features {features * 1e3:.1f} ms (IQR {features_spread * 1e3:.1f}), recorded forward "
              f"{full * 1e3:.1f} ms (IQR {full_spread * 1e3:.1f}): ratio {features / full:.2f}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
