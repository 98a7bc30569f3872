"""The runner: the one road from a page to the model. A heavy computation, or a light one (a guess, two passes),
is a page spec's `Computation` (viz_app/specs/base.py) run by `run`: its cost against the budgets before it starts
(viz_app/server/budget.py), then a slot, a spinner that says its passes, a stop when the browser session goes or the
input changes (viz_app/server/heavy_jobs.py), and the cache (viz_app/cache.py), keyed by the work's fields:

    result = heavy.run(context, mixing.METHOD, mixing.MethodWork("alti"))   # None: over the budget, and it says why

It sits above the caches, the specs and the server's jobs and joins them; viz_app/server/ imports none of it.
Home.py runs every page inside `refusing_outside_jobs()`: a page's forward pass outside a computation (one written
without `run`) fails with UngatedComputationError, from the first (OUTSIDE_JOB_PASSES is 0). A lesson step is a
`Computation` too (viz_app/lessons/steps.py), run through `run` for the presenter and for a following student
alike. A download made when its button is pressed runs in a job through `deferred`. `PassesOutside` counts, for a
test, the passes made on any other thread outside a computation.

A visitor is its browser session (Streamlit's session id): one heavy computation at a time each. The hour's
budget is the address's (`payer`): a second tab on the same machine shares it, as it shares a vote (students behind
one address, a school's NAT, share one hour: docs/teaching.md says how to raise it).
"""
from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

import streamlit as st

from bert.config import BertConfig
from bert.costs import Cost
from bert.errors import StoppedError
from bert.stopping import watching, watching_unwatched_threads
from viz_app import cache
from viz_app.app import show
from viz_app.server import singletons
from viz_app.server import sessions
from viz_app.server.budget import Verdict, decide
from viz_app.server.heavy_jobs import BusyError, HeavyJobs
from viz_app.app.models import ModelKey
from viz_app.app.page_context import Context
from viz_app.specs.base import Computation

T = TypeVar("T")
LIGHT_PASSES = 3  # a computation of at most this many passes (a backward pass counts as two: a page's recorded pass,
# two guesses, attribution patching's pass and its backward pass) runs beside the heavy slots, priced and stopped alike
OUTSIDE_JOB_PASSES = 0  # forward passes one run of a page may make outside a computation: none, cheap ones included
CONFIRMED = "_heavy_confirmed"  # (key, cost) pairs this browser session's owner or presenter confirmed


def visitor() -> str:
    try:
        return sessions.this_session()
    except sessions.NoSessionError:
        return "script"  # outside a run of the app's script (a test's bare call): one visitor


def payer(context: Context) -> str:
    """Whose hour a computation counts in: the visitor's address where there is one to read, else its session."""
    return context.visitor.voter(visitor())


def server_jobs(context: Context) -> HeavyJobs:
    return singletons.heavy_jobs(context.visitor.settings.heavy_slots)


def allowed(context: Context, cost: Cost, key: str, config: BertConfig | None = None) -> bool:
    """Whether the page may start the computation now. Within the budgets: True. Above them: a student reads the
    numbers and what to lower (False); the owner and the presenter read the same and a button: True once pressed,
    and on later runs for the same cost. `config`: the model whose size the passes are counted at (default: the
    page's model)."""
    decision = _decision(context, cost, config)
    if decision.verdict is Verdict.START:
        return True
    confirmed = st.session_state.setdefault(CONFIRMED, set())
    if decision.verdict is Verdict.CONFIRM and (key, cost) in confirmed:
        return True
    show.warning("{}", decision.message)
    if decision.verdict is Verdict.CONFIRM and st.button("Start it anyway", key=f"heavy_confirm_{key}"):
        confirmed.add((key, cost))
        return True
    return False


def within_budget(context: Context, cost: Cost, config: BertConfig | None = None) -> bool:
    """Whether the computation may start now without asking anyone (nothing is shown)."""
    return _decision(context, cost, config).verdict is Verdict.START


def _decision(context: Context, cost: Cost, config: BertConfig | None):
    return decide(cost, config or context.loaded.model.config, context.visitor.role, context.visitor.settings,
                  server_jobs(context).spent_this_hour(payer(context)))


@contextlib.contextmanager
def job(context: Context, cost: Cost, label: str, config: BertConfig | None = None,
        progress_bar: bool = False, light: bool = False) -> Iterator[None]:
    """Run the block (a cached computation) as this visitor's heavy computation, under a spinner that says its cost
    and, with `progress_bar`, a bar ("`label`: 120 of 992 forward passes", or its place in the queue for a slot):
    only where the block calls no `st.cache_data` or `st.cache_resource` function that computes (Streamlit could
    not replay a bar drawn from inside one), as `run`'s stores. Between forward passes it lets Streamlit stop the
    run (its input changed) and stops when its browser session is gone. When it cannot run now (another of the
    visitor's computations runs) the page says so and stops. `light`: counted and stopped alike, but beside the
    heavy slots (HeavyJobs.job's `slot`), so a page's own pass never waits behind another visitor's heavy one."""
    work = cost.work(config or context.loaded.model.config)
    bar = st.empty() if progress_bar else None  # drawn at the first report (half a second in), gone at the end

    def progress(share: float, text: str) -> None:
        sessions.let_streamlit_stop()
        if bar is not None:
            bar.progress(share, f"{label}: {text}")

    try:
        waits = "" if light else " (after the computations that hold the server's slots)"
        with st.spinner(f"{label}: {cost.describe()}{waits}…"), \
                server_jobs(context).job(visitor(), visitor(), work, cost.forward_passes, progress, payer(context),
                                         slot=not light):
            yield
    except BusyError as busy:
        show.warning("Not started: {}.", busy)
        st.stop()
    except StoppedError:
        st.stop()
    finally:
        if bar is not None:
            bar.empty()


