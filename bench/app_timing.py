"""How long from a new sentence to pages 1 and 2 rendered, measured as AppTest run time.

    OMP_NUM_THREADS=1 python bench/app_timing.py                 # MiniLM, 32 and 512 tokens, 3 new sentences each
    OMP_NUM_THREADS=1 python bench/app_timing.py --repeats 5 --json out/app_timing.json

For each length: type a new sentence (with one [MASK]) into the sidebar while on the prediction page and run
it (tokenize, the one cached forward pass, predictions, chips, chart), then switch to the attention page and
run it (heatmaps, overview, statistics table). Each repeat uses a sentence not seen before, so the forward
pass is never a cache hit; the model is loaded and the pages are imported once beforehand (warm-up).
Wall time depends on what else the machine runs, so the CPU time of this process and the load average are
printed beside it. Targets (issue 4): 0.5 s at 32 tokens, 2 s at 512 tokens.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "viz_app" / "Home.py"
ATTENTION = "../pages/2_attention.py"
PREDICTION = "../pages/1_prediction.py"
TARGETS = {32: 0.5, 512: 2.0}
WORDS = (
    "the old lighthouse keeper walked along the rocky shore every morning and counted the ships that passed "
    "between the islands while gulls circled above the harbour and fishermen mended their nets in the sun"
).split()


def sentence_of(tokenizer, length: int, variant: int) -> str:
    """A sentence with one [MASK] that encodes to exactly `length` tokens ([CLS] and [SEP] included)."""
    words = WORDS[variant % len(WORDS):] + WORDS[: variant % len(WORDS)]
    pieces = [f"story{variant}", "[MASK]"]
    while len(tokenizer.encode(" ".join(pieces), max_length=10_000)) < length:
        pieces.append(words[len(pieces) % len(words)])
    while len(tokenizer.encode(" ".join(pieces), max_length=10_000)) > length:
        pieces.pop()
    text = " ".join(pieces)
    assert len(tokenizer.encode(text, max_length=10_000)) == length, (length, text)
    return text


def timed(run) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model source (default: the app's default, minilm)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    from streamlit.testing.v1 import AppTest

    from viz_app import models

    source = args.model or models.default_source()
    tokenizer = models.load(source).tokenizer
    at = AppTest.from_file(str(HOME), default_timeout=900)
    at.query_params["model"] = source
    at.run()  # warm-up: model load, imports, first page
    at.switch_page(ATTENTION).run()
    at.switch_page(PREDICTION).run()
    if at.exception:
        print(at.exception[0].value, file=sys.stderr)
        return 1

    rows = []
    for length in args.lengths:
        for repeat in range(args.repeats):
            text = sentence_of(tokenizer, length, variant=1000 * length + repeat)
            page1 = timed(lambda: at.sidebar.text_area(key="text").input(text).run())
            page2 = timed(lambda: at.switch_page(ATTENTION).run())
            if at.exception or not at.get("plotly_chart"):
                print(f"page failed at {length} tokens: {at.exception}", file=sys.stderr)
                return 1
            at.switch_page(PREDICTION).run()
            rows.append(
                {"tokens": length, "repeat": repeat, "page1_s": page1[0], "page2_s": page2[0],
                 "total_s": page1[0] + page2[0], "cpu_s": page1[1] + page2[1]}
            )
            print(f"{length:4d} tokens  repeat {repeat}: prediction {page1[0]:6.2f} s + attention {page2[0]:6.2f} s "
                  f"= {page1[0] + page2[0]:6.2f} s wall, {page1[1] + page2[1]:5.2f} s CPU", flush=True)

    load = os.getloadavg()
    print(f"\nmodel {source}; {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {platform.processor() or platform.machine()}")
    print("tokens  median wall (page 1 + page 2)  median CPU  target")
    summary = {}
    for length in args.lengths:
        mine = [r for r in rows if r["tokens"] == length]
        wall = statistics.median(r["total_s"] for r in mine)
        cpu = statistics.median(r["cpu_s"] for r in mine)
        summary[length] = {"median_total_s": wall, "median_cpu_s": cpu, "target_s": TARGETS.get(length)}
        target = f"{TARGETS[length]:.1f} s" if length in TARGETS else "-"
        print(f"{length:6d}  {wall:28.2f} s  {cpu:8.2f} s  {target}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": source, "load_average": load, "rows": rows, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
