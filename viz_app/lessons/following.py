"""The class in the app (Streamlit side of viz_app/server/class_room.py): the panel above a student's page that follows
the presenter, and the presenter's box on the Lessons page (the two links, how many follow, the answers).

A student's panel listens with a fragment that reruns every POLL_S seconds and draws nothing (in a lecture hall's
process, which streams the class's moves, at once when the class moves, and every STREAMED_POLL_S in case the
stream was cut: viz_app/server/class_moves.py): it tells the room the student is there (at most every HEARTBEAT_S;
in a lecture hall the stream's process does it while the stream is open), and when the room's version changed while
the student follows, it takes the room's step the way a lesson's step is taken (viz_app/lessons/session.py: the
sentence, the model, every setting the step names; the step worked out through the runner, or read free once the
class has it) and switches to the step's page. Only the student's own session changes.

The presenter's step is the class's, kept where the class is (in a lecture hall, the store every process shares:
viz_app/server/class_store.py): `resume_presenting` puts it into a presenter's session that has not shown it yet (a
new session on another process after the presenter's died, the presenter link opened again, another presenter tab
that moved the class). While the lecture hall's store does not answer, a page says so in one line (`store_silent`),
never a traceback, and draws itself again once the store answers; the presenter's counts say they are unknown.
"""
from __future__ import annotations

import contextlib
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Iterator

import streamlit as st

from viz_app.app import show, state
from viz_app.server import class_store, singletons
from viz_app.server.access import Role, Visitor
from viz_app.server.class_room import FOLLOW_PARAM, HEARTBEAT_S, Answer, ClassRoom, ClassStep, class_links
from viz_app.lessons import class_moves_listener, session
from viz_app.lessons.format import PAGES
from viz_app.app.models import ModelKey
from viz_app.app.text import address, escape_markdown, joined, markdown, without_images

POLL_S = 0.5  # a following student's page asks the room this often (half of it, on average, is the wait)
STREAMED_POLL_S = 10.0  # and where it hears the class's moves, this often, in case its stream was cut
COUNTS_S = 2.0  # the presenter's count of followers and answers is redrawn this often
FOLLOWING = "_class_following"  # True while the student follows the class
SEEN = "_class_seen"  # the room's version this browser session last took
SESSION = "_class_session"  # this browser session's name for the room (heartbeats, answers)
SHOWN = "_class_step_shown"  # the texts of the step this student was last moved to
ANSWERED = "_class_answered"  # (the room's version, what became of this student's last click)
HEARD = "_class_heard"  # (when this browser session last told the room it is there, whether it followed then)
DRAWN = "_class_panel_drawn"  # what the student's panel was drawn from (`_what_is_drawn`)
SILENT_CHECK_S = 2.0  # a page that said the store does not answer asks it again this often
PRESS_NOT_SENT = "The class's store does not answer: your press was not sent."
STORE_SILENT = "The class's store does not answer for a moment: this page comes back by itself when it does."
UNKNOWN = "unknown (the class's store does not answer)"
TAKING = "_class_taking"  # the run that follows draws the class's new step for this student
DRAWING_AT_ONCE = 2  # a process draws the class's new step for this many of its students at a time
DRAWING_WAIT_S = 10.0  # and a student's page waits at most this long for its turn
_DRAWING = threading.BoundedSemaphore(DRAWING_AT_ONCE)


ClassRead = tuple[int, ClassStep | None]  # the class's version and its step at that version (ClassRoom.now)


@dataclass(frozen=True)
class StepTexts:
    """What the panel shows of the class's step."""

    lesson: str
    number: int
    total: int
    title: str
    text: str
    question: str
    choices: tuple[str, ...]
    version: int


def join_if_asked() -> None:
    """The students' link (?follow=1) starts a session following the class; the panel keeps it in the address bar
    while the student follows (_keep_in_url), so a page that reconnects to a new session follows again."""
    if FOLLOW_PARAM in st.query_params and SESSION not in st.session_state:
        st.session_state[FOLLOWING] = True
    st.session_state.setdefault(SESSION, uuid.uuid4().hex)


