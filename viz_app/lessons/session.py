"""The Lessons page's Streamlit side: which step is showing, putting a step's state into the session (the same
keys the pages and the links read), the step and its figures worked out through the runner, and the link students
open.

A step is worked out as a page's heavy part is: its `Computation` (viz_app/lessons/steps.py) run by
viz_app/heavy.py's `run`, priced at its computations' sum, within the budget, in a slot, stopped when the
tab closes and kept once for every session, for the presenter, a following student and the lesson's download alike.
Inside it, the step's computations go through the app's stores (viz_app/cache.py), so a page opened at the step
reads the same recorded pass."""
from __future__ import annotations

import copy
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

import streamlit as st

from bert.costs import Cost
from viz_app import cache
from viz_app.app import models, state
from viz_app.app.page_context import Context
from viz_app import heavy
from viz_app.server.access import Role, Visitor
from viz_app.app.models import LoadedModel, ModelKey, PickedModel
from viz_app.lessons.computed import PerModel
from viz_app.lessons.export import lesson_html, lesson_works
from viz_app.lessons.format import MODEL_PARAM, PAGES, Lesson, builtin_lessons
from viz_app.lessons.resolve import SIDEBAR_KEYS, ResolvedStep, step_state
from viz_app.lessons.steps import StepWork, WorkedStep, step_computation
from viz_app.app.navigation import LINK_PARAMS
from viz_app.server import class_room
from viz_app.server.class_room import ClassStep
from viz_app.server.class_store import StoreUnavailableError
from viz_app.specs.base import Computation

KEPT = ("image_format", "lesson_name")  # the teacher's own settings and the lesson shown, which no step changes
STEP = "lesson_step"  # the step showing (from 0); None: the lesson's overview
APPLIED = "_lesson_applied"  # (lesson, step, model) whose state is in the session
GO = "_lesson_go"  # a page to switch to on the next run
UPLOADED = "_lesson_uploaded"  # the teacher's own lesson, once read
UPLOAD = "upload"  # the lesson picker's entry for the teacher's own lesson file
PRESENTED = "_lesson_presented"  # the presenter's: the class's version (viz_app/server/class_room.py) this browser session shows
NOT_SENT = "_lesson_press_not_sent"  # the presenter's last press did not reach the class's store: refused
_MISSING = object()  # a key the session does not hold


def keep_uploaded(lesson: Lesson | None) -> None:
    """The teacher's own lesson, once read from the upload; None: the file cannot be used (forget the last one)."""
    if lesson is None:
        st.session_state.pop(UPLOADED, None)
    else:
        st.session_state[UPLOADED] = lesson


def current_step(lesson: Lesson | None) -> int | None:
    """The step showing, None for the overview: no lesson, or a step past this lesson's end, goes back to it."""
    index = st.session_state.get(STEP)
    if lesson is None or (index is not None and not 0 <= index < len(lesson.steps)):
        index = st.session_state[STEP] = None
    return index


def go_to(lesson: Lesson, index: int | None, visitor: Visitor) -> None:
    """Button callback: show step `index` (None: leave the lesson). Runs before the sidebar is drawn, so the
    step's sentence and model can be put into the sidebar's widgets; the rest follows in `apply`. The presenter's
    move moves the class (viz_app/server/class_room.py) first: a move the class's store refuses (it does not answer)
    leaves this browser session where it was too, and NOT_SENT says so (viz_app/lessons/following.py's presenter box)."""
    values = None if index is None else step_state(lesson, index, st.session_state)
    resolution = visitor.resolve(values[MODEL_PARAM]) if values is not None and MODEL_PARAM in values else None
    if visitor.role is Role.PRESENTER:
        try:
            if index is None:
                version = visitor.room.end(visitor.presenter_key)
            else:
                version = visitor.room.show(visitor.presenter_key, lesson, index, model=_chosen_model(resolution)).version
        except StoreUnavailableError:
            st.session_state[NOT_SENT] = True
            return
        st.session_state[PRESENTED] = version
    st.session_state[STEP] = index
    if values is None:
        return
    for key in SIDEBAR_KEYS:
        st.session_state[key] = values[key]
    if resolution is not None:
        state.choose(resolution)


def start(lesson: Lesson, visitor: Visitor) -> None:
    """Button callback ("Start the lesson"): the first step; for a presenter whose class is already in this lesson
    (another of the presenter's tabs, or a process before this one, moved it), the class's step: never back to the
    first step unasked."""
    current = visitor.room.current if visitor.role is Role.PRESENTER else None
    if current is not None and current.lesson == lesson:
        resume(current, visitor)
    else:
        go_to(lesson, 0, visitor)


