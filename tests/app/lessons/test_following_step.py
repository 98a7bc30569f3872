"""A student following the class takes the class's step on the follower's path as Home.py runs it (the top of the
script and the panel's polling fragment: viz_app/lessons/following.py): the step's values and figures are worked out
through the runner (viz_app/heavy.py's `run`), so no forward pass is made outside a computation, the step is
charged to the student who first needs it and read free by the next one."""
from __future__ import annotations

import secrets

import pytest

from app_helpers import no_exception
from bert.pretrained import MINILM_HEAD_FILE
from bert.stopping import watching
from viz_app.lessons import following, session
from viz_app.lessons.format import PAGES, parse_lesson
from viz_app.server import singletons, visitor
from viz_app.server.settings import ServerSettings

pytestmark = [pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there yet"),
              pytest.mark.slow]  # AppTest on the built-in model
LESSONS = "../pages/lessons.py"
LESSON = """title: One head
about: The previous-token head in the student's own sentence.
steps:
  - title: The head that looks back
    page: attention
    state:
      layer: 0
    text: "In your sentence, {previous_token_head} looks back most."
"""


def test_a_followers_step_makes_no_pass_outside_a_computation_and_is_charged_once(open_app, class_key, monkeypatch):
    outside: list[int] = []
    follow = following.follow_if_moved

    def watched(this_visitor):  # the default watcher on the follower's path: rows made outside any job
        with watching(outside.append):
            return follow(this_visitor)

    monkeypatch.setattr(following, "follow_if_moved", watched)
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.91")
    presenter = open_app("lessons", key=class_key)
    presenter.session_state[session.UPLOADED] = parse_lesson(LESSON, "one_head")
    presenter.selectbox(key="lesson_name").set_value("upload").run()
    presenter.button(key="lesson_start").click().run()
    no_exception(presenter)

    sentence = f"The {secrets.token_hex(3)} dog chased the cat across the garden."  # a step no one has worked out
    first = open_app("prediction", follow=1, text=sentence)  # it takes the class's step at once
    first.run()  # the panel hears from the class
    no_exception(first)
    assert first.title[0].value.startswith(PAGES["attention"][1])
    assert "The head that looks back" in " ".join(m.value for m in first.markdown)
    assert sum(outside) == 0, f"{sum(outside)} forward passes outside a computation on the follower's path"
    spent = _spent("address 192.0.2.91")
    assert spent > 0  # the first student who needs the step pays for it

    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.92")
    second = open_app("prediction", follow=1, text=sentence)  # it takes the class's step at once
    second.run()
    no_exception(second)
    assert second.title[0].value.startswith(PAGES["attention"][1])
    assert sum(outside) == 0
    for student in (first, second):  # the step's page took its drawing turn (following.drawing_turn) and gave it back
        assert following.TAKING not in student.session_state
    assert all(following._DRAWING.acquire(timeout=0) for _ in range(following.DRAWING_AT_ONCE))
    for _ in range(following.DRAWING_AT_ONCE):
        following._DRAWING.release()
    assert _spent("address 192.0.2.92") == 0 and _spent("address 192.0.2.91") == spent  # read, not charged again


def _spent(payer: str) -> float:
    """What `payer` spent this hour on the server's heavy computations (AppTest's sessions share the process's)."""
    return singletons.heavy_jobs(ServerSettings().heavy_slots).spent_this_hour(payer)
