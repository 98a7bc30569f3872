"""The class the presenter moves (viz_app/server/class_room.py): the key, versions, followers by heartbeat, answers,
and many sessions' threads at once."""
import sys
import threading
from dataclasses import dataclass

import pytest

from class_reads import reads_while_moving
from viz_app.server.class_room import HEARTBEAT_WINDOW_S, Answer, ClassRoom, NotPresenterError, class_links


@dataclass(frozen=True)
class Lesson:  # what the room needs of a lesson: its steps
    name: str
    steps: tuple


SIX_STEPS = Lesson("six", tuple(range(6)))


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_random_key_per_room_unless_the_teacher_sets_one():
    first, second = ClassRoom(), ClassRoom()
    assert first.key != second.key and len(first.key) >= 22
    assert ClassRoom("the-teachers-key").key == "the-teachers-key"


def test_only_the_key_moves_the_class():
    room = ClassRoom("the-teachers-key")
    for wrong in (None, "", "the-teachers-ke", "the-teachers-key2", room.key.upper()):
        assert not room.is_presenter_key(wrong)
        with pytest.raises(NotPresenterError):
            room.show(wrong, SIX_STEPS, 0)
        with pytest.raises(NotPresenterError):
            room.end(wrong)
    assert room.current is None and room.version == 0
    shown = room.show("the-teachers-key", SIX_STEPS, 2, model="minilm")
    assert (shown.lesson, shown.step, shown.version, shown.model) == (SIX_STEPS, 2, 1, "minilm")
    assert room.current == shown


def test_every_change_bumps_the_version():
    room = ClassRoom("the-teachers-key")
    for step in (0, 1, 2, 1):
        room.show(room.key, SIX_STEPS, step)
    assert (room.current.step, room.version) == (1, 4)
    room.end(room.key)
    assert room.current is None and room.version == 5
    with pytest.raises(IndexError, match="6 steps"):
        room.show(room.key, SIX_STEPS, 6)
    assert room.version == 5


def test_followers_are_counted_by_heartbeat():
    clock = Clock()
    room = ClassRoom(clock=clock)
    for student in range(5):
        room.heartbeat(f"student {student}", following=True)
    room.heartbeat("explorer", following=False)
    assert room.followers() == 5
    clock.now += HEARTBEAT_WINDOW_S / 2
    room.heartbeat("student 0", following=False)  # explores on their own now
    room.heartbeat("student 1", following=True)
    assert room.followers() == 4
    clock.now += HEARTBEAT_WINDOW_S * 0.75  # students 2-4 not heard from for longer than the window: tabs closed
    assert room.followers() == 1


def test_one_answer_per_student_for_the_step_showing():
    room = ClassRoom()
    assert room.answer("a", "yes", room.version) is Answer.MOVED_ON  # no lesson yet
    shown = room.show(room.key, SIX_STEPS, 3)
    assert room.answer("a", "yes", shown.version) is room.answer("b", "yes", shown.version) is Answer.COUNTED
    assert room.answer("c", "no", shown.version) is Answer.COUNTED
    assert room.answer("a", "no", shown.version) is Answer.COUNTED  # a changes their mind: still one answer
    assert room.answers() == {"yes": 1, "no": 2} and room.answer_of("a") == "no"
    moved = room.show(room.key, SIX_STEPS, 4)
    assert room.answers() == {}  # a new step starts afresh
    assert room.answer("b", "late", shown.version) is Answer.MOVED_ON  # an answer to the step before is dropped
    assert room.answer("b", "new", moved.version) is Answer.COUNTED and room.answers() == {"new": 1}


def test_many_threads_at_once():
    room = ClassRoom()
    start = threading.Barrier(31)
    failures = []

    def student(number):
        start.wait()
        try:
            for _ in range(200):
                room.heartbeat(f"student {number}", following=number % 3 != 0)
                current = room.current
                if current is not None:
                    room.answer(f"student {number}", "yes", current.version)
                room.followers()
        except Exception as error:  # noqa: BLE001 - any error in a thread is the failure reported
            failures.append(error)

    threads = [threading.Thread(target=student, args=(n,)) for n in range(30)]
    for thread in threads:
        thread.start()
    start.wait()
    for step in range(100):
        room.show(room.key, SIX_STEPS, step % 6)
    for thread in threads:
        thread.join()
    assert failures == []
    assert room.version == 100 and room.current.step == 99 % 6
    assert room.followers() == 20
    assert sum(room.answers().values()) <= 30


def test_links():
    links = class_links("http://192.168.1.20:8501/", "s3cret-key")
    assert links.presenter == "http://192.168.1.20:8501/lessons?key=s3cret-key"
    assert links.students == "http://192.168.1.20:8501/lessons?follow=1"


def test_memory_stays_bounded(monkeypatch):
    monkeypatch.setattr("viz_app.server.class_room.MAX_SESSIONS", 10)
    room = ClassRoom()
    for student in range(25):
        room.heartbeat(f"student {student}", following=True)
    room.heartbeat("student 3", following=True)  # heard again: kept as the newest
    assert room.followers() == 10  # the ten heard from last
    shown = room.show(room.key, SIX_STEPS, 0)
    results = [room.answer(f"student {student}", "yes", shown.version) for student in range(25)]
    assert results == [Answer.COUNTED] * 10 + [Answer.FULL] * 15  # refused, and said so: never dropped silently
    assert room.answers() == {"yes": 10} and room.refused() == 15
    assert room.answer("student 3", "no", shown.version) is Answer.COUNTED  # one already counted may change theirs
    room.show(room.key, SIX_STEPS, 1)
    assert room.refused() == 0


def test_the_class_is_read_as_a_matching_pair_while_the_presenter_moves():
    """A student's page reads the class once a run (`now`): the version it tells its listener is drawn is the
    version of the step it drew, even with the presenter moving from another thread meanwhile."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the two threads take turns often
    room = ClassRoom("the-teachers-key")

    def move(number: int) -> None:
        room.end("the-teachers-key") if number % 7 == 6 else room.show("the-teachers-key", SIX_STEPS, number % 6)

    try:
        pairs = reads_while_moving(room.now, move)
    finally:
        sys.setswitchinterval(interval)
    assert all(step is None or step.version == version for version, step in pairs)
    assert room.now() == (room.version, room.current)
