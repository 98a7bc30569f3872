"""The Lessons page's Streamlit side: which step is showing, putting a step's state into the session (the same
keys the pages and the links read), the cached step and figures, and the link students open."""
from __future__ import annotations

import copy
from urllib.parse import urlsplit

import streamlit as st

from viz_app import cache, models
from viz_app.lessons.format import MODEL_PARAM, PAGES, Lesson
from viz_app.lessons.resolve import SIDEBAR_KEYS, ResolvedStep, step_state
from viz_app.params import BOUND, LINK_PARAMS

KEPT = ("image_format",)  # the teacher's own settings, which no step changes
STEP = "lesson_step"  # the step showing (from 0); None: the lesson's overview
APPLIED = "_lesson_applied"  # (lesson, step, model) whose state is in the session
GO = "_lesson_go"  # a page to switch to on the next run
UPLOADED = "_lesson_uploaded"  # the teacher's own lesson, once read


def go_to(lesson: Lesson, index: int | None) -> None:
    """Button callback: show step `index` (None: leave the lesson). Runs before the sidebar is drawn, so the
    step's sentence and model can be put into the sidebar's widgets; the rest follows in `apply`."""
    st.session_state[STEP] = index
    if index is None:
        return
    state = step_state(lesson, index, st.session_state)
    for key in SIDEBAR_KEYS:
        st.session_state[key] = state[key]
    if MODEL_PARAM in state:
        _choose_model(state[MODEL_PARAM])


def open_page(step: ResolvedStep) -> None:
    """Button callback: go to the step's page on the next run (its state is already in the session)."""
    st.session_state[GO] = step.page


def switch_if_asked(step: ResolvedStep, model: str | None) -> None:
    page = st.session_state.pop(GO, None)
    if page:
        st.switch_page(f"../pages/{PAGES[page][0]}", query_params=step.query(model))


def apply(lesson: Lesson, step: ResolvedStep, model: str | None) -> None:
    """Put the step's state into the session once per (lesson, step, model); every other setting a link carries goes
    back to its default, so the step's figures, its page, and the link students open all show the same view. The
    page stays so after the lesson (free to explore)."""
    marker = (lesson.name, step.number, model)
    if st.session_state.get(APPLIED) == marker:
        return
    for key, param in LINK_PARAMS.items():
        if key in SIDEBAR_KEYS or key in KEPT:
            continue
        if key in BOUND and key not in step.state:
            st.session_state.pop(key, None)  # the widget starts from its own default, which may depend on the model
        else:
            st.session_state[key] = copy.deepcopy(step.state.get(key, param.default))
    st.session_state[APPLIED] = marker


def _choose_model(source: str) -> None:
    sources = [choice.source for choice in cache.model_choices()]
    if source in sources and source != models.FOLDER:
        st.session_state["model_choice"] = source
    else:
        st.session_state["model_choice"], st.session_state["model_folder"] = models.FOLDER, source


def base_url() -> str:
    """The app's address as this browser reached it (students on the same network use the same one)."""
    parts = urlsplit(st.context.url or "http://localhost:8501")
    prefix = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{parts.scheme}://{parts.netloc}" + (f"/{prefix}" if prefix else "")