def follows_now() -> bool:
    """Whether this browser session follows the class now (a student of class mode who has not chosen to explore)."""
    return bool(st.session_state.get(FOLLOWING))


def follow_if_moved(visitor: Visitor) -> ClassRead:
    """A following student whose class moved since: take the class's step (switches page; does not return). Else
    the class as read (`student_panel` draws from it: a student's page reads the class once a run)."""
    read = visitor.room.now()
    if _moved(read[1]):
        _take(read[1], visitor)
    return read


def _moved(current: ClassStep | None) -> bool:
    """Whether this student follows and the class has moved to a step this browser session has not taken."""
    return follows_now() and current is not None and st.session_state.get(SEEN) != current.version


def resume_presenting(visitor: Visitor) -> None:
    """The presenter's session shows the class's step: where it has not shown the class's latest change yet, it
    takes it (or the overview, where the class ended), before any widget is drawn."""
    current = visitor.room.current
    version = visitor.room.version if current is None else current.version
    if st.session_state.get(session.PRESENTED) == version:
        return
    if current is None:
        st.session_state[session.STEP] = None
        st.session_state[session.PRESENTED] = version
    else:
        session.resume(current, visitor)


def store_silent(visitor: Visitor) -> None:
    """In place of a page that needed the lecture hall's store while it does not answer: one line (the presenter's
    says the press was not sent), never a traceback or a path; the page is drawn again once the store answers."""
    if visitor.role is Role.PRESENTER:
        st.session_state.pop(session.NOT_SENT, None)
        show.warning("{}", PRESS_NOT_SENT, icon=":material/cloud_off:")
    else:
        show.info("{}", STORE_SILENT, icon=":material/hourglass_top:")

    @st.fragment(run_every=SILENT_CHECK_S)
    def ask_again() -> None:
        client = singletons.store()
        if client is not None and class_store.answering(client):
            st.rerun()

    ask_again()


def student_panel(visitor: Visitor, read: ClassRead) -> None:
    """Above a student's page in class mode: what the class is on, and follow / explore, drawn by the page's run.
    Beside it a fragment that draws nothing reruns every POLL_S seconds to hear from the room: it takes the class's
    step when the class moved (a new page), and reruns the page when what the panel shows changed (the class
    started or ended, or moved while the student explores). A poll that finds nothing new draws nothing: a hall of
    students polls twice a second each, so the poll is most of what the server does between steps. Where the
    process streams the class's moves (a lecture hall's: viz_app/server/class_moves.py), the fragment is rerun the
    moment the class moves, and on its own only every STREAMED_POLL_S; the stream's process says the student is
    there. `read`: the class as this run read it (`follow_if_moved`)."""
    following = follows_now()
    hears = class_moves_listener.hears_moves()
    reads = [read]  # the page's read of the class, for the fragment's run within this run
    current = read[1]
    with st.container(key="class_panel", border=True):
        _draw(current, following, visitor)
    st.session_state[DRAWN] = _what_is_drawn(current, following)

    @st.fragment(run_every=STREAMED_POLL_S if hears else POLL_S)
    def listen() -> None:
        following = follows_now()
        _keep_in_url(following)
        _heartbeat(visitor, following)
        # within the page's run, what the page read (a student's every page run reads the class once, not twice);
        # the fragment's own runs read afresh
        version, current = reads.pop() if reads else visitor.room.now()
        if _moved(current):  # a new page when the class moved while the student follows (does not return)
            with turn_if(True, _DRAWING, DRAWING_WAIT_S):  # the step worked out a few students at a time
                _take(current, visitor)
        if _what_is_drawn(current, following) != st.session_state.get(DRAWN):
            st.rerun()
        if hears:  # told at once of the next move, and the student said to be there while the stream is open
            class_moves_listener.listen(version, st.session_state[SESSION], following)

    listen()


