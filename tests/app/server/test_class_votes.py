"""A question's answers in class mode: one per student as far as the server can tell (the address a browser
connects from), whatever number of tabs each opens; a full table refuses an answer and says so."""
from __future__ import annotations


import pytest

from app_helpers import class_showing, no_exception
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # several sessions of the app each

QUESTION = """
title: A question
about: One step, one question.
steps:
  - title: Which diagonal?
    page: attention
    text: Look at the pattern.
    question: Where is the bright line?
    answer: Just below the main diagonal.
    choices: [below, above]
"""


@pytest.fixture
def room(monkeypatch):
    return class_showing(monkeypatch, QUESTION, "question")


def click(monkeypatch, tab, address: str, choice: int):
    """One run of a student's tab, from `address` (what st.context.ip_address gives the app)."""
    monkeypatch.setattr(visitor, "address", lambda: address)
    tab.button(key=f"class_choice_{choice}").click().run()
    no_exception(tab)
    return tab


def test_four_tabs_of_one_laptop_give_one_answer_and_two_laptops_two(open_app, monkeypatch, room):
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.5")
    tabs = [open_app("lessons", follow=1) for _ in range(4)]
    for number, tab in enumerate(tabs):
        click(monkeypatch, tab, "10.0.0.5", number % 2)
    assert room.answers() == {"above": 1}  # the last tab's click: one student's answer, changed three times
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.6")
    other = open_app("lessons", follow=1)
    click(monkeypatch, other, "10.0.0.6", 0)
    assert room.answers() == {"above": 1, "below": 1}


def test_a_full_table_says_so_to_the_student(open_app, monkeypatch, room):
    monkeypatch.setattr("viz_app.server.class_room.MAX_SESSIONS", 1)
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.5")
    first = click(monkeypatch, open_app("lessons", follow=1), "10.0.0.5", 0)
    assert not first.warning
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.6")
    second = click(monkeypatch, open_app("lessons", follow=1), "10.0.0.6", 0)
    assert "Your answer was not counted: the class's table of answers is full" in second.warning[0].value
    assert room.answers() == {"below": 1} and room.refused() == 1
