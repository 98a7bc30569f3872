"""Our full-recording forward vs transformers' eager forward, same BERT-base weights, alternating in one process.

    python bench/forward.py [--lengths 16 128 512] [--repeats 5]

Prints, per length, the median time of: ours with every hook recorded (run_with_cache, names=None); ours with
logits only at the [MASK]s (15% of positions); transformers' BertForMaskedLM (eager attention,
output_attentions and output_hidden_states). Ratios below 1.0 mean ours is faster. Then the peak memory of a
full 512-token cache. The weights are a randomly initialised BERT-base (no real one is offline; speed does
not depend on the values). transformers is a benchmark-only reference here.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import shutil

import torch

from bert import load_pretrained
from bert.pretrained import minilm_folder


def build_models(folder: str):
    import transformers

    config = transformers.BertConfig(attn_implementation="eager")
    reference = transformers.BertForMaskedLM(config).eval()
    reference.save_pretrained(folder)
    shutil.copy(minilm_folder() / "vocab.txt", folder)  # bert-base-uncased's vocabulary
    ours, _ = load_pretrained(folder)
    return ours, reference


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


@torch.inference_mode()
def compare(ours, reference, length: int, repeats: int) -> dict[str, float]:
    generator = torch.Generator().manual_seed(length)
    ids = torch.randint(1000, 30000, (1, length), generator=generator)
    types = torch.zeros_like(ids)
    masks = torch.rand(ids.shape, generator=generator) < 0.15
    masks[0, length // 2] = True
    runs = {
        "ours_full_cache": lambda: ours.run_with_cache(ids, types),
        "ours_mask_logits": lambda: ours.run_with_cache(ids, types, logit_mask=masks),
        "transformers": lambda: reference(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True),
    }
    for run in runs.values():  # warm-up
        run()
    times = {name: [] for name in runs}
    for _ in range(repeats):  # alternate, so drift in machine load hits all three alike
        for name, run in runs.items():
            times[name].append(timed(run))
    return {name: statistics.median(values) for name, values in times.items()}


def cache_megabytes(ours, length: int = 512) -> float:
    """Bytes held by the cache of one full-recording run (every hook, one input)."""
    ids = torch.randint(1000, 30000, (1, length))
    with torch.inference_mode():
        _, cache = ours.run_with_cache(ids, torch.zeros_like(ids))
    return sum(t.numel() * t.element_size() for t in cache.values()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        ours, reference = build_models(folder)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'tokens':>6} {'ours full (s)':>14} {'ours masks (s)':>15} {'transformers (s)':>17} {'ratio full':>11} {'ratio masks':>12}")
    for length in args.lengths:
        t = compare(ours, reference, length, args.repeats)
        print(f"{length:>6} {t['ours_full_cache']:>14.4f} {t['ours_mask_logits']:>15.4f} {t['transformers']:>17.4f} "
              f"{t['ours_full_cache'] / t['transformers']:>11.2f} {t['ours_mask_logits'] / t['transformers']:>12.2f}")
    print(f"full cache of one 512-token input: {cache_megabytes(ours):.0f} MB")


if __name__ == "__main__":
    main()
