"""Timing and figures of the treebank probes: the built-in model on UD English EWT (train on dev, test on test), all six
tasks with controls at every layer; MDL timed on its own; a random BERT-base-shaped model for the large-model time.

    OMP_NUM_THREADS=2 python -m bench.treebank_probes [--model minilm] [--mdl] [--json out/treebank_probes.json]
    python -m bench.make_random_bert out/random-bert-base
    OMP_NUM_THREADS=2 python -m bench.treebank_probes --model out/random-bert-base --json out/treebank_probes_base.json

One run is the figure (minutes for BERT-base). Wall time depends on what else the machine runs: the process's CPU
time and the load average are printed beside it, with the CPU model.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import torch  # noqa: E402

import bert  # noqa: E402
from bert.analysis.probing.probe_cli import format_tables  # noqa: E402
from bert.analysis.probing.treebank import builtin_treebank  # noqa: E402
from bert.analysis.probing.pipeline import ProbeSettings, run_probes  # noqa: E402
from bert.cli_arguments import add_model_argument

TASKS = ["upos", "xpos", "deprel", "arcs", "distance", "depth"]


def cpu_model() -> str:
    try:
        lines = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown"
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("Model name")), "unknown")


def timed_run(model, tokenizer, name: str, settings: ProbeSettings, tasks: list[str]) -> tuple[object, dict]:
    wall, cpu, load = time.perf_counter(), time.process_time(), os.getloadavg()[0]
    stages: list[str] = []

    def progress(fraction: float, message: str) -> None:  # a line per stage, with the time since the start
        if not stages or stages[-1] != message:
            stages.append(message)
            print(f"  {time.perf_counter() - wall:7.1f} s  {message}", flush=True)

    report = run_probes(model, tokenizer, builtin_treebank("dev"), builtin_treebank("test"), tasks, settings, name,
                                 progress)
    figures = {"wall_s": round(time.perf_counter() - wall, 1), "cpu_s": round(time.process_time() - cpu, 1),
               "load_average_1min_before": round(load, 2), "load_average_1min_after": round(os.getloadavg()[0], 2),
               "stages_s": report.timings}
    return report, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_model_argument(parser)
    parser.add_argument("--mdl", action="store_true", help="also time MDL (upos, xpos, deprel and their controls) on its own")
    parser.add_argument("--pieces", default="first")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    model, tokenizer = bert.load_pretrained(args.model, pack_for_cpu=True)
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print(json.dumps(machine))
    results = {"machine": machine, "model": args.model}
    report, results["all_tasks"] = timed_run(model, tokenizer, args.model, ProbeSettings(pieces=args.pieces), TASKS)
    print(format_tables(report))
    print(f"all six tasks with controls, every layer: {json.dumps(results['all_tasks'])}", flush=True)
    results["report"] = report.to_dict()
    if args.mdl:
        mdl_report, results["mdl_tasks"] = timed_run(model, tokenizer, args.model, ProbeSettings(pieces=args.pieces, mdl=True),
                                                     ["upos", "xpos", "deprel"])
        results["mdl_s"] = mdl_report.timings.get("mdl")
        print(format_tables(mdl_report))
        print(f"MDL alone: {results['mdl_s']} s (the run with MDL: {json.dumps(results['mdl_tasks'])})")
        results["mdl_report"] = mdl_report.to_dict()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
