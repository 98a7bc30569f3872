"""Stopping a long computation from outside: whoever started it watches every forward pass and may stop it.

    with watching(check):      # check(rows): called before each forward pass (rows: its batch) and between layers (0)
        saliency(...)          # check raises (StoppedError, bert/errors.py) to stop at the next such point

The watcher lives in a context variable, like a run's hooks (bert/hooks.py): each thread, so each app session,
watches its own computations on a model that many share, and Captum's loops, which call the model through a
function of their own, are watched as well. A check between layers bounds the wait to one layer of one batch.

A thread that watches nothing of its own (one a server or a test did not start: a download's, a timer's) is
watched by `watching_unwatched_threads(check)`, process-wide while its block runs: a test counts there the passes
made outside any computation, on whichever thread (viz_app/heavy.py's `PassesOutside`).
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Callable, Iterator

from .errors import StoppedError

Check = Callable[[int], None]  # rows about to start (0 between layers); raises to stop

_WATCHER: ContextVar[Check | None] = ContextVar("bert_watcher", default=None)
_UNWATCHED: list[Check] = []  # the checks for a thread with no watcher of its own, innermost last


@contextlib.contextmanager
def watching(check: Check) -> Iterator[None]:
    """Call `check` at every forward pass and layer the model runs in this thread, inside the block."""
    token = _WATCHER.set(check)
    try:
        yield
    finally:
        _WATCHER.reset(token)


@contextlib.contextmanager
def watching_unwatched_threads(check: Check) -> Iterator[None]:
    """Call `check` at every forward pass and layer of any thread that has no watcher of its own, inside the block."""
    _UNWATCHED.append(check)
    try:
        yield
    finally:
        _UNWATCHED.remove(check)


def checkpoint(rows: int = 0) -> None:
    """The model calls this before each forward pass (rows: the batch's rows) and between layers (0)."""
    check = _WATCHER.get() or (_UNWATCHED[-1] if _UNWATCHED else None)
    if check is not None:
        check(rows)
