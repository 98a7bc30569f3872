"""An upload stays in the browser session that made it: two sessions of the real Home.py (AppTest), one uploads a
lesson file and a text to search, the other opens the same pages and the same choices and sees neither."""
from __future__ import annotations

import pytest

from app_helpers import go, no_exception, texts

pytestmark = pytest.mark.slow  # every test here runs the app twice

LESSON = """
title: A lesson only its uploader has
about: Written for one session.
steps:
  - title: The only step
    page: prediction
    text: Nobody else sees this.
"""
SENTENCES = b"Zebras graze on the savanna at dawn.\nThe zebra herd crossed the river.\n"


def matches(at) -> str:
    """The corpus search's matches, as the page writes them (HTML)."""
    return "\n".join(element.proto.body for element in at.get("html"))


def test_a_lesson_file_reaches_only_the_session_that_uploaded_it(open_app):
    mine, theirs = go(open_app(), "lessons"), go(open_app(), "lessons")
    for at in (mine, theirs):
        at.selectbox(key="lesson_name").set_value("upload").run()
    mine.file_uploader(key="lesson_file").set_value(("ours.yaml", LESSON.encode(), "application/x-yaml")).run()
    no_exception(mine)
    assert "A lesson only its uploader has" in texts(mine)
    theirs.run()  # the other session runs again after the upload
    no_exception(theirs)
    assert "A lesson only its uploader has" not in texts(theirs)
    assert "lesson_start" not in {b.key for b in theirs.button}
    assert theirs.file_uploader(key="lesson_file").value is None


def test_a_text_to_search_reaches_only_the_session_that_uploaded_it(open_app):
    mine, theirs = open_app(text="A zebra ran."), open_app(text="A zebra ran.")
    for at in (mine, theirs):
        at.session_state["search_corpus"] = "Upload a .txt file"
        go(at, "corpus_search")
    mine.file_uploader(key="search_file").set_value(("zebras.txt", SENTENCES, "text/plain")).run()
    no_exception(mine)
    assert "tokens of zebras" in texts(mine) and "savanna" in matches(mine)  # searched in the uploaded sentences
    theirs.run()
    no_exception(theirs)
    assert "zebras" not in texts(theirs) and "savanna" not in matches(theirs)
    assert "Choose a .txt file" in texts(theirs)
