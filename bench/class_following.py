"""A class following the presenter, measured on the server alone (`python bench/class_server.py --follow`).

The server runs in class mode with a known presenter key. One session opens the presenter's link
(/lessons?key=KEY), N student sessions open the students' link (/lessons?follow=1); all speak Streamlit's
websocket protocol as the browser does (bench/streamlit_session.py), and each student reruns the page's polling
fragment at the interval the server asks for, as the browser's timer does; where the page carries the listener for
the class's moves (a lecture hall's process: viz_app/server/class_moves.py), the student also keeps the stream
open as the page's script does (viz_app/lessons/class_moves.js) and reruns the fragment with the listener's event
when a version it has not drawn arrives. The presenter presses "Start the
lesson", then "Next" until the lesson has shown STEPS steps, waiting for the whole class between presses.
Measured per student and step: the time from the presenter's press (the moment its message is sent) until the
student's page has shown the new step ("step n of N" on the page) and until that run of the page has finished.
The server's CPU (user + system, /proc) is read before and after the steps, and over a quiet stretch in which the
students only poll: "CPU per student per step" is the steps' CPU less the polling that would have happened anyway,
divided by students x steps. The load generator's own CPU over the steps (this process's) is returned beside it.
"""
from __future__ import annotations

import contextlib
import http.client
import queue
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from bench import classroom
from bench.streamlit_session import Session

KEY = "bench-presenter-key"
STEP_TEXT = re.compile(r"step (\d+) of (\d+)")  # what the class panel says above a following student's page
LESSON_BUTTONS = ("Start the lesson", "Next")
LISTENER = "bert_inside_class_moves"  # the component a lecture hall's page hears the class's moves with


@dataclass
class Follower:
    number: int
    shown: dict[int, float] = field(default_factory=dict)  # step -> monotonic time its text arrived
    finished: dict[int, float] = field(default_factory=dict)  # step -> monotonic time that run of the page ended
    asked: dict[int, float] = field(default_factory=dict)  # step -> monotonic time the poll that brought it was sent
    problem: str | None = None


def run_following(url: str, count: int, steps: int, timeout_s: float, server_pid: int | list[int],
                  quiet_s: float = 10) -> dict:
    """Students follow the presenter through `steps` steps. Returns the presses' times, the followers and the
    server's CPU figures (`server_pid`: the server's process, or every process of a lecture hall: their sum)."""
    pids = server_pid if isinstance(server_pid, list) else [server_pid]

    def cpu_seconds() -> float:
        return sum(classroom.cpu_seconds(pid) for pid in pids)

    followers = [Follower(n) for n in range(count)]
    stop = threading.Event()
    joined = threading.Barrier(count + 1)
    threads = [threading.Thread(target=_follow, args=(url, f, stop, joined, timeout_s), daemon=True) for f in followers]
    for thread in threads:
        thread.start()
    presenter = Session(url, timeout_s)
    presenter.page_name, presenter.query_string = "lessons", urlencode({"key": KEY})
    page = presenter.rerun()
    try:
        joined.wait(timeout=timeout_s)
    except threading.BrokenBarrierError:
        pass
    cpu_quiet = cpu_seconds()
    time.sleep(quiet_s)  # the students only poll
    polling_cpu_s = cpu_seconds() - cpu_quiet
    presses: list[float] = []
    cpu_start, started, generator_start = cpu_seconds(), time.monotonic(), time.process_time()
    for step in range(1, steps + 1):
        label = LESSON_BUTTONS[0] if step == 1 else LESSON_BUTTONS[1]
        if label not in page.buttons:
            raise RuntimeError(f"the presenter's page has no {label!r} button; it has {sorted(page.buttons)}")
        presses.append(time.monotonic())
        page = presenter.rerun(press=page.buttons[label])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not all(step in f.finished or f.problem for f in followers):
            time.sleep(0.05)
        time.sleep(0.5)  # the class looks at the step
    steps_wall_s = time.monotonic() - started
    steps_cpu_s = cpu_seconds() - cpu_start
    generator_cpu_s = time.process_time() - generator_start
    stop.set()
    for thread in threads:
        thread.join(timeout=timeout_s)
    presenter.close()
    for follower in followers:
        missing = [step for step in range(1, steps + 1) if step not in follower.finished]
        if missing and follower.problem is None:
            follower.problem = f"never showed step(s) {missing}"
    polling_per_s = polling_cpu_s / quiet_s
    return {"presses": presses, "followers": followers, "polling_cpu_s_per_s": polling_per_s,
            "steps_cpu_s": steps_cpu_s, "steps_wall_s": steps_wall_s, "generator_cpu_s": generator_cpu_s,
            "cpu_per_student_step_s": max(steps_cpu_s - polling_per_s * steps_wall_s, 0.0) / (count * steps)}


