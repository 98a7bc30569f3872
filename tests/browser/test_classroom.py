"""Two students at once, each in their own browser context, against one app server on localhost
(`python -m bench.classroom --students 2`): every student's page shows the predictions for their own sentence,
checked against `predict_masks` run directly (without a browser, tests/app/server/test_class_server.py runs five
students at once). The benchmark run with 30 students reports the times and the server's memory.
Skips without Chromium or Playwright, except under CI=true, where they are required.
"""
from __future__ import annotations

import json
import re

from bert_test_support import recheck_with_pages_swapped, run_bench

STUDENTS = 2
TIMEOUT_S = 600  # per student: the CPUs may be shared with other work
SHOWN = 10  # candidates the prediction page shows by default (its top_k slider)


def test_two_students_each_get_their_own_predictions(browser_ready, tmp_path):
    record, log = tmp_path / "classroom.json", tmp_path / "streamlit.log"
    result = run_bench("classroom", "--students", str(STUDENTS), "--timeout", str(TIMEOUT_S), "--json", str(record),
                       "--log", str(log))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    run = json.loads(record.read_text())
    students = run["students"]
    assert [s["problem"] for s in students] == [None] * STUDENTS
    assert all(s["seconds"] > 0 and len(s["shown"]) == SHOWN for s in students)

    # the check tells sentences apart: each page's predictions are wrong for every other student's sentence
    result = recheck_with_pages_swapped(run, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert sorted(re.findall(r"^student (\d+): candidates", result.stdout, re.M)) == [str(n) for n in range(STUDENTS)]
