"""A class in Chromium: one presenter and three students on a class-mode server (without a browser,
tests/app/server/test_class_server.py runs five students at once). The presenter presses → and every following
student's page shows the new step on the step's page, without reloading; a student exploring on their
own is not moved until they follow again; the presenter sees how many follow and the answers to a question.

How fast the class follows is measured, not asserted (the project keeps speed out of its tests): `pytest -s` prints
the seconds from each press to each student's page showing the step, and bench/class_server.py `--follow` measures
the server's side with 30 students; docs/benchmarks.md has both."""
from __future__ import annotations

import re
import time

import pytest

from browser_support import new_page
from class_answers import answer_in_turn
from panel_watch import wait_until_seen, watch_panel
from viz_app.server.local_server import serve

KEY = "a-presenter-key-for-the-test"
STUDENTS = 3
FOLLOW_WAIT_S = 60  # a step not shown by then is a failure, not a slow step


@pytest.fixture(scope="module")
def class_url(browser_ready, tmp_path_factory):
    with serve(tmp_path_factory.mktemp("streamlit") / "streamlit.log",
               app_args=("--class", "--presenter-key", KEY)) as (url, _server):
        yield url


def step_text(number: int, total: int = 7) -> str:
    return f"step {number} of {total}"


def wait_for_text(page, text: str, timeout_s: float = 600) -> None:
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout_s * 1000)


def following(page, number: int) -> bool:
    """Whether the page's class panel says it follows the class at step `number`."""
    panel = page.locator(".st-key-class_panel")
    return panel.count() > 0 and bool(re.search(rf"Following the class[\s\S]*{step_text(number)}",
                                                panel.first.inner_text()))


def watch_for_step(page, number: int, path: str) -> None:
    """Note, in the page itself, when its address is the step's page (`path`, "" for the default page) and its class
    panel follows step `number` (tests/browser/panel_watch.py)."""
    watch_panel(page, rf"Following the class[\s\S]*{step_text(number)}", path)


def press_and_time(presenter, students, key: str, number: int, path: str) -> list[float]:
    """Press `key` on the presenter's page; seconds until each student's page shows step `number` on `path`."""
    for student in students:
        watch_for_step(student, number, path)
    pressed = time.time()
    presenter.keyboard.press(key)
    seconds = [round(wait_until_seen(student, FOLLOW_WAIT_S) - pressed, 2) for student in students]
    time.sleep(1)  # let the step's page finish before the next press
    return seconds


def follow(presenter, students, number: int, path: str) -> list[float]:
    """Press → to step `number` (on `path`): the seconds until each student's page showed it."""
    return press_and_time(presenter, students, "ArrowRight", number, path)


def page_loads(students) -> list[int]:
    return [student.evaluate("() => performance.getEntriesByType('navigation').length") for student in students]


def test_three_students_follow_the_presenter(browser, class_url):
    presenter = new_page(browser)
    presenter.goto(f"{class_url}/lessons?key={KEY}")
    presenter.get_by_role("button", name="Start the lesson").wait_for()
    assert "key=" not in presenter.url  # the key left the address bar
    students = [new_page(browser) for _ in range(STUDENTS)]
    for student in students:
        student.goto(f"{class_url}/lessons?follow=1")
        wait_for_text(student, "your screen follows the teacher's lesson")
    wait_for_text(presenter, f"{STUDENTS} students follow")

    presenter.get_by_role("button", name="Start the lesson").click()
    for student in students:  # the first step: pages and the model warm up
        wait_for_text(student, step_text(1))
        wait_for_text(student, "Following the class")
    time.sleep(2)

    # Every step the presenter moves to with →: every following student's page shows it without reloading, on the
    # step's own page (steps 3 and 4 switch page: attention, then prediction).
    loads = page_loads(students)
    seconds = {2: follow(presenter, students, 2, "")}

    # one student explores on their own: the class moves on to step 3, they stay
    explorer, others = students[0], students[1:]
    explorer.get_by_role("button", name="Explore on my own").click()
    wait_for_text(explorer, "Exploring on your own")
    wait_for_text(presenter, f"{STUDENTS - 1} students follow", timeout_s=30)
    before = explorer.url
    seconds[3] = follow(presenter, others, 3, "/attention")
    time.sleep(1)
    assert explorer.url == before and "/attention" not in explorer.url
    wait_for_text(explorer, "the class is on step 3 of 7")
    assert not following(explorer, 3)

    explorer.get_by_role("button", name="Follow the class again").click()
    wait_for_text(explorer, "Following the class", timeout_s=60)
    wait_for_text(explorer, step_text(3))
    assert "/attention" in explorer.url
    time.sleep(2)

    seconds[4] = follow(presenter, students, 4, "")
    seconds[5] = follow(presenter, students, 5, "")
    print(f"seconds from the press to each student's page showing the step, per step: {seconds}")  # pytest -s
    assert page_loads(students) == loads  # no student's page was reloaded

    # a question with choices (step 5): the three browsers share this machine's address, so the server counts them
    # as one student (one answer per address: several tabs of one laptop never stuff the count); the last click wins
    counts = answer_in_turn(presenter, [(students[0], "Not necessarily"), (students[1], "I am not sure"),
                                        (students[2], "Yes, it is wrong"), (students[1], "Not necessarily")])
    assert "One answer per address" in counts
