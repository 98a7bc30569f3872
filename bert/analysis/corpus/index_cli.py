"""`python -m bert index --model minilm --sentences FILE --out DIR`: a corpus index on disk, for corpus search.

Under `torchrun --nproc_per_node=N` (or across machines) each rank indexes its contiguous share of the
sentences into DIR/shard-RANK-of-WORLD; `CorpusIndex.load(DIR)` joins them into one index.
"""
from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import torch
from tqdm import tqdm

from ...devices import add_device_argument, log_device, process_device
from ...errors import InvalidInputError
from ...cli_arguments import add_model_argument

log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--sentences", required=True,
                        help='a UTF-8 text file, one sentence per line; or "builtin" for the 992 WordNet sentences')
    parser.add_argument("--out", required=True, type=Path, help="folder to write the index into")
    parser.add_argument("--layers", type=int, nargs="*", help="hidden_states indices: 0 = embeddings, i = after layer i-1 (default: all; none with --heads)")
    parser.add_argument("--heads", type=head_pair, nargs="+", default=[], metavar="LAYER.HEAD",
                        help="also index these heads' outputs: 3.5 = head 5 of layer 3 (layers and heads from 0)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--float16", action="store_true", help="store half-precision vectors (half the size)")
    add_device_argument(parser)


def run(args) -> int:
    from ...data import builtin_sentences
    from ...pretrained import load_pretrained
    from .corpus_search import build_index

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    sentences = builtin_sentences() if args.sentences == "builtin" else read_lines(Path(args.sentences))
    first, last = rank * len(sentences) // world, (rank + 1) * len(sentences) // world
    model, tokenizer = load_pretrained(args.model, device=process_device(args.device), pack_for_cpu=True)
    if rank == 0:
        log_device(model)
    with tqdm(total=last - first, unit="sentence", disable=None, desc=f"rank {rank}/{world}") as bar:
        index = build_index(model, tokenizer, sentences[first:last], args.layers, args.batch_size,
                            progress=lambda done, _: bar.update(done - bar.n),
                            dtype=torch.float16 if args.float16 else torch.float32, heads=args.heads)
    if world > 1:
        index.shard = (rank, world)
    folder = index.save(args.out / f"shard-{rank:05d}-of-{world:05d}" if world > 1 else args.out)
    size = sum(v.numel() * v.element_size() for v in index.vectors.values())
    log.info("%s: %d sentences, %d tokens, layers %s, heads %s, %.1f MB of vectors", folder, len(index.sentences),
             len(index), list(index.layers), list(index.heads), size / 1e6)
    return 0


def read_lines(path: Path) -> list[str]:
    """Non-blank lines of a text file, stripped."""
    if not path.is_file():
        raise InvalidInputError(f"{path} is not a file; give a text file with one sentence per line")
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{path} is not UTF-8 text: {error}") from error
    return [line for line in lines if line]


def head_pair(text: str) -> tuple[int, int]:
    """"3.5" -> (3, 5): head 5 of layer 3."""
    layer, dot, head = text.partition(".")
    if not (dot and layer.isdigit() and head.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not LAYER.HEAD, e.g. 3.5 for head 5 of layer 3")
    return int(layer), int(head)
