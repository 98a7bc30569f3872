"""Context mixing's cost on a BERT-base-shaped model (random weights: speed does not depend on the values).

    OMP_NUM_THREADS=2 python -m bench.mixing [--tokens 128 512] [--repeats 3] [--heavy-repeats 1] [--loop-keys 16]
        [--methods attention norm ...] [--json out/mixing_bench.json]

For each length: one recorded pass (record_for_mixing, the reference), then each method of
bert/analysis/attention/mixing.py from that recorded pass, side by side, `--repeats` times (value zeroing and
DecompX `--heavy-repeats` times); printed as median and spread (min-max) of the wall time and as a ratio to the
recorded pass's median. Value zeroing batched (value_zeroing.value_zeroing: one batched pass of a layer per layer)
against the one-token loop (value_zeroing_loop: one pass of the model's own layer per token and layer): the loop
runs on the first `--loop-keys` tokens of every layer and is scaled to all of them (each token's pass costs the same;
0: the whole loop). The machine's load average is printed with every figure.

    OMP_NUM_THREADS=1 python -m bench.mixing --ratio-only --tokens 128 512 --loop-keys 21 --ratio-layers 2 --repeats 3

times only value zeroing batched against the loop (`zeroing_ratio`): the first `--loop-keys` tokens of the first
`--ratio-layers` layers, both sides alternating `--repeats` times and scaled to whole layers; median and spread of
the ratio, and the largest difference between the two sides' distances.
"""
from __future__ import annotations

import json
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "2")

import torch  # noqa: E402

from bert import Bert, BertConfig  # noqa: E402
from bert.analysis.attention import value_zeroing as zeroing  # noqa: E402
from bert.analysis.attention.mixing import METHODS, context_mixing, record_for_mixing  # noqa: E402
from bert.analysis.attention.mixing_parts import recorded_layers  # noqa: E402
from bert.analysis.cosine import cosine_distance  # noqa: E402
from bench.common import bench_parser, machine_line, use_omp_threads  # noqa: E402


def times(fn, repeats: int) -> list[float]:
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return runs


def report(name: str, runs: list[float], reference: float | None, results: dict) -> None:
    median = statistics.median(runs)
    results[name] = {"median_s": median, "min_s": min(runs), "max_s": max(runs), "runs": len(runs),
                     "ratio_to_recorded_pass": None if reference is None else median / reference,
                     "load_average_1min": os.getloadavg()[0]}
    ratio = "" if reference is None else f"  {median / reference:>8.1f}x the recorded pass"
    print(f"{name:<36} median {median:>9.3f} s  ({min(runs):.3f}-{max(runs):.3f}, {len(runs)} runs){ratio}  "
          f"load {os.getloadavg()[0]:.1f}", flush=True)


