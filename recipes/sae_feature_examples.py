"""Three features of the shipped sparse autoencoder, drawn at random (seed 0) among those that fire on the
built-in sentences, each with its top examples and the tokens it promotes: the text docs/features.md describes.

    OMP_NUM_THREADS=1 python recipes/sae_feature_examples.py [--seed 0] [--count 3] [--top 10]
"""
from __future__ import annotations

import argparse
import random

import torch

from bert import load_pretrained
from bert.analysis.features.corpora import load_corpus
from bert.analysis.features.feature_pages import promoted, scan_features
from bert.analysis.features.neurons import top_examples
from bert.analysis.features.sae import load_sae
from bert.analysis.features.shipped import SHIPPED_SAE


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model, tokenizer = load_pretrained("minilm", pack_for_cpu=True)
    sae = load_sae(SHIPPED_SAE, model)
    corpus = load_corpus("builtin", tokenizer)
    scan = scan_features(model, sae, corpus, tokenizer.pad_id, k=args.top)
    alive = [feature for feature in range(scan.num_units) if scan.active[feature] > 0]
    print(f"{len(alive)} of {scan.num_units} features fire on the {len(corpus)} built-in sentences ({scan.num_rows} tokens)")
    for feature in random.Random(args.seed).sample(alive, args.count):
        print(f"\nfeature {feature}: fires on {int(scan.active[feature])} tokens")
        for example in top_examples(scan, corpus, feature, args.top):
            print(f"  {example.activation:.2f}  [{example.token}]  {example.sentence}")
        print("  promotes:", ", ".join(token for token, _ in promoted(sae, model, tokenizer, feature, 10)))


if __name__ == "__main__":
    main()
