"""A class through every built-in lesson, in AppTest: the presenter (the session that opened the presenter's link)
presses Next through the lesson on the Lessons page; a student who opened the students' link lands, at each step,
on the step's page with the step's sentence and settings (the same values the lesson resolves to for the model)."""
from __future__ import annotations

import secrets

import pytest

from app_helpers import no_exception
from bert.pretrained import MINILM_HEAD_FILE
from viz_app.app import models
from viz_app.lessons.format import PAGES, builtin_lessons
from viz_app.lessons.resolve import resolve
from viz_app.app.navigation import LINK_PARAMS

pytestmark = [pytest.mark.slow,  # two sessions run every step of every lesson
              pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there yet")]


@pytest.fixture(scope="module")
def loaded():
    return models.load(models.ModelKey.of("minilm"))


@pytest.fixture
def class_key(monkeypatch) -> str:
    key = secrets.token_urlsafe(12)  # a class of this test's own
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    return key


@pytest.mark.parametrize("name", list(builtin_lessons()))
def test_a_student_follows_the_presenter_through_every_step(open_app, loaded, class_key, name):
    lesson = builtin_lessons()[name]
    presenter = open_app("lessons", key=class_key)
    student = open_app("lessons", follow=1)
    presenter.selectbox(key="lesson_name").set_value(name).run()
    presenter.button(key="lesson_start").click().run()
    session = {}
    for index in range(len(lesson.steps)):
        no_exception(presenter)
        expected = resolve(lesson, index, loaded, session)
        session |= expected.state
        student.run()  # the student's page hears from the class (the panel's timer, in a browser)
        no_exception(student)
        where = (name, index + 1)
        assert student.title[0].value.startswith(PAGES[expected.page][1]), where
        assert f"step {index + 1} of {len(lesson.steps)}" in " ".join(m.value for m in student.markdown), where
        for key, value in expected.state.items():
            if key in LINK_PARAMS:
                assert student.session_state[key] == value, (*where, key)
        if index < len(lesson.steps) - 1:
            presenter.button(key="lesson_next").click().run()
