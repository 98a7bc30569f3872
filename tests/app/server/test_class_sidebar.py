"""A student who follows the class sees no page list and no model picker in the sidebar (the teacher picks the page and
the model; the sidebar says so, names the model and says how to explore), and no download buttons under the charts:
a hall's every page sends a few dozen elements fewer at every step. Explore on their own, and all of it is back; the
presenter and a visitor outside class mode always have it."""
from __future__ import annotations

import pytest

from app_helpers import ONE_STEP, class_showing, no_exception, texts
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # a few runs of the app
FOLLOWING = "Your screen follows the class: your teacher picks the page and the model"  # the sidebar's line



def page_links(at) -> list[str]:
    return [element.proto.page for element in at.sidebar.get("page_link")]


def pickers(at) -> list[str]:
    return [box.label for box in at.sidebar.selectbox] + [radio.label for radio in at.sidebar.radio]


def follower_line(at) -> str | None:
    return next((line for line in texts(at).splitlines() if FOLLOWING in line), None)


def test_a_following_student_has_no_page_list_and_no_picker_until_they_explore(open_app, monkeypatch):
    class_showing(monkeypatch, ONE_STEP, "one_step")
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.32")
    tab = open_app("lessons", follow=1)
    no_exception(tab)
    assert page_links(tab) == [] and pickers(tab) == [] and follower_line(tab) is not None
    tab.run()  # the class's step taken: still following, still no list, and the line names the class's model
    no_exception(tab)
    assert page_links(tab) == [] and pickers(tab) == []
    line = follower_line(tab)
    assert "MiniLM" in line and "6 layers" in line, line
    tab.button(key="class_explore").click().run()
    no_exception(tab)
    assert len(page_links(tab)) >= 20 and follower_line(tab) is None
    assert pickers(tab) == ["Model", "Download charts as"]
    assert tab.sidebar.selectbox(key="model_choice").value == "minilm"  # the class's model, kept while it followed


def test_outside_class_mode_the_page_list_is_there(open_app):
    at = open_app("prediction")
    no_exception(at)
    assert len(page_links(at)) >= 20 and FOLLOWING not in texts(at)


def test_a_following_students_charts_have_no_downloads_until_they_explore(open_app, monkeypatch):
    class_showing(monkeypatch, ONE_STEP, "one_step")  # the attention page: six charts, each with its CSV
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.33")
    tab = open_app("attention", follow=1)
    tab.run()
    no_exception(tab)
    assert "All heads at a glance" in [header.value for header in tab.subheader]  # the class's page, drawn
    assert tab.get("download_button") == [] and tab.get("plotly_chart")
    tab.button(key="class_explore").click().run()
    no_exception(tab)
    labels = [button.proto.label for button in tab.get("download_button")]
    assert labels.count("CSV of this chart") == len(tab.get("plotly_chart")) >= 6
    assert {"Download this head's view", "Download the all-heads view"} <= set(labels)
