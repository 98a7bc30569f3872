"""A whole class at once, measured on the server alone: N students, no browser.

    python -m bench.class_server                                   # 30 students, built-in model
    python -m bench.class_server --model out/random-bert-base      # BERT-base shape (bench/make_random_bert.py)
    python -m bench.class_server --students 5 --json out/class_server.json
    python -m bench.class_server --students 1 --rounds 40 --profile out/one_student.txt   # where the time goes
    python -m bench.class_server --summarise-profile out/one_student.txt                  # that profile's shares again

`--profile` samples the server with py-spy (pip install py-spy) during the key presses and prints the share of
each part of a rerun (the forward pass, the chart, Streamlit's runner, the websocket, ...). Samples of a thread
that waits for the GIL count where it waits, so profile one student (--students 1 --rounds N) for a clean split.

Starts `streamlit run viz_app/Home.py` on 127.0.0.1 (a free port, OMP_NUM_THREADS=1 unless set) and lets N
students (one thread each, each its own Streamlit session) speak Streamlit's own websocket protocol to it, as the
browser does: a `rerun_script` BackMsg opens the prediction page; ForwardMsgs come back until `script_finished`.
When every student has the page, all of them at once type a sentence of their own with one [MASK] into the
Sentence box (the widget state the browser sends on Ctrl+Enter). Measured per student: the time from that key press
until the server has sent the predictions chart for *that* sentence ("to predictions") and until the run has
finished ("to the end of the run"). The chart's candidates and probabilities are checked against
`bert.predict.predict_masks` run directly on the same model (bench/classroom.py's check). The server's CPU time
(user + system of the streamlit process, /proc) is read before and after each phase: "CPU per student's key
press" is the key press phase's CPU divided by the number of key presses (students x rounds).

Why the websocket protocol and not `streamlit.testing.v1.AppTest` in threads: AppTest runs the page script in
the caller's own process with no server: no websocket, no session manager, no ForwardMsg queue, no message
serialisation or hashing, and the load generator's own work would land in the measured process. Here the server
is the real one, alone in its process, so its CPU time is the server's and nothing else's; the client does what
a browser does on the wire (it keeps the messages the server marks cacheable and reports their hashes, as the
browser's message cache does) and renders nothing. bench/classroom.py measures the same class with Chromium.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from bench import classroom
from viz_app.local_server import ROOT, serve

SENTENCE_LABEL = "Sentence"


@dataclass
class Student:
    number: int
    sentence: str
    open_seconds: float | None = None  # connect and first page run
    seconds: float | None = None  # key press to the predictions chart for this sentence
    run_seconds: float | None = None  # key press to the end of the run
    messages: int = 0  # ForwardMsgs after the key press
    shown: list[tuple[str, float]] | None = None  # the chart's candidates, best first
    problem: str | None = None  # what went wrong; None when the page showed the right predictions


@dataclass
class Page:
    """What one run of the page sent: elements by kind, the session's page and query string."""

    charts: list[dict] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)
    widgets: dict[str, str] = field(default_factory=dict)  # text input/area label -> widget id
    exceptions: list[str] = field(default_factory=list)


