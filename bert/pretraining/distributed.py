"""Data-parallel pre-training with torch.distributed: `torchrun --nproc_per_node N -m bert pretrain ...`.

Every rank reads the same stream of *global* batches (data.py: the order depends only on seed and epoch), of
`batch_size x world` examples, masks the whole global batch with the step's generator, and trains on its own
contiguous block of rows. Each rank's loss is its rows' share of the global batch's mean (sums divided by the
global counts), so the gradient DistributedDataParallel averages is the gradient of one process on the whole
global batch: N ranks x B follow 1 process x N*B, and a run resumes with any number of ranks (same global batch).
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..devices import process_device
from .data import Batch
from .masking import IGNORE

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ranks:
    rank: int = 0  # this process, 0 .. world - 1; rank 0 writes checkpoints and logs
    world: int = 1  # processes training together

    @property
    def main(self) -> bool:
        return self.rank == 0

    @classmethod
    def current(cls) -> "Ranks":
        """This process's place in the initialised process group; one process alone without one."""
        if dist.is_available() and dist.is_initialized():
            return cls(dist.get_rank(), dist.get_world_size())
        return cls()


def start(device: str | None) -> tuple[Ranks, torch.device]:
    """Under torchrun (WORLD_SIZE > 1 in the environment), join the process group: NCCL on CUDA GPUs, gloo on
    CPUs; rank r's GPU is cuda:LOCAL_RANK. Alone, just resolve the device (None or "auto": a GPU when present)."""
    chosen = process_device(device)
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        return Ranks(), chosen
    if not dist.is_initialized():
        dist.init_process_group("nccl" if chosen.type == "cuda" else "gloo")
    ranks = Ranks.current()
    if not ranks.main:
        logging.getLogger().setLevel(logging.WARNING)  # rank 0 speaks for all
    return ranks, chosen


def stop() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def on_ranks(device: str | None, work: Callable[[Ranks, torch.device], int]) -> int:
    """`work(ranks, device)` in this process's place in the group (`start`), then every rank leaves together: each
    waits for the others, the group is destroyed, and under torchrun the ranks other than 0 end here (`os._exit`,
    output flushed): PyTorch's teardown at interpreter exit can abort them after their work is done ("terminate
    called without an active exception", SIGABRT), which torchrun would report as the run's failure. Rank 0 (or a
    process alone) returns work's exit code. A rank that raises skips the wait: the error is its own."""
    ranks, chosen = start(device)
    try:
        code = work(ranks, chosen)
        barrier(ranks)
    finally:
        stop()
    if not ranks.main:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def share(batch: Batch, corrupted: torch.Tensor, labels: torch.Tensor, ranks: Ranks) -> tuple[Batch, torch.Tensor, torch.Tensor]:
    """This rank's rows of a masked global batch: a contiguous block (sizes differ by at most one).

    A rank left without rows (a global batch smaller than the world, at the end of a chunk) takes row 0 with
    every label ignored: it adds nothing to the loss, yet joins the gradient exchange as DDP requires.
    """
    rows = my_rows(len(batch.input_ids), ranks)
    if len(rows) > 0:
        return batch.rows(rows), corrupted[rows], labels[rows]
    empty = batch.rows(torch.tensor([0], device="cpu"))
    if empty.nsp_labels is not None:
        empty.nsp_labels = torch.full_like(empty.nsp_labels, IGNORE)
    return empty, corrupted[:1], torch.full_like(labels[:1], IGNORE)


def my_rows(batch_size: int, ranks: Ranks) -> torch.Tensor:
    """This rank's contiguous block of a global batch's row numbers (sizes differ by at most one; empty when
    the batch has fewer rows than there are ranks)."""
    return torch.tensor_split(torch.arange(batch_size, device="cpu"), ranks.world)[ranks.rank]


def seed_dropout(seed: int, step: int, ranks: Ranks) -> None:
    """Dropout's draws from (seed, step, rank): a resumed run repeats them. One process alone draws from
    (seed, step); with N ranks each block of rows has its own stream, so dropout differs from one process's."""
    torch.manual_seed((seed * 1_000_003 + step) * ranks.world + ranks.rank)


def rank_0_decides(flag: bool, ranks: Ranks, device: torch.device) -> bool:
    """Rank 0's `flag` on every rank (the others' own flags are ignored): for decisions only rank 0 can make."""
    if ranks.world == 1:
        return flag
    decision = torch.tensor([float(flag) if ranks.main else 0.0], device=device)
    return bool(sum_over_ranks(decision, ranks).item() > 0)


def any_rank(flag: bool, ranks: Ranks, device: torch.device) -> bool:
    """True on every rank when `flag` is True on at least one: e.g. "my data has run out", so that all stop at
    the same step instead of the others waiting for it in the next all-reduce."""
    if ranks.world == 1:
        return flag
    return bool(sum_over_ranks(torch.tensor([float(flag)], device=device), ranks).item() > 0)


def sum_over_ranks(values: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """Element-wise sum of `values` over all ranks (itself when alone)."""
    if ranks.world > 1:
        values = values.clone()
        dist.all_reduce(values)
    return values


def barrier(ranks: Ranks) -> None:
    if ranks.world > 1:
        dist.barrier()
