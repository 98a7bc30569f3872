"""A student who follows the class sees no page list in the sidebar (the teacher picks the page; the sidebar says so
and how to explore): a hall's every page sends two dozen links fewer at every step. Explore on their own, and the
list is back; the presenter and a visitor outside class mode always have it."""
from __future__ import annotations

import pytest

from app_helpers import ONE_STEP, class_showing, no_exception, texts
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # a few runs of the app
FOLLOWING = "Your screen follows the class: your teacher picks the page."  # the sidebar's line in place of the list



def page_links(at) -> list[str]:
    return [element.proto.page for element in at.sidebar.get("page_link")]


def test_a_following_student_has_no_page_list_until_they_explore(open_app, monkeypatch):
    class_showing(monkeypatch, ONE_STEP, "one_step")
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.32")
    tab = open_app("lessons", follow=1)
    no_exception(tab)
    assert page_links(tab) == [] and FOLLOWING in texts(tab)
    tab.run()  # the class's step taken: still following, still no list
    assert page_links(tab) == []
    tab.button(key="class_explore").click().run()
    no_exception(tab)
    assert len(page_links(tab)) >= 20 and FOLLOWING not in texts(tab)


def test_outside_class_mode_the_page_list_is_there(open_app):
    at = open_app("prediction")
    no_exception(at)
    assert len(page_links(at)) >= 20 and FOLLOWING not in texts(at)
