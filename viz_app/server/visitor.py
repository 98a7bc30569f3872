"""Who is visiting, worked out once per run by Home.py: viz_app/server/access.py's policy applied to the visitor's
address, the server's settings and whether the browser session opened the presenter's link.

`address()` is the one place the app reads the visitor's address; tests replace it to play the person at the
server's machine or a visitor from another one (streamlit.testing's AppTest has no connection to read).
"""
from __future__ import annotations

import json
import os
from typing import Mapping, Sequence
from urllib.parse import quote, unquote

import streamlit as st

from viz_app.server import access
from viz_app.server import singletons
from viz_app.app.models import ModelChoice
from viz_app.server.access import Role, Visitor
from viz_app.server.class_room import FOLLOW_PARAM, PRESENTER_PARAM
from viz_app.server.class_store import StoreUnavailableError
from viz_app.server.settings import SettingsError, server_settings

SERVER_MACHINE = "127.0.0.1"  # what address() gives for a browser on the server's own machine
# set by scripts/lecture.sh: the app is reached through the lecture hall's proxy on this machine, which writes the
# browser's own address in X-Forwarded-For (replacing any a browser sent: scripts/lecture/haproxy.cfg.in)
PROXY_VARIABLE = "BERT_INSIDE_BEHIND_PROXY"
FORWARDED_FOR = "x-forwarded-for"
PRESENTER = "_class_presenter_key"  # the presenter's key, once this browser session opened the presenter's link
PRESENTER_COOKIE = "bert_inside_presenter"  # the presenter's key, kept by the presenter's browser while it is open


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


def presenter_cookie() -> str | None:
    """The presenter's key as this browser sends it (PRESENTER_COOKIE), None where it sends none. Tests replace it
    (streamlit.testing's AppTest sends no cookies)."""
    value = st.context.cookies.get(PRESENTER_COOKIE)
    return unquote(value) if value else None


def _remember_in_browser(key: str) -> None:
    """The presenter's browser keeps the key in a cookie until it closes (no expiry; only this app's pages), and
    sends it with every connection: a tab whose app process died reconnects to another process (the lecture hall's
    proxy sends it there) as the presenter, with the key out of the address bar and off the projected screen."""
    path = "/" + (st.get_option("server.baseUrlPath") or "").strip("/")
    cookie = f"{PRESENTER_COOKIE}={quote(key, safe='')}; path={path}; SameSite=Strict"
    script = json.dumps(cookie).replace("<", "\\u003c")  # a JavaScript string that cannot end the script
    st.html(f"<script>document.cookie = {script};</script>", unsafe_allow_javascript=True)


def of_the_browser_session(models: Sequence[ModelChoice]) -> Visitor:
    """This browser session's visitor, offered those of `models` (the machine's: viz_app/cache.py's `model_choices`)
    its role may load. A presenter's link (?key=...) makes the browser session the presenter in class mode; the key
    then leaves the address bar, so a projected screen does not show it, and stays in the browser's cookie, so that a
    new session of the same browser (its app process died; a reload) is the presenter again, unless it opened the
    students' link (?follow=1: a teacher trying that link is a student there). Raises SettingsError."""
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
            _remember_in_browser(key)
    elif room is not None and PRESENTER not in st.session_state and FOLLOW_PARAM not in st.query_params:
        key = presenter_cookie()
        if room.is_presenter_key(key):
            st.session_state[PRESENTER] = key
    key = st.session_state.get(PRESENTER)
    presenter = room is not None and room.is_presenter_key(key)
    where = address()
    role = access.role_of(where, settings.class_mode, presenter)
    choices = tuple(access.picker_choices(models, settings, role))
    return Visitor(role, settings, choices, room, key if role is Role.PRESENTER else None, where)
