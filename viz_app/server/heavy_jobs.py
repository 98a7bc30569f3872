"""The server's heavy computations: a few at a time, one per visitor, each stopped soon after nobody waits for it.
No Streamlit here (viz_app/heavy.py shows it on a page; tests give a fake session list and clock).

- Slots: at most `slots` heavy computations run at once (viz_app/server/settings.py: the cores less one, so light
  pages such as the prediction and attention pages always have a core); the others wait their turn.
- One per visitor: a visitor who starts another while one runs (its input changed: Streamlit starts the new run
  while the old one is still in its loop) stops the old one, which ends at its next forward pass or layer, and
  the new one starts then; BusyError only if the old one has not ended within `replace_wait_s`.
- Stopping: the computation is watched (bert/stopping.py): at every forward pass and every layer it asks, at most
  every `check_every_s` seconds, whether the visitor's browser session is still connected, and stops
  (StoppedError) when it is not; `on_progress` is called then too (where the page lets Streamlit stop a run
  whose input changed, viz_app/server/sessions.py's let_streamlit_stop). A stopped computation frees what it
  held: the frames of its error's traceback are cleared (their tensors with them), and after every job the
  memory allocator and the recording pool hand freed memory back to the system (`release_freed_memory`).
- The hour's spending of each payer, for the per-visitor budget (viz_app/server/budget.py): the payer is the visitor
  unless the page names another (viz_app/heavy.py: the visitor's address, so that a second tab shares the hour).
  Kept in this process (`MemorySpending`), or in the lecture hall's store (viz_app/server/class_store.py's
  `RedisSpending`), so that every process of a lecture hall counts one hour per address.
- Priority: the thread that takes a slot may be made nicer (`lower_priority`, the server's `nicer_thread`), so
  that on a busy machine the light pages' threads go first. Streamlit runs each run of a page in a new thread, so
  the nicer thread ends with the run that computed.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
import time
import traceback
from collections import defaultdict, deque
from typing import Callable, Iterator

from bert import recording_memory
from bert.errors import BertError, StoppedError
from bert.stopping import watching

HOUR = 3600.0


class BusyError(BertError):
    """The visitor already runs a heavy computation."""


class HeavyJobs:
    def __init__(self, slots: int, connected: Callable[[str], bool], clock: Callable[[], float] = time.monotonic,
                 check_every_s: float = 0.5, wait_step_s: float = 0.25, lower_priority: Callable[[], None] = lambda: None,
                 replace_wait_s: float = 30.0, spending=None):
        self._slots = threading.BoundedSemaphore(max(1, slots))
        self._lower_priority = lower_priority
        self._connected, self._clock = connected, clock
        self._check_every_s, self._wait_step_s, self._replace_wait_s = check_every_s, wait_step_s, replace_wait_s
        self._lock = threading.Condition()
        self._running: dict[str, threading.Event] = {}  # visitor -> its computation's stop request
        self._waiting: list[str] = []  # visitors waiting for a slot, in arrival order
        self._spending = spending or MemorySpending(clock)  # add(payer, work), spent_this_hour(payer)

    def spent_this_hour(self, payer: str) -> float:
        return self._spending.spent_this_hour(payer)

    def waiting(self) -> int:
        """Visitors waiting for a slot now."""
        with self._lock:
            return len(self._waiting)

    def running(self) -> int:
        """Visitors with a heavy computation now (running or waiting for a slot)."""
        with self._lock:
            return len(self._running)

    @contextlib.contextmanager
    def job(self, visitor: str, session: str | None, work: float, total_passes: int,
            on_progress: Callable[[float, str], None] = lambda share, text: None,
            payer: str | None = None, slot: bool = True) -> Iterator[None]:
        """Run the block as `visitor`'s heavy computation (`session`: its browser session; `work`: its cost in
        BERT-base token passes; `total_passes`: the forward passes it makes, for the progress; `payer`: whose hour
        it counts in, the visitor's by default; `session` None: the caller watches its own session, as the live
        training room does with its grace period). The slot is taken at its first forward pass, and the work counted
        then: a result that comes from a cache costs nothing and never waits. `slot` False: a light computation (a
        page's recorded pass), counted and stopped alike but run at once, beside the slots and at its thread's own
        priority, so that light pages never wait behind heavy ones. Raises BusyError, or StoppedError once the
        session is gone."""
        stop = threading.Event()
        with self._lock:
            if visitor in self._running:
                self._running[visitor].set()  # the visitor's newer request replaces it
                if not self._lock.wait_for(lambda: visitor not in self._running, timeout=self._replace_wait_s):
                    raise BusyError("your other heavy computation is still running: wait for it, or close its tab")
            self._running[visitor] = stop
        held = [False]
        try:
            with watching(self._check(visitor, session, work, total_passes, on_progress, held, stop, payer or visitor,
                                      slot)):
                yield
        except StoppedError as stopped:  # what the computation held goes now, whoever keeps the error (Streamlit does)
            traceback.clear_frames(stopped.__traceback__)
            raise
        finally:
            if held[0] and slot:  # a heavy computation ran: what it freed goes back (a light one's is small)
                release_freed_memory()
                self._slots.release()
            with self._lock:
                if self._running.get(visitor) is stop:
                    del self._running[visitor]
                if visitor in self._waiting:
                    self._waiting.remove(visitor)
                self._lock.notify_all()

    def _check(self, visitor: str, session: str, work: float, total_passes: int, on_progress, held: list[bool],
               stop: threading.Event, payer: str, slot: bool = True):
        done, last = [0], [self._clock()]

        def check(rows: int) -> None:
            if stop.is_set():
                raise StoppedError("the same visitor asked for another computation")
            if not held[0]:
                if slot:
                    self._take_a_slot(visitor, session, on_progress, stop)
                    self._lower_priority()
                held[0] = True
                self._spending.add(payer, work)
            done[0] += rows
            now = self._clock()
            if now - last[0] < self._check_every_s:
                return
            last[0] = now
            self._stop_if_gone(session)
            on_progress(min(done[0] / max(total_passes, 1), 1.0), f"{done[0]:,} of {total_passes:,} forward passes")

        return check

    def _take_a_slot(self, visitor: str, session: str, on_progress, stop: threading.Event) -> None:
        with self._lock:
            self._waiting.append(visitor)
        try:
            while not self._slots.acquire(timeout=self._wait_step_s):
                self._stop_if_gone(session)
                if stop.is_set():
                    raise StoppedError("the same visitor asked for another computation")
                with self._lock:
                    ahead = self._waiting.index(visitor)
                on_progress(0.0, f"waiting for a free slot ({ahead} other{'s' if ahead != 1 else ''} waiting ahead)")
        finally:
            with self._lock:
                self._waiting.remove(visitor)

    def _stop_if_gone(self, session: str | None) -> None:
        if session is not None and not self._connected(session):
            raise StoppedError("the browser session that asked for this computation is gone")


class MemorySpending:
    """What each payer spent in the last hour, in BERT-base token passes, in this process's memory."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock, self._lock = clock, threading.Lock()
        self._spent: dict[str, deque] = defaultdict(deque)  # payer -> (time, work) of its computations

    def add(self, payer: str, work: float) -> None:
        with self._lock:
            self._spent[payer].append((self._clock(), work))

    def spent_this_hour(self, payer: str) -> float:
        with self._lock:
            spent = self._spent[payer]
            while spent and spent[0][0] < self._clock() - HOUR:
                spent.popleft()
            return sum(work for _, work in spent)


def release_freed_memory() -> None:
    """Hand the memory the process freed back to the system: the recording pool's free blocks (the [layer, ...]
    tensors of recorded passes whose caches are gone, bert/recording_memory.py), then glibc's malloc_trim: a
    computation's activations are freed in pieces the allocator would otherwise keep, so the server's resident
    memory would stay at its largest computation's peak. Elsewhere than glibc only the pool's blocks go."""
    recording_memory.release()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


NICER_BY = 10  # nice levels a heavy computation's thread gives up (Linux: 0 is the default, 19 the nicest)


def nicer_thread() -> None:
    """Lower the calling thread's scheduling priority by NICER_BY (Linux schedules threads on their own; elsewhere
    nothing happens). A thread cannot take the priority back without privileges: call it only in a thread that
    ends with the computation (a Streamlit run's)."""
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + NICER_BY))
    except (AttributeError, OSError):
        pass