def _what_is_drawn(current: ClassStep | None, following: bool) -> tuple:
    """What the panel's drawing depends on besides the student's clicks (which rerun the page themselves)."""
    shown: StepTexts | None = st.session_state.get(SHOWN)
    return (None if current is None else current.version, following, None if shown is None else shown.version)


def _heartbeat(visitor: Visitor, following: bool) -> None:
    """Tell the room this student is there every HEARTBEAT_S, and at once when they start or stop following: a
    quarter of the polls, so that a hall of students asks the store less while the step is what it waits for."""
    heard = st.session_state.get(HEARD)
    now = time.monotonic()
    if heard is None or heard[1] != following or now - heard[0] >= HEARTBEAT_S:
        visitor.room.heartbeat(st.session_state[SESSION], following)
        st.session_state[HEARD] = (now, following)


def drawing_turn() -> contextlib.AbstractContextManager[None]:
    """Around the drawing of a page (viz_app/Home.py): a run that shows a student the class's new step waits for one
    of DRAWING_AT_ONCE turns of this process (at most DRAWING_WAIT_S, then draws anyway), as the listening fragment
    did for working the step out (`listen`). When the class moves, all of a process's following students start at
    the same moment; side by side, they share the process's one Python thread in slices and every one of them
    finishes near the end, later than needed, and the slicing itself costs CPU: a few at a time, the first pages
    reach their students within a few tenths of a second and the last sooner than before (docs/benchmarks.md, "A
    lecture hall"). Any other run draws at once."""
    return turn_if(bool(st.session_state.pop(TAKING, False)), _DRAWING, DRAWING_WAIT_S)


@contextlib.contextmanager
def turn_if(waits: bool, turns: threading.Semaphore, wait_s: float) -> Iterator[None]:
    """The block, run in one of `turns` when `waits` (waiting at most `wait_s`, then run anyway), else at once."""
    turn = waits and turns.acquire(timeout=wait_s)
    try:
        yield
    finally:
        if turn:
            turns.release()


def _take(current: ClassStep, visitor: Visitor) -> None:
    """Move this student to the class's step: the class's model (if offered), the step's settings, its page."""
    resolution = visitor.resolve(current.model or "")
    state.choose(resolution)
    choice = resolution.choice
    step = session.take_step(current.lesson, current.step, ModelKey.of(choice.source, choice.folder), visitor)
    st.session_state[SEEN] = current.version  # taken, or refused at this student's budget (said once, not every poll)
    if step is None:
        return
    st.session_state[SHOWN] = StepTexts(current.lesson.title, step.number, step.total, step.title, step.text,
                                        step.question, step.choices, current.version)
    st.session_state[TAKING] = True  # the step's page waits for its drawing turn (drawing_turn)
    st.switch_page(f"../pages/{PAGES[step.page][0]}", query_params={**step.query(choice.source), FOLLOW_PARAM: "1"})


def _keep_in_url(following: bool) -> None:
    """The address bar says ?follow=1 while this student follows, and not while they explore: a page that
    reconnects to a new session (its app process died and the proxy sent it to another; a reload) then follows
    again by itself (join_if_asked), and one that explores stays exploring."""
    if following and st.query_params.get(FOLLOW_PARAM) != "1":
        st.query_params[FOLLOW_PARAM] = "1"
    elif not following and FOLLOW_PARAM in st.query_params:
        del st.query_params[FOLLOW_PARAM]


