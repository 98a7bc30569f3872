"""How long from a new sentence to pages 1 and 2 rendered, measured as AppTest run time, beside transformers.

    python -m bench.make_random_bert out/random-bert-base                  # once: a BERT-base-shaped checkpoint
    OMP_NUM_THREADS=1 python -m bench.app_timing --model out/random-bert-base
    OMP_NUM_THREADS=1 python -m bench.app_timing                           # the built-in model
    OMP_NUM_THREADS=1 python -m bench.app_timing --lengths 32 512 --repeats 5 --json out/app_timing.json

For each length: type a new sentence (with one [MASK]) into the sentence box while on the prediction page and run
it (tokenize, the one cached forward pass, predictions, chips, chart), then switch to the attention page and
run it (heatmaps, all-heads overview, statistics). Each repeat uses a sentence not seen before, so the forward
pass is never a cache hit; the model is loaded and the pages are imported once beforehand (warm-up).
Alternating with each repeat, in the same process, it times transformers' BertForMaskedLM shaped like the
model (eager attention, output_attentions=True, random weights: speed does not depend on them) on the same
input: the ratio app / transformers is what to compare across machines and loads. Wall time depends on what
else the machine runs, so the CPU time and the load average are printed too, and a table ready to paste; the
prediction page alone has its own columns (its wall time, and its ratio to transformers). Targets (BERT-base
shape): 0.25 s at 32 tokens, 1.5 s at 512 tokens; at most 1.5 times one transformers forward for both pages.
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

from bench.make_random_bert import reference_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "viz_app" / "Home.py"
ATTENTION = "../pages/attention.py"
PREDICTION = "../pages/prediction.py"
TARGETS = {32: 0.25, 512: 1.5}
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


def spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="model source: a checkpoint folder, a hub id, or minilm (default)")
    parser.add_argument("--lengths", type=int, nargs="+", default=[32, 512])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    from streamlit.testing.v1 import AppTest

    from viz_app.app import models
    from viz_app.server import visitor

    visitor.address = lambda: "127.0.0.1"  # AppTest has no connection: play the person at the server's machine
    source = args.model or models.default_source()
    loaded = models.load(models.ModelKey.of(source))
    reference = reference_for(loaded.model.config)
    at = AppTest.from_file(str(HOME), default_timeout=900)
    at.query_params["model"] = str(Path(source).resolve()) if Path(source).is_dir() else source
    at.run()  # warm-up: model load, imports, first page
    at.switch_page(ATTENTION).run()
    at.switch_page(PREDICTION).run()
    if at.exception:
        print(at.exception[0].value, file=sys.stderr)
        return 1

    rows = []
    for length in args.lengths:
        for repeat in range(args.repeats):
            text = sentence_of(loaded.tokenizer, length, variant=1000 * length + repeat)
            page1 = timed(lambda: at.text_area(key="text").input(text).run())
            page2 = timed(lambda: at.switch_page(ATTENTION).run())
            if at.exception or not at.get("plotly_chart"):
                print(f"page failed at {length} tokens: {at.exception}", file=sys.stderr)
                return 1
            at.switch_page(PREDICTION).run()
            ids, types = loaded.tokenizer.encode(text).tensors()
            with torch.inference_mode():
                eager = timed(lambda: reference(input_ids=ids, token_type_ids=types, output_attentions=True))
            rows.append(
                {"tokens": length, "repeat": repeat, "page1_s": page1[0], "page2_s": page2[0],
                 "page1_cpu_s": page1[1], "page2_cpu_s": page2[1],
                 "total_s": page1[0] + page2[0], "cpu_s": page1[1] + page2[1],
                 "transformers_s": eager[0], "transformers_cpu_s": eager[1]}
            )
            print(f"{length:4d} tokens  repeat {repeat}: prediction {page1[0]:6.2f} s + attention {page2[0]:6.2f} s "
                  f"= {page1[0] + page2[0]:6.2f} s wall, {page1[1] + page2[1]:5.2f} s CPU; "
                  f"transformers {eager[0]:5.2f} s wall, {eager[1]:5.2f} s CPU", flush=True)

    load = os.getloadavg()
    print(f"\nmodel {source}; {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {platform.processor() or platform.machine()}; "
          f"median of {args.repeats}, spread min–max\n")
    print("| tokens | app: prediction + attention, wall (s) | spread | CPU (s) | transformers eager forward, wall (s) "
          "| ratio app / transformers (wall) | ratio (CPU) | prediction page alone, wall (s) | its ratio (wall) "
          "| target |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    summary = {}
    for length in args.lengths:
        mine = [r for r in rows if r["tokens"] == length]
        wall = statistics.median(r["total_s"] for r in mine)
        cpu = statistics.median(r["cpu_s"] for r in mine)
        eager = statistics.median(r["transformers_s"] for r in mine)
        eager_cpu = statistics.median(r["transformers_cpu_s"] for r in mine)
        prediction = statistics.median(r["page1_s"] for r in mine)
        target = TARGETS.get(length)
        summary[length] = {"median_total_s": wall, "median_cpu_s": cpu, "median_transformers_s": eager,
                           "ratio_wall": wall / eager, "ratio_cpu": cpu / eager_cpu, "median_prediction_s": prediction,
                           "ratio_prediction_wall": prediction / eager, "target_s": target}
        print(f"| {length} | {wall:.2f} | {spread([r['total_s'] for r in mine])} | {cpu:.2f} | {eager:.2f} "
              f"| {wall / eager:.2f} | {cpu / eager_cpu:.2f} | {prediction:.2f} ({spread([r['page1_s'] for r in mine])}) "
              f"| {prediction / eager:.2f} | {f'{target} s' if target else '-'} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": source, "load_average": load, "rows": rows, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