class Session:
    """One student's websocket session with the server: send a rerun, read ForwardMsgs until the run ends."""

    def __init__(self, url: str, timeout_s: float):
        from websockets.sync.client import connect

        ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.connection = contextlib.ExitStack()
        self.socket = self.connection.enter_context(
            connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout_s)
        )
        self.timeout_s = timeout_s
        self.cache: dict[str, bytes] = {}  # hash -> message the server marked cacheable (the browser keeps them)
        self.page_hash = ""
        self.query_string = ""

    def close(self) -> None:
        self.connection.close()

    def rerun(self, widget_states: dict[str, str] | None = None, on_chart=None) -> Page:
        """Send a rerun (the query string and page as the browser would, plus `widget_states` {id: text}) and read
        until script_finished. `on_chart(spec)` is called as each plotly chart arrives."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        back = BackMsg()
        state = back.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_hash
        state.cached_message_hashes.extend(self.cache)
        for widget_id, text in (widget_states or {}).items():
            widget = state.widget_states.widgets.add()
            widget.id, widget.string_value = widget_id, text
        self.socket.send(back.SerializeToString())
        page = Page()
        deadline = time.monotonic() + self.timeout_s
        while True:
            raw = self.socket.recv(timeout=max(0.1, deadline - time.monotonic()))
            message = ForwardMsg()
            message.ParseFromString(raw)
            if message.HasField("ref_hash"):
                message = ForwardMsg.FromString(self.cache[message.ref_hash])
            elif message.metadata.cacheable:
                self.cache[message.hash] = raw
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = message.new_session.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = message.page_info_changed.query_string
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                _read_element(message.delta.new_element, page, on_chart)
            elif kind == "script_finished":
                if message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return page


def _read_element(element, page: Page, on_chart) -> None:
    kind = element.WhichOneof("type")
    if kind == "plotly_chart":
        spec = json.loads(element.plotly_chart.spec)
        page.charts.append(spec)
        if on_chart:
            on_chart(spec)
    elif kind == "markdown":
        page.markdown.append(element.markdown.body)
    elif kind in ("text_area", "text_input"):
        widget = getattr(element, kind)
        page.widgets[widget.label] = widget.id
    elif kind == "exception":
        page.exceptions.append(f"{element.exception.type}: {element.exception.message}")


def chart_candidates(spec: dict) -> list[tuple[str, float]]:
    """The prediction chart's bars as [(token, probability)], best first (labels are "rank. token")."""
    bars = []
    for trace in spec.get("data", []):
        for label, x in zip(trace.get("y", []), _values(trace.get("x", []))):
            rank, token = label.split(". ", 1)
            bars.append((int(rank), token, float(x)))
    return [(token, p) for _, token, p in sorted(bars)] if bars else []


def _values(value):
    """A plotly JSON array: a list, or plotly's typed array {"dtype", "bdata" (base64)}."""
    import base64

    import numpy as np

    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).tolist()
    return list(value)


def _is_prediction_chart(spec: dict) -> bool:
    """Whether a chart is a [MASK]'s candidates (after the key press, only the new sentence's are sent)."""
    return "[MASK] #1" in spec.get("layout", {}).get("title", {}).get("text", "")


def run_class(url: str, model: str, presses: list[list[Student]], timeout_s: float, server_pid: int,
              profile: Path | None = None) -> dict:
    """One session per student (`presses[i]`: student i's key presses, in order): every student opens the page,
    then all start typing at once, each their presses one after the other. Returns the server's CPU per phase.
    With `profile`, py-spy samples the server during the key press phase into that file (collapsed stacks)."""
    ready = threading.Barrier(len(presses) + 1)
    finished = threading.Barrier(len(presses) + 1)
    sessions: list[Session] = []

    def student_thread(own: list[Student]) -> None:
        try:
            started = time.monotonic()
            session = Session(url, timeout_s)
            sessions.append(session)
            session.query_string = urlencode({"model": model})
            opened = session.rerun()
            own[0].open_seconds = time.monotonic() - started
            box = opened.widgets.get(SENTENCE_LABEL)
            if box is None:
                raise RuntimeError(f"the page has no {SENTENCE_LABEL!r} box; it showed {opened.exceptions or opened.markdown[:3]}")
            ready.wait(timeout=timeout_s)
            for student in own:
                _press(session, box, student)
        except Exception as error:  # noqa: BLE001 - reported per student, the others go on
            for student in own:
                if student.shown is None and student.problem is None:
                    student.problem = f"{type(error).__name__}: {error}"[:300]
            ready.abort()  # no-op once every student has passed it
        finally:
            try:
                finished.wait(timeout=timeout_s * len(own))
            except threading.BrokenBarrierError:
                pass

    threads = [threading.Thread(target=student_thread, args=(own,), daemon=True) for own in presses]
    cpu_start = classroom.cpu_seconds(server_pid)
    for thread in threads:
        thread.start()
    with contextlib.ExitStack() as profiling:
        try:
            ready.wait(timeout=timeout_s)
        except threading.BrokenBarrierError:
            pass
        if profile:
            profiling.enter_context(_py_spy(server_pid, profile))
        cpu_pressed, pressed_at = classroom.cpu_seconds(server_pid), time.monotonic()
        try:
            finished.wait(timeout=timeout_s * max(len(own) for own in presses) * 2)
        except threading.BrokenBarrierError:
            pass
        cpu_end, wall = classroom.cpu_seconds(server_pid), time.monotonic() - pressed_at
    for thread in threads:
        thread.join(timeout=5)
    for session in sessions:
        session.close()
    return {"open_cpu_s": cpu_pressed - cpu_start, "press_cpu_s": cpu_end - cpu_pressed, "press_wall_s": wall}


