"""A BERT-base-shaped checkpoint folder with random weights, for timing (speed does not depend on the values).

    python -m bench.make_random_bert out/random-bert-base      # config.json, model.safetensors, vocab.txt

transformers' BertForMaskedLM with its default config (12 layers, 768 hidden, 12 heads, 30,522 tokens), saved as
safetensors beside bert-base-uncased's vocabulary (the built-in model's vocab.txt is that vocabulary). No real
BERT-base is needed offline. transformers is a benchmark-only dependency here.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from bert.pretrained import minilm_folder


def make_random_bert(folder: Path, seed: int = 0):
    """Write the checkpoint into `folder` (created) and return transformers' model (eager attention)."""
    import torch
    import transformers

    torch.manual_seed(seed)
    reference = transformers.BertForMaskedLM(transformers.BertConfig(attn_implementation="eager")).eval()
    folder.mkdir(parents=True, exist_ok=True)
    reference.save_pretrained(folder, safe_serialization=True)
    shutil.copy(minilm_folder() / "vocab.txt", folder / "vocab.txt")
    return reference


def reference_for(config):
    """transformers' BertForMaskedLM (eager attention, random weights) shaped like our `config`: the
    speed reference the benchmarks time beside ours."""
    import transformers

    settings = {key: value for key, value in config.to_hf_dict().items() if key != "model_type"}
    return transformers.BertForMaskedLM(transformers.BertConfig(**settings, attn_implementation="eager")).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    make_random_bert(args.folder)
    print(f"wrote a random BERT-base checkpoint to {args.folder}")


if __name__ == "__main__":
    main()
