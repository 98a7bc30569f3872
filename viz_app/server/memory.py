"""Results kept in the server's memory with a bound on their bytes, not only on their count. No Streamlit here.

Streamlit's caches bound a cache by entries and time (`max_entries`, `ttl`), not by size: two entries of the
probes' word vectors of a large upload are gigabytes. A `BoundedStore` keeps at most `max_entries` results and
`max_bytes` bytes of them, each for at most `ttl_s` seconds: before a result goes in, the least recently used
go until it fits, so the store never holds more than `max_bytes`; a result larger than `max_bytes` alone is handed
back and not kept (an owner's confirmed computation: the budget, viz_app/server/budget.py, refuses a student's
that would hold more than the server's memory budget, and the app sizes its stores from that setting,
viz_app/cache.py).

Two sessions asking for the same missing key at once may both compute it (the second result replaces the first);
the heavy-job slots (viz_app/server/heavy_jobs.py) keep that rare.
"""
from __future__ import annotations

import dataclasses
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Callable, Hashable, TypeVar

import numpy as np
import torch

T = TypeVar("T")


def bytes_held(value) -> int:
    """The bytes of the tensors and arrays in `value` (through dataclasses, tuples, lists and mappings); a tensor's
    whole storage, as a view keeps all of it alive."""
    if isinstance(value, torch.Tensor):
        return value.untyped_storage().nbytes()
    if isinstance(value, np.ndarray):
        return value.nbytes
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(bytes_held(getattr(value, field.name)) for field in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return sum(bytes_held(item) for item in value)
    if isinstance(value, Mapping):  # a dict, or a read-only view of one (a recorded pass's embeddings)
        return sum(bytes_held(item) for item in value.values())
    return 0


_MISSING = object()  # no result kept (a kept result may be None)


class BoundedStore:
    """`copies`: keep each result pickled (its size is the pickle's) and hand out a fresh copy on every call, as
    `st.cache_data` does, for results a session may change; else the one object, shared read-only."""

    def __init__(self, max_entries: int, max_bytes: int, ttl_s: float, clock: Callable[[], float] = time.monotonic,
                 copies: bool = False):
        self.max_entries, self.max_bytes, self.ttl_s, self._clock, self.copies = max_entries, max_bytes, ttl_s, clock, copies
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[object, int, float]] = OrderedDict()  # key -> (value, bytes, stored at)

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        kept = self._lookup(key)
        if kept is not _MISSING:
            return kept
        value = compute()
        kept = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL) if self.copies else value
        size = len(kept) if self.copies else bytes_held(value)
        if size > self.max_bytes:  # never fits: handed back, not kept
            return value
        with self._lock:
            self._entries.pop(key, None)  # another session's result for the same key, computed meanwhile
            while self._entries and (len(self._entries) >= self.max_entries or self._held() + size > self.max_bytes):
                self._entries.popitem(last=False)
            self._entries[key] = (kept, size, self._clock())
        return value

    def get(self, key: Hashable):
        """The result kept for `key` (a copy, with `copies`), or None; never computes."""
        kept = self._lookup(key)
        return None if kept is _MISSING else kept

    def _lookup(self, key: Hashable):
        """The result kept for `key`, the newest used now (a fresh copy, with `copies`), or _MISSING."""
        with self._lock:
            self._expire()
            if key not in self._entries:
                return _MISSING
            self._entries.move_to_end(key)
            kept = self._entries[key][0]
        return pickle.loads(kept) if self.copies else kept

    def held(self) -> int:
        """The bytes kept now."""
        with self._lock:
            return self._held()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def _held(self) -> int:
        return sum(size for _, size, _ in self._entries.values())

    def _expire(self) -> None:
        now = self._clock()
        for key in [key for key, (_, _, stored) in self._entries.items() if now - stored >= self.ttl_s]:
            del self._entries[key]
