"""Memory that recorded passes hand on to each other: the [layer, ...] tensors `run_with_cache` records into
(bert/hooks.py's stacks) come, on the CPU, from blocks that earlier passes recorded into and whose caches are gone.

Why: a full recording of one 512-token BERT-base input is about 650 MB. Memory that large comes fresh from the
kernel at each pass (glibc gives blocks above its mmap threshold back when they are freed), and every 4 KB page of
it costs a page fault when it is first written: 110,000-170,000 faults and 0.3-0.6 s of system time per pass on
the 2-core VM of docs/benchmarks.md#forward-pass, more than the pass's softmaxes and GELUs together. A block written
before costs none.

Never overwritten: a block is handed out again only when nothing reads it any more. Each block is an anonymous
memory map (`mmap`), and a tensor made from it (`torch.frombuffer`) holds a reference to it, through every view of
the tensor, every cache entry and every numpy array that shares its memory; a block is free when the pool's own
references are the only ones left (`sys.getrefcount`, CPython). A cache you still hold, or anything taken from it
without a copy, is never written by a later pass. Taking a block is done under a lock: passes in several threads
(app sessions) never get the same block.

Bounded: the pool holds at most `limit` bytes of blocks, in use or free (`set_limit`; 1 GiB unless set, 0 turns
the pool off: each pass then gets fresh memory, as torch.empty gives), and never holds a free block while it takes
new memory: when a pass asks for a size that no free block fits (another length, another batch), every free block
is let go first. What it keeps beyond the caches still alive is memory earlier recordings of the same shapes wrote,
for the next such recording; a tensor that would take the pool past its limit gets memory of its own.
`release()` lets every free block go now (a server that must give memory back between recordings calls it). On a
GPU, PyTorch's caching allocator does this job already: the pool serves CPU tensors only.

The same effect for every allocation of the process, not only recordings, comes from glibc's own settings, which
a library must not change behind its caller's back but a program may set for itself before it starts:
`MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=68719476736 python ...` (freed memory then stays in the
process; measured in docs/benchmarks.md#forward-pass).
"""
from __future__ import annotations

import math
import mmap
import sys
import threading

import torch

DEFAULT_LIMIT = 1 << 30  # bytes of blocks the pool may hold, in use or free


def _references_of_a_listed_object() -> int:
    """What sys.getrefcount says of an object that only a list holds, read as `_is_free` reads it (the count a
    Python version gives a temporary differs: 3.14 borrows some), so that one tensor more reads as in use."""
    listed = [object()]
    return sys.getrefcount(listed[0])


_ONLY_LISTED = _references_of_a_listed_object()


class RecordingMemory:
    """A pool of reusable memory blocks for recorded activations (module docstring). Thread-safe."""

    def __init__(self, limit: int = DEFAULT_LIMIT):
        self.limit = int(limit)
        self._blocks: list[mmap.mmap] = []  # least recently handed out first
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised CPU tensor of `shape` and `dtype`, in a block no live tensor reads (reused where one is
        free and at most twice the size asked for, else new); fresh memory (torch.empty) when the pool is off or a
        new block would take it past its limit with the blocks still in use."""
        count = math.prod(shape)
        size = count * torch.empty((), dtype=dtype).element_size()
        with self._lock:
            block = self._take(size) if 0 < size <= self.limit else None
            if block is None:
                self._let_go(self.limit)  # (free blocks above a lowered limit go now)
                return torch.empty(shape, dtype=dtype)
            # the tensor's memory holds the block (so its references tell whether it is free) until the last view goes
            return torch.frombuffer(block, dtype=dtype, count=count).view(shape)

    def _is_free(self, index: int) -> bool:
        """Whether block `index` is read by no tensor: the pool's list is all that holds it."""
        return sys.getrefcount(self._blocks[index]) == _ONLY_LISTED

    def _take(self, size: int) -> mmap.mmap | None:
        """A free block of at least `size` bytes (at most twice), moved to the end of the list; else, every free block
        let go, a new one if it fits within the limit beside the blocks in use; else None."""
        fitting = [i for i in range(len(self._blocks)) if size <= len(self._blocks[i]) <= 2 * size and self._is_free(i)]
        if fitting:
            block = self._blocks.pop(min(fitting, key=lambda i: len(self._blocks[i])))
        elif self._let_go(0) + size <= self.limit:  # no free block fits: none is kept while new memory is taken
            private = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_PRIVATE") else {}  # (Windows: none)
            block = mmap.mmap(-1, size, **private)
        else:
            return None
        self._blocks.append(block)
        return block

    def _let_go(self, keep: int) -> int:
        """Drop free blocks, least recently used first, until the pool holds at most `keep` bytes (or none is free);
        returns the bytes it still holds."""
        held, index = sum(len(block) for block in self._blocks), 0
        while held > keep and index < len(self._blocks):
            if self._is_free(index):
                block = self._blocks.pop(index)
                held -= len(block)
                block.close()
            else:
                index += 1
        return held

    @property
    def held_bytes(self) -> int:
        """Bytes of every block the pool holds, in use or free."""
        with self._lock:
            return sum(len(block) for block in self._blocks)

    def set_limit(self, limit: int) -> None:
        """Hold at most `limit` bytes of blocks from now on (0: off), letting free blocks above it go now."""
        with self._lock:
            self.limit = int(limit)
            self._let_go(self.limit)

    def release(self) -> None:
        """Let every free block go (one a live tensor reads stays: it goes at a later release, or when a recording
        asks for a size that no free block fits)."""
        with self._lock:
            self._let_go(0)


RECORDING_MEMORY = RecordingMemory()  # the pool every run_with_cache on the CPU takes its [layer, ...] tensors from


def set_limit(limit: int) -> None:
    """Bytes of blocks the recording pool may hold, in use or free (0: off, every pass gets fresh memory)."""
    RECORDING_MEMORY.set_limit(limit)


def release() -> None:
    """Give back every block of the recording pool that no live tensor reads."""
    RECORDING_MEMORY.release()
