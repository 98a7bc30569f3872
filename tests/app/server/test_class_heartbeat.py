"""A following student's panel tells the class it is there every HEARTBEAT_S, not at every poll, and at once when the
student starts or stops following: the presenter's count stays right while a hall of students asks the store less."""
from __future__ import annotations


import pytest

from app_helpers import ONE_STEP, class_showing, no_exception
from viz_app.lessons import following
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # six runs of one session of the app



@pytest.fixture
def room(monkeypatch):
    return class_showing(monkeypatch, ONE_STEP, "one_step")


def test_a_student_is_heard_every_heartbeat_s_and_at_once_when_they_stop_following(open_app, monkeypatch, room):
    heard: list[bool] = []
    monkeypatch.setattr(room, "heartbeat", lambda session, follows: heard.append(follows))
    monkeypatch.setattr(visitor, "address", lambda: "10.0.0.31")
    monkeypatch.setattr(following, "HEARTBEAT_S", 3600.0)  # every poll of this test falls within one heartbeat
    tab = open_app("lessons", follow=1)
    for _ in range(3):
        tab.run()  # three more polls
    no_exception(tab)
    assert heard == [True]  # heard once, following
    tab.button(key="class_explore").click().run()
    tab.run()
    no_exception(tab)
    assert heard == [True, False]  # at once when they stop following, then not again within the heartbeat
    monkeypatch.setattr(following, "HEARTBEAT_S", 0.0)
    tab.run()
    tab.run()
    assert heard == [True, False, False, False]  # once the heartbeat is due, at every poll
