"""The Lessons page in AppTest: every step of every built-in lesson shows, and opens its page set as the step says
(no exception anywhere); the arrow-key shortcuts are on Back and Next; leaving keeps the page where the step put it;
the pages offer "Download this view"."""
from __future__ import annotations

import pytest

from bert.pretrained import MINILM_HEAD_FILE
from app_helpers import figures, go, no_exception, texts
from viz_app.app import models
from viz_app.app.text import escape_markdown
from viz_app.lessons.format import PAGES, builtin_lessons
from viz_app.lessons.resolve import resolve

pytestmark = [pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} is not there yet"),
              pytest.mark.slow]  # AppTest: every test renders pages on a model
LESSONS = "../pages/lessons.py"
CHECKED = {"layer": "layer", "head": "head", "focus": "focus", "top_k": "top_k", "k": "k"}  # state -> widget key


@pytest.fixture(scope="module")
def loaded():
    return models.load(models.ModelKey.of("minilm"))


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
def test_every_step_shows_and_opens_its_page(open_app, loaded, name):
    lesson = builtin_lessons()[name]
    at = start(open_app, name)
    session = {}
    for index in range(len(lesson.steps)):
        expected = resolve(lesson, index, loaded, session)
        session |= expected.state
        no_exception(at)
        assert at.header[0].value == escape_markdown(expected.title)  # shown as literal text
        assert f"step {index + 1} of {len(lesson.steps)}" in texts(at)
        assert at.session_state["text"] == expected.state["text"]
        [link] = [c.value for c in at.code]
        assert f"/{'' if expected.page == 'prediction' else expected.page}?" in link and "model=minilm" in link

        at.button(key="lesson_open").click().run()  # go to the step's page, set as the step says
        no_exception(at)
        assert at.title[0].value.startswith(PAGES[expected.page][1]), (name, index)
        for key, widget in CHECKED.items():
            if key in expected.state and expected.page in ("attention", "prediction", "embeddings"):
                assert at.session_state[widget] == expected.state[key], (name, index, key)
        if "masks" in expected.state:
            assert at.session_state["masks"] == expected.state["masks"]
        at.switch_page(LESSONS).run()  # back to the lesson: the same step
        assert at.header[0].value == escape_markdown(expected.title)  # shown as literal text
        if index < len(lesson.steps) - 1:
            at.button(key="lesson_next").click().run()
    assert at.button(key="lesson_next").disabled


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
