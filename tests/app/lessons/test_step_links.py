"""The link under each lesson step is made from the same address as the class link: a presenter who opened the app
on the server machine (localhost, as AppTest does) gives students the machine's address in both, never localhost,
which on a student's laptop is the laptop itself (viz_app/lessons/session.py's students_base_url). And Next sits
above the step, so that a 768-pixel screen shows it under the sentence box whatever the step draws."""
from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from app_helpers import as_read, no_exception
from page_checks import nodes
from viz_app.server import class_room

pytestmark = pytest.mark.slow  # AppTest: the Lessons page on the built-in model
MACHINE = "192.0.2.7"  # the server machine's address on its network (TEST-NET-1: nothing answers there)


def test_a_presenter_on_localhost_gives_each_step_the_class_links_address(open_app, class_key, monkeypatch):
    monkeypatch.setattr(class_room, "network_host", lambda: MACHINE)
    presenter = open_app("lessons", key=class_key)
    presenter.button(key="lesson_start").click().run()
    no_exception(presenter)
    shown = "\n".join(as_read(m.value) for m in presenter.markdown)
    [students] = re.findall(r"https?://\S+?/lessons\?follow=1", shown)  # the class link, on the board
    [step] = [c.value for c in presenter.code if "model=" in c.value]  # the link under the step
    assert urlsplit(students).netloc.startswith(MACHINE)  # the page was reached at localhost: the machine's address
    assert urlsplit(step).scheme == urlsplit(students).scheme and urlsplit(step).netloc == urlsplit(students).netloc
    presenter.button(key="lesson_next").click().run()
    [following] = [c.value for c in presenter.code if "model=" in c.value]
    assert urlsplit(following).netloc == urlsplit(students).netloc
    order = list(nodes(presenter._tree))
    [title] = presenter.header  # the step's title, at the top of the stage
    assert order.index(presenter.button(key="lesson_next")) < order.index(title)