def _draw(current: ClassStep | None, following: bool, visitor: Visitor) -> None:
    shown: StepTexts | None = st.session_state.get(SHOWN)
    if current is None:
        show.caption("{}", "Class mode: your screen follows the teacher's lesson once it starts." if following else
                     "Class mode: you explore on your own.")
        if not following:
            st.button("Follow the class", key="class_follow", on_click=_set_following, args=(True,))
        return
    if not following:
        columns = st.columns([3, 1])  # "Follow the class again" whole at 1366 px
        show.markdown("Exploring on your own; the class is on step {} of {} of *{}*.", current.step + 1,
                      len(current.lesson.steps), current.lesson.title, on=columns[0])
        columns[1].button("Follow the class again", key="class_follow", icon=":material/group:",
                          on_click=_set_following, args=(True,), width="stretch")
        return
    if shown is None or shown.version != current.version:
        return  # the step is being taken
    columns = st.columns([4, 1])
    show.markdown("**Following the class** · {} · step {} of {}: **{}**", shown.lesson, shown.number, shown.total,
                  shown.title, on=columns[0])
    columns[1].button("Explore on my own", key="class_explore", icon=":material/explore:",
                      on_click=_set_following, args=(False,), width="stretch")
    with st.expander("What to look at", expanded=True):
        show.markdown("{}", without_images(shown.text))
        if shown.question:
            show.markdown("**Question.** {}", without_images(shown.question))
        if shown.choices:
            voter = visitor.voter(st.session_state[SESSION])
            mine = visitor.room.answer_of(voter)
            buttons = st.columns(len(shown.choices))
            for number, (column, choice) in enumerate(zip(buttons, shown.choices)):
                column.button(escape_markdown(choice), key=f"class_choice_{number}",  # a label is read as Markdown
                              type="primary" if choice == mine else "secondary", on_click=_answer,
                              args=(visitor.room, voter, choice, current.version), width="stretch")
            if st.session_state.get(ANSWERED) == (current.version, Answer.FULL):
                st.warning("Your answer was not counted: the class's table of answers is full. Tell your teacher.")
            elif st.session_state.get(ANSWERED) == (current.version, Answer.NOT_SENT):
                st.info("Your answer was not sent: the class's store does not answer. Click again in a moment.")


def _answer(room: ClassRoom, voter: str, choice: str, version: int) -> None:
    st.session_state[ANSWERED] = (version, room.answer(voter, choice, version))


def _set_following(following: bool) -> None:
    st.session_state[FOLLOWING] = following
    if following:
        st.session_state.pop(SEEN, None)  # back to the class's step, even one already seen


def presenter_box(visitor: Visitor) -> None:
    """On the Lessons page, for the presenter: the two links, and (redrawn every COUNTS_S) who follows and the
    answers to the step showing; a press the class's store refused, in one line."""
    links = class_links(session.students_base_url(), visitor.presenter_key)
    with st.container(border=True, key="class_presenter"):
        if st.session_state.pop(session.NOT_SENT, False):
            show.warning("{}", PRESS_NOT_SENT, icon=":material/cloud_off:")
        show.markdown("**Class mode.** Students open **{}**", address(links.students))
        with st.expander("Your presenter link (keep it off the board)"):
            st.code(links.presenter, language=None)
        _counts(visitor)


@st.fragment(run_every=COUNTS_S)
def _counts(visitor: Visitor) -> None:
    room = visitor.room
    followers = room.followers()  # None, as the answers: unknown (a lecture hall's store that does not answer)
    if followers is None:
        show.markdown(":material/group: Students following: {}", UNKNOWN)
    else:
        show.markdown(":material/group: **{}** {}", followers, 'student follows' if followers == 1 else 'students follow')
    current = room.current
    if current is not None and current.lesson.steps[current.step].choices:
        answers = room.answers()
        choices = current.lesson.steps[current.step].choices
        if answers is None:
            show.markdown("Answers: {}", UNKNOWN)
        else:
            show.markdown("{}", joined(" · ", (markdown("{}: **{}**", choice, answers.get(choice, 0)) for choice in choices)))
        st.caption("One answer per address: students behind one address (a school's proxy) count as one.")
        if room.refused():
            show.warning("The table of answers is full: {:,} later answer(s) were refused, not counted.",
                         room.refused())
