"""A heavy computation on a page: its cost against the budgets before it starts (viz_app/server/budget.py), then a slot,
a spinner that says its passes, and a stop when the browser session goes or the input changes
(viz_app/server/heavy_jobs.py). The one road to it is `run`, with a page spec's `Computation`
(viz_app/specs/base.py):

    result = heavy.run(context, mixing.METHOD, mixing.MethodWork("alti"))   # None: over the budget, and it says why

Home.py runs every page inside `refusing_outside_jobs()`: a page that reaches more than OUTSIDE_JOB_PASSES forward
passes outside a job (a heavy computation written without `run`) fails with UngatedComputationError. A lesson step
is a `Computation` too (viz_app/lessons/steps.py), run through `run` for the presenter and for a following student
alike. A download made when its button is pressed runs in a job through `deferred`.

A visitor is its browser session (Streamlit's session id): one heavy computation at a time each. The hour's
budget is the address's (`payer`): a second tab on the same machine shares it, as it shares a vote (students behind
one address, a school's NAT, share one hour: docs/teaching.md says how to raise it).
"""
from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

import streamlit as st

from bert.config import BertConfig
from bert.costs import Cost
from bert.errors import StoppedError
from bert.stopping import watching
from viz_app import cache
from viz_app.server import singletons
from viz_app.server import sessions
from viz_app.server.budget import Verdict, decide
from viz_app.server.heavy_jobs import BusyError, HeavyJobs
from viz_app.app.page_context import Context
from viz_app.specs.base import Computation, Inputs

T = TypeVar("T")
OUTSIDE_JOB_PASSES = 6  # passes one run of a page may make outside a job: its recorded passes, light extras (the
# causal tracing page: two guesses, then attribution patching's three); value zeroing over 6 tokens already needs 7
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
    st.warning(decision.message)
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
        progress_bar: bool = False) -> Iterator[None]:
    """Run the block (a cached computation) as this visitor's heavy computation, under a spinner that says its cost
    and, with `progress_bar`, a bar ("`label`: 120 of 992 forward passes", or its place in the queue for a slot):
    only where the block calls no `st.cache_data` or `st.cache_resource` function that computes (Streamlit could
    not replay a bar drawn from inside one), as `run`'s stores. Between forward passes it lets Streamlit stop the
    run (its input changed) and stops when its browser session is gone. When it cannot run now (another of the
    visitor's computations runs) the page says so and stops."""
    work = cost.work(config or context.loaded.model.config)
    bar = st.empty() if progress_bar else None  # drawn at the first report (half a second in), gone at the end

    def progress(share: float, text: str) -> None:
        sessions.let_streamlit_stop()
        if bar is not None:
            bar.progress(share, f"{label}: {text}")

    try:
        with st.spinner(f"{label}: {cost.describe()} (after the computations that hold the server's slots)…"), \
                server_jobs(context).job(visitor(), visitor(), work, cost.forward_passes, progress, payer(context)):
            yield
    except BusyError as busy:
        st.warning(f"Not started: {busy}.")
        st.stop()
    except StoppedError:
        st.stop()
    finally:
        if bar is not None:
            bar.empty()


def run(context: Context, computation: Computation, work, key: str | None = None, config: BertConfig | None = None):
    """The computation's result for the page's model and input: priced (`computation.cost`), allowed by the budgets
    (or confirmed by the owner or the presenter), run in a slot that stops when the tab closes, and cached (one
    result per model, input and work, shared by every session). A `built_once` computation (a corpus index) is
    priced and slotted once: a visitor who finds it kept reads it at no cost, whatever its budget. None when it may
    not start: the page has said why.
    `key`: the confirmation's key when a page runs one computation twice (two sides); default its name."""
    inputs = Inputs(context.loaded, context.prepared, cache.load_model, cache.kept_parts().get_or_compute)
    prepared = None if computation.per_model else context.prepared  # once per model: not keyed by the input
    arguments = (computation.name, context.key, prepared, computation.cache_key(work), work, computation)
    shared = computation.shared or computation.built_once
    if computation.built_once:  # kept once for every visitor: read without asking the budget again
        kept = cache.kept_shared(*arguments)
        if kept is not None:
            return kept
    cost, title = cache.priced(computation.name, context.key, context.prepared, computation.cache_key(work), work,
                               computation), computation.title(work)
    if config is None and computation.counted_at is not None:
        config = computation.counted_at(inputs, work)
    if not allowed(context, cost, key or computation.name, config):
        return None
    if cost.forward_passes > 2:
        st.caption(f"{title}: about {cost.describe()}.")
    with job(context, cost, title, config, progress_bar=True):  # cache.computed and computed_shared: plain stores
        return (cache.computed_shared if shared else cache.computed)(*arguments)


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
    """A page ran a heavy computation outside `run` (no price, no budget, no slot, no stop)."""


@contextlib.contextmanager
def refusing_outside_jobs(limit: int | None = None) -> Iterator[None]:
    """The default watcher (bert/stopping.py) for one run of a page: it counts the forward passes made outside a
    job (a job installs its own watcher for its block) and refuses the one past `limit` (OUTSIDE_JOB_PASSES)."""
    passes, limit = [0], OUTSIDE_JOB_PASSES if limit is None else limit

    def check(rows: int) -> None:
        passes[0] += rows
        if passes[0] > limit:
            raise UngatedComputationError(
                f"{passes[0]} forward passes outside a heavy job: run the computation through viz_app.server.heavy.run")

    with watching(check):
        yield
