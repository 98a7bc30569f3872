"""`python -m bert circuit`: edge scores on one clean/counterfactual pair (or the built-in or a user's pairs), the
faithfulness curve of the top-scored circuits, CPR and CMD.

    python -m bert circuit --model minilm --clean "the keys to the cabinet [MASK] on the table ." \
        --corrupt "the key to the cabinet [MASK] on the table ." --answer are --foil is --method eap-ig --steps 5 --json out/circuit.json
    python -m bert circuit --task agreement-pp --method eap      # the built-in pairs of one task
    python -m bert circuit --pairs my_pairs.tsv --method exact   # a TSV or JSONL file of pairs

The JSON: {"model", "method", "metric", "nodes": [{"name", "kind", "layer", "head"}], "edges": [{"from", "to",
"score"}, ...] (every edge, largest |score| first; "to" names a head's input as a3.h7<q>, <k> or <v>),
"faithfulness": [{"edges", "kept"}, ...], "cpr", "cmd"} (bert/analysis/circuits/faithfulness.py). Bad input: one
line on stderr, exit 2.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from ...cli_arguments import add_model_argument
from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from .edge_scores import METHODS, METRICS, edge_scores, edge_scores_cost
from .tasks import TASKS, PairText, builtin_pairs, contrasts, read_pairs

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--clean", help="the clean sentence, with one [MASK]")
    parser.add_argument("--corrupt", help="the counterfactual: as many word pieces, the [MASK] at the same place")
    parser.add_argument("--answer", help="the word the clean sentence favours (one vocabulary token)")
    parser.add_argument("--foil", help="the word the counterfactual favours (one vocabulary token)")
    parser.add_argument("--task", choices=TASKS, help="instead of one pair: the built-in pairs of this task")
    parser.add_argument("--pairs", type=Path, help="instead of one pair: a .tsv or .jsonl file of pairs "
                                                   "(columns clean, corrupted, answer, foil)")
    parser.add_argument("--method", choices=METHODS, default="eap-ig", help="exact: one patched run per edge; eap: one "
                        "gradient; eap-ig: integrated gradients on the input over --steps runs (default); "
                        "eap-ig-activations: on each layer's outputs, --steps runs per group")
    parser.add_argument("--steps", type=int, default=5, help="EAP-IG's integration steps (default 5)")
    parser.add_argument("--metric", choices=METRICS, default="logit-difference", help="at the [MASK] (default logit-difference)")
    parser.add_argument("--direction", choices=("noise", "denoise"), default="noise",
                        help="noise: counterfactual values into the clean run (default); denoise: the reverse")
    parser.add_argument("--batch-size", type=int, default=32, help="patched rows per forward pass")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    add_device_argument(parser)


def _pairs(args) -> list[PairText]:
    one = [args.clean, args.corrupt, args.answer, args.foil]
    if args.task or args.pairs:
        if any(value is not None for value in one) or (args.task and args.pairs):
            raise InvalidInputError("give one of: --clean/--corrupt/--answer/--foil, --task, or --pairs")
        return builtin_pairs(args.task) if args.task else read_pairs(args.pairs)
    if any(value is None for value in one):
        raise InvalidInputError("give --clean, --corrupt, --answer and --foil (or --task, or --pairs)")
    return [PairText(*one)]


def run(args) -> int:
    from ...pretrained import load_pretrained
    from .faithfulness import faithfulness_cost, faithfulness_curve

    if args.batch_size < 1 or args.steps < 1:
        raise InvalidInputError("--batch-size and --steps must be at least 1")
    pairs = _pairs(args)
    model, tokenizer = load_pretrained(args.model, device=args.device)
    checked = contrasts(tokenizer, pairs, model.config.max_position_embeddings)
    tokens = max(len(c.clean) for c in checked)
    cost = edge_scores_cost(model.config, tokens, args.method, args.steps, len(checked)) + faithfulness_cost(model.config, tokens, len(checked))
    log_device(model)
    log.info("cost: %s", cost.describe())
    scores = edge_scores(model, checked, args.method, args.metric, args.direction, args.steps, args.batch_size)
    curve = faithfulness_curve(model, checked, scores.scores, args.metric, label=args.method)
    print(f"{args.metric} at [MASK] over {scores.pairs} pair(s): clean {scores.clean_metric:.3f}, "
          f"counterfactual {scores.corrupted_metric:.3f} ({args.method}, {args.direction})")
    for edge, score in scores.top(10):
        print(f"  {edge.name:<28} {score:+.4f}")
    print(f"faithfulness CPR {curve.cpr:.3f} (higher is better), CMD {curve.cmd:.3f} (lower is better)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(circuit_json(args.model, scores, curve), indent=1) + "\n", encoding="utf-8")
    return 0


def circuit_json(model_name: str, scores, curve) -> dict:
    """The documented JSON of a run."""
    order = scores.scores.abs().argsort(descending=True, stable=True).tolist()
    graph = scores.graph
    return {
        "model": model_name, "method": scores.method, "metric": scores.metric,
        "nodes": [{"name": n.name, "kind": n.kind, "layer": n.layer, "head": n.head} for n in graph.nodes],
        "edges": [{"from": graph.edges[i].sender.name, "to": graph.edges[i].receiver.name, "score": float(scores.scores[i])}
                  for i in order],
        "faithfulness": curve.to_rows("edges"), "cpr": curve.cpr, "cmd": curve.cmd,
    }