def _follow(url: str, follower: Follower, stop: threading.Event, joined: threading.Barrier, timeout_s: float) -> None:
    """One student: open the students' link, then rerun the polling fragment at its interval until told to stop."""
    try:
        session = Session(url, timeout_s)
        session.page_name, session.query_string = "lessons", urlencode({"follow": "1"})
        session.rerun()
        drawn = time.monotonic()  # the browser's timer starts with the page, not when the whole class has joined
        if not session.fragments:
            raise RuntimeError("the students' page has no polling fragment")
    except Exception as error:  # noqa: BLE001 - reported per student, the others go on
        follower.problem = f"{type(error).__name__}: {error}"[:300]
        joined.abort()
        return
    try:
        joined.wait(timeout=timeout_s)
    except threading.BrokenBarrierError:
        pass

    def on_markdown(text: str) -> None:
        if match := STEP_TEXT.search(text):
            follower.shown.setdefault(int(match.group(1)), time.monotonic())

    try:
        if LISTENER in session.components:
            _hear_moves(url, session, follower, stop, on_markdown, drawn)
        else:
            _poll(session, follower, stop, on_markdown, drawn)
    except Exception as error:  # noqa: BLE001
        follower.problem = f"{type(error).__name__}: {error}"[:300]
    finally:
        session.close()


def _poll(session: Session, follower: Follower, stop: threading.Event, on_markdown, drawn: float) -> None:
    """Rerun the page's newest timer fragment at its interval from when the page was drawn, as the browser's timer
    does."""
    tick = drawn
    while not stop.is_set():
        fragment, interval = list(session.fragments.items())[-1]
        stop.wait(max(0.0, interval - (time.monotonic() - tick)))
        if stop.is_set():
            break
        tick = time.monotonic()
        _rerun(session, follower, on_markdown, fragment=fragment)


def _hear_moves(url: str, session: Session, follower: Follower, stop: threading.Event, on_markdown,
                drawn: float) -> None:
    """As the browser does with the page's listener (viz_app/lessons/class_moves.js): a stream of the class's versions
    open beside the page (saying the student is there), and the fragment the listener sits in rerun with its "moved"
    event when a version the page has not drawn arrives, or by the fragment's timer (from when the page was drawn, then
    from each run); the stream opened again when the page draws another version."""
    heard: queue.Queue[tuple[int, int]] = queue.Queue()
    stream, opened_for = None, None
    tick = drawn
    try:
        while not stop.is_set():
            component_id, data = session.components[LISTENER]
            if opened_for != (component_id, data["seen"]):
                if stream is not None:
                    stream.close()
                stream = MovesStream(url + data["url"], data["seen"], heard, data.get("heard", ""), session.cookies)
                opened_for = (component_id, data["seen"])
            fragment, interval = list(session.fragments.items())[-1]
            try:
                while True:
                    opened, version = heard.get(timeout=max(0.0, interval - (time.monotonic() - tick)))
                    if opened == id(stream):
                        break  # a version from a stream closed since is not heard (the browser closed it)
            except queue.Empty:
                tick = time.monotonic()
                _rerun(session, follower, on_markdown, fragment=fragment)
            else:
                tick = time.monotonic()  # a run of the fragment starts its timer again, as the browser's
                _rerun(session, follower, on_markdown, fragment=fragment, trigger=(component_id, "moved", version))
    finally:
        if stream is not None:
            stream.close()


def _rerun(session: Session, follower: Follower, on_markdown, **how) -> None:
    tick = time.monotonic()
    before = set(follower.shown)
    session.rerun(on_markdown=on_markdown, **how)
    for step in set(follower.shown) - before:
        follower.finished[step] = time.monotonic()
        follower.asked[step] = tick


class MovesStream:
    """One EventSource: reads `data:` lines in a thread of its own and puts (its id, version) in `heard`;
    `presence`: the page's signed name, which its process tells the class while the stream is open; `cookies`: the
    page's (its process, behind a lecture hall's proxy)."""

    def __init__(self, address: str, seen: int, heard: queue.Queue, presence: str = "", cookies: str = ""):
        parts = urlsplit(address)
        self._connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=None)
        query = urlencode({"seen": seen, **({"heard": presence} if presence else {})})
        headers = {"Accept": "text/event-stream", **({"Cookie": cookies} if cookies else {})}
        self._connection.request("GET", f"{parts.path}?{query}", headers=headers)
        self._answer = self._connection.getresponse()
        if self._answer.status != 200:
            raise RuntimeError(f"the class's moves answered {self._answer.status}")
        threading.Thread(target=self._read, args=(heard,), daemon=True).start()

    def _read(self, heard: queue.Queue) -> None:
        try:
            for line in self._answer:
                if line.startswith(b"data:"):
                    heard.put((id(self), int(line[5:].strip())))
        except (OSError, ValueError, AttributeError, http.client.HTTPException):
            pass  # closed from the page's thread (http.client then drops its file: AttributeError)

    def close(self) -> None:
        sock = self._connection.sock  # None once http.client has closed it (the server ended the stream)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._connection.close()


def delays(result: dict, which: str = "finished") -> list[float]:
    """Every (student, step) delay from the presenter's press: `which` is "shown" or "finished"."""
    presses = result["presses"]
    return [getattr(f, which)[step] - presses[step - 1]
            for f in result["followers"] for step in range(1, len(presses) + 1) if step in getattr(f, which)]
