"""The live tiny-BERT run of the "How BERT was trained" page: one run at a time per server, in a background thread.

A `TinyTrainingRuns` is shared by every session (viz_app/server/singletons.py holds the one instance). It starts a run unless
another is going (then the caller is told who is ahead: the queue), keeps finished runs per settings (settings
include the seed), and writes each finished model as a Hugging Face folder that the model picker can open.
No Streamlit here: the page polls `job.log`, which the training thread grows in place.

A run belongs to the browser session that started it. Once that session is gone (no browser connected for longer
than the time a browser may take to reconnect), its run is stopped if it still trains and dropped with its
folder if it finished, even though another session could still have shown it: a finished run is a cache of the
same settings and seed, so pressing "Train it yourself" again gives the same run. The training loop checks at
every step; `sweep()` checks the finished runs whenever a session opens the training room (viz_app/app/live_run.py).

The run trains in one of the server's heavy-computation slots (viz_app/server/heavy_jobs.py, the same `HeavyJobs`
as a visitor's heavy computation on any page), at its price (`training_cost`, bert/pretraining/miniature.py: its
passes and memory, which the page checks against the budgets before it asks for the run), counted in its payer's
hour as a page's computation is: while it trains, one slot fewer is free for them, and it waits for a slot when
they hold every one. The training room is shared in turn: a run may carry a time limit (the page gives a student's STUDENT_LIMIT_S; the
training loop stops it there, as if its owner had pressed Stop), and a session that asks while another run trains
joins a queue (at most MAX_QUEUE sessions, one place each) whose first session still connected starts as soon as
the slot is free. `place(owner)` is where a session stands in it. In a lecture hall (several processes,
viz_app/server/class_store.py) one run trains at a time in the whole hall: a run also holds the hall's slot
(`hall_slot`, a lease in the store), and waits for it, its log still empty, while another process's run holds it.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import logging
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bert.checkpoint import save_hf_folder
from bert.pretraining.miniature import TINY_VOCAB, RunLog, TinySettings, tokenizer, train_tiny, training_cost
from viz_app.server.heavy_jobs import HeavyJobs

log = logging.getLogger(__name__)

SHIPPED_RUNS = Path(__file__).resolve().parents[2] / "bert" / "data" / "tiny_runs"  # recipes/tiny_runs.py
KEPT_RUNS = 8  # finished runs kept (each a few kB of log and a 6 MB model folder)
STUDENT_LIMIT_S = 180.0  # seconds of training a student's run may take (the default settings: 61 s in their shipped log)
MAX_QUEUE = 30  # sessions waiting for the slot at most


@dataclass
class Job:
    settings: TinySettings
    owner: str  # the browser session that started it (Streamlit's session id)
    log: RunLog | None = None  # grows while it trains
    model_folder: str | None = None  # a Hugging Face folder of the trained model, once done
    error: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    away_since: float | None = None  # when its session was first found with no browser connected (None: connected)
    limit_s: float | None = None  # stopped after this many seconds of training (None: no limit)
    started_at: float | None = None  # the room's clock when the run took the slot (its time limit counts from there)
    timed_out: bool = False  # stopped by its time limit
    payer: str | None = None  # whose hour its work counts in (viz_app/heavy.py's `payer`; None: its owner's)

    @property
    def step(self) -> int:
        return len(self.log.train_loss) if self.log else 0

    @property
    def work(self) -> float:
        """Its price in BERT-base token passes (bert/costs.py), counted when it takes its slot."""
        return training_work(self.settings)


class TinyTrainingRuns:
    """At most one run at a time; finished runs kept per settings, so the same settings come back at once, while
    the session that started them lasts.

    connected(session) -> whether a browser is connected to that session now (viz_app/server/sessions.py asks Streamlit's
    runtime; it is called from the training thread too). A session is gone once it has been found not connected
    and still is `grace_s` seconds later (clock: seconds)."""

    def __init__(self, root: str | Path | None = None, connected: Callable[[str], bool] = lambda session: True,
                 grace_s: float = 0.0, clock: Callable[[], float] = time.monotonic, jobs: HeavyJobs | None = None,
                 hall_slot=None):
        self.root = Path(root or tempfile.mkdtemp(prefix="inside-bert-tiny-"))
        if root is None:  # the server's own temporary folder goes when the server does
            atexit.register(shutil.rmtree, self.root, True)
        self._connected, self._grace_s, self._clock = connected, grace_s, clock
        self._jobs = jobs or HeavyJobs(1, connected)  # the server's slots (viz_app/server/singletons.py)
        self._hall_slot = hall_slot  # class_store.RedisSlot in a lecture hall; None: this process is the server
        self._lock = threading.Lock()
        self.current: Job | None = None
        self._finished: OrderedDict[TinySettings, Job] = OrderedDict()
        self._queue: OrderedDict[str, tuple[TinySettings, float | None, str | None]] = OrderedDict()  # owner -> its run

    def start(self, settings: TinySettings, owner: str, limit_s: float | None = None,
              queue: bool = False, payer: str | None = None) -> tuple[str, Job | None]:
        """("finished", the kept job) | ("started", the new job) | ("busy", the job that is training) |
        ("queued", the job that is training; `place(owner)` says where this browser session stands) | ("full", the same,
        when MAX_QUEUE sessions wait already). `queue`: wait in turn instead of being told "busy". `payer`: whose hour
        the run's work counts in (default: its owner's)."""
        with self._lock:
            if settings in self._finished:
                return "finished", self._finished[settings]
            if self.current is not None:
                if not queue or self.current.owner == owner:
                    return "busy", self.current
                if owner not in self._queue and len(self._queue) >= MAX_QUEUE:
                    return "full", self.current
                self._queue[owner] = (settings, limit_s, payer)  # one place per session: a new ask keeps it
                return "queued", self.current
            job = self.current = Job(settings, owner, limit_s=limit_s, started_at=self._clock(), payer=payer)
        self._launch(job)
        return "started", job

    def place(self, owner: str) -> int | None:
        """Where `owner` stands in the queue (1: next), None when it does not wait."""
        with self._lock:
            return next((n for n, waiting in enumerate(self._queue, 1) if waiting == owner), None)

    def leave_queue(self, owner: str) -> None:
        with self._lock:
            self._queue.pop(owner, None)

    def _launch(self, job: Job) -> None:
        threading.Thread(target=self._train, args=(job,), name=f"tiny-bert {job.settings.name}", daemon=True).start()

    def _next_in_queue(self) -> Job | None:
        """Under the lock, once the slot is free: the first waiting session still connected becomes the current job."""
        while self._queue:
            owner, (settings, limit_s, payer) = self._queue.popitem(last=False)
            if self._connected(owner) and settings not in self._finished:
                self.current = Job(settings, owner, limit_s=limit_s, started_at=self._clock(), payer=payer)
                return self.current
        return None

    def finished(self, settings: TinySettings) -> Job | None:
        with self._lock:
            return self._finished.get(settings)

    def sweep(self) -> None:
        """Stop the run of a session that is gone (the training thread then removes its folder), and drop the
        finished runs of sessions that are gone, with their folders."""
        with self._lock:
            if self.current is not None and self._gone(self.current):
                self.current.stop.set()
            for settings, job in list(self._finished.items()):
                if self._gone(job):
                    del self._finished[settings]
                    _remove_model_folder(job)

    def _gone(self, job: Job) -> bool:
        """Whether the session that started `job` is gone: not connected, now and `grace_s` seconds ago."""
        if self._connected(job.owner):
            job.away_since = None
            return False
        now = self._clock()
        if job.away_since is None:
            job.away_since = now
        return now - job.away_since >= self._grace_s

    def _train(self, job: Job) -> None:
        folder = Path(tempfile.mkdtemp(prefix=job.settings.name + "-", dir=self.root))
        try:  # on the server's threads, set once at start (viz_app/server/threads.py)
            with self._in_the_hall_slot(job) as held:
                if not held:
                    raise StoppedInQueue("stopped while another process's run held the lecture hall's slot")
                with self._jobs.job(f"training:{job.owner}", None, job.work, training_cost(job.settings).forward_passes,
                                    payer=job.payer or job.owner):  # a slot at its price; its session: watched here
                    result, model, _ = train_tiny(job.settings, folder / "work", lambda grown: setattr(job, "log", grown),
                                                  lambda: job.stop.is_set() or self._gone(job) or self._over_time(job))
            job.log = result
            job.model_folder = str(save_hf_folder(model, folder / "model", TINY_VOCAB))
        except StoppedInQueue as stopped:
            job.error = str(stopped)
        except Exception as error:  # a failed run must make way for the next and say why, not take the server down
            log.exception("tiny run %s failed", job.settings.name)
            job.error = f"{type(error).__name__}: {error}"
        finally:
            shutil.rmtree(folder / "work", ignore_errors=True)  # text and optimizer state; the model folder stays
            with self._lock:
                if job.error is None and job.log is not None and job.log.stopped_at is None:
                    self._finished[job.settings] = job
                    while len(self._finished) > KEPT_RUNS:
                        _remove_model_folder(self._finished.popitem(last=False)[1])
                else:  # a stopped or failed run is not kept: its folder goes with it
                    job.model_folder = None
                    shutil.rmtree(folder, ignore_errors=True)
                self.current = None
                following = self._next_in_queue()
            job.finished.set()
            if following is not None:
                self._launch(following)

    def _in_the_hall_slot(self, job: Job):
        if self._hall_slot is None:
            return contextlib.nullcontext(True)
        return self._hall_slot.held(f"training:{job.owner}", lambda: job.stop.is_set() or self._gone(job))

    def _over_time(self, job: Job) -> bool:
        if job.limit_s is not None and self._clock() - job.started_at >= job.limit_s:
            job.timed_out = True
        return job.timed_out


def training_work(settings: TinySettings) -> float:
    """A run's price in BERT-base token passes: its passes at its model's size."""
    return training_cost(settings).work(settings.bert_config(tokenizer().vocab_size))


class StoppedInQueue(Exception):
    """A run stopped before it could take the lecture hall's slot."""


def _remove_model_folder(job: Job) -> None:
    """A finished run's folder (its model, in a folder of its own under the room's root)."""
    if job.model_folder is not None:
        shutil.rmtree(Path(job.model_folder).parent, ignore_errors=True)
        job.model_folder = None


def shipped_log(settings: TinySettings) -> RunLog | None:
    """The log recipes/tiny_runs.py shipped for these settings, if it did."""
    path = SHIPPED_RUNS / f"{settings.name}.json"
    return RunLog.from_dict(json.loads(path.read_text())) if path.is_file() else None