def run(context: Context, computation: Computation, work, key: str | None = None, config: BertConfig | None = None,
        model: ModelKey | None = None):
    """The computation's result for the page's model and input: priced (`computation.cost`), allowed by the budgets
    (or confirmed by the owner or the presenter), run in a slot that stops when the tab closes, and cached (one
    result per model, input and work, shared by every session). A `shared` computation (a recorded pass, a corpus
    index) is priced and slotted when it runs: a visitor who finds it kept reads it at no cost, whatever its budget.
    None when it may not start: the page has said why.
    `key`: the confirmation's key when a page runs one computation twice (two sides); default its name. `model`:
    the model it runs on when not the page's picked one, without the sentence box's input (the built-in model that
    "How BERT was trained" reads)."""
    model_key, given = (context.key, context.prepared) if model is None else (model, None)
    prepared = None if computation.per_model else given  # once per model: not keyed by the input
    arguments = (computation.name, model_key, prepared, computation.cache_key(work), work, computation)
    if computation.shared:  # kept already for every visitor: read at no cost (nothing runs), without asking the budget
        kept = cache.kept_shared(*arguments)
        if kept is not None:
            return kept
    inputs = cache.inputs(model_key, given)
    cost, title = cache.priced(computation.name, model_key, given, computation.cache_key(work), work,
                               computation), computation.title(work)
    if config is None:
        config = computation.counted_at(inputs, work) if computation.counted_at is not None else inputs.loaded.model.config
    if not allowed(context, cost, key or computation.name, config):
        return None
    if cost.forward_passes > 2:
        show.caption("{}: about {}.", title, cost.describe())
    light = cost.forward_passes + 2 * cost.backward_passes <= LIGHT_PASSES
    # cache.computed and computed_shared are bounded stores, not st.cache_* functions: the bar can be drawn
    with job(context, cost, title, config, progress_bar=True, light=light):
        return (cache.computed_shared if computation.shared else cache.computed)(*arguments)


def deferred(context: Context, cost: Cost, make: Callable[[], T], refused: Callable[[str], T],
             config: BertConfig | None = None) -> Callable[[], T]:
    """A download button's data, made only when the button is pressed (Streamlit calls the returned function on a
    thread of its own after the page's run, where no spinner shows and no default watcher counts) as this visitor's
    heavy job at `cost`, as `job` runs a page's: a slot, the hour's budget, a stop when the tab closes. It runs in a
    thread that ends with it, as a page's run does (the job lowers its thread's priority for good). What the button
    saves when it cannot be made (another of the visitor's computations holds on, the tab is gone) is
    `refused(why)`; the page asks the budget before it offers the button (`within_budget`)."""
    jobs, who, pays = server_jobs(context), visitor(), payer(context)
    work = cost.work(config or context.loaded.model.config)

    def in_a_job() -> T:
        try:
            with jobs.job(who, who, work, cost.forward_passes, payer=pays):
                return make()
        except (BusyError, StoppedError) as error:
            return refused(str(error))

    def data() -> T:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="download") as own_thread:
            return own_thread.submit(in_a_job).result()

    return data


class UngatedComputationError(RuntimeError):
    """A page ran a forward pass outside `run` (no price, no budget, no slot, no stop)."""


@contextlib.contextmanager
def refusing_outside_jobs(limit: int | None = None) -> Iterator[None]:
    """The default watcher (bert/stopping.py) for one run of a page: it counts the forward passes made outside a
    job (a job installs its own watcher for its block) and refuses the one past `limit` (OUTSIDE_JOB_PASSES)."""
    passes, limit = [0], OUTSIDE_JOB_PASSES if limit is None else limit

    def check(rows: int) -> None:
        passes[0] += rows
        if passes[0] > limit:
            raise UngatedComputationError(
                f"{passes[0]} forward passes outside a heavy job: run the computation through viz_app.heavy.run")

    with watching(check):
        yield


class PassesOutside:
    """Counts the forward passes made outside any computation on the threads that watch nothing of their own (not
    a page's run under `refusing_outside_jobs`, not a job): a Streamlit thread drawing the sidebar or a fragment, a
    download's. For a test: `with PassesOutside() as outside: ...; assert outside.by_thread == {}` (the every-page
    sweep; a lesson's steps and downloads read the same)."""

    def __init__(self) -> None:
        self.by_thread: dict[str, int] = {}  # thread name -> rows of forward passes
        self._lock = threading.Lock()
        self._watching = watching_unwatched_threads(self)

    def __call__(self, rows: int) -> None:
        if rows:
            with self._lock:
                name = threading.current_thread().name
                self.by_thread[name] = self.by_thread.get(name, 0) + rows

    def __enter__(self) -> "PassesOutside":
        self._watching.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._watching.__exit__(*exc)
