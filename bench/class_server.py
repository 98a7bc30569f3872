"""A whole class at once, measured on the server alone: N students, no browser.

    python -m bench.class_server                                   # 30 students, built-in model
    python -m bench.class_server --model out/random-bert-base      # BERT-base shape (bench/make_random_bert.py)
    python -m bench.class_server --students 5 --json out/class_server.json
    python -m bench.class_server --students 1 --rounds 40 --profile out/one_student.txt   # where the time goes
    python -m bench.class_server --summarise-profile out/one_student.txt                  # that profile's shares again
    python -m bench.class_server --follow --students 30 --steps 6   # a class following the presenter, in class mode
    python -m bench.class_server --follow --students 30 --hostile 3  # 27 follow, 3 ask for the heaviest they may
    python -m bench.class_server --saliency-link   # the attention page while a student runs the 511-token saliency link

`--hostile N` (with `--follow`): N of the students do not follow; each keeps asking for the heaviest computation
the default budget lets a student start (bench/hostile.py: occlusion on a 511-token paragraph, one word changed
after each), from before the first step until the last; then their tabs close and the report says how long the
server took to be idle again.

`--saliency-link`: in class mode, one session opens the attention page on three new sentences, alone (its quiet
time); then a student opens the 511-token saliency link (`--link-method`, default occlusion, the heaviest allowed;
the link's default, gradient x input, costs 6 passes) and the attention page is opened on three more sentences
meanwhile; then the saliency tab closes and the report says when the server was idle again; last, a student
changes the input while the 511-token occlusion runs, and the report says how soon the page ran for the new one.

`--follow`: bench/class_following.py's class instead of typing students: the presenter moves a lesson through
`--steps` steps, every student's page follows; the time from the presenter's press to each student's new step and
the server's CPU per student per step.

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
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlencode

from bench import class_following, classroom, hostile
from bench.streamlit_session import Session
from viz_app.server.local_server import ROOT, serve

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
    ("the model's forward pass and predictions (viz_app/app/forward.py)", ("record (viz_app/app/forward.py",)),
    ("building the prediction chart (viz_app/charts/prediction.py)", ("prediction_bars (",)),
    ("st.plotly_chart: figure to dict and JSON, element id", ("PlotlyMixin.plotly_chart (",)),
    ("the sidebar: model picker, sentence box (viz_app/app/sidebar.py)", ("render (viz_app/app/sidebar.py",)),
    ("the page's other elements: token chips, slider, text (pages/prediction.py)", ("pages/prediction.py",)),
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


def measure_following(count: int, steps: int, timeout_s: float, log: Path, hostile_count: int = 0) -> dict:
    """Start a class-mode server and let `count` students follow the presenter through `steps` steps; with
    `hostile_count`, that many of the count ask for heavy computations instead (bench/hostile.py)."""
    args = ("--class", "--presenter-key", class_following.KEY)
    with serve(log, app_args=args) as (url, server):
        heavy = hostile.Hostile(url, hostile_count) if hostile_count else None
        if heavy:
            time.sleep(10)  # their computations are running before the class starts
        result = class_following.run_following(url, count - hostile_count, steps, timeout_s, server.pid)
        if heavy:
            closed = heavy.close()
            result["hostile"] = {"requests": heavy.requests, "finished": heavy.finished, "refused": heavy.refused,
                                 "idle_after_close_s": hostile.idle_after(server.pid, closed)}
        result["peak_mb"] = classroom.peak_memory_mb(server.pid)
    return result


def measure_saliency_link(timeout_s: float, log: Path, method: str) -> dict:
    """The attention page's time alone and while a student's 511-token saliency link runs; then the idle time."""
    sentences = classroom.sentences(6)
    with serve(log, app_args=("--class",)) as (url, server):
        hostile.attention_seconds(url, ["A sentence that warms the [MASK] up."], timeout_s)
        quiet = hostile.attention_seconds(url, sentences[:3], timeout_s)
        heavy = hostile.Hostile(url, 1, method)
        time.sleep(10)  # the computation runs
        busy_cpu, busy_start = classroom.cpu_seconds(server.pid), time.monotonic()
        loaded = hostile.attention_seconds(url, sentences[3:], timeout_s)
        busy_cores = (classroom.cpu_seconds(server.pid) - busy_cpu) / (time.monotonic() - busy_start)
        closed = heavy.close()
        idle = hostile.idle_after(server.pid, closed)
        changed_s, changed_shown = hostile.changed_input_seconds(url, timeout_s)
    return {"quiet_s": quiet, "with_saliency_s": loaded, "server_cores_meanwhile": busy_cores,
            "idle_after_close_s": idle, "saliency_requests": heavy.requests, "saliency_refused": heavy.refused,
            "changed_input_s": changed_s, "changed_input_shown": changed_shown}


def report_saliency_link(args, result: dict, load_before, load) -> int:
    quiet, loaded = hostile.median(result["quiet_s"]), hostile.median(result["with_saliency_s"])
    idle = result["idle_after_close_s"]
    print(f"{os.cpu_count()} CPUs; load average before {load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, "
          f"after {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}. The link: {args.link_method} on 511 tokens "
          f"({'refused by the budget' if result['saliency_refused'][0] else 'started'}).\n")
    print("| attention page alone, median (s) | while the saliency link runs, median (s) | ratio (target ≤ 2) | "
          "server cores meanwhile | idle after the tab closed (s, target ≤ 30) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {quiet:.2f} ({', '.join(f'{s:.2f}' for s in result['quiet_s'])}) | {loaded:.2f} "
          f"({', '.join(f'{s:.2f}' for s in result['with_saliency_s'])}) | {loaded / quiet:.2f} | "
          f"{result['server_cores_meanwhile']:.2f} | {'not within 60 s' if idle is None else f'{idle:.1f}'} |")
    print(f"\nThe input changed while the 511-token computation ran: the page had run for the new sentence "
          f"{result['changed_input_s']:.1f} s later ({'with' if result['changed_input_shown'] else 'without'} its chart).")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average": [load_before, load], **result}, indent=2))
    return 0 if idle is not None and loaded <= 2 * quiet else 1


def report_following(args, result: dict, load_before, load) -> int:
    followers = result["followers"]
    for follower in followers:
        times = [f"{follower.finished[s] - result['presses'][s - 1]:5.2f}" if s in follower.finished else "  -  "
                 for s in range(1, args.steps + 1)]
        print(f"student {follower.number:2d}: " + " ".join(times) + f"  {follower.problem or 'ok'}")
    shown, finished = class_following.delays(result, "shown"), class_following.delays(result, "finished")
    correct = sum(f.problem is None for f in followers)
    print(f"\n{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}; load average before "
          f"{load_before[0]:.1f} {load_before[1]:.1f} {load_before[2]:.1f}, after {load[0]:.1f} {load[1]:.1f} "
          f"{load[2]:.1f}. Polling alone: {result['polling_cpu_s_per_s']:.3f} s of server CPU per second for the "
          f"class; the steps: {result['steps_cpu_s']:.2f} s of CPU over {result['steps_wall_s']:.1f} s.\n")
    heavy = result.get("hostile")
    if heavy:
        idle = heavy["idle_after_close_s"]
        print(f"Hostile students: {len(heavy['requests'])}, computations asked for {heavy['requests']}, ran to their "
              f"end {heavy['finished']}, refused by the budget {heavy['refused']}; the server was idle "
              f"{'not within 60 s' if idle is None else f'{idle:.1f} s'} after their tabs closed.\n")
    print("| students | steps | every step reached every student | server CPU per student per step (s) | p95 press to "
          "step shown (s) | p95 press to page finished (s) | slowest (s) | polling CPU per student (% of a core) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    if finished:
        print(f"| {len(followers)} | {args.steps} | {correct} of {len(followers)} | {result['cpu_per_student_step_s']:.3f} | "
              f"{classroom.percentile(shown, 0.95):.2f} | {classroom.percentile(finished, 0.95):.2f} | "
              f"{max(finished):.2f} | {100 * result['polling_cpu_s_per_s'] / args.students:.2f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load_average": [load_before, load], "presses": result["presses"],
                                         **{k: v for k, v in result.items() if k not in ("followers", "presses")},
                                         "followers": [asdict(f) for f in followers]}, indent=2))
    return 0 if correct == len(followers) else 1


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
    parser.add_argument("--follow", action="store_true", help="a class following the presenter (class mode) instead")
    parser.add_argument("--steps", type=int, default=6, help="with --follow: steps the presenter shows")
    parser.add_argument("--hostile", type=int, default=0, help="with --follow: this many of the students ask for the "
                        "heaviest computations the budget allows instead of following")
    parser.add_argument("--saliency-link", action="store_true", help="the attention page's time while a student runs "
                        "the 511-token saliency link, and the server's idle time after that tab closes")
    parser.add_argument("--link-method", default="occlusion", help="with --saliency-link: the link's saliency method")
    args = parser.parse_args()
    if args.saliency_link:
        load_before = os.getloadavg()
        result = measure_saliency_link(args.timeout, args.log.with_name("saliency_link_streamlit.log"), args.link_method)
        return report_saliency_link(args, result, load_before, os.getloadavg())
    if args.follow:
        load_before = os.getloadavg()
        result = measure_following(args.students, args.steps, args.timeout, args.log.with_name("class_following_streamlit.log"),
                                   args.hostile)
        return report_following(args, result, load_before, os.getloadavg())
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
