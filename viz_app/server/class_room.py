"""The class that follows the presenter, as the server keeps it. No Streamlit here: the cache layer makes one per
server process (`st.cache_resource`) and every session's thread shares it, so each method takes the lock.

The presenter (the session that knows the key) shows a lesson's step, moves to another, or ends the lesson; each
change bumps `version`. A following student's page asks for `current` twice a second (in a lecture hall, hears
when it changes: viz_app/server/class_moves.py) and, when its version changed, takes it (the lesson itself, so a
lesson the presenter loaded from a file reaches the students too). Every HEARTBEAT_S the page (in a lecture hall, its
stream's process) also says whether its student follows (`heartbeat`; viz_app/lessons/following.py):
`followers()` counts the students heard from within the last HEARTBEAT_WINDOW_S seconds. A step with a question collects one answer per student while it shows.

A student, as far as the server can tell, is an address: the app names a voter by the address its browser
connects from (viz_app/lessons/following.py), so four tabs of one laptop give one answer, the last one clicked.
Students behind one address (a school's NAT or proxy between them and the server) count as one; docs/teaching.md
says so. At most MAX_SESSIONS voters per step: the answer of one more is refused (Answer.FULL), and the presenter's
box says the table is full, never dropping an answer silently.
"""
from __future__ import annotations

import enum
import secrets
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

HEARTBEAT_S = 2.0  # a student's page, or its stream, says the student is there this often
HEARTBEAT_WINDOW_S = 5.0  # a student not heard from for this long no longer counts (their tab was closed)
MAX_SESSIONS = 1000  # students tracked at most; the ones not heard from longest are forgotten first
KEY_BYTES = 16  # a random key: 22 URL-safe characters


class Answer(enum.Enum):
    """What became of a student's answer."""

    COUNTED = "counted"  # theirs now (a new click replaces their earlier one)
    MOVED_ON = "moved on"  # the class left that step before the click arrived: dropped
    FULL = "full"  # MAX_SESSIONS others answered first: refused, and the presenter's box says so
    NOT_SENT = "not sent"  # a lecture hall's store did not answer (viz_app/server/class_store.py): click again


class NotPresenterError(PermissionError):
    """Moving the class needs the presenter's key."""


@dataclass(frozen=True)
class ClassStep:
    """What the class is on: a lesson (viz_app.lessons.format.Lesson), one of its steps, the presenter's model, and
    the change number."""

    lesson: Any
    step: int  # from 0
    version: int
    model: str | None = None  # the presenter's model (what a link's model= carries); None: each keeps their own


class ClassRoom:
    def __init__(self, key: str | None = None, clock: Callable[[], float] = time.monotonic):
        self.key = key or secrets.token_urlsafe(KEY_BYTES)  # the teacher's, or new at each start of the server
        self._clock = clock
        self._lock = threading.Lock()
        self._current: ClassStep | None = None
        self._version = 0
        self._heard: dict[str, tuple[float, bool]] = {}  # session -> (when last heard, follows)
        self._answers: dict[str, str] = {}  # voter -> its answer to the step showing
        self._refused = 0  # answers refused because the table was full, for the step showing

    def is_presenter_key(self, key: str | None) -> bool:
        return isinstance(key, str) and secrets.compare_digest(key.encode(), self.key.encode())

    @property
    def version(self) -> int:
        return self._version  # one int read: atomic

    @property
    def current(self) -> ClassStep | None:
        return self._current

    def now(self) -> tuple[int, ClassStep | None]:
        """The class's version and its step at that version, a matching pair."""
        with self._lock:
            return self._version, self._current

    def show(self, key: str | None, lesson: Any, step: int, model: str | None = None) -> ClassStep:
        """The presenter starts a lesson or moves to one of its steps. Raises NotPresenterError without the key."""
        self._check(key)
        if not 0 <= step < len(lesson.steps):
            raise IndexError(f"the lesson has {len(lesson.steps)} steps, not a step {step + 1}")
        with self._lock:
            self._version += 1
            self._current = ClassStep(lesson, step, self._version, model)
            self._answers, self._refused = {}, 0
            return self._current

    def end(self, key: str | None) -> int:
        """The presenter leaves the lesson: students stay where they are, free to explore. The new version."""
        self._check(key)
        with self._lock:
            self._version += 1
            self._current, self._answers, self._refused = None, {}, 0
            return self._version

    def heartbeat(self, session: str, following: bool) -> None:
        with self._lock:
            self._heard.pop(session, None)  # re-inserted last: the dict stays ordered by when each was heard
            self._heard[session] = (self._clock(), following)
            while len(self._heard) > MAX_SESSIONS:
                del self._heard[next(iter(self._heard))]

    def followers(self) -> int:
        """Students heard from recently who follow the class."""
        since = self._clock() - HEARTBEAT_WINDOW_S
        with self._lock:
            return sum(1 for when, following in self._heard.values() if following and when >= since)

    def answer(self, voter: str, choice: str, version: int) -> Answer:
        """A student's answer to the step showing at `version`, one per voter (a new click replaces theirs)."""
        with self._lock:
            if self._current is None or version != self._version:
                return Answer.MOVED_ON
            if voter not in self._answers and len(self._answers) >= MAX_SESSIONS:
                self._refused += 1
                return Answer.FULL
            self._answers[voter] = choice
            return Answer.COUNTED

    def refused(self) -> int:
        """Answers refused for the step showing because MAX_SESSIONS voters had answered."""
        return self._refused

    def answers(self) -> dict[str, int]:
        """How many students gave each answer to the step showing."""
        with self._lock:
            return dict(Counter(self._answers.values()))

    def answer_of(self, voter: str) -> str | None:
        with self._lock:
            return self._answers.get(voter)

    def _check(self, key: str | None) -> None:
        if not self.is_presenter_key(key):
            raise NotPresenterError("only the presenter's link can move the class")


PRESENTER_PARAM = "key"  # the presenter's link: /lessons?key=SECRET
FOLLOW_PARAM = "follow"  # the students' link: /lessons?follow=1


@dataclass(frozen=True)
class ClassLinks:
    presenter: str
    students: str


def class_links(base_url: str, key: str) -> ClassLinks:
    """The two links of a class, for the app's address as students reach it (http://HOST:PORT)."""
    base = base_url.rstrip("/")
    return ClassLinks(f"{base}/lessons?{PRESENTER_PARAM}={key}", f"{base}/lessons?{FOLLOW_PARAM}=1")


def network_host() -> str:
    """This machine's address on its network, as students' laptops reach it (no packet is sent), else localhost."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))  # a UDP "connect" only picks the interface a packet would leave by
            return probe.getsockname()[0]
        except OSError:
            return "localhost"
