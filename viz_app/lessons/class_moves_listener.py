"""The component that lets a following student's page hear the class's moves as they happen, where the app process
serves them (viz_app/server/class_moves.py; the lecture hall's processes do): it opens the stream in the browser
and reruns the page's listening fragment (viz_app/lessons/following.py) when a version the page has not drawn
arrives. It draws nothing. Its script is viz_app/lessons/class_moves.js, the project's own."""
from __future__ import annotations

import functools
from pathlib import Path

import streamlit as st

from viz_app.server import class_moves

KEY = "class_moves"
# It draws nothing, and neither does the fragment it sits in: no gap for either in the page (its script still runs).
# Over two lines: Streamlit reads a one-line string with brackets as the path of a file
HIDDEN = ('[data-testid="stLayoutWrapper"]:has(> [data-testid="stVerticalBlock"] > [data-testid="stLayoutWrapper"]:only-child'
          f' > .st-key-{KEY}),\n.st-key-{KEY} {{display: none}}')


@functools.cache
def _component():
    """Registered at the first listen (st.components.v2: the lecture hall's Streamlit, pyproject.toml's `lecture`)."""
    return st.components.v2.component(
        "bert_inside_class_moves", js=Path(__file__).with_name("class_moves.js").read_text(encoding="utf-8"),
        css=HIDDEN, isolate_styles=False)  # the rule is the page's, not a shadow root's


def hears_moves() -> bool:
    """Whether this process streams the class's moves (else a page asks at its fragment's interval)."""
    return class_moves.HALL.serving()


def listen(seen: int, session: str, following: bool) -> None:
    """Inside the page's listening fragment: rerun it when the class's version is no longer `seen`; while the stream
    is open, the process tells the class that `session` is there, following or not. The component has
    no key of its own (its container has): every widget a page draws reads the session's keyed widgets' values, and
    a keyed component's would be worked out again for each of them."""
    with st.container(key=KEY):
        _component()(data={"url": class_moves.ROUTE, "seen": seen,
                            "heard": class_moves.HALL.presence(session, following)}, on_moved_change=_heard)


def _heard() -> None:
    """The stream said the class moved: the fragment's run that follows reads the class (nothing to keep here)."""