def resume(current: ClassStep, visitor: Visitor) -> None:
    """The presenter's session takes the class's step (the class's store keeps it, so this works on any process and
    in a new session of the presenter's link), before any widget is drawn: the lesson in the picker, the step, its
    sentence and settings, the class's model."""
    lesson = current.lesson
    if builtin_lessons().get(lesson.name) == lesson:
        st.session_state["lesson_name"] = lesson.name
    else:
        st.session_state["lesson_name"] = UPLOAD
        keep_uploaded(lesson)
    st.session_state[STEP] = current.step
    values = step_state(lesson, current.step, st.session_state)
    for key in SIDEBAR_KEYS:
        st.session_state[key] = values[key]
    state.choose(visitor.resolve(current.model or values.get(MODEL_PARAM, "")))
    st.session_state[PRESENTED] = current.version


def _chosen_model(resolution=None) -> str | None:
    """The model the sidebar will load (the step's `resolution` where it names one), as a link names it."""
    if resolution is not None:
        return resolution.folder if resolution.choice.source == models.FOLDER else resolution.choice.source
    choice = st.session_state.get("model_choice")
    return st.session_state.get("model_folder") if choice == models.FOLDER else choice


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
        value = step.state.get(key, param.default)
        if st.session_state.get(key, _MISSING) != value:  # a write costs more than the look; one look, not two
            st.session_state[key] = copy.deepcopy(value)  # the page fits it to the model
    st.session_state[APPLIED] = marker


def base_url() -> str:
    """The app's address as this browser reached it (students on the same network use the same one)."""
    parts = urlsplit(st.context.url or "http://localhost:8501")
    prefix = (st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{parts.scheme}://{parts.netloc}" + (f"/{prefix}" if prefix else "")


def students_base_url() -> str:
    """The app's address as students reach it: as this browser reached it, unless that is this machine's own name
    for itself (localhost), which students cannot use; then the machine's address on its network. The class link
    and every step's link are made from it, so that they always agree."""
    parts = urlsplit(base_url())
    if parts.hostname not in ("localhost", "127.0.0.1", "::1"):
        return parts.geturl()
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, class_room.network_host() + port, parts.path, "", ""))


def through_the_caches(loaded: LoadedModel) -> PerModel:
    """The step's computations in the app's stores (viz_app/cache.py), as the pages keep theirs."""
    def computed(computation: Computation, prepared, work):
        return cache.result_of(loaded.key, prepared, computation, work)

    return PerModel(computed)


LESSON_STEP = step_computation(through_the_caches)  # the app's step: what it computes goes through the app's stores


def worked_step(context: Context, lesson: Lesson, index: int, session: Mapping[str, Any]) -> WorkedStep | None:
    """Step `index` for the context's model, the session's sentence where the step sets none, through the runner;
    None when it may not start (the page has said why)."""
    return heavy.run(context, LESSON_STEP, StepWork.of(lesson, index, session), key=f"lesson_step_{index}")


def take_step(lesson: Lesson, index: int, key: ModelKey, visitor: Visitor) -> ResolvedStep | None:
    """A following student's move to the class's step (viz_app/lessons/following.py), before any widget is drawn:
    the step for `key`'s model, its sentence and every setting it names into the session, the rest to defaults.
    Worked out through the runner at the student's budget, or read free where the class has worked it out already;
    None when it may not start (the student has read why)."""
    values = step_state(lesson, index, st.session_state)
    for name in SIDEBAR_KEYS:
        st.session_state[name] = values[name]
    context = Context(PickedModel(key, cache.load_model(key), None), None, visitor)
    worked = worked_step(context, lesson, index, st.session_state)
    if worked is None:
        return None
    st.session_state.pop(APPLIED, None)  # even the step already taken: back to what it shows
    apply(lesson, worked.step, key.source)
    return worked.step


def download(context: Context, lesson: Lesson, base_url: str, refused: Callable[[str], str]) -> tuple[Cost, Callable[[], str]]:
    """The lesson's handout, made when its button is pressed (heavy.deferred), and its price: every step's
    computation (the same as the presenter's, with the texts escaped as HTML), priced as their sum."""
    works = lesson_works(lesson)
    price = sum((cache.priced(LESSON_STEP.name, context.key, None, work, work, LESSON_STEP) for work in works), Cost(0, 0))

    def worked_for(work: StepWork) -> WorkedStep:
        return cache.computed_shared(LESSON_STEP.name, context.key, None, work, work, LESSON_STEP)

    def make() -> str:
        return lesson_html(lesson, context.loaded, context.key.source, base_url, worked_for)

    return price, heavy.deferred(context, price, make, refused)
