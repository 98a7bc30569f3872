"""`python -m bert mixing`: what each token takes from the others, by one context-mixing method
(bert/analysis/attention/mixing.py).

    python -m bert mixing --model minilm --text "The [MASK] barked at the mailman." --method alti --json out/alti.json

writes {"model", "text", "method", "tokens", "layers", "whole_model"}: layers[i] the [query][key] matrix of the i-th
transformer layer in the order the model applies them (layer 0 first), whole_model the rollout over the layers
where the method has one (DecompX: each position's predicted logit over the input tokens), else null.
Bad input: one line on stderr, exit 2.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from ...cli_arguments import add_model_argument
from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from .decompx import default_output
from .mixing import METHODS, context_mixing, cost_in_layer_passes, record_for_mixing

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--text", required=True, help='a sentence, e.g. "The [MASK] barked at the mailman."')
    parser.add_argument("--method", required=True, choices=list(METHODS),
                        help="attention, norm (Kobayashi et al. 2020), norm-residual (Kobayashi et al. 2021), globenc "
                             "(Modarressi et al. 2022), alti (Ferrando et al. 2022), value-zeroing (Mohebbi et al. "
                             "2023), decompx (Modarressi et al. 2023)")
    parser.add_argument("--json", type=Path, help="write the matrices as JSON here")
    add_device_argument(parser)


def run(args) -> int:
    from ...pretrained import load_pretrained

    if not args.text.strip():
        raise InvalidInputError("--text is empty: give a sentence")
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    encoding = tokenizer.encode(args.text, max_length=model.config.max_position_embeddings)
    output = default_output(model) if args.method == "decompx" else "mlm"
    log_device(model)  # after the checks: bad input leaves one line on stderr
    log.info("%s: about %d layer passes over %d tokens", args.method,
             cost_in_layer_passes(args.method, len(encoding.tokens), model.config.num_layers), len(encoding.tokens))
    input_ids, token_type_ids = encoding.tensors(next(model.parameters()).device)
    _, cache = record_for_mixing(model, input_ids, token_type_ids)
    mixing = context_mixing(model, cache, args.method, decompx_output=output)
    print(format_mixing(encoding.tokens, mixing))
    if args.json is not None:
        data = {"model": args.model, "text": args.text, "method": args.method, "tokens": list(encoding.tokens),
                "layers": np.round(mixing.layers, 7).tolist(),
                "whole_model": None if mixing.whole_model is None else np.round(mixing.whole_model, 7).tolist()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return 0


def format_mixing(tokens: list[str], mixing) -> str:
    """Per layer, each token's three largest sources, as text."""
    lines = []
    for layer, matrix in enumerate(mixing.layers):
        lines.append(f"layer {layer}:")
        for query, row in enumerate(matrix):
            top = np.argsort(-row)[:3]
            lines.append(f"  {tokens[query]:<12} " + ", ".join(f"{tokens[key]} {row[key]:.3f}" for key in top))
    return "\n".join(lines)
