"""`python -m bert finetune`: a classifier, a regressor or a token tagger on top of a pre-trained BERT, on one
device, or data-parallel under `torchrun --nproc_per_node N -m bert finetune ...` (train.py)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from ..errors import InvalidInputError
from ..pretrained import load_pretrained
from ..pretraining.distributed import Ranks, on_ranks
from .data import TASKS, label_names, read_examples, split
from .train import FinetuneConfig, finetune


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train-file", required=True, help="CSV, TSV or JSONL: text, optional text_pair, label (token tasks: tokens, labels)")
    parser.add_argument("--dev-file", help="the same format, for dev scores and early stopping (default: a seeded split of the training file)")
    parser.add_argument("--dev-fraction", type=float, default=0.1, help="share of the training file held out as dev when there is no --dev-file")
    parser.add_argument("--task", choices=TASKS, default="classify", help="classify (a sentence or a pair), regression, or tokens")
    parser.add_argument("--init", default="minilm-encoder", help="the pre-trained model to start from (minilm-encoder, a folder, a hub id)")
    parser.add_argument("--out", required=True, help="folder for the checkpoint, log.jsonl and the best model (out/model); a rerun resumes")
    for field in ("epochs", "max_length", "learning_rate", "warmup_fraction", "weight_decay", "seed", "eval_every", "patience"):
        default = getattr(FinetuneConfig, field)
        parser.add_argument("--" + field.replace("_", "-"), type=type(default), default=default)
    parser.add_argument("--batch-size", type=int, default=FinetuneConfig.batch_size,
                        help="examples per step in all: under torchrun, N ranks share them (each trains on about batch-size / N)")
    parser.add_argument("--train", default="all", help="what learns: all, head (task head and pooler), or top:N (and the top N layers)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast (fast on CPUs with AVX512-BF16 and on recent GPUs)")
    parser.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda, cuda:1, mps")


def run(args) -> int:
    return on_ranks(args.device, lambda ranks, device: _finetune(args, ranks, device))


def _finetune(args, ranks: Ranks, device: torch.device) -> int:
    train_examples = read_examples(args.train_file, args.task)
    if args.dev_file:
        dev_examples = read_examples(args.dev_file, args.task)
    else:
        train_examples, dev_examples = split(train_examples, args.dev_fraction, args.seed)
    model, tokenizer = load_pretrained(args.init)
    if model.has_classifier or model.has_tagger:
        raise InvalidInputError(f"{args.init} already has a task head; start from a pre-trained encoder instead")
    torch.manual_seed(args.seed)  # the new head's initialisation (with several ranks, rank 0's reaches every rank)
    labels = label_names(train_examples) if args.task != "regression" else 1
    output_head = {"tokens": dict(tagger_labels=labels)}.get(args.task, dict(classifier_labels=labels))
    model.add_output_heads(**output_head, problem_type="regression" if args.task == "regression" else None)
    config = FinetuneConfig(
        task=args.task, epochs=args.epochs, batch_size=args.batch_size, max_length=args.max_length,
        learning_rate=args.learning_rate, warmup_fraction=args.warmup_fraction, weight_decay=args.weight_decay,
        seed=args.seed, train=args.train, bf16=args.bf16, eval_every=args.eval_every, patience=args.patience,
        device=str(device),
    )
    best = finetune(model, tokenizer, train_examples, dev_examples, Path(args.out), config)
    if ranks.main:
        print(json.dumps({"best_dev": best, "model": str(Path(args.out) / "model")}, indent=2))
    return 0
