"""Our forward pass against transformers' eager forward, same BERT-base weights, alternating in one process.

    python bench/forward.py [--lengths 16 128 512] [--repeats 9] [--no-memory] [--no-packing]

Three configurations, timed in turn (so that drift in the machine's load hits all alike) after a warm-up:
- ours, full recording: `run_with_cache` keeping every hook (names=None), logits at every position;
- ours, the app's path: the app's one recorded pass (attention patterns, MLP activations, the embeddings; see
  viz_app.forward.recorded_pass), the LM head only at the [MASK]s (15% of positions);
- transformers' BertForMaskedLM, eager attention, output_attentions and output_hidden_states.
Per length it prints the median time of each, the spread (min–max), and the ratios of the medians (below 1.0:
ours is faster). Peak memory: each (configuration, length) runs once more in a fresh subprocess (glibc's mmap
threshold fixed, so freed blocks go back to the kernel), which resets the kernel's resident-set high-water
mark (/proc/self/clear_refs) just before the forward and reads VmHWM after it: the peak extra resident memory
of that forward pass, outputs included (torch's own allocations and
everything else; tracemalloc would not see torch). The weights are a random BERT-base (bench/make_random_bert.py;
speed does not depend on the values). transformers is a benchmark-only reference here. Ends with a table
ready to paste and the load average. `--no-packing`: ours with nn.Linear (MKL) instead of oneDNN-packed weights
(bert/packed_linear.py), to see what the packing gives.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.make_random_bert import make_random_bert  # noqa: E402
from bert import load_pretrained  # noqa: E402
from viz_app.forward import recorded_pass  # noqa: E402

CONFIGS = ("ours_full", "ours_app", "transformers")


def inputs(length: int):
    generator = torch.Generator().manual_seed(length)
    ids = torch.randint(1000, 30000, (1, length), generator=generator)
    masks = torch.rand(ids.shape, generator=generator) < 0.15
    masks[0, length // 2] = True
    return ids, torch.zeros_like(ids), masks


def runner(name: str, ours, reference, length: int):
    ids, types, masks = inputs(length)
    if name == "ours_full":
        return lambda: ours.run_with_cache(ids, types)
    if name == "ours_app":
        return lambda: recorded_pass(ours, ids, types, logit_mask=masks)
    return lambda: reference(input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True)


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def load_models(folder: Path, packing: bool = True):
    import transformers

    ours, _ = load_pretrained(str(folder), pack_for_cpu=packing)
    reference = transformers.BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    return ours, reference


@torch.inference_mode()
def compare(ours, reference, length: int, repeats: int) -> dict[str, list[float]]:
    runs = {name: runner(name, ours, reference, length) for name in CONFIGS}
    for run in runs.values():  # warm-up
        run()
    times = {name: [] for name in runs}
    for _ in range(repeats):  # alternate
        for name, run in runs.items():
            times[name].append(timed(run))
    return times


def resident_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


@torch.inference_mode()
def peak_memory(folder: Path, name: str, length: int, packing: bool) -> float:
    """MB: the peak extra resident memory of one forward pass (run in a fresh process by main)."""
    ours, reference = load_models(folder, packing)
    runner(name, ours, reference, 8)()  # initialise the libraries on a tiny input
    run = runner(name, ours, reference, length)
    gc.collect()
    before = resident_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current resident set
    outputs = run()  # kept alive until VmHWM is read
    peak = resident_kb("VmHWM")
    del outputs
    return (peak - before) / 1024


def measure_memory(folder: Path, name: str, length: int, packing: bool) -> float:
    command = [sys.executable, __file__, "--memory-of", name, str(length), "--folder", str(folder)] + ([] if packing else ["--no-packing"])
    # a fixed mmap threshold: big blocks come from the kernel and go back to it when freed, so the resident set
    # before the forward pass holds nothing freed that the pass could reuse unseen
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 128, 512])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocesses")
    parser.add_argument("--no-timing", action="store_true", help="only the peak memory")
    parser.add_argument("--no-packing", action="store_true", help="ours with nn.Linear, not oneDNN-packed weights")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--memory-of", nargs=2, metavar=("CONFIG", "LENGTH"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    packing = not args.no_packing
    if args.memory_of:
        print(peak_memory(args.folder, args.memory_of[0], int(args.memory_of[1]), packing))
        return

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "random-bert-base"
        make_random_bert(folder)
        ours, reference = load_models(folder, packing)
        results = {}
        for length in args.lengths:
            times = {name: [float("nan")] for name in CONFIGS} if args.no_timing else compare(ours, reference, length, args.repeats)
            memory = {} if args.no_memory else {name: measure_memory(folder, name, length, packing) for name in CONFIGS}
            results[length] = {"times": times, "peak_mb": memory}
            median = {name: statistics.median(values) for name, values in times.items()}
            print(f"{length} tokens: " + ", ".join(f"{name} {median[name]:.3f} s" for name in CONFIGS), flush=True)

    load = os.getloadavg()
    packing = "oneDNN-packed weights" if packing else "nn.Linear (no packing)"
    print(f"\ntorch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} CPUs, ours with {packing}; load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; median of {args.repeats} alternating runs, spread min–max; "
          "peak = extra resident memory during one forward pass (VmHWM)\n")
    print("| tokens | ours, full recording (s) | ours, app's path (s) | transformers eager (s) | ratio full | ratio app "
          "| peak MB: full / app / transformers |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for length, result in results.items():
        times, memory = result["times"], result["peak_mb"]
        cells = [f"{statistics.median(times[n]):.3f} ({min(times[n]):.3f}–{max(times[n]):.3f})" for n in CONFIGS]
        ratio = [statistics.median(times[n]) / statistics.median(times["transformers"]) for n in CONFIGS[:2]]
        peaks = " / ".join(f"{memory[n]:.0f}" for n in CONFIGS) if memory else "-"
        print(f"| {length} | {' | '.join(cells)} | {ratio[0]:.2f} | {ratio[1]:.2f} | {peaks} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average": load, "results": results}, indent=2))


if __name__ == "__main__":
    main()
