"""`python -m bert das`: where a variable lives, by an interchange intervention method at one site or a sweep.

    python -m bert das --model minilm --task number-pp --layer 0 --position differs --method das --dims 1 \\
        --json out/das.json
    python -m bert das --model minilm --pairs my_pairs.tsv --sweep --method mean-diff --json out/sweep.json

One site writes {"model", "task", "method", "layer", "position", "dims", "pairs": {"train", "test", "dropped",
"unusable"}, "iia": {"train", "test"}, "control_iia": {"test"}, "selectivity", "log_odds"}; a sweep writes {"model",
"task", "method", "kind", "dims", "layers", "positions", "pairs", "iia", "control_iia", "selectivity", "log_odds"},
each grid one row per layer and one value per position. `layer` is a transformer layer from 0, the hook its output
(or --hook's kind) as bert/layers.py numbers them. Bad input: one line on stderr, exit 2.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...cli_arguments import add_model_argument
from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from .alignment import METHODS, AlignmentSettings
from .interchange import POSITION_ROLES

HOOK_KINDS = ("layer_out", "attention_result", "attention_out", "mlp_result")  # [batch, seq, hidden] per layer


def add_arguments(parser) -> None:
    from ...data.variable_tasks import TASKS

    add_model_argument(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--task", choices=list(TASKS), help="a generated task: " + "; ".join(f"{k}: {v}" for k, v in TASKS.items()))
    source.add_argument("--pairs", type=Path, help="a .tsv (with a header) or .jsonl file with base, source, base_answer, source_answer")
    parser.add_argument("--layer", type=int, help="the transformer layer (from 0) whose output (--hook) is intervened on")
    parser.add_argument("--position", default="differs",
                        help=f"a token index, or {', '.join(POSITION_ROLES)}: the [MASK], the first word piece where base "
                             "and source differ, or the subject's last word piece (a task's template names the subject; "
                             "in a pairs file, the first word that differs) (default differs)")
    parser.add_argument("--hook", choices=HOOK_KINDS, default="layer_out", help="which vector of the layer (default layer_out)")
    parser.add_argument("--method", choices=METHODS, default="das")
    parser.add_argument("--dims", type=int, default=1, help="coordinates swapped (das, pca, random; default 1)")
    parser.add_argument("--steps", type=int, default=100, help="training steps of das and boundless (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-pairs", type=int, default=256, help="training pairs at most; held-out: half (default 256)")
    parser.add_argument("--sweep", action="store_true", help="every layer (or --layers) x the positions mask, differs and subject")
    parser.add_argument("--layers", type=int, nargs="+", help="the layers a sweep covers (default all)")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    add_device_argument(parser)


def _position(text: str):
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    if text not in POSITION_ROLES:
        raise InvalidInputError(f"--position must be a token index or one of {', '.join(POSITION_ROLES)}, not {text!r}")
    return text


def run(args) -> int:
    from ...data.variable_pairs import read_pairs
    from ...data.variable_tasks import task_pairs
    from ...hooks import hook_name
    from ...pretrained import load_pretrained
    from .alignment import align, alignment_cost, alignment_sweep, check_settings, planned_pairs

    settings = AlignmentSettings(method=args.method, dims=args.dims, steps=args.steps, seed=args.seed, max_pairs=args.max_pairs)
    check_settings(settings)
    position = _position(args.position)
    if not args.sweep and args.layer is None:
        raise InvalidInputError("give --layer L (a transformer layer from 0), or --sweep for every layer")
    pairs = task_pairs(args.task) if args.task else read_pairs(args.pairs)
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    check_settings(settings, model.config.hidden_size)
    layers = (args.layers or list(range(model.config.num_layers))) if args.sweep else [args.layer]
    bad = [layer for layer in layers if not 0 <= layer < model.config.num_layers]
    if bad:
        raise InvalidInputError(f"layer {bad[0]} is not a layer of this model (0..{model.config.num_layers - 1})")
    positions = list(POSITION_ROLES) if args.sweep else [position]
    counts, tokens = planned_pairs(tokenizer, pairs, settings, model.config.max_position_embeddings)
    cost = alignment_cost(model.config, tokens, counts, settings, sites=len(layers) * len(positions))
    print(f"cost: at most {cost.describe()} ({counts[0]} training, {counts[1]} held-out pairs, "
          f"{counts[2]} and {counts[3]} for the control)", flush=True)
    log_device(model)
    task = args.task or str(args.pairs)
    if args.sweep:
        result = alignment_sweep(model, tokenizer, pairs, layers, positions, args.hook, settings)
        data = _sweep_dict(args.model, task, result)
    else:
        one = align(model, tokenizer, pairs, hook_name(args.hook, args.layer), position, settings)
        data = {"model": args.model, "task": task, "method": one.method, "layer": args.layer} | {
            key: value for key, value in one.to_dict().items() if key != "method"}
        print(f"{one.method} at layer {args.layer} ({args.hook}), position {position}, {one.dims} dims: held-out IIA "
              f"{one.iia['test']:.3f} (training {one.iia['train']:.3f}), control {one.control_iia['test']:.3f}, "
              f"selectivity {one.selectivity:+.3f}, log-odds {one.log_odds:.2f}; pairs {one.pairs}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def _sweep_dict(model_name: str, task: str, result) -> dict:
    first = result.results[0][0]
    grids = {name: result.grid(name) for name in ("iia", "control_iia", "selectivity")}
    for layer, row in zip(result.layers, grids["iia"]):
        print(f"layer {layer}: " + "  ".join(f"{p}: IIA {v:.3f}" for p, v in zip(result.positions, row)))
    return {"model": model_name, "task": task, "method": result.method, "kind": result.kind, "dims": first.dims,
            "layers": result.layers, "positions": result.positions, "pairs": first.pairs} | grids | {
            "log_odds": [[r.log_odds for r in row] for row in result.results]}
