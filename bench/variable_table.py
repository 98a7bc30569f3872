"""Every interchange-intervention method on every built-in task, on the built-in model, over several seeds: the table
of docs/causal.md ("Where a variable lives").

    OMP_NUM_THREADS=1 nice -n 10 python -m bench.variable_table [--seeds 0 1 2] [--max-pairs 128] [--steps 100] \\
        [--json out/variable_table.json] [--markdown out/variable_table.md]
    python -m bench.variable_table --render out/variable_table.json out/other_seeds.json   # one table of both

For each task (bert/data/variable_tasks.py):
- what the model knows: of the task's sentences, the share where it prefers its own answer to the other value's;
  of its pairs, how many it gets right in both sentences, in one, in neither (those are dropped);
- the site: full-vector patching (`full`, seed 0) at every layer's output x the positions [MASK] and subject; the
  cell with the highest held-out IIA;
- then seed by seed, at each task's site, every method (bert/analysis/causal/alignment.py) with each seed (the seed draws the split, the
  control's labels, a trained rotation's start and batches): held-out IIA, the control's, selectivity, log-odds,
  and the floor (the held-out pairs whose base run already prefers the source's answer: doing nothing scores it).
Writes the JSON after every cell (a run cut short keeps what it finished) and prints the load average: the machine
is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from bert import load_pretrained  # noqa: E402
from bert.analysis.causal.alignment import (METHODS, AlignmentSettings, align_prepared, alignment_sweep,  # noqa: E402
                                            prepare_split)
from bert.analysis.causal.interchange import interchange_accuracy, prepare_pairs, record_pairs  # noqa: E402
from bert.data.variable_tasks import TASKS, task_pairs  # noqa: E402
from bert.hooks import hook_name  # noqa: E402

POSITIONS = ("mask", "subject")
ORDER = ["full", "mean-diff", "probe", "pca", "lda", "random", "das", "boundless"]  # the fitted ones first: quick


def knowledge(model, tokenizer, task: str) -> dict:
    """How many of the task's pairs the model gets right in both sentences, in one, in neither, and the share of its
    sentences right (its own answer preferred to the other value's): one pass a distinct sentence (every sentence is
    the base of some pair: both orders are generated)."""
    pairs = task_pairs(task)
    one_each, _ = prepare_pairs(tokenizer, list({p.base: p for p in pairs}.values()), model.config.max_position_embeddings)
    _, _, base_logits, _ = record_pairs(model, tokenizer.pad_id, one_each, [])
    right = {p.pair.base: bool(row[0] > row[1]) for p, row in zip(one_each, base_logits)}  # (base answer, source answer)
    counts = [right[p.base] + right[p.source] for p in pairs if p.base in right and p.source in right]
    return {"pairs": len(pairs), "both_right": counts.count(2), "one_right": counts.count(1), "neither_right": counts.count(0),
            "sentences": len(right), "sentences_right": sum(right.values()) / len(right)}


def best_site(model, tokenizer, task: str, settings: AlignmentSettings) -> tuple[int, str, list]:
    sweep = alignment_sweep(model, tokenizer, task_pairs(task), list(range(model.config.num_layers)), POSITIONS,
                            settings=AlignmentSettings(method="full", seed=0, max_pairs=settings.max_pairs))
    grid = sweep.grid("iia")
    layer, column = max(((l, c) for l in range(len(grid)) for c in range(len(POSITIONS))), key=lambda lc: grid[lc[0]][lc[1]])
    return layer, POSITIONS[column], grid


def summary(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "values": values}


def markdown(report: dict) -> str:
    """One row per task (its site, the floor), one column per method: held-out IIA, mean over the seeds run (min-max),
    then the control's mean IIA, and the seeds run in brackets."""
    lines = ["| task (site; floor) | " + " | ".join(f"`{m}`" for m in report["methods"]) + " |",
             "| --- | " + " | ".join("---:" for _ in report["methods"]) + " |"]
    for task, entry in report["tasks"].items():
        cells = []
        for method in report["methods"]:
            runs = entry["methods"].get(method)
            if not runs:
                cells.append("")
                continue
            iia, control = summary([r["iia"] for r in runs]), summary([r["control_iia"] for r in runs])
            spread = f" ({iia['min']:.2f}-{iia['max']:.2f})" if len(runs) > 1 else ""
            size = f", k {statistics.median(r['dims'] for r in runs):.0f}" if method == "boundless" else ""
            cells.append(f"{iia['mean']:.2f}{spread} / {control['mean']:.2f} [{len(runs)}{size}]")
        floor = f"{statistics.fmean(entry['floor']):.2f}" if entry["floor"] else "?"
        lines.append(f"| {task} (layer {entry['layer']}, {entry['position']}; {floor}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def merged(reports: list[dict]) -> dict:
    """Runs of the same tasks and methods (other seeds, run apart) as one report: each task's site from the first
    report that has it, its runs and floors from all (a seed run twice counted once)."""
    out = {**reports[0], "tasks": {}}
    for report in reports:
        for task, entry in report["tasks"].items():
            into = out["tasks"].setdefault(task, {**entry, "methods": {}, "floor": []})
            into["floor"] += entry["floor"]
            for method, runs in entry["methods"].items():
                seen = {run["seed"] for run in into["methods"].get(method, [])}
                into["methods"].setdefault(method, []).extend(run for run in runs if run["seed"] not in seen)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--methods", nargs="+", default=ORDER, choices=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--max-pairs", type=int, default=128)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--site", nargs=2, metavar=("LAYER", "POSITION"), help="skip the sweep: every task at this site")
    parser.add_argument("--json", type=Path, default=Path("out/variable_table.json"))
    parser.add_argument("--markdown", type=Path, default=Path("out/variable_table.md"))
    parser.add_argument("--render", nargs="+", type=Path, help="no run: print the table of these JSON reports, merged")
    args = parser.parse_args()
    if args.render:
        print(markdown(merged([json.loads(path.read_text(encoding="utf-8")) for path in args.render])))
        return
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    model, tokenizer = load_pretrained("minilm", pack_for_cpu=True)
    report = {"date": datetime.now(timezone.utc).isoformat(timespec="minutes"), "machine": platform.processor() or platform.machine(),
              "cpus": os.cpu_count(), "threads": torch.get_num_threads(), "load_start": os.getloadavg(),
              "settings": {"max_pairs": args.max_pairs, "steps": args.steps, "dims": 1, "seeds": args.seeds},
              "methods": args.methods, "tasks": {}}
    args.json.parent.mkdir(parents=True, exist_ok=True)

    def save():
        report["load_end"] = os.getloadavg()
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        args.markdown.write_text(markdown(report), encoding="utf-8")

    for task in args.tasks:  # what the model knows, and the site
        started = time.perf_counter()
        if args.site:  # a site already found: no knowledge count, no sweep
            known, (layer, position), grid = None, (int(args.site[0]), args.site[1]), None
        else:
            known = knowledge(model, tokenizer, task)
            layer, position, grid = best_site(model, tokenizer, task, AlignmentSettings(max_pairs=args.max_pairs))
        report["tasks"][task] = {"knowledge": known, "layer": layer, "position": position, "full_grid": grid,
                                 "positions": list(POSITIONS), "methods": {}, "floor": []}
        print(f"{task}: {known}; best full site layer {layer}, {position} ({time.perf_counter() - started:.0f} s, "
              f"load {os.getloadavg()[0]:.1f})", flush=True)
        save()
    for seed in args.seeds:  # seed by seed, so that a run cut short has every task at its first seeds
        for task, entry in report["tasks"].items():
            hook, position = hook_name("layer_out", entry["layer"]), entry["position"]
            base = AlignmentSettings(seed=seed, max_pairs=args.max_pairs, steps=args.steps)
            split, recorded = prepare_split(model, tokenizer, task_pairs(task), base, [(hook, position)])
            test_base_logits = recorded["test"][2]
            entry["floor"].append(interchange_accuracy(test_base_logits, torch.ones(len(test_base_logits), dtype=torch.bool)))
            for method in args.methods:
                started = time.perf_counter()
                settings = AlignmentSettings(method=method, dims=1, seed=seed, max_pairs=args.max_pairs, steps=args.steps)
                result = align_prepared(model, tokenizer.pad_id, split, recorded, hook, position, settings)
                entry["methods"].setdefault(method, []).append(
                    {"seed": seed, "dims": result.dims, "iia": result.iia["test"], "train_iia": result.iia["train"],
                     "control_iia": result.control_iia["test"], "selectivity": result.selectivity,
                     "log_odds": result.log_odds, "pairs": result.pairs, "seconds": time.perf_counter() - started})
                print(f"  {task} seed {seed} {method}: IIA {result.iia['test']:.3f} control {result.control_iia['test']:.3f} "
                      f"dims {result.dims} ({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f})", flush=True)
                save()
    save()
    print(markdown(report))


if __name__ == "__main__":
    main()
