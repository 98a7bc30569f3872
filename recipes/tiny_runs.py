"""The tiny BERT runs the "How BERT was trained" page shows at once: their logs (no weights) in bert/data/tiny_runs/.

    python recipes/tiny_runs.py            # every default run, one after the other (minutes each on 2 CPU cores)
    python recipes/tiny_runs.py --only mlm-L2-H128-800steps-seed0
    python recipes/tiny_runs.py --report   # the shipped logs' figures, as a Markdown table

Each run is bert.pretraining.miniature.train_tiny with its DEFAULT_RUNS settings: the page's live default, the
masked-LM and the left-to-right model of the same size (Devlin et al. 2019, figure 5, in miniature) and three
sizes (their table 6, in miniature).
Each log records when, where and under what load it ran.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch

from bert.pretraining.miniature import DEFAULT_RUNS, TinySettings, train_tiny

OUT = Path(__file__).resolve().parent.parent / "bert" / "data" / "tiny_runs"
RUNS = DEFAULT_RUNS


def environment() -> dict:
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores, torch {torch.__version__}, {torch.get_num_threads()} threads",
        "load_average_1min": round(os.getloadavg()[0], 2),
        "command": "python recipes/tiny_runs.py",
    }


def run(settings: TinySettings) -> Path:
    before = environment()
    with tempfile.TemporaryDirectory() as folder:
        log, _, _ = train_tiny(settings, folder)
    log.environment = before | {"load_average_1min_after": round(os.getloadavg()[0], 2)}
    path = OUT / f"{settings.name}.json"
    path.write_text(json.dumps(asdict(log), separators=(",", ":")) + "\n")
    logging.info("%s: %.0f s, held-out loss %.3f, right-context top-5 %.0f%%", settings.name, log.seconds,
                 log.evals[-1]["heldout_loss"], 100 * log.right_context["top5"])
    return path


def report() -> str:
    """One Markdown row per shipped run: what docs/how_bert_was_trained.md quotes."""
    from bert.pretraining.miniature import RunLog

    lines = ["| run | parameters | steps | held-out loss | held-out top-1 | right-context top-1 / top-5 | answer loss | seconds | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for settings in RUNS:
        path = OUT / f"{settings.name}.json"
        if not path.is_file():
            continue
        log = RunLog.from_dict(json.loads(path.read_text()))
        last, cloze = log.evals[-1], log.right_context
        answer = f"{cloze['loss']:.2f}" if "loss" in cloze else "–"
        lines.append(f"| {settings.name} | {log.parameters:,} | {len(log.train_loss)} | {last['heldout_loss']:.3f} | {last['top1']:.1%} | "
                     f"{cloze['top1']:.0%} / {cloze['top5']:.0%} | {answer} | {log.seconds:.0f} | "
                     f"{log.environment['load_average_1min']} → {log.environment['load_average_1min_after']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    torch.set_num_threads(1)  # one core: on a shared 2-core machine, two threads wait on each other (20x slower under load)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="one run's name, e.g. mlm-L2-H128-800steps-seed0")
    parser.add_argument("--report", action="store_true", help="print the shipped logs' figures and stop")
    args = parser.parse_args()
    if args.report:
        print(report())
        raise SystemExit(0)
    only = args.only
    OUT.mkdir(parents=True, exist_ok=True)
    for settings in RUNS:
        if only in (None, settings.name):
            print(run(settings))
