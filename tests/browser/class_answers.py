"""Answers to a class question clicked by students who share one address, one at a time: each click is awaited on
the presenter's count before the next is made, so the server hears them in the order they were made (a click's
callback can wait seconds behind its page's run on a busy machine, and the last one heard is the one kept)."""
from __future__ import annotations

import time

from viz_app.lessons.format import builtin_lessons

QUESTION_STEP = 5  # the first lesson's step with a question with choices (the class tests answer it)
CHOICES = builtin_lessons()["fill_in_the_blank"].steps[QUESTION_STEP - 1].choices
ANSWER_WAIT_S = 60  # a click not counted by then is a failure, not a slow click


def answer_in_turn(presenter, clicks, choices: tuple[str, ...] = CHOICES) -> str:
    """Click each (student page, choice) of `clicks` in turn. After each click the presenter's box must count that
    choice once and every other choice none: one answer per address, and the last click wins. Returns the box's
    text after the last click."""
    box = presenter.locator(".st-key-class_presenter")
    text = ""
    for number, (student, choice) in enumerate(clicks):
        student.get_by_role("button", name=choice).click()
        wanted = [f"{other}: {int(other == choice)}" for other in choices]
        deadline = time.monotonic() + ANSWER_WAIT_S
        while True:
            text = box.inner_text()
            if all(count in text for count in wanted) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert all(count in text for count in wanted), (f"click {number + 1} ({choice!r})", text)
    return text