def _press(session: Session, box: str, student: Student) -> None:
    """Type the student's sentence and press Ctrl+Enter; note the times and what the page showed."""
    start = time.monotonic()

    def on_chart(spec: dict) -> None:
        if student.seconds is None and _is_prediction_chart(spec):
            student.seconds = time.monotonic() - start

    page = session.rerun({box: student.sentence}, on_chart)
    student.run_seconds = time.monotonic() - start
    if page.exceptions:
        raise RuntimeError("the page raised " + "; ".join(page.exceptions))
    filled = next((m for m in page.markdown if "best guesses, filled in" in m), "")
    marker = student.sentence.split()[1]  # the sentence's number: no other sentence has it there
    if f"student {marker} " not in filled.lower():
        raise RuntimeError(f"the page did not show this sentence's predictions: {filled[:120]!r}")
    student.shown = chart_candidates(page.charts[0]) if page.charts else []


@contextlib.contextmanager
def _py_spy(pid: int, output: Path):
    """py-spy (pip install py-spy) sampling process `pid` into `output` (collapsed stacks) while the block runs."""
    output.parent.mkdir(parents=True, exist_ok=True)
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--rate", "1000", "--format", "raw", "--nonblocking",
                            "--output", str(output), "--threads"])
    time.sleep(1.0)  # let it attach
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(timeout=60)


# Where the server's time goes: the first category whose frame is on a sampled stack takes the sample.
PROFILE_CATEGORIES = (
    ("clean-up after each run, with its gc.collect (Streamlit's runner.postScriptGC)", ("ScriptRunner._on_script_finished",)),
    ("the model's forward pass and predictions (viz_app/forward.py)", ("record (viz_app/forward.py",)),
    ("building the prediction chart (viz_app/charts/prediction.py)", ("prediction_bars (",)),
    ("st.plotly_chart: figure to dict and JSON, element id", ("PlotlyMixin.plotly_chart (",)),
    ("the sidebar: model picker, sentence box (viz_app/sidebar.py)", ("render (viz_app/sidebar.py",)),
    ("the page's other elements: token chips, slider, text (pages/1_prediction.py)", ("1_prediction.py",)),
    ("Home.py: navigation, URL state", ("Home.py",)),
    ("Streamlit's runner: message queue, hashing, session state", ("streamlit/runtime/",)),
    ("sending: websocket and event loop", ("starlette", "asyncio/", "uvicorn", "websockets/")),
)


# waiting, not working: the event loop's epoll, conditions, and the sleep of Streamlit's polling file watcher
IDLE_FRAMES = ("EpollSelector.select (", "Condition.wait (", "Event.wait (", "PollingPathWatcher._schedule.<locals>.task (")


def summarise_profile(path: Path) -> list[tuple[str, float]]:
    """py-spy's collapsed stacks ("frame;frame;... count" per line) -> [(category, share of the samples)].
    Stacks that end waiting (IDLE_FRAMES: py-spy's --nonblocking mode counts some of them) are left out."""
    counts = dict.fromkeys([name for name, _ in PROFILE_CATEGORIES] + ["other"], 0)
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or stack.rsplit(";", 1)[-1].startswith(IDLE_FRAMES):
            continue
        name = next((name for name, marks in PROFILE_CATEGORIES if any(m in stack for m in marks)), "other")
        counts[name] += int(count)
    total = sum(counts.values()) or 1
    return [(name, count / total) for name, count in counts.items()]


