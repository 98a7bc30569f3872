"""A heavy computation on a page: its cost against the budgets before it starts (viz_app/server/budget.py), then a slot,
a spinner that says its passes, and a stop when the browser session goes or the input changes
(viz_app/server/heavy_jobs.py).

    cost = page_costs.saliency(context.loaded, encoding, method, steps, samples)     # viz_app/page_costs.py
    if heavy.allowed(context, cost, key="saliency"):     # says why not, or asks the owner and the presenter first
        with heavy.job(context, cost, "Computing attributions"):
            result = cache.saliency(...)

A visitor is its browser session (Streamlit's session id): one heavy computation at a time each. The hour's
budget is the address's (`payer`): a second tab on the same machine shares it, as it shares a vote (students behind
one address, a school's NAT, share one hour: docs/teaching.md says how to raise it).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import streamlit as st

from bert.config import BertConfig
from bert.costs import Cost
from bert.errors import StoppedError
from viz_app.server import singletons
from viz_app.server import sessions
from viz_app.server.budget import Verdict, decide
from viz_app.server.heavy_jobs import BusyError, HeavyJobs
from viz_app.app.page_context import Context

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
def job(context: Context, cost: Cost, label: str, config: BertConfig | None = None) -> Iterator[None]:
    """Run the block (a cached computation) as this visitor's heavy computation, under a spinner that says its cost.
    Between forward passes it lets Streamlit stop the run (its input changed) and stops when its browser session is
    gone. When it cannot run now (another of the visitor's computations runs) the page says so and stops."""
    work = cost.work(config or context.loaded.model.config)
    try:
        with st.spinner(f"{label}: {cost.describe()} (after the computations that hold the server's slots)…"), \
                server_jobs(context).job(visitor(), visitor(), work, cost.forward_passes,
                                         lambda share, text: sessions.let_streamlit_stop(), payer(context)):
            yield
    except BusyError as busy:
        st.warning(f"Not started: {busy}.")
        st.stop()
    except StoppedError:
        st.stop()
