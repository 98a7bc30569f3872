"""The "one word, many contexts" finding in docs/probing.md: self-similarity of the hand-written examples
(bert.analysis.representations.self_similarity.EXAMPLES) against the anisotropy baseline, layer by layer.

    OMP_NUM_THREADS=1 python scripts/self_similarity.py [--model minilm] [--baseline-sentences 200] [--samples 2000]
"""
from __future__ import annotations

import argparse

import torch

import bert
from bert.analysis.corpus.batching import residual_names
from bert.analysis.representations.self_similarity import EXAMPLES, anisotropy_baseline, word_self_similarity
from bert.data import builtin_sentences
from bert.cli_arguments import add_model_argument


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--baseline-sentences", type=int, default=200, help="built-in sentences for the baseline")
    parser.add_argument("--samples", type=int, default=2000, help="random token pairs for the baseline")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    model, tokenizer = bert.load_pretrained(args.model, pack_for_cpu=True)
    per_word = {word: word_self_similarity(model, tokenizer, word, sentences) for word, sentences in EXAMPLES.items()}
    mean = torch.stack(list(per_word.values())).mean(dim=0)
    texts = [s.text for s in builtin_sentences(args.baseline_sentences)]
    baseline = anisotropy_baseline(model, tokenizer, texts, samples=args.samples, seed=args.seed)
    words = list(per_word)
    print(f"{args.model}: self-similarity of {', '.join(words)} ({len(EXAMPLES[words[0]])} sentences each); baseline: "
          f"{args.samples} random token pairs of the first {args.baseline_sentences} built-in sentences, seed {args.seed}")
    print("| layer | " + " | ".join(words) + " | mean | baseline | mean - baseline |")
    print("| --- " * (len(words) + 4) + "|")
    for layer, name in enumerate(residual_names(model)):
        cells = [f"{per_word[w][layer]:.3f}" for w in words]
        print(f"| {name} | " + " | ".join(cells) + f" | {mean[layer]:.3f} | {baseline[layer]:.3f} | "
              f"{mean[layer] - baseline[layer]:+.3f} |")


if __name__ == "__main__":
    main()
