"""The HTML export and `python -m viz_app.export.lesson`: one self-contained file (plotly.js inside, nothing fetched,
MathJax off, user text escaped), every step in it; --list names the built-in lessons; bad input exits 2 in one line.
The browser checks (figures drawn offline) are in tests/browser/test_lessons_browser.py."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import plotly.graph_objects as go
import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from bert_test_support import called
from viz_app.charts.base import Chart
from viz_app.export.html import Section, document, view_document
from viz_app.lessons.format import builtin_lessons

EVIL = "<img src=x onerror=alert(1)> & </script>"


def export_lesson(*args: str) -> subprocess.CompletedProcess:
    """`python -m viz_app.export.lesson ARGS` in a fresh interpreter: the real entry point."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()}
    return subprocess.run([sys.executable, "-m", "viz_app.export.lesson", *args], capture_output=True, text=True, timeout=900,
                          env=env)


def call_export(capsys, *args: str) -> subprocess.CompletedProcess:
    """The same command through its `main`, in this process."""
    from viz_app.export.lesson import main

    return called(main, capsys, *args)


def fetches(page: str) -> list[str]:
    """Anything the page would load from elsewhere: src/href attributes and CSS url() / @import."""
    return re.findall(r"<[a-zA-Z][^>]*\s(?:src|href)\s*=[^>]*>|@import|url\(", page.replace(get_plotlyjs(), ""))


def test_a_view_is_one_file_that_fetches_nothing_and_escapes_text():
    figure = go.Figure(go.Bar(x=[1, 2], y=["a", "b"]))
    page = view_document(f"Title {EVIL}", [Chart(figure, pd.DataFrame(), "bars", caption=EVIL)], meta=f"Sentence: {EVIL}")
    assert page.count(get_plotlyjs()) == 1, "plotly.js inlined once"
    assert fetches(page) == []
    assert fetches('<script src="https://cdn.plot.ly/plotly.min.js"></script>') and fetches("<style>@import x</style>")
    assert "mathjax" not in page.replace(get_plotlyjs(), "").lower()
    assert EVIL not in page and "&lt;img src=x onerror=alert(1)&gt; &amp; &lt;/script&gt;" in page
    assert page.count("Plotly.newPlot(") == 1


def test_a_document_with_nothing_to_draw_carries_no_script():
    """A file of text only (the lesson download's "not made" page): no plotly.js, about 4.6 MB lighter."""
    page = document("Fill in the blank", [Section("This lesson's file was not made", paragraphs=(EVIL,))])
    assert "<script" not in page and get_plotlyjs() not in page and fetches(page) == []
    assert EVIL not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_export_lesson_list_names_the_builtin_lessons_one_per_line(capsys):
    result = call_export(capsys, "--list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == list(builtin_lessons())
    assert all(len(line.split("\t")) == 2 for line in lines)


@pytest.mark.slow
def test_export_lesson_writes_every_step(tmp_path, minilm_path):
    from bert.pretrained import MINILM_HEAD_FILE

    if not MINILM_HEAD_FILE.is_file():
        pytest.skip(f"{MINILM_HEAD_FILE} is not there")
    out = tmp_path / "handout.html"
    result = export_lesson("fill_in_the_blank", "--model", "minilm", "--out", str(out),
                     "--app-url", "http://classroom:8501")
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    lesson = builtin_lessons()["fill_in_the_blank"]
    for number, step in enumerate(lesson.steps, 1):
        assert f"Step {number} of {len(lesson.steps)}: {step.title}" in page.replace("&#x27;", "'")
    assert page.count("<details>") == sum(bool(s.question) for s in lesson.steps)
    assert page.count("Plotly.newPlot(") >= len(lesson.steps)  # every step of this lesson draws a figure
    assert "http://classroom:8501/attention?model=minilm" in page
    assert fetches(page) == []
    assert "{" not in re.sub(r"<script.*?</script>|<style>.*?</style>", "", page, flags=re.S)  # every value filled in


@pytest.mark.parametrize("args, message", [
    (["no_such_lesson"], "error: no built-in lesson 'no_such_lesson'"),
    ([], "error: name a lesson"),
])
def test_export_lesson_bad_input_exits_2_with_one_line(args, message, capsys):
    result = call_export(capsys, *args)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1


def test_export_lesson_bad_file_names_the_step(tmp_path, capsys):
    bad = tmp_path / "mine.yaml"
    bad.write_text("title: Mine\nsteps:\n- title: One\n  page: attention\n  text: x\n  state: {layer: many}\n")
    result = call_export(capsys, str(bad), "--out", str(tmp_path / "x.html"))
    assert result.returncode == 2
    assert result.stderr == "error: mine.yaml: step 1 (One): state: layer: bad value 'many'\n"
    assert not (tmp_path / "x.html").exists()
