"""Which browser sessions the server still has, as Streamlit's runtime knows them (`streamlit.runtime`): the
training room (viz_app/server/training_room.py) and the heavy computations (viz_app/heavy.py) ask, to end the runs of
sessions that are gone.

Streamlit keeps a session whose browser went away (a closed tab, a network drop) for `server.disconnectedSessionTTL`
seconds, in case it reconnects; after that the session is gone for good.
"""
from __future__ import annotations

import streamlit as st
from streamlit import runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import get_run_yield_check


class NoSessionError(RuntimeError):
    """Asked for this browser session's id outside a run of the app's script."""


def this_session() -> str:
    """The id Streamlit's runtime gives this browser session."""
    run = get_script_run_ctx()
    if run is None:
        raise NoSessionError("there is a browser session only while the app's script runs (streamlit run viz_app/Home.py)")
    return run.session_id


def is_connected(session_id: str) -> bool:
    """Whether a browser is connected to the session now (thread-safe: the training thread asks too). Without a
    running server (a script, a test between runs) nothing ends sessions: True."""
    if not runtime.exists():
        return True
    return bool(runtime.get_instance().is_active_session(session_id))


def reconnect_window_s() -> float:
    """How long a session whose browser went away may still come back (Streamlit's server.disconnectedSessionTTL)."""
    return float(st.get_option("server.disconnectedSessionTTL"))


def let_streamlit_stop() -> None:
    """Give Streamlit's runner the chance to stop this run here (its browser asked for a rerun: the input changed;
    or the session ends), as every `st.` call does, without drawing anything: long computations call it between
    forward passes (viz_app/heavy.py). Outside a run of the app's script it does nothing."""
    check = get_run_yield_check()
    if check is not None:
        check()
