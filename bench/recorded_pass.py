"""The recorded pass (`run_with_cache`, every hook kept, logits at every position) on each of our Linear paths,
against TransformerLens 4's bridge and transformers' eager forward, same random BERT-base weights, timed in turn in
one process.

    python -m bench.recorded_pass [--shapes 1x16 1x128 1x512] [--repeats 7] [--threads 2]

Configurations, alternating after a warm-up (so drift in a shared machine's load hits all alike):
- ours_default: `bert.load_pretrained(folder)` as a user calls it: on the CPU, oneDNN's product on the weights
  as they are (bert/packed_linear.py, no second copy of the weights);
- ours_packed: `load_pretrained(folder, pack_for_cpu=True)`, the app's path: oneDNN's product on a copy of each
  weight reordered into oneDNN's blocked layout (one more copy of the weights in memory);
- ours_pytorch: `load_pretrained(folder, cpu_kernels=False)`: PyTorch's nn.Linear (Intel MKL's product);
- transformer_lens_bridge: TransformerLens 4's `TransformerBridge.boot_transformers(folder)` (transformers'
  BertForMaskedLM wrapped with its hook points), `run_with_cache(ids)`, every hook (only where transformer_lens is
  installed: it is an optional benchmark dependency, `pip install transformer-lens`);
- transformers_eager: transformers' BertForMaskedLM, eager attention, output_attentions and output_hidden_states.
Per shape: each configuration's median and spread (min–max) over `--repeats` rounds, and the ratio of each of
ours to each reference (below 1.0: ours is faster), in two tables: wall time, and the process's CPU time (user and
system, all threads: on a machine shared with other work, what a pass costs without the waits for a core; with
one thread it is the steadier ratio). Ends with the CPU's name (lscpu), the threads and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import torch

from bench.forward import inputs
from bench.make_random_bert import make_random_bert
from bert import load_pretrained

OURS = {  # configuration -> load_pretrained's keywords
    "ours_default": {},
    "ours_packed": {"pack_for_cpu": True},
    "ours_pytorch": {"cpu_kernels": False},
}
REFERENCES = ("transformer_lens_bridge", "transformers_eager")


def has_transformer_lens() -> bool:
    try:
        from transformer_lens.model_bridge import TransformerBridge  # noqa: F401
    except ImportError:
        return False
    return True


def load_models(folder: Path, references: tuple[str, ...]) -> dict[str, object]:
    """Each configuration's model, loaded once."""
    models = {name: load_pretrained(str(folder), **keywords)[0] for name, keywords in OURS.items()}
    if "transformer_lens_bridge" in references:
        from transformer_lens.model_bridge import TransformerBridge

        models["transformer_lens_bridge"] = TransformerBridge.boot_transformers(str(folder), device="cpu").eval()
    import transformers

    models["transformers_eager"] = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    return models


def runners(models: dict[str, object], shape: str) -> dict[str, Callable[[], object]]:
    ids, types, _, _ = inputs(shape)
    calls = {name: (lambda model=models[name]: model.run_with_cache(ids, types)) for name in OURS}
    if "transformer_lens_bridge" in models:
        calls["transformer_lens_bridge"] = lambda: models["transformer_lens_bridge"].run_with_cache(ids)
    eager = models["transformers_eager"]
    calls["transformers_eager"] = lambda: eager(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True)
    return calls


def timed(call: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds, user and system, all threads) of one call, its output freed."""
    wall, cpu = time.perf_counter(), time.process_time()
    output = call()
    del output
    return time.perf_counter() - wall, time.process_time() - cpu


def compare(calls: dict[str, Callable[[], object]], repeats: int) -> dict[str, dict[str, list[float]]]:
    """{configuration: {"wall": [seconds per run], "cpu": [...]}}"""
    times = {name: {"wall": [], "cpu": []} for name in calls}
    with torch.inference_mode():
        for call in calls.values():  # warm-up
            call()
        for _ in range(repeats):
            for name, call in calls.items():
                wall, cpu = timed(call)
                times[name]["wall"].append(wall)
                times[name]["cpu"].append(cpu)
    return times


def cpu_name() -> str:
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown CPU"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name")), "unknown CPU")


def table(rows: dict[str, dict[str, dict[str, list[float]]]], references: tuple[str, ...], clock: str) -> list[str]:
    names = [*OURS, *references]
    ratios = [(ours, reference) for reference in references for ours in OURS]
    lines = [f"| tokens ({clock}) | " + " | ".join(f"{n} (s)" for n in names) + " | " + " | ".join(f"{o} / {r}" for o, r in ratios) + " |",
             "| ---: " * (1 + len(names) + len(ratios)) + "|"]
    for shape, times in rows.items():
        runs = {n: times[n][clock] for n in names}
        median = {n: statistics.median(runs[n]) for n in names}
        cells = [f"{median[n]:.3f} ({min(runs[n]):.3f}–{max(runs[n]):.3f})" for n in names]
        lines.append(f"| {shape.split('x')[1]} | " + " | ".join(cells) + " | "
                     + " | ".join(f"{median[o] / median[r]:.2f}" for o, r in ratios) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=["1x16", "1x128", "1x512"], help="BATCHxTOKENS")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # smoke tests: tiny_fields' sizes
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    references = REFERENCES if has_transformer_lens() else REFERENCES[1:]
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "random-bert-base"
        make_random_bert(folder, tiny=args.tiny)
        models = load_models(folder, references)
        for shape in args.shapes:
            rows[shape] = compare(runners(models, shape), args.repeats)
            print(f"{shape}: " + ", ".join(f"{n} {statistics.median(t['wall']):.3f} s" for n, t in rows[shape].items()), flush=True)
    load = os.getloadavg()
    print(f"\nbert-base, recorded pass; {cpu_name()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; median of {args.repeats} "
          "alternating runs, spread min–max" + ("" if "transformer_lens_bridge" in references else "; TransformerLens not installed")
          + ("; TINY model (a smoke test, not a measurement)" if args.tiny else "") + "\n")
    for clock in ("wall", "cpu"):
        print("\n".join(table(rows, references, clock)) + "\n")


if __name__ == "__main__":
    main()
