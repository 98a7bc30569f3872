"""A lecture hall following the presenter: `python -m bench.lecture_hall --students 60 120 --processes 1 2`.

For each number of processes and each class size, scripts/lecture.sh starts Redis, that many app processes and
HAProxy on 127.0.0.1 (viz_app/server/local_server.py's serve_lecture_hall), and bench/class_following.py's class
follows the presenter through the proxy: one presenter session and N students speaking Streamlit's websocket
protocol (bench/streamlit_session.py), each student rerunning the polling fragment at the page's interval. The
proxy spreads the students over the processes (leastconn), so the presenter moves the class on one process and
most students read it, through the store, on another. Measured per student and step: the press-to-step-shown time
and press-to-run-finished time; p50 and p95 over every (student, step). CPU: the hall's processes together (the
app processes, redis-server, haproxy; /proc), the steps' CPU less what polling alone costs over the same time,
per student per step. The load generator shares the machine: on two cores it competes with the hall, so the
figures are an upper bound of what the hall itself needs. Loopback only; every wait is bounded (`--timeout`).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from bench import class_following
from viz_app.server.local_server import serve_lecture_hall

ROOT = Path(__file__).resolve().parents[1]


def measure(processes: int, students: int, steps: int, timeout_s: float, log: Path) -> dict:
    args = ("--class", "--presenter-key", class_following.KEY)
    with serve_lecture_hall(log, processes, app_args=args) as (url, folder):
        pids = [int(path.read_text()) for path in sorted(folder.glob("*.pid"))]
        load_before = os.getloadavg()[0]
        result = class_following.run_following(url, students, steps, timeout_s, pids)
    shown, finished = class_following.delays(result, "shown"), class_following.delays(result, "finished")
    return {"processes": processes, "students": students, "steps": steps,
            "reached": sum(f.problem is None for f in result["followers"]),
            "problems": sorted({f.problem for f in result["followers"] if f.problem})[:3],
            "p50_shown_s": _quantile(shown, 0.5), "p95_shown_s": _quantile(shown, 0.95),
            "p50_finished_s": _quantile(finished, 0.5), "p95_finished_s": _quantile(finished, 0.95),
            "cpu_per_student_step_s": result["cpu_per_student_step_s"],
            "polling_core_share_per_student": result["polling_cpu_s_per_s"] / students,
            "steps_wall_s": result["steps_wall_s"], "hall_steps_cpu_s": result["steps_cpu_s"],
            "generator_steps_cpu_s": result["generator_cpu_s"],
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def _quantile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, nargs="+", default=[60, 120])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120, help="seconds a step of a student may take, at most")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    rows = []
    print("| processes | students | reached every step | p50 / p95 press to step shown (s) | p50 / p95 press to "
          "page finished (s) | CPU per student per step (s) | polling per student (% of a core) | load before / after |")
    print("| ---: | ---: | ---: | --- | --- | ---: | ---: | --- |")
    for students in args.students:
        for processes in args.processes:
            started = time.strftime("%H:%M", time.gmtime())
            row = measure(processes, students, args.steps, args.timeout,
                          ROOT / "out" / f"lecture_hall_{processes}x{students}.log")
            row["started_utc"] = started
            rows.append(row)
            print(f"| {processes} | {students} | {row['reached']} of {students} | {row['p50_shown_s']:.2f} / "
                  f"{row['p95_shown_s']:.2f} | {row['p50_finished_s']:.2f} / {row['p95_finished_s']:.2f} | "
                  f"{row['cpu_per_student_step_s']:.4f} | {100 * row['polling_core_share_per_student']:.2f} | "
                  f"{row['load_before']:.1f} / {row['load_after']:.1f} |", flush=True)
            if row["problems"]:
                print(f"  problems: {row['problems']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
