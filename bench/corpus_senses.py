"""Do a word's nearest neighbours share its sense, layer by layer? (bert/data/senses.tsv)

    OMP_NUM_THREADS=1 python -m bench.corpus_senses [--model minilm] [--k 10]

For each of the 176 occurrences of 8 ambiguous words (two senses, 11 sentences each), its k nearest other
occurrences of the same word by cosine; the table gives the share that have the query's sense.
"""
from __future__ import annotations

import argparse

import bert
from bert.analysis.representations.sense_neighbours import load_senses, sense_agreement
from bert.cli_arguments import add_model_argument


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    model, tokenizer = bert.load_pretrained(args.model, pack_for_cpu=True)
    result = sense_agreement(model, tokenizer, load_senses(), k=args.k)
    words = list(result.by_word[0])
    print(f"Top-{args.k} neighbours sharing the query's sense ({args.model}; chance {result.chance:.1%})\n")
    print("| layer | all words | " + " | ".join(words) + " |")
    print("| --- " * (len(words) + 2) + "|")
    for layer in result.layers:
        name = "embeddings" if layer == 0 else f"layer {layer}"
        cells = " | ".join(f"{result.by_word[layer][w]:.0%}" for w in words)
        print(f"| {name} | **{result.share[layer]:.1%}** | {cells} |")


if __name__ == "__main__":
    main()
