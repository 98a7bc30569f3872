"""The page "One pass, step by step" (viz_app/specs/one_pass.py) against the prediction page, side by side: what
each computes and draws when it opens, on a BERT-base-shaped model (random weights: speed does not depend on the
values) and a sentence of `--tokens` word pieces with one [MASK].

    OMP_NUM_THREADS=2 python -m bench.one_pass [--tokens 128 512] [--repeats 7] [--json out/one_pass_bench.json]

Prediction page: its recorded pass (viz_app/app/forward.py `record`: q and k of every head, the MLP activations,
the embeddings, the LM head at the [MASK]) and its bars. One-pass page: its recorded pass (bert/analysis/one_pass.py:
the opened layer's every hook, every layer's block outputs, the LM head at the [MASK]) and the opened step's charts
(the first, and the attention step, the largest). The two alternate, `--repeats` times each; printed as median and
spread (min-max) of the wall time and the ratio of the medians, with the machine's load average.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

from bench.make_random_bert import make_random_bert  # noqa: E402
from viz_app.app.forward import prepare_input, record  # noqa: E402
from viz_app.app.models import ModelKey, load  # noqa: E402
from viz_app.specs import one_pass  # noqa: E402
from viz_app.specs.base import Inputs  # noqa: E402
from viz_app.specs import prediction as prediction_spec  # noqa: E402

WORDS = "the dog barked at the mailman and ran into the park"


def sentence(tokens: int) -> str:
    """At least `tokens` word pieces with one [MASK] near the middle (cut to `tokens` by `measure`)."""
    words = (WORDS.split() * tokens)[:tokens]
    words[len(words) // 2] = "[MASK]"
    return " ".join(words) + "."


def measure(loaded, tokens: int, repeats: int) -> dict:
    prepared = prepare_input(loaded.tokenizer, sentence(tokens), None, (), True, tokens)
    inputs = Inputs(loaded, prepared)

    def prediction():
        prediction_spec.view(prediction_spec.Settings(), inputs, {"recorded": record(loaded.model, loaded.tokenizer, prepared)})

    def step_by_step(step: str):
        settings = one_pass.Settings.from_state({"pass_step": step}, inputs)
        results = {"pass": one_pass.record(inputs, one_pass.PassWork(settings.layer, settings.head))}
        one_pass.view(settings, inputs, results)

    runs = {"prediction": [], "one_pass (first step)": [], "one_pass (attention step)": []}
    work = {"prediction": prediction, "one_pass (first step)": lambda: step_by_step("pieces"),
            "one_pass (attention step)": lambda: step_by_step("attention")}
    prediction()  # warm up
    for _ in range(repeats):
        for name, fn in work.items():
            start = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - start)
    reference = statistics.median(runs["prediction"])
    return {"tokens": len(prepared.masked), "load_average": os.getloadavg(), **{
        name: {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
               "ratio": statistics.median(times) / reference} for name, times in runs.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        make_random_bert(Path(folder) / "bert-base")
        loaded = load(ModelKey(str(Path(folder) / "bert-base"), str(Path(folder) / "bert-base"), "bench"))
        results = [measure(loaded, tokens, args.repeats) for tokens in args.tokens]
    for result in results:
        print(f"{result['tokens']} tokens (load average {', '.join(f'{x:.1f}' for x in result['load_average'])}):")
        for name, figures in result.items():
            if isinstance(figures, dict):
                print(f"  {name:28s} median {figures['median_s'] * 1000:7.1f} ms "
                      f"(min {figures['min_s'] * 1000:.1f}, max {figures['max_s'] * 1000:.1f}), "
                      f"ratio {figures['ratio']:.2f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                         "threads": os.environ["OMP_NUM_THREADS"], "results": results}, indent=2))


if __name__ == "__main__":
    main()
