"""The Lessons page in AppTest: every step of every built-in lesson shows, opens its page set as the step says, and
a student following the class lands on it (no exception anywhere); the arrow-key shortcuts are on Back and Next; leaving keeps the page where the step put it;
the pages offer "Download this view"."""
from __future__ import annotations


import pytest

from bert.pretrained import MINILM_HEAD_FILE
from app_helpers import figures, go, no_exception, texts
from viz_app import cache
from viz_app.app import models
from viz_app.app.navigation import LINK_PARAMS
from viz_app.app.text import escape_markdown
from viz_app.lessons.format import PAGES, builtin_lessons
from viz_app.lessons.session import through_the_caches
from lesson_step_checks import resolved_and_checked

pytestmark = [pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there yet"),
              pytest.mark.slow]  # AppTest: every test renders pages on a model
LESSONS = "../pages/lessons.py"
CHECKED = {"layer": "layer", "head": "head", "focus": "focus", "top_k": "top_k", "k": "k"}  # state -> widget key


@pytest.fixture(scope="session")  # not the module's: the walks of the lessons go to every test worker
def loaded():
    return cache.load_model(models.ModelKey.of("minilm"))  # the app's own: the walks read what the class computed


def start(open_app, name: str):
    at = open_app("prediction", model="minilm")
    at.switch_page(LESSONS).run()
    no_exception(at)
    at.selectbox(key="lesson_name").set_value(name).run()
    at.button(key="lesson_start").click().run()
    no_exception(at)
    return at


@pytest.mark.slow
@pytest.mark.parametrize("name", list(builtin_lessons()))
def test_a_class_walks_every_step_of_every_lesson(open_app, loaded, class_key, name):
    """One walk a lesson checks what the Lessons page shows the presenter, the step's page it opens for them, and
    what a student who opened the students' link is shown: the presenter (the session that opened the presenter's
    link) presses Next through the lesson; at each step the student lands on the step's page with the step's
    sentence and settings (the values the lesson resolves to for the model). The presenter opens the step's page the
    first time the lesson reaches each page (the same opening serves every step; the student's page checks every
    step's settings). Each step's values and figures are checked here too (lesson_step_checks.py), read from the app's
    stores (what the presenter's step computed), and on the built-in model every step is within what a student may
    open."""
    lesson = builtin_lessons()[name]
    presenter = open_app("lessons", key=class_key)
    student = open_app("lessons", follow=1)
    presenter.selectbox(key="lesson_name").set_value(name).run()
    presenter.button(key="lesson_start").click().run()
    session, opened = {}, set()
    for index in range(len(lesson.steps)):
        where = (name, index + 1)
        expected, cost = resolved_and_checked(lesson, index, loaded, session, through_the_caches(loaded))
        session |= expected.state
        assert cost.work(loaded.model.config) <= 60_000, (where, cost)  # a student may open every built-in step
        no_exception(presenter)
        assert presenter.header[0].value == escape_markdown(expected.title)  # shown as literal text
        assert f"step {index + 1} of {len(lesson.steps)}" in texts(presenter)
        assert presenter.session_state["text"] == expected.state["text"]
        [link] = [c.value for c in presenter.code if "model=" in c.value]  # the step's page (beside the class links)
        assert f"/{'' if expected.page == 'prediction' else expected.page}?" in link and "model=minilm" in link

        student.run()  # the student's page hears from the class (the panel's timer, in a browser)
        no_exception(student)
        assert student.title[0].value.startswith(PAGES[expected.page][1]), where
        assert f"step {index + 1} of {len(lesson.steps)}" in " ".join(m.value for m in student.markdown), where
        for key, value in expected.state.items():
            if key in LINK_PARAMS:
                assert student.session_state[key] == value, (*where, key)

        if expected.page not in opened:  # the presenter goes to the step's page, set as the step says
            opened.add(expected.page)
            presenter.button(key="lesson_open").click().run()
            no_exception(presenter)
            assert presenter.title[0].value.startswith(PAGES[expected.page][1]), where
            for key, widget in CHECKED.items():
                if key in expected.state and expected.page in ("attention", "prediction", "embeddings"):
                    assert presenter.session_state[widget] == expected.state[key], (*where, key)
            if "masks" in expected.state:
                assert presenter.session_state["masks"] == expected.state["masks"]
            presenter.switch_page(LESSONS).run()  # back to the lesson: the same step
            assert presenter.header[0].value == escape_markdown(expected.title)
        if index < len(lesson.steps) - 1:
            presenter.button(key="lesson_next").click().run()
    assert presenter.button(key="lesson_next").disabled


@pytest.mark.slow
def test_arrow_keys_back_and_next_and_leaving(open_app):
    at = start(open_app, "where_each_word_looks")
    back, forward = at.button(key="lesson_back"), at.button(key="lesson_next")
    assert back.proto.shortcut.lower() == "left" and forward.proto.shortcut.lower() == "right"
    assert back.disabled and not forward.disabled
    forward.click().run()
    assert at.session_state["lesson_step"] == 1
    chosen = (at.session_state["layer"], at.session_state["head"])  # the previous-token head, computed
    at.button(key="lesson_back").click().run()
    assert at.session_state["lesson_step"] == 0 and at.header[0].value == "One head, one pattern"
    at.button(key="lesson_next").click().run()
    at.button(key="lesson_leave").click().run()
    no_exception(at)
    assert at.session_state["lesson_step"] is None
    go(at, "attention")  # leaving keeps the view the step set
    no_exception(at)
    assert (at.session_state["layer"], at.session_state["head"]) == chosen
    assert f"Layer {chosen[0]}, head {chosen[1]}" in figures(at)[0]["layout"]["title"]["text"]


def test_the_presenter_view_draws_the_steps_figures(open_app):
    at = start(open_app, "fill_in_the_blank")
    assert len(figures(at)) == 1  # the predictions for the step's [MASK]
    assert "Download this lesson" in [b.label for b in at.get("download_button")]
    at.button(key="lesson_next").click().run()
    at.button(key="lesson_next").click().run()  # step 3: an attention pattern of the last layer
    titles = [f["layout"]["title"]["text"] for f in figures(at)]
    assert titles[0].startswith("Layer 5, head 0")


@pytest.mark.slow
@pytest.mark.parametrize("page, labels", [
    ("prediction", ["Download this view"]),
    ("attention", ["Download this head's view", "Download the all-heads view"]),
    ("embeddings", ["Download this view"]),
])
def test_pages_offer_download_this_view(open_app, page, labels):
    at = open_app(page)
    no_exception(at)
    shown = [b.label for b in at.get("download_button")]
    for label in labels:
        assert label in shown
