"""Neuron ranking and ablation on the built-in model (NeuroX, Dalvi et al. 2019): an elastic-net probe for UPOS on
one layer's MLP neurons, trained on UD English EWT dev, neurons ordered by its weights; then on EWT test the
probe's accuracy and the masked-LM top-1 accuracy with the top 1% of neurons ablated, against random 1% draws.

    OMP_NUM_THREADS=1 python -m bench.neuron_ranking [--layer 3] [--mode zero] [--sentences 500] [--json out/ranking.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import bert  # noqa: E402
from bert.analysis.features.corpora import corpus_from_treebank, load_corpus  # noqa: E402
from bert.analysis.features.neuron_ranking import ablate_ranked, rank_neurons  # noqa: E402
from bert.analysis.probing.treebank import builtin_treebank  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layer", type=int, default=3, help="0-based layer")
    parser.add_argument("--task", default="upos", choices=("upos", "deprel"))
    parser.add_argument("--mode", default="zero", choices=("zero", "mean"))
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--draws", type=int, default=5, help="random draws of as many neurons")
    parser.add_argument("--sentences", type=int, default=500, help="EWT test sentences for the masked-LM accuracy (the first N)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started, cpu = time.perf_counter(), time.process_time()
    model, tokenizer = bert.load_pretrained("minilm", pack_for_cpu=True)
    train = load_corpus("ud-ewt-dev", tokenizer)
    test = corpus_from_treebank("UD English EWT (test)", builtin_treebank("test").sentences[: args.sentences], tokenizer)
    ranking = rank_neurons(model, train, args.layer, args.task, tokenizer.pad_id)
    result = ablate_ranked(model, tokenizer, ranking, test, share=args.share, mode=args.mode, draws=args.draws)
    report = {"model": "minilm", "layer": args.layer, "task": args.task, "train": train.name, "train_words": ranking.train_words,
              "test": f"{test.name}, first {len(test)} sentences", **dataclasses.asdict(result),
              "wall_s": round(time.perf_counter() - started, 1), "cpu_s": round(time.process_time() - cpu, 1),
              "load_average_1min": round(os.getloadavg()[0], 2)}
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
