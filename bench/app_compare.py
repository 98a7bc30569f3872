"""The prediction page's time for a new sentence, in two checkouts of the app, alternated in one run.

    git worktree add /tmp/base <commit>                      # the checkout to compare with
    python -m bench.make_random_bert /tmp/random-bert-base   # once: a BERT-base-shaped checkpoint
    OMP_NUM_THREADS=1 python -m bench.app_compare /tmp/base . --model minilm --rounds 5 --sentences 5
    OMP_NUM_THREADS=1 python -m bench.app_compare /tmp/base . --model /tmp/random-bert-base

Each round runs one fresh process per checkout, in turn (A, B, A, B, ...), so both see the same machine load.
A process opens the app's Home.py in AppTest on the prediction page (the model loaded, the page run once: not
timed), then types `--sentences` new sentences of `--tokens` tokens with one [MASK] into the sentence box and
times each run of the page (tokenize, the forward pass, the predictions, the chart): wall and CPU seconds. Every
sentence is new to the process, so no cached pass is reused; both checkouts get the same sentences. Printed: per
checkout the median over all sentences and the spread (min-max), and the ratio B / A of each round's medians
(median and spread), which is what to compare across machines and loads.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path


def new_sentences(tokenizer, tokens: int, count: int, skip: int) -> list[str]:
    """`count` sentences of exactly `tokens` tokens with one [MASK], after the first `skip` (the same for both
    checkouts: the same tokenizer)."""
    from bench.app_timing import sentence_of

    found, variant = [], 1000 * tokens
    while len(found) < skip + count:
        try:
            found.append(sentence_of(tokenizer, tokens, variant))
        except AssertionError:  # no sentence of exactly that length from this variant's words
            pass
        variant += 1
    return found[skip:]


def child(root: Path, model: str, tokens: int, sentences: int, round_number: int) -> dict:
    """Runs inside a process whose PYTHONPATH is `root`: that checkout's bert and viz_app."""
    import torch
    from streamlit.testing.v1 import AppTest

    import bert
    from viz_app.server import visitor

    visitor.address = lambda: "127.0.0.1"  # AppTest has no connection: play the person at the server's machine
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    _, tokenizer = bert.load_pretrained(model)
    at = AppTest.from_file(str(root / "viz_app" / "Home.py"), default_timeout=900)
    at.query_params["model"] = model
    warm_up, *texts = new_sentences(tokenizer, tokens, sentences + 1, round_number * (sentences + 1))
    at.query_params["text"] = warm_up
    at.run()  # warm-up: imports, the model, the first page
    if at.exception or not at.get("plotly_chart"):
        raise SystemExit(f"the prediction page failed in {root}: {at.exception}")
    walls, cpus = [], []
    for text in texts:
        wall, cpu = time.perf_counter(), time.process_time()
        at.text_area(key="text").input(text).run()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if at.exception or not at.get("plotly_chart"):
            raise SystemExit(f"the prediction page failed in {root}: {at.exception}")
    return {"wall_s": walls, "cpu_s": cpus}


def run_child(root: Path, args, round_number: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(root), "--model", args.model,
               "--tokens", str(args.tokens), "--sentences", str(args.sentences), "--round", str(round_number)]
    out = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{root}: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    return f"{min(values):.3f}–{max(values):.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="*", type=Path, help="A and B: two checkouts of this repository")
    parser.add_argument("--model", default="minilm", help="minilm (default) or a checkpoint folder")
    parser.add_argument("--tokens", type=int, default=32, help="tokens per sentence, [CLS] and [SEP] included")
    parser.add_argument("--sentences", type=int, default=5, help="new sentences timed per process")
    parser.add_argument("--rounds", type=int, default=5, help="processes per checkout, alternated")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child.resolve(), args.model, args.tokens, args.sentences, args.round)))
        return 0
    if len(args.checkouts) != 2:
        parser.error("give two checkouts, A and B")
    if Path(args.model).is_dir():
        args.model = str(Path(args.model).resolve())
    roots = [root.resolve() for root in args.checkouts]
    runs: dict[str, list[dict]] = {str(root): [] for root in roots}
    for round_number in range(args.rounds):
        for root in roots:
            result = run_child(root, args, round_number)
            runs[str(root)].append(result)
            print(f"round {round_number + 1}: {root}: median {statistics.median(result['wall_s']):.3f} s wall, "
                  f"{statistics.median(result['cpu_s']):.3f} s CPU", flush=True)
    load = os.getloadavg()
    print(f"\nmodel {args.model}, {args.tokens} tokens; {os.cpu_count()} CPUs, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', '1')}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"{platform.processor() or platform.machine()}; {args.rounds} rounds x {args.sentences} sentences\n")
    print("| checkout | wall, median (s) | spread | CPU, median (s) | spread |")
    print("| --- | ---: | ---: | ---: | ---: |")
    summary = {}
    for root in roots:
        walls = [w for run in runs[str(root)] for w in run["wall_s"]]
        cpus = [c for run in runs[str(root)] for c in run["cpu_s"]]
        summary[str(root)] = {"median_wall_s": statistics.median(walls), "median_cpu_s": statistics.median(cpus)}
        print(f"| {root} | {statistics.median(walls):.3f} | {spread(walls)} | {statistics.median(cpus):.3f} | "
              f"{spread(cpus)} |")
    ratios = {kind: [statistics.median(b[kind]) / statistics.median(a[kind])
                     for a, b in zip(runs[str(roots[0])], runs[str(roots[1])])] for kind in ("wall_s", "cpu_s")}
    print(f"\nratio B / A, per round: wall median {statistics.median(ratios['wall_s']):.2f} "
          f"(spread {spread(ratios['wall_s'])}), CPU median {statistics.median(ratios['cpu_s']):.2f} "
          f"(spread {spread(ratios['cpu_s'])})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": args.model, "tokens": args.tokens, "load_average": load,
                                         "runs": runs, "summary": summary, "ratios": ratios}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
