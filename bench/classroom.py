"""A whole class at once: N students (browser contexts) type their own sentence into one app server.

    OMP_NUM_THREADS=1 python -m bench.classroom                                   # 30 students, built-in model
    OMP_NUM_THREADS=1 python -m bench.classroom --model out/random-bert-base      # BERT-base shape
    OMP_NUM_THREADS=1 python -m bench.classroom --students 4 --json out/classroom.json
    OMP_NUM_THREADS=1 python -m bench.classroom --recheck out/classroom.json      # check a run's pages again

Starts `streamlit run viz_app/Home.py` on 127.0.0.1 (a free port, viz_app/server/local_server.py), opens one Chromium
(Debian's package, driven by Playwright) with one browser context per student (each its own Streamlit session), all at once.
Every student opens the prediction page, types a sentence of their own with one [MASK] and presses
Ctrl+Enter. The time to predictions is from that key press until the page shows the predictions for *that*
sentence. Each page's candidates and probabilities (read from its chart) are checked against
`bert.predict.predict_masks` run directly on the same model: every student must get their own, correct
predictions. Prints the median and 95th percentile of the time to predictions, the server's peak resident
memory (VmHWM of the streamlit process) and the load average, as a table ready to paste; exit status 0 when
every student got the right predictions. tests/browser/test_classroom.py runs it with 4 students.
Every wait has a deadline; the server only listens on 127.0.0.1 and is stopped at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import statistics
import sys
import time
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import Path

from viz_app.server.local_server import CHROMIUM, CHROMIUM_ARGS, ROOT, browser_missing, serve

SHOWN = 10  # candidates the prediction page shows by default (its top_k slider, pages/prediction.py)
SUBJECTS = (
    "doctor", "farmer", "pilot", "baker", "teacher", "sailor", "painter", "singer", "driver", "nurse",
    "writer", "dancer", "miner", "tailor", "hunter", "judge", "priest", "soldier", "waiter", "lawyer",
)
PLACES = ("the old market", "a quiet village", "the busy harbour", "a small school", "the city library", "the river bank")


@dataclass
class Student:
    number: int
    sentence: str
    seconds: float | None = None  # key press to predictions shown
    shown: list[tuple[str, float]] | None = None  # the page's candidates, best first
    problem: str | None = None  # what went wrong; None when the page showed the right predictions


def sentences(count: int) -> list[str]:
    """A different sentence with one [MASK] for each student."""
    return [
        f"Student {n} wrote that the {SUBJECTS[n % len(SUBJECTS)]} in {PLACES[n % len(PLACES)]} "
        f"{'never' if n % 2 else 'often'} [MASK] on {('monday', 'friday', 'sunday')[n % 3]} mornings."
        for n in range(count)
    ]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_memory_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


async def run_class(url: str, model: str, texts: list[str], timeout_s: float) -> list[Student]:
    """Every student at once, in their own browser context; returns what each page showed and when."""
    from playwright.async_api import async_playwright

    students = [Student(n, text) for n, text in enumerate(texts)]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            await asyncio.gather(*(_one_student(browser, url, model, s, timeout_s) for s in students))
        finally:
            await browser.close()
    return students


async def _one_student(browser, url: str, model: str, student: Student, timeout_s: float) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    deadline = time.monotonic() + timeout_s
    try:
        page = await context.new_page()
        page.set_default_timeout(timeout_s * 1000)
        await page.goto(f"{url}/?{urllib.parse.urlencode({'model': model})}")
        box = page.get_by_label("Sentence", exact=True)
        await box.wait_for()
        await _until(page, deadline, lambda state: state["idle"])
        await box.fill(student.sentence)
        pressed = time.monotonic()
        await box.press("Control+Enter")
        marker = student.sentence.split()[1]  # the student's number, which no other sentence has at that place
        state = await _until(page, deadline, lambda state: state["idle"] and state["bars"] and f"student {marker} " in state["filled"])
        student.seconds = time.monotonic() - pressed
        await asyncio.sleep(0.5)  # let plotly finish redrawing, then read the chart again
        student.shown = (await _until(page, deadline, lambda state: state["idle"] and state["bars"]))["bars"]
    except Exception as error:  # noqa: BLE001 - reported per student, the others go on
        student.problem = f"{type(error).__name__}: {error}"[:300]
    finally:
        await context.close()


async def _until(page, deadline: float, ready) -> dict:
    """Poll the page's state until `ready(state)` or the deadline (then TimeoutError)."""
    while time.monotonic() < deadline:
        state = await page.evaluate(_PAGE_STATE)
        if ready(state):
            return state
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the page did not get there before the deadline; last state {state}")


