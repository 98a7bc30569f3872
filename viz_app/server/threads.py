"""PyTorch's thread count for the whole server, decided once when the app starts and never per request.

`torch.set_num_threads` is process-wide: a request that lowered it for its own run would slow every other
visitor's passes while it lasts (a live training run lasts minutes), and two overlapping requests that each saved
and restored it could restore the wrong value and leave the server on one thread. So the app sets it once, from
the server's settings (viz_app/server/settings.py: `threads`), and nothing else changes it; the library
(bert/) never does.

By default the cores are shared out between the heavy computations that may run at once and the light pages:
cores // (heavy slots + 1), at least 1 (on 2 cores with one heavy slot: one thread, as the tiny runs measured
fastest there, docs/benchmarks.md).
"""
from __future__ import annotations

import logging
import os
import threading

import torch

from viz_app.server.settings import ServerSettings

log = logging.getLogger(__name__)

_lock = threading.Lock()
_decided: list[int] = []  # the count set at start (empty until then)


def server_threads(settings: ServerSettings, cores: int | None = None) -> int:
    """The threads the settings ask for: `threads`, or the cores shared out by the heavy slots and the light pages."""
    if settings.threads:
        return settings.threads
    return max(1, (cores or os.cpu_count() or 1) // (settings.heavy_slots + 1))


def set_once(settings: ServerSettings) -> int:
    """Set PyTorch's threads for the server, the first time it is called in this process; later calls (every page
    run calls it) change nothing and return the count set then."""
    with _lock:
        if not _decided:
            _decided.append(server_threads(settings))
            torch.set_num_threads(_decided[0])
            log.info("PyTorch runs on %d thread(s) for every visitor", _decided[0])
        return _decided[0]
