"""`python -m bert patch` (activation patching on two sentences) and `python -m bert erase` (amnesic probing).

    python -m bert patch --model minilm --clean "The doctor said that [MASK] was tired." \\
        --corrupted "The nurse said that [MASK] was tired." --answer he --foil she --json out/patch.json
    python -m bert erase --data ud-ewt --task upos --hidden-states-index 3 --model minilm --json out/erase.json

patch writes {"model", "clean", "corrupted", "answer", "foil", "clean_metric", "corrupted_metric", "tokens",
"residual", "attention", "mlp", "heads"}: residual one row per hidden_states index 0..L (0 = embeddings, i = after
layer i-1) with a value per position, attention and mlp one row per layer (from 0), heads one row per layer with a
value per head (from 0); layers and heads are numbered as bert/layers.py says; every
value normalised as (patched - corrupted) / (clean - corrupted) (bert/analysis/causal/patching.py).
erase writes {"model", "task", "hidden_states_index", "rank", "probe": {"before", "after", "majority", "random_control"},
"mlm": {"before", "after", "random_control"}} (bert/analysis/causal/erasure.py). Bad input: one line on stderr, exit 2.
"""
from __future__ import annotations

import json
from pathlib import Path

from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from ...layers import head_short_label, layer_label, residual_label
from ...cli_arguments import add_model_argument


def add_patch_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--clean", required=True, help='the sentence whose behaviour is restored, with one [MASK]')
    parser.add_argument("--corrupted", required=True, help="the same number of word pieces, the [MASK] at the same place")
    parser.add_argument("--answer", required=True, help="the word the clean sentence should favour (one vocabulary token)")
    parser.add_argument("--foil", required=True, help="the word it is compared with (one vocabulary token)")
    parser.add_argument("--direction", choices=("denoise", "noise"), default="denoise",
                        help="denoise: clean activations into the corrupted run (default); noise: the reverse")
    parser.add_argument("--method", choices=("exact", "attribution"), default="exact",
                        help="exact: one patched run per cell, batched (default); attribution: gradient x difference, "
                             "one forward and one backward pass")
    parser.add_argument("--batch-size", type=int, default=64, help="patched runs per forward pass")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    add_device_argument(parser)


def add_erase_arguments(parser) -> None:
    parser.add_argument("--data", required=True, help="a .conllu file, a token-per-line file with label columns, or ud-ewt "
                                                       "(the built-in UD English EWT: fits on dev, tests on test)")
    parser.add_argument("--train", help="fit on this file and test on --data (default: a seeded 80/20 split of --data)")
    parser.add_argument("--task", required=True, help="the label column to erase: upos, xpos, deprel, or a file's column")
    parser.add_argument("--hidden-states-index", type=int, required=True, metavar="I",
                        help="erase from hidden_states[I]: 0 = the embeddings, i = after layer i-1 (bert/layers.py)")
    add_model_argument(parser)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-train-words", type=int, default=10_000, help="words to fit on, whole sentences, seeded (0: all)")
    parser.add_argument("--max-test-words", type=int, default=5_000, help="words to probe on, whole sentences, seeded (0: all)")
    parser.add_argument("--max-mlm-words", type=int, default=2_000, help="test words masked one at a time, seeded (0: all)")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    add_device_argument(parser)


def run_patch(args) -> int:
    from ...pretrained import load_pretrained
    from .patching import attribution_sweep, patching_sweep, prepare_contrast

    if args.batch_size < 1:
        raise InvalidInputError("--batch-size must be at least 1")
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    contrast = prepare_contrast(tokenizer, args.clean, args.corrupted, args.answer, args.foil, model.config.max_position_embeddings)
    log_device(model)  # after the checks: bad input leaves one line on stderr
    if args.method == "exact":
        result = patching_sweep(model, contrast, direction=args.direction, batch_size=args.batch_size)
    else:
        result = attribution_sweep(model, contrast, direction=args.direction)
    data = {"model": args.model, "clean": args.clean, "corrupted": args.corrupted, "answer": contrast.answer,
            "foil": contrast.foil} | result.to_dict()
    print(format_patching(result))
    _write(args.json, data)
    return 0


def format_patching(result) -> str:
    """The metrics and each sweep's strongest cells, as text: residual rows by their `hidden_states[i]` index and
    label ("after layer i-1"), the other sweeps' rows by layer (from 0)."""
    lines = [f"logit({result.answer}) - logit({result.foil}) at [MASK]: clean {result.clean_metric:.3f}, "
             f"corrupted {result.corrupted_metric:.3f} ({result.method} {result.direction}; 1 = the patch restores it all)"]
    for name, columns in (("residual", result.tokens), ("attention", result.tokens), ("mlp", result.tokens),
                          ("heads", [head_short_label(h) for h in range(result.heads.shape[1])])):
        cells = ", ".join(f"{_row_label(name, row)} {columns[column]}: {value:.3f}"
                          for row, column, value in result.strongest(name))
        lines.append(f"{name:<10} strongest: {cells}")
    return "\n".join(lines)


def _row_label(sweep: str, row: int) -> str:
    """bert/layers.py's label of a sweep's row: hidden_states[i] for the residual stream, layer i for the others."""
    return f"hidden_states[{row}] ({residual_label(row)})" if sweep == "residual" else layer_label(row)


def run_erase(args) -> int:
    from ...pretrained import load_pretrained
    from ..probing.treebank import builtin_treebank, read_treebank
    from .erasure import amnesic_probing, check_erasure

    for option in ("max_train_words", "max_test_words", "max_mlm_words"):
        if getattr(args, option) < 0:
            raise InvalidInputError(f"--{option.replace('_', '-')} must be 0 (all) or more")
    if args.data == "ud-ewt":
        if args.train:
            raise InvalidInputError("--data ud-ewt already fits on EWT dev and tests on EWT test; leave out --train")
        train, test = builtin_treebank("dev"), builtin_treebank("test")
    elif args.train:
        train, test = read_treebank(args.train), read_treebank(args.data)
    else:
        train, test = read_treebank(args.data).split(0.2, seed=args.seed)
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    check_erasure(model, train.sentences, test.sentences, args.task, args.hidden_states_index)
    log_device(model)
    report = amnesic_probing(model, tokenizer, train.sentences, test.sentences, args.task, args.hidden_states_index, args.seed,
                             args.max_train_words or None, args.max_test_words or None, args.max_mlm_words or None,
                             model_name=args.model)
    print(f"{args.task} erased from hidden_states[{report.hidden_states_index}] ({residual_label(report.hidden_states_index)}) of {args.model} by LEACE (rank {report.rank}); "
          f"{report.num_train_words} training, {report.num_test_words} test words, {report.num_mlm_words} masked one at a time")
    print(f"probe accuracy   before {report.probe_before:.3f}  after {report.probe_after:.3f}  "
          f"random erasure {report.probe_random:.3f}  majority {report.probe_majority:.3f}")
    print(f"masked-LM top-1  before {report.mlm_before:.3f}  after {report.mlm_after:.3f}  random erasure {report.mlm_random:.3f}")
    _write(args.json, report.to_dict())
    return 0


def _write(path: Path | None, data: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