# The script state, the "filled in" sentence (lower case) and the first chart's bars as [(token, probability)].
_PAGE_STATE = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  const idle = !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && document.querySelectorAll('[data-testid=stSkeleton]').length === 0;
  const filled = [...document.querySelectorAll('[data-testid=stMarkdownContainer]')]
    .map(e => e.innerText).find(t => t.includes('best guesses, filled in')) || '';
  const plot = document.querySelector('.js-plotly-plot');
  const bars = [];
  for (const trace of (plot && plot._fullData) || []) {
    (trace.y || []).forEach((label, i) => bars.push([label, Number(trace.x[i])]));
  }
  bars.sort((a, b) => parseInt(a[0]) - parseInt(b[0]));
  return {idle, filled: filled.toLowerCase(), bars: bars.map(([label, p]) => [label.replace(/^\\d+\\. /, ''), p])};
}"""


def check(students: list[Student], model: str, tolerance: float = 1e-4) -> None:
    """Set `problem` for every student whose page did not show predict_masks' candidates for their sentence:
    the same tokens, in the same order, with the same probabilities (within a relative `tolerance`; tokens
    whose probabilities tie within it may swap places)."""
    import torch

    from bert import load_pretrained
    from bert.predict import predict_masks

    torch.set_num_threads(1)
    bert_model, tokenizer = load_pretrained(model, pack_for_cpu=True)
    bert_model.eval()
    for student in students:
        if student.problem:
            continue
        [expected] = predict_masks(bert_model, tokenizer, tokenizer.encode(student.sentence), top_k=SHOWN + 2)
        probability = {c.token: c.probability for c in expected.candidates}
        shown = [(html.unescape(token), p) for token, p in student.shown]
        if len(shown) != SHOWN:
            student.problem = f"{len(shown)} candidates shown, not {SHOWN}"
            continue
        wrong = [
            (token, p) for (token, p), best in zip(shown, expected.candidates)
            if token not in probability or not _close(probability[token], p, tolerance) or not _close(best.probability, p, tolerance)
        ]
        if wrong:
            student.problem = f"candidates {wrong} are not predict_masks' for this sentence"


def _close(expected: float, got: float, tolerance: float) -> bool:
    return abs(expected - got) <= tolerance * abs(expected)


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile by linear interpolation between the sorted values (numpy's default)."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="minilm", help="model source for the app: minilm (default) or a checkpoint folder")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=600, help="seconds each student may take, at most")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--recheck", type=Path, help="only check the pages recorded in this --json file again")
    parser.add_argument("--log", type=Path, default=ROOT / "out" / "classroom_streamlit.log", help="the server's output")
    args = parser.parse_args()
    if args.recheck:
        return recheck(args.recheck)
    reason = browser_missing()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    model = str(Path(args.model).resolve()) if Path(args.model).is_dir() else args.model
    with serve(args.log) as (url, server):
        started, server_cpu = time.monotonic(), cpu_seconds(server.pid)
        students = asyncio.run(run_class(url, model, sentences(args.students), args.timeout))
        wall, server_cpu = time.monotonic() - started, cpu_seconds(server.pid) - server_cpu
        peak = peak_memory_mb(server.pid)
    check(students, model)
    for student in students:
        status = "ok" if student.problem is None else student.problem
        seconds = f"{student.seconds:6.2f} s" if student.seconds is not None else "   -    "
        print(f"student {student.number:2d}: {seconds}  {status}")
    times = [s.seconds for s in students if s.problem is None]
    load = os.getloadavg()
    print(f"\nmodel {args.model}; {os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '1')}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; whole class {wall:.0f} s, of which the server "
          f"used {server_cpu:.0f} s of CPU (the browsers run on the same machine)\n")
    print("| model | students | correct | median to predictions (s) | 95th percentile (s) | slowest (s) | server peak memory (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    if times:
        print(f"| {args.model} | {len(students)} | {len(times)} | {statistics.median(times):.1f} | "
              f"{percentile(times, 0.95):.1f} | {max(times):.1f} | {peak:.0f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": args.model, "load_average": load, "peak_mb": peak, "wall_s": wall,
                                         "server_cpu_s": server_cpu,
                                         "students": [asdict(s) for s in students]}, indent=2))
    return 0 if len(times) == len(students) else 1


def recheck(path: Path) -> int:
    """Check a finished run's pages (its --json) again, e.g. after the check was made stricter."""
    recorded = json.loads(path.read_text())
    model = str(Path(recorded["model"]).resolve()) if Path(recorded["model"]).is_dir() else recorded["model"]
    students = [Student(s["number"], s["sentence"], s["seconds"], s["shown"])  # also reads bench.class_server's files
                for s in recorded["students"] if s["shown"] is not None]
    check(students, model)
    print(f"{path}: {sum(s.problem is None for s in students)} of {len(recorded['students'])} pages correct")
    for student in students:
        if student.problem:
            print(f"student {student.number}: {student.problem}")
    return 0 if all(s.problem is None for s in students) and len(students) == len(recorded["students"]) else 1


if __name__ == "__main__":
    sys.exit(main())
