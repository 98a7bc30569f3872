"""A small class at once (4 students, each in their own browser context) against one app server on localhost:
every student gets the predictions for their own sentence, checked against `predict_masks` run directly.
`bench/classroom.py` runs the same with 30 students and reports the times and the server's memory.
Skips without Chromium or Playwright, except under CI=true, where they are required.
"""
from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from bench import classroom  # tests/browser/conftest.py puts the repository root on sys.path

ROOT = Path(__file__).resolve().parents[2]

STUDENTS = 4
TIMEOUT_S = 600  # per student: the CPUs may be shared with other work


def test_four_students_each_get_their_own_predictions(browser_ready):
    with classroom.serve(ROOT / "out" / "screenshots" / "classroom_streamlit.log") as (url, _server):
        students = asyncio.run(classroom.run_class(url, "minilm", classroom.sentences(STUDENTS), TIMEOUT_S))
    classroom.check(students, "minilm")
    assert [s.problem for s in students] == [None] * STUDENTS
    assert all(s.seconds > 0 and len(s.shown) == classroom.SHOWN for s in students)

    # the check tells sentences apart: each page's predictions are wrong for every other student's sentence
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 0)):
        swapped = [dataclasses.replace(students[a], shown=students[b].shown, problem=None)]
        classroom.check(swapped, "minilm")
        assert swapped[0].problem is not None, f"student {a}'s sentence and student {b}'s give the same predictions"
