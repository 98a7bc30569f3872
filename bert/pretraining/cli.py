"""`python -m bert pretrain`: from scratch (any config, laptop-sized) or on top of an existing encoder, on one
device, or data-parallel on several under `torchrun --nproc_per_node N -m bert pretrain ...` (distributed.py).

Each family's own objective: BERT `--nsp`; RoBERTa `--full-sentences` (masks are redrawn at every step unless
`--static-masks`); ALBERT `--sop --max-ngram 3`; ELECTRA trains a generator and a discriminator (electra.py),
from scratch or from an ELECTRA checkpoint's discriminator beside a fresh generator."""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from ..config import FAMILIES, BertConfig
from ..devices import add_device_argument, log_device
from ..errors import InvalidInputError
from ..families.registry import family_of
from ..model import Bert
from ..pretrained import load_pretrained, minilm_folder
from ..tokenizer import BertTokenizer
from .data import DataConfig
from .electra import Electra
from .distributed import Ranks, on_ranks
from .trainer import TrainConfig, train


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train-file", required=True, help="plain text, one sentence or document per line")
    parser.add_argument("--heldout-file", help="plain text for held-out top-1/top-5 accuracy and perplexity")
    parser.add_argument("--out", required=True, help="folder for the checkpoint and log.jsonl; a rerun resumes from it")
    parser.add_argument("--init", default="scratch", help="'scratch', or a model to start from (minilm-encoder, a folder, a hub id)")
    parser.add_argument("--layers", type=int, default=2, help="from scratch: number of layers")
    parser.add_argument("--hidden", type=int, default=128, help="from scratch: hidden size")
    parser.add_argument("--family", default="bert", choices=FAMILIES,
                        help="from scratch: the family's differences (bert/config.py), e.g. roberta: one segment, no NSP; "
                             "electra: a generator and a discriminator, replaced-token detection")
    parser.add_argument("--heads", type=int, default=2, help="from scratch: attention heads")
    parser.add_argument("--vocab", help="from scratch: vocab.txt (default: the built-in model's uncased vocabulary)")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32, help="examples per step and rank: torchrun's N ranks train on N times as many")
    parser.add_argument("--no-mlm", action="store_true", help="switch the masked-LM loss off (NSP only)")
    pair_task = parser.add_mutually_exclusive_group()
    pair_task.add_argument("--nsp", action="store_true", help="add next-sentence prediction (blank lines separate documents)")
    pair_task.add_argument("--sop", action="store_true", help="add sentence-order prediction instead (ALBERT): B follows A, or the two are swapped")
    for field in ("steps", "learning_rate", "warmup_steps", "weight_decay", "seed", "eval_every", "checkpoint_every", "mask_probability"):
        default = getattr(TrainConfig, field)
        parser.add_argument("--" + field.replace("_", "-"), type=type(default), default=default)
    parser.add_argument("--train", default="all", help="what learns: all, head, or top:N")
    parser.add_argument("--freeze-token-embedding", action="store_true")
    parser.add_argument("--whole-word", action="store_true", help="mask whole words instead of word pieces")
    parser.add_argument("--max-ngram", type=int, default=1, help="mask spans of up to N pieces (or words), p(n) ~ 1/n (ALBERT: 3)")
    parser.add_argument("--static-masks", action="store_true", help="mask each sequence once, as BERT's prepared data (default: redrawn every step, RoBERTa)")
    parser.add_argument("--full-sentences", action="store_true", help="pack consecutive lines into each example, no pairs (RoBERTa)")
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast where the device has it (CUDA GPUs, CPUs with AVX512-BF16 or AMX)")
    add_device_argument(parser)


def run(args) -> int:
    if args.no_mlm and not (args.nsp or args.sop):
        raise InvalidInputError("--no-mlm leaves nothing to learn: add --nsp or --sop, or drop --no-mlm")
    return on_ranks(args.device, lambda ranks, device: _pretrain(args, device, ranks))


def _pretrain(args, device, ranks: Ranks) -> int:
    torch.manual_seed(args.seed)  # the initial weights (with several ranks, rank 0's reach every rank)
    pairs = args.nsp or args.sop  # both tasks train the same two-way head over the pooled [CLS]
    if args.init == "scratch":
        tokenizer = BertTokenizer.from_vocab(args.vocab or minilm_folder() / "vocab.txt")
        config = BertConfig.of_family(args.family, vocab_size=tokenizer.vocab_size, hidden_size=args.hidden, num_layers=args.layers,
                                      num_heads=args.heads, intermediate_size=4 * args.hidden, max_position_embeddings=max(args.max_length, 512),
                                      pad_token_id=tokenizer.pad_id)
        electra = family_of(args.family).discriminator  # ELECTRA's pre-training: a generator and a discriminator (electra.py)
        if electra and (args.no_mlm or pairs):
            raise InvalidInputError("ELECTRA pre-trains a generator (masked LM) and a discriminator: drop --no-mlm, --nsp and --sop")
        model = Electra.from_config(config) if electra else Bert(config, mlm_head=not args.no_mlm, nsp_head=pairs)
    else:
        model, tokenizer = load_pretrained(args.init)
        if family_of(model.config).discriminator and not (args.no_mlm or pairs):  # the checkpoint's discriminator, a fresh generator
            model = Electra.around(model)
        else:
            model.add_output_heads(mlm_head=not args.no_mlm, nsp_head=pairs)
    train_config = TrainConfig(
        steps=args.steps, learning_rate=args.learning_rate, warmup_steps=args.warmup_steps, weight_decay=args.weight_decay,
        seed=args.seed, train=args.train, freeze_token_embedding=args.freeze_token_embedding,
        mask_probability=args.mask_probability, whole_word=args.whole_word, mlm=not args.no_mlm, bf16=args.bf16,
        max_ngram=args.max_ngram, static_masks=args.static_masks, mask_share=1.0 if isinstance(model, Electra) else 0.8,
        eval_every=args.eval_every, checkpoint_every=args.checkpoint_every,
    )
    data = DataConfig(max_length=args.max_length, batch_size=args.batch_size, next_sentence=args.nsp, sentence_order=args.sop,
                      full_sentences=args.full_sentences)
    model.to(device)
    if ranks.main:
        log_device(model)
    metrics = train(model, tokenizer, args.train_file, args.heldout_file, Path(args.out), train_config, data)
    if ranks.main:
        print(metrics)
    return 0
