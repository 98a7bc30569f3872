"""Who is visiting, worked out once per run by Home.py: viz_app/server/access.py's policy applied to the visitor's
address, the server's settings and whether the browser session opened the presenter's link.

`address()` is the one place the app reads the visitor's address; tests replace it to play the person at the
server's machine or a visitor from another one (streamlit.testing's AppTest has no connection to read).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

import streamlit as st

from viz_app.server import access
from viz_app.server import singletons
from viz_app.app.models import ModelChoice
from viz_app.server.access import Role, Visitor
from viz_app.server.class_room import PRESENTER_PARAM
from viz_app.server.class_store import StoreUnavailableError
from viz_app.server.settings import ServerSettings, SettingsError, read_settings

SERVER_MACHINE = "127.0.0.1"  # what address() gives for a browser on the server's own machine
# set by scripts/lecture.sh: the app is reached through the lecture hall's proxy on this machine, which writes the
# browser's own address in X-Forwarded-For (replacing any a browser sent: scripts/lecture/haproxy.cfg.in)
PROXY_VARIABLE = "BERT_INSIDE_BEHIND_PROXY"
FORWARDED_FOR = "x-forwarded-for"
PRESENTER = "_class_presenter_key"  # the presenter's key, once this browser session opened the presenter's link


def address() -> str | None:
    """The IP address this browser session's connection comes from; None when there is no connection to read
    (no request, or streamlit.testing's AppTest), which viz_app/server/access.py treats as a student's."""
    return address_of(st.context.ip_address, st.context.headers, behind_proxy=os.environ.get(PROXY_VARIABLE) == "1")


def address_of(ip_address: str | None, headers: Mapping[str, str], behind_proxy: bool = False) -> str | None:
    """Streamlit's `st.context.ip_address` is None both for a browser on the server's own machine (127.0.0.1, ::1)
    and when there is no connection at all; only a real connection carries its request's headers. Behind the
    lecture hall's proxy every connection comes from the proxy on this machine: the browser's address is the one
    the proxy wrote in X-Forwarded-For (trusted only then: a browser's own header would be a forgery)."""
    if isinstance(ip_address, str):
        return ip_address
    if behind_proxy:
        forwarded = [value for name, value in headers.items() if name.lower() == FORWARDED_FOR]
        if forwarded and forwarded[-1].split(",")[-1].strip():
            return forwarded[-1].split(",")[-1].strip()
    return SERVER_MACHINE if len(headers) else None


def server_settings() -> ServerSettings:
    """The server's settings: its flags after `--` (`streamlit run viz_app/Home.py -- --class`), the environment,
    the settings file (viz_app/server/settings.py). Raises SettingsError."""
    started_as_app = Path(sys.argv[0]).name == "Home.py"  # under `streamlit run`; not in tests, which set variables
    return read_settings(sys.argv[1:] if started_as_app else [], os.environ)


def of_the_browser_session(models: Sequence[ModelChoice]) -> Visitor:
    """This browser session's visitor, offered those of `models` (the machine's: viz_app/cache.py's `model_choices`)
    its role may load. A presenter's link (?key=...) makes the browser session the presenter in class mode; the key
    then leaves the address bar, so a projected screen does not show it. Raises SettingsError."""
    settings = server_settings()
    try:
        room = singletons.class_room(settings.presenter_key) if settings.class_mode else None
    except StoreUnavailableError as error:  # a lecture hall's store (BERT_INSIDE_STORE) that does not answer
        raise SettingsError(str(error)) from None
    if PRESENTER_PARAM in st.query_params:
        key = st.query_params[PRESENTER_PARAM]
        del st.query_params[PRESENTER_PARAM]
        if room is not None and room.is_presenter_key(key):
            st.session_state[PRESENTER] = key
    key = st.session_state.get(PRESENTER)
    presenter = room is not None and room.is_presenter_key(key)
    where = address()
    role = access.role_of(where, settings.class_mode, presenter)
    choices = tuple(access.picker_choices(models, settings, role))
    return Visitor(role, settings, choices, room, key if role is Role.PRESENTER else None, where)
