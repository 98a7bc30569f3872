"""A lesson step's cost (viz_app/lessons/steps.py) written out by hand (the passes every built-in step makes are
counted against its cost in tests/lessons/test_lesson_steps.py), and the lessons page's budget: a lesson file whose
step asks for value zeroing on a long sentence does not run for a student, who reads the numbers; the owner confirms
and the step is worked out."""
from __future__ import annotations

import pytest

from app_helpers import figures, no_exception, texts
from bert.pretrained import MINILM_HEAD_FILE
from viz_app.app import models
from viz_app.server import visitor
from viz_app.lessons import session
from viz_app.lessons.steps import step_cost, value_names
from viz_app.lessons.format import parse_lesson

pytestmark = pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there yet")
LESSONS = "../pages/lessons.py"
LONG = " ".join(["The dog barked at the mailman, and the cat watched from the [MASK]."] * 6)  # 103 tokens
HEAVY_LESSON = f"""title: Heavy
about: One step that zeroes every token's value in turn.
steps:
  - title: Value zeroing on a long text
    page: mixing
    state:
      text: "{LONG}"
      mixing_method: value-zeroing
      mixing_compare: decompx
    text: "The [SEP] share is {{zeroing_to_special.share}}."
"""


@pytest.fixture(scope="module")
def loaded():
    return models.load(models.ModelKey.of("minilm"))


def test_a_heavy_step_costs_what_its_methods_and_values_do(loaded):
    """The step's price written out by hand from the methods' definitions (the passes really made are counted for
    the built-in lessons above)."""
    lesson = parse_lesson(HEAVY_LESSON, "heavy")
    tokens = len(loaded.tokenizer.encode(LONG))
    assert list(value_names(lesson, 0)) == ["zeroing_to_special"]
    cost = step_cost(lesson, 0, loaded, {})
    # Value zeroing (Mohebbi et al. 2023) and DecompX (Modarressi et al. 2023): a recorded pass, then tokens + 1 rows
    # (each token's value zeroed in turn, and none). The value: the step's recorded pass (1), value zeroing
    # (tokens + 2) and the attention it is compared with (1); the figures: value zeroing, the value's own run (0
    # more), and DecompX (tokens + 2). Each computation once: the figures and the value share their runs.
    assert (cost.forward_passes, cost.tokens, cost.backward_passes) == (1 + (tokens + 2) + 1 + (tokens + 2), tokens, 0)
    assert set(cost.lower) == {"the method", "a shorter text"}  # what the budget's message tells a student to lower


@pytest.mark.slow
def test_a_lesson_file_over_the_budget_waits_for_a_student_and_runs_for_the_owner(open_app, monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "2000")
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.90")  # a student
    at = open_app("prediction", model="minilm")
    at.switch_page(LESSONS).run()
    at.session_state[session.UPLOADED] = parse_lesson(HEAVY_LESSON, "heavy")
    at.selectbox(key="lesson_name").set_value("upload").run()
    no_exception(at)
    [download] = [b for b in at.get("download_button") if b.label == "Download this lesson"]
    assert download.proto.disabled  # every step together is over the budget too
    at.button(key="lesson_start").click().run()
    no_exception(at)
    shown = texts(at)
    assert "This needs" in shown and "a computation may cost 2,000" in shown and "Lower" in shown
    assert not figures(at) and not at.header and "step 1 of 1" in shown
    assert at.button(key="lesson_open").proto.disabled

    monkeypatch.setattr(visitor, "address", lambda: "127.0.0.1")  # the person at the server's machine
    at.run()
    at.button(key="heavy_confirm_lesson_step_0").click().run()
    no_exception(at)
    assert at.header[0].value == "Value zeroing on a long text" and len(figures(at)) == 4