def measure(model: str, count: int, timeout_s: float, log: Path, profile: Path | None = None,
            rounds: int = 1) -> tuple[list[Student], dict]:
    """Start a server, run the class (each of `count` students presses `rounds` times, a new sentence each time),
    check every page; returns one record per key press and the server figures."""
    students = [Student(n, text) for n, text in enumerate(classroom.sentences(count * rounds))]
    client_cpu = _own_cpu()
    with serve(log) as (url, server):
        figures = run_class(url, model, [students[i::count] for i in range(count)], timeout_s, server.pid, profile)
        figures["peak_mb"] = classroom.peak_memory_mb(server.pid)
    figures["client_cpu_s"] = _own_cpu() - client_cpu
    classroom.check(students, model)
    return students, figures


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm", help="model source for the app: minilm (default) or a checkpoint folder")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1,
                        help="key presses per student, one after the other (e.g. --students 1 --rounds 40 --profile F: "
                        "one student's profile)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds each step of a student may take, at most")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--profile", type=Path, help="sample the server with py-spy during the key presses (collapsed stacks)")
    parser.add_argument("--summarise-profile", type=Path, metavar="STACKS",
                        help="only print the shares of a --profile file recorded earlier, and stop")
    parser.add_argument("--log", type=Path, default=ROOT / "out" / "class_server_streamlit.log", help="the server's output")
    args = parser.parse_args()
    if args.summarise_profile:
        for name, share in summarise_profile(args.summarise_profile):
            print(f"  {share:6.1%}  {name}")
        return 0
    model = str(Path(args.model).resolve()) if Path(args.model).is_dir() else args.model
    load_before = os.getloadavg()
    students, figures = measure(
        model, args.students, args.timeout, args.log, args.profile, args.rounds
    )
    load = os.getloadavg()
    for student in students:
        to_chart = f"{student.seconds:6.2f} s" if student.seconds is not None else "   -    "
        print(f"student {student.number % args.students:2d}, sentence {student.number:3d}: {to_chart}  {student.problem or 'ok'}")
    correct = [s for s in students if s.problem is None]
    times = [s.seconds for s in correct]
    runs = [s.run_seconds for s in correct]
    per_student = figures["press_cpu_s"] / len(students)
    print(f"\nmodel {args.model}; {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}; "
          f"load average before {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, after "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}. Server CPU: opening the page {figures['open_cpu_s']:.2f} s "
          f"for the class, key press to predictions {figures['press_cpu_s']:.2f} s; the load generator itself used "
          f"{figures['client_cpu_s']:.2f} s.\n")
    print("| model | students | key presses | all correct | server CPU per student's key press (s) | median to "
          "predictions (s) | 95th percentile (s) | slowest (s) | p95 to the end of the run (s) | server peak memory (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    if times:
        print(f"| {args.model} | {args.students} | {len(students)} | {len(correct)} of {len(students)} | {per_student:.3f} | "
              f"{statistics.median(times):.2f} | {classroom.percentile(times, 0.95):.2f} | {max(times):.2f} | "
              f"{classroom.percentile(runs, 0.95):.2f} | {figures['peak_mb']:.0f} |")
    if args.profile:
        print(f"\nWhere the server's time went during the key presses ({args.profile}, py-spy samples):")
        for name, share in summarise_profile(args.profile):
            print(f"  {share:6.1%}  {name}  (about {share * per_student * 1000:.0f} ms per student)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": args.model, "load_average": [load_before, load], **figures,
                                         "server_cpu_per_student_s": per_student,
                                         "students": [asdict(s) for s in students]}, indent=2))
    return 0 if len(correct) == len(students) else 1


if __name__ == "__main__":
    sys.exit(main())
