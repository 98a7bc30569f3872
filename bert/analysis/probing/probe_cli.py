"""`python -m bert probe --data FILE --tasks upos,deprel,arcs,distance,depth --model minilm`: probes on labelled sentences.

    python -m bert probe --data ud-ewt --model minilm --json out/probes.json        # train on EWT dev, test on test
    python -m bert probe --data wordnet --tasks position,pos                         # the built-in sentences, 80/20
    python -m bert probe --data mine.conllu --tasks upos,distance                    # a seeded 80/20 split
    python -m bert probe --data test.conllu --train train.conllu --pieces mean --csv out/probes.csv --mdl

One file: a seeded 80/20 split by sentence; with --train: train on that file, test on --data. Prints a table per
task (a row per hidden state: the embeddings, then after each layer); --json writes {"model", "data", "tasks": {name:
{"layers": [{"hidden_states_index": i, ...}, ...], "best_hidden_states_index", ...}}, "residual_names", "baselines"}
(residual_names[i] labels hidden_states[i]: "embeddings", "after layer 0", ...; bert/layers.py); --csv a row per
(task, hidden state). Bad input: one line on stderr, exit status 2.

Under torchrun each rank runs the model over its share of the sentences; rank 0 trains the probes and writes.
"""
from __future__ import annotations

import csv
import logging
from pathlib import Path

from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from ...cli_arguments import add_model_argument

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--data", required=True,
                        help="a .conllu file, a token-per-line file with label columns (.conll, .tsv, .txt), ud-ewt "
                             "(the built-in UD English EWT: trains on dev, tests on test; ud-ewt-dev, ud-ewt-test: one of them, split 80/20), "
                             "or wordnet (the 992 built-in WordNet example sentences, split 80/20: the text tasks and pos)")
    parser.add_argument("--train", help="train on this file and test on --data (default: a seeded 80/20 split of --data)")
    parser.add_argument("--tasks", help="comma-separated: upos, xpos, deprel (or a file's label columns), arcs, distance, depth, "
                                        "or a text task (position, segment, continuation, punctuation, frequency, "
                                        "masked_identity) (default: every task the data offers)")
    add_model_argument(parser)
    parser.add_argument("--pieces", choices=("first", "mean", "last"), default="first",
                        help="a word's vector: its first (default), mean or last word piece's")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--csv", type=Path, help="write one row per (task, hidden state) as CSV here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mdl", action="store_true", help="also the MDL online code length (Voita & Titov 2020) of the word-tag tasks")
    parser.add_argument("--max-train-words", type=int, default=5000,
                        help="training examples per word-tag or arc task, a seeded sample (0: all; default 5000)")
    parser.add_argument("--float16", action="store_true", help="store the word vectors in half precision")
    add_device_argument(parser)


def run(args) -> int:
    from ...pretrained import load_pretrained
    from ...pretraining.distributed import on_ranks
    from .sentence_sets import builtin_set
    from .treebank import builtin_treebank, read_treebank
    from .pipeline import ProbeSettings, extract_features

    if args.data in ("ud-ewt", "wordnet"):
        if args.train:
            raise InvalidInputError(f"--data {args.data} is built in and splits itself; leave out --train")
        train, test = (builtin_treebank("dev"), builtin_treebank("test")) if args.data == "ud-ewt" else (builtin_set(), None)
    else:
        test = read_treebank(args.data)
        train = read_treebank(args.train) if args.train else None
        if train is None:
            train, test = test, None
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    if args.max_train_words < 0:
        raise InvalidInputError("--max-train-words must be 0 (all) or more")
    settings = ProbeSettings(pieces=args.pieces, seed=args.seed, mdl=args.mdl, float16=args.float16,
                             max_train_words=args.max_train_words or None)

    def work(ranks, device) -> int:
        model, tokenizer = load_pretrained(args.model, device=device, pack_for_cpu=True)
        if ranks.main:
            log_device(model)
        data = extract_features(model, tokenizer, train, test, tasks, settings)  # each rank its share
        if ranks.main:  # the others wait for it (on_ranks): their work is in its report
            _probe_and_write(args, data, tasks, settings, device)
        return 0

    return on_ranks(args.device, work)


def _probe_and_write(args, data, tasks, settings, device) -> None:
    from .pipeline import probe_features

    report = probe_features(data, tasks, settings, args.model, device)
    print(format_tables(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report.to_json() + "\n", encoding="utf-8")
    if args.csv:
        write_csv(report, args.csv)


def format_tables(report) -> str:
    """A plain-text table per task, a row per hidden state (labelled as bert/layers.py says), then the baselines and notes."""
    lines = [f"model {report.model}, data {report.data}, pieces {report.settings.pieces}, seed {report.settings.seed}: "
             f"{report.num_train_sentences} training and {report.num_test_sentences} test sentences"]
    for name, result in report.tasks.items():
        measures = [k for k in result.layers[0] if k != "hidden_states_index"]
        best = result.best_hidden_states_index
        lines += ["", f"{name} (best {report.residual_names[best]}, hidden_states[{best}], by {result.primary}; expected "
                      f"hidden_states index {'-' if result.expected_hidden_states_index is None else f'{result.expected_hidden_states_index:.2f}'}"
                      f"{'' if result.selectivity_at_best is None else f', selectivity there {result.selectivity_at_best:.3f}'})"]
        lines.append(f"{'hidden state':<16}" + "".join(f"{m:>20}" for m in measures))
        for layer in result.layers:
            lines.append(f"{report.residual_names[layer['hidden_states_index']]:<16}" + "".join(f"{_number(layer[m]):>20}" for m in measures))
    if report.baselines:
        lines += ["", "baselines: " + ", ".join(f"{k} {_number(v)}" for k, v in report.baselines.items())]
    for task, why in report.skipped_tasks.items():
        lines.append(f"{task} not run: {why}")
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines)


def write_csv(report, path: Path) -> None:
    rows = report.csv_rows()
    columns = list(dict.fromkeys(key for row in rows for key in row))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _number(value) -> str:
    return "-" if value is None else f"{value:.4g}" if abs(value) >= 1000 else f"{value:.3f}"
