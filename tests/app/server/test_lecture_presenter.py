"""The presenter in a lecture hall, through the real Home.py (AppTest) against a real redis-server: a presenter whose
app process died lands on another one (a fresh session there, the key from its browser) or opens the link again, and
is still the presenter at the class's step, with Next; "Start the lesson" never sends a class under way back to step
1; a press while the store does not answer is refused with one line and never lands later; no page shows a traceback
or a server path while the store is down.

Another process is played by forgetting this process's store and class (viz_app/server/singletons.py's
`cache_resource`s): the next browser session makes a new client and reads the class from the store alone."""
from __future__ import annotations

import secrets

import pytest

from app_helpers import as_read, no_exception
from redis_server import RedisServer, need_the_store
from viz_app.server import class_store, singletons, visitor
from viz_app.server.class_store import RedisClassRoom, connect

pytestmark = pytest.mark.slow  # several sessions of the app each
PRESS_NOT_SENT = "The class's store does not answer: your press was not sent."


@pytest.fixture
def hall(tmp_path, monkeypatch):
    """Class mode with the class in a real store, a key of this test's own; yields (store, key)."""
    need_the_store()
    server = RedisServer(tmp_path).start()
    key = secrets.token_urlsafe(12)
    monkeypatch.setenv(class_store.STORE_VARIABLE, server.url)
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    another_process()
    yield server, key
    server.kill()
    another_process()


def another_process() -> None:
    """What a process keeps of the store and the class, forgotten: the next browser session is as on another process."""
    for kept in (singletons.store, singletons.class_room, singletons.heavy_jobs):
        kept.clear()


def the_class(server: RedisServer, key: str):
    """The class as the store holds it, read on a connection of its own."""
    return RedisClassRoom(connect(server.url), key).current


def stage(at) -> str:
    return " ".join(str(caption.value) for caption in at.caption)


def every_text(at) -> str:
    """Everything the page shows, as a reader sees it (Markdown's escapes dropped)."""
    return " ".join(as_read(str(element.value)) for kind in ("markdown", "caption", "info", "warning", "error", "text",
                                                             "code") for element in at.get(kind))


def test_a_presenter_on_another_process_is_still_the_presenter_at_the_class_step(open_app, hall, monkeypatch,
                                                                                   unreachable_hub):
    server, key = hall
    first = open_app("lessons", key=key)
    first.button(key="lesson_start").click().run()
    for _ in range(2):
        first.button(key="lesson_next").click().run()
    no_exception(first)
    assert the_class(server, key).step == 2 and "step 3 of" in stage(first)

    another_process()  # the presenter link opened again, on the other process
    again = open_app("lessons", key=key)
    no_exception(again)
    assert "step 3 of" in stage(again) and "Students open" in every_text(again)
    assert not again.button(key="lesson_next").disabled

    another_process()  # the presenter's tab reconnects to the other process: its browser still holds the key
    monkeypatch.setattr(visitor, "presenter_cookie", lambda: key)
    back = open_app("lessons")
    no_exception(back)
    assert "step 3 of" in stage(back) and "Follow the class again" not in every_text(back)
    back.button(key="lesson_next").click().run()
    no_exception(back)
    assert the_class(server, key).step == 3 and "step 4 of" in stage(back)


def test_start_on_a_class_under_way_goes_on_from_its_step(open_app, hall, unreachable_hub):
    server, key = hall
    waiting = open_app("lessons", key=key)  # a presenter tab on the overview before the lesson starts
    other = open_app("lessons", key=key)
    other.button(key="lesson_start").click().run()
    for _ in range(3):
        other.button(key="lesson_next").click().run()
    waiting.button(key="lesson_start").click().run()
    no_exception(waiting)
    assert the_class(server, key).step == 3  # not back to the first step
    assert "step 4 of" in stage(waiting)


def test_a_press_while_the_store_is_down_is_refused_and_never_lands_later(open_app, hall, unreachable_hub):
    server, key = hall
    presenter = open_app("lessons", key=key)
    presenter.button(key="lesson_start").click().run()
    presenter.button(key="lesson_next").click().run()
    assert the_class(server, key).step == 1
    server.kill()
    presenter.button(key="lesson_next").click().run()
    no_exception(presenter)
    text = every_text(presenter)
    assert PRESS_NOT_SENT in text and "Traceback" not in text and "viz_app/" not in text
    server.start()
    presenter.run()  # the presenter's page asks the store again
    presenter.run()
    no_exception(presenter)
    assert the_class(server, key).step == 1  # the refused press did not land
    assert "step 2 of" in stage(presenter)


def test_a_student_reads_one_calm_line_while_the_store_is_down(open_app, hall, monkeypatch, unreachable_hub):
    server, key = hall
    presenter = open_app("lessons", key=key)
    presenter.button(key="lesson_start").click().run()
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")
    student = open_app("lessons", follow=1)
    server.kill()
    student.run()
    no_exception(student)
    text = every_text(student)
    assert "The class's store does not answer" in text and "Traceback" not in text and "viz_app/" not in text


def test_the_counts_are_unknown_while_the_store_is_down(hall):
    server, key = hall
    from viz_app.lessons.format import builtin_lessons

    client = connect(server.url)
    room = RedisClassRoom(client, key)
    version = room.show(key, next(iter(builtin_lessons().values())), 0).version
    room.heartbeat("a-student", True)
    assert room.answer("10.0.0.7", "yes", version).value == "counted"
    assert (room.followers(), room.answers(), room.refused()) == (1, {"yes": 1}, 0)
    assert class_store.answering(client)
    server.kill()
    assert not class_store.answering(client)  # a page that said so asks this to draw itself again
    assert (room.followers(), room.answers(), room.refused()) == (None, None, None)  # unknown, not 0
    assert room.answer("10.0.0.8", "no", version).value == "not sent"