def zeroing_ratio(model, layers: list, keys: int, repeats: int) -> dict:
    """Value zeroing batched (ZeroingParts: its setup once per layer, then the first `keys` tokens' rows) against
    the one-token loop (one pass of the model's own layer per token) on the same tokens of the same layers,
    alternating, `repeats` times; each side scaled to a whole layer (setup + seq / keys of the rows), so the ratio
    is the two whole runs'. Also the largest difference between the two distances (before the rows' normalisation),
    and the ceiling of the ratio: the loop against the MLP's second map alone on the same batches (ratio_ceiling),
    the one product an exact batched path makes once per (query, zeroed token) pair (hidden × intermediate
    multiply-adds, against the loop's whole layer)."""
    seq = layers[0].x.shape[0]
    step = zeroing.rows_per_pass(seq, layers[0].module.residual.mlp1.out_features)
    clocks = {"wall": time.perf_counter, "cpu": time.process_time}  # cpu: this process's time, less moved by load
    batched, looped, second_maps = ({clock: [] for clock in clocks} for _ in range(3))
    difference = 0.0

    def timed(fn) -> tuple:
        start = {clock: read() for clock, read in clocks.items()}
        result = fn()
        return result, {clock: read() - start[clock] for clock, read in clocks.items()}

    with torch.no_grad():
        for _ in range(repeats):
            setup, rows, loop, floor = ({clock: 0.0 for clock in clocks} for _ in range(4))
            for layer in layers:
                (parts, original), took = timed(lambda: (lambda parts: (parts, parts.outputs(layer, None)[0]))(zeroing.ZeroingParts.of(layer)))
                setup = {clock: setup[clock] + took[clock] for clock in clocks}
                distances, took = timed(lambda: torch.cat([
                    cosine_distance(parts.outputs(layer, torch.arange(first, min(first + step, keys))), original)
                    for first in range(0, keys, step)]))  # [key, query]
                rows = {clock: rows[clock] + took[clock] for clock in clocks}

                def one_token_loop() -> torch.Tensor:
                    own = zeroing.one_token_zeroed(model, layer, None)
                    return torch.stack([cosine_distance(zeroing.one_token_zeroed(model, layer, key), own) for key in range(keys)])

                each, took = timed(one_token_loop)
                loop = {clock: loop[clock] + took[clock] for clock in clocks}
                difference = max(difference, float((distances - each).abs().max()))
                second_map = layer.module.residual.mlp2  # the one product every (query, zeroed token) pair needs
                activated = torch.randn(min(step, keys), seq, second_map.in_features)
                _, took = timed(lambda: [second_map(activated[:min(first + step, keys) - first]) for first in range(0, keys, step)])
                floor = {clock: floor[clock] + took[clock] for clock in clocks}
            for clock in clocks:
                batched[clock].append(setup[clock] + rows[clock] * seq / keys)
                looped[clock].append(loop[clock] * seq / keys)
                second_maps[clock].append(floor[clock] * seq / keys)
    result = {"tokens": seq, "layers": len(layers), "keys_timed_per_layer": keys, "rows_per_pass": step, "repeats": repeats,
              "largest_distance_difference": difference, "load_average_1min": os.getloadavg()[0]}
    for clock in clocks:
        result[clock] = {"batched_s_per_layer": spread([run / len(layers) for run in batched[clock]]),
                         "loop_s_per_layer": spread([run / len(layers) for run in looped[clock]]),
                         "ratio": spread([loop / batch for loop, batch in zip(looped[clock], batched[clock])]),
                         "second_map_s_per_layer": spread([run / len(layers) for run in second_maps[clock]]),
                         "ratio_ceiling": spread([loop / floor for loop, floor in zip(looped[clock], second_maps[clock])])}
    return result


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = bench_parser(__doc__, "also write the figures here")
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--heavy-repeats", type=int, default=1)
    parser.add_argument("--loop-keys", type=int, default=16)
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS),
                        help="the methods to time (value zeroing's loop runs with value-zeroing)")
    parser.add_argument("--ratio-only", action="store_true",
                        help="only value zeroing batched against its loop (zeroing_ratio), on --ratio-layers layers")
    parser.add_argument("--ratio-layers", type=int, default=2, help="the first n layers (each costs the same)")
    args = parser.parse_args()
    use_omp_threads()
    torch.manual_seed(0)
    model = Bert(BertConfig.base()).eval()
    print(f"{machine_line()}; BERT-base shape, random weights; load average (1 min) {os.getloadavg()[0]:.1f}", flush=True)
    results = {}
    for seq in args.tokens:
        print(f"\n{seq} tokens", flush=True)
        input_ids = torch.randint(1000, 30000, (1, seq))
        token_type_ids = torch.zeros_like(input_ids)
        at = results.setdefault(str(seq), {})
        if args.ratio_only:
            _, cache = record_for_mixing(model, input_ids, token_type_ids)
            at["value zeroing, batched against the loop"] = zeroing_ratio(
                model, recorded_layers(model, cache)[:args.ratio_layers], min(args.loop_keys, seq), args.repeats)
            print(json.dumps(at, indent=1), flush=True)
            continue
        report("recorded pass", times(lambda: record_for_mixing(model, input_ids, token_type_ids), args.repeats), None, at)
        reference = at["recorded pass"]["median_s"]
        _, cache = record_for_mixing(model, input_ids, token_type_ids)
        for method, info in METHODS.items():
            if method not in args.methods:
                continue
            repeats = args.heavy_repeats if info.heavy else args.repeats
            report(method, times(lambda: context_mixing(model, cache, method), repeats), reference, at)
        if "value-zeroing" not in args.methods:
            continue
        layers = recorded_layers(model, cache)
        keys = seq if args.loop_keys == 0 else min(args.loop_keys, seq)

        def loop_some() -> None:  # the loop's passes for the first `keys` tokens of every layer
            for layer in layers:
                original = zeroing.one_token_zeroed(model, layer, None)
                for key in range(keys):
                    cosine_distance(zeroing.one_token_zeroed(model, layer, key), original)

        runs = [run * seq / keys for run in times(loop_some, args.heavy_repeats)]
        report("value zeroing, one-token loop", runs, reference, at)
        at["value zeroing, one-token loop"]["tokens_timed_per_layer"] = keys
        print(f"  (the loop timed on {keys} of {seq} tokens per layer and scaled) batched is "
              f"{at['value zeroing, one-token loop']['median_s'] / at['value-zeroing']['median_s']:.1f}x faster", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
