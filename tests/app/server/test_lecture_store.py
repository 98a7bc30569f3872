"""The lecture hall's store (viz_app/server/class_store.py) against a real redis-server: what the presenter shows on
one process is what another process reads, answers count once per voter whichever process and however many tabs
cast them, an address's hour of budget is one across processes, a store killed mid-lesson comes back at the
presenter's step with every acknowledged answer, a presenter's move while it is down is refused (never written
later), and a store that does not answer at start is one line, exit 2.

Two "processes" are two clients, each with its own connection, as two app processes have; the three tabs of one
address are three real Python processes racing to answer."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from class_reads import reads_while_moving
from redis_server import RedisServer, free_port, need_the_store
from viz_app.lessons.format import builtin_lessons
from viz_app.server.class_room import HEARTBEAT_WINDOW_S, Answer, NotPresenterError
from viz_app.server.heavy_jobs import HeavyJobs

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]
KEY = "a-key-for-the-lecture-hall"


@pytest.fixture()
def store(tmp_path):
    need_the_store()
    server = RedisServer(tmp_path).start()
    yield server
    server.kill()


def process(url: str, key: str | None = KEY):
    """One app process's view of the class: its own connection to the store."""
    from viz_app.server.class_store import RedisClassRoom, connect

    return RedisClassRoom(connect(url), key)


@pytest.fixture(scope="module")
def lesson():
    return next(iter(builtin_lessons().values()))


def test_a_step_shown_on_one_process_is_read_on_another(store, lesson):
    first, second = process(store.url), process(store.url, key=None)
    assert second.key == KEY and second.is_presenter_key(KEY)
    assert second.current is None and second.version == 0
    with pytest.raises(NotPresenterError):
        second.show("not-the-key", lesson, 0)
    shown = first.show(KEY, lesson, 2, model="minilm")
    assert second.version == shown.version == 1
    step = second.current
    assert (step.lesson, step.step, step.model, step.version) == (lesson, 2, "minilm", 1)
    first.end(KEY)
    assert second.current is None and second.version == 2


def test_a_poll_reads_the_pickled_step_only_when_the_class_moved(store, lesson):
    presenter, student = process(store.url), process(store.url, key=None)

    def steps_read() -> int:  # the store's own count of the reads that fetch the pickled step
        return presenter._client.info("commandstats").get("cmdstat_hmget", {}).get("calls", 0)

    presenter.show(KEY, lesson, 1)
    assert student.current.step == 1
    before = steps_read()
    assert [student.current.step for _ in range(5)] == [1] * 5  # five polls, the class where it was
    assert steps_read() == before
    presenter.show(KEY, lesson, 3, model="minilm")
    assert (student.current.step, student.current.model) == (3, "minilm") and steps_read() == before + 1
    presenter.end(KEY)
    assert student.current is None and student.current is None and steps_read() == before + 2


def test_the_class_is_read_as_a_matching_pair_while_the_presenter_moves(store, lesson):
    """ClassRoom.now on the store: the version a student's page tells its listener is drawn is the version of the
    step it drew (one command reads both), with another process's presenter moving meanwhile."""
    presenter, student = process(store.url), process(store.url, key=None)
    pairs = reads_while_moving(student.now, lambda number: presenter.show(KEY, lesson, number % len(lesson.steps))
                               if number % 5 else presenter.end(KEY))
    assert all(step is None or step.version == version for version, step in pairs)
    assert student.now() == (presenter.version, presenter.current)


def test_followers_heard_on_any_process_count_once(store):
    first, second = process(store.url), process(store.url)
    first.heartbeat("session-a", True)
    second.heartbeat("session-b", True)
    second.heartbeat("session-a", True)  # the same session again: still one
    first.heartbeat("session-c", False)  # exploring on their own
    assert first.followers() == second.followers() == 2
    second.heartbeat("session-b", False)
    assert first.followers() == 1


VOTE = """
import sys, time
from viz_app.server.class_store import RedisClassRoom, connect
room = RedisClassRoom(connect(sys.argv[1]), sys.argv[2])
version = int(sys.argv[3])
while time.time() < float(sys.argv[4]):
    time.sleep(0.001)
print(room.answer("10.0.0.7", sys.argv[5], version).value)
"""


def test_three_tabs_of_one_address_on_two_processes_cast_one_vote(store, lesson):
    presenter = process(store.url)
    version = presenter.show(KEY, lesson, 0).version
    start_at = time.time() + 3  # the three tabs click at the same moment
    tabs = [subprocess.Popen([sys.executable, "-c", VOTE, store.url, KEY, str(version), str(start_at), choice],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, text=True)
            for choice in ("yes", "no", "yes")]
    outcomes = [tab.communicate(timeout=60)[0].strip() for tab in tabs]
    assert outcomes == ["counted"] * 3
    other = process(store.url)
    assert sum(other.answers().values()) == 1
    assert other.answer_of("10.0.0.7") in ("yes", "no")
    assert other.answer("10.0.0.8", "no", version) is Answer.COUNTED
    assert other.answers() == Counter(other.answer_of(voter) for voter in ("10.0.0.7", "10.0.0.8"))
    assert other.answer("10.0.0.9", "no", version - 1) is Answer.MOVED_ON


def test_an_address_hour_of_budget_is_shared_by_every_process(store):
    from viz_app.server.class_store import RedisSpending, connect

    first = HeavyJobs(1, connected=lambda session: True, spending=RedisSpending(connect(store.url)))
    second = HeavyJobs(1, connected=lambda session: True, spending=RedisSpending(connect(store.url)))
    first._spending.add("10.0.0.7", 51_100.0)
    second._spending.add("10.0.0.7", 60_000.0)
    second._spending.add("10.0.0.8", 512.0)
    assert first.spent_this_hour("10.0.0.7") == second.spent_this_hour("10.0.0.7") == 111_100.0
    assert first.spent_this_hour("10.0.0.8") == 512.0
    short = RedisSpending(connect(store.url), hour_s=1.0, namespace="short")  # an "hour" of one second
    short.add("10.0.0.7", 100.0)
    time.sleep(1.2)
    short.add("10.0.0.7", 7.0)
    assert short.spent_this_hour("10.0.0.7") == 7.0


def test_the_store_killed_mid_lesson_comes_back_at_the_presenter_step_with_its_answers(store, lesson):
    first, second = process(store.url), process(store.url)
    version = first.show(KEY, lesson, 3).version
    acknowledged = {f"10.0.1.{n}": ("yes" if n % 3 else "no") for n in range(40)}
    for voter, choice in acknowledged.items():
        assert second.answer(voter, choice, version) is Answer.COUNTED
    assert second.version == version and second.current.step == 3  # a student's page polled
    store.kill()
    assert second.version == version  # while it is down: the last value seen, no error
    assert second.current.step == 3
    store.start()
    time.sleep(0.2)
    assert second.version == version and second.current.step == 3
    assert {voter: second.answer_of(voter) for voter in acknowledged} == acknowledged
    assert first.show(KEY, lesson, 4).version == version + 1  # the presenter goes on


def test_heartbeats_outside_the_window_do_not_count(store):
    room = process(store.url)
    room.heartbeat("session-a", True)
    assert room.followers() == 1
    assert HEARTBEAT_WINDOW_S <= 10
    time.sleep(HEARTBEAT_WINDOW_S + 0.5)
    assert room.followers() == 0


def test_a_store_that_does_not_answer_at_start_is_one_line_and_exit_2():
    need_the_store()
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    done = subprocess.run([sys.executable, "-m", "viz_app.server.class_links", "--class"], cwd=ROOT, text=True,
                          capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "BERT_INSIDE_STORE": url})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: the class's store at {url} does not answer")


def test_the_presenter_move_while_the_store_is_down_is_refused_and_never_lands_later(store, lesson):
    from viz_app.server.class_store import StoreUnavailableError

    presenter, student = process(store.url), process(store.url)
    version = presenter.show(KEY, lesson, 1).version
    assert student.current.step == 1
    store.kill()
    with pytest.raises(StoreUnavailableError):  # refused: the presenter's page says it was not sent
        presenter.show(KEY, lesson, 2)
    with pytest.raises(StoreUnavailableError):
        presenter.end(KEY)
    assert student.answer("10.0.2.1", "yes", version) is Answer.NOT_SENT  # the button stays unlit
    assert student.current.step == 1  # the class stays where it was
    store.start()
    for room in (presenter, student):  # every read a page makes once the store is back
        room.followers(), room.answers(), room.current, room.version
    assert student.current.step == 1 and student.version == version  # neither refused move landed
    assert student.answer_of("10.0.2.1") is None
    assert presenter.show(KEY, lesson, 2).version == version + 1  # pressed again: applied


HOLD = """
import sys, time
from viz_app.server.class_store import RedisSlot, connect
with RedisSlot(connect(sys.argv[1]), lease_s=1.5).held("training:a-session") as held:
    print("held", flush=True)
    time.sleep(600)
"""


def test_the_training_room_slot_is_one_for_the_hall_and_freed_when_its_process_dies(store):
    from viz_app.server.class_store import RedisSlot, connect

    holder = subprocess.Popen([sys.executable, "-c", HOLD, store.url], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        other = RedisSlot(connect(store.url), lease_s=1.5, wait_step_s=0.1)
        time.sleep(2)  # past one lease: the holder renews it
        assert other.holder().startswith("training:a-session:")
        asked = [0]

        def give_up() -> bool:
            asked[0] += 1
            return asked[0] > 5

        with other.held("training:b-session", give_up) as held:
            assert held is False  # the other process's run holds it: this one waits, then gives up
        holder.kill()  # the process dies without releasing it
        holder.wait(timeout=10)
        with other.held("training:b-session", lambda: False) as held:  # its lease runs out within 1.5 s
            assert held is True and other.holder().startswith("training:b-session:")
        assert other.holder() is None  # released at the end of the block
    finally:
        holder.kill()


def test_two_processes_training_rooms_train_one_run_at_a_time(store, tmp_path):
    from viz_app.server.class_store import RedisSlot, connect
    from viz_app.server.training_room import TinyTrainingRuns

    from training_settings import LONG, QUICK

    slot = RedisSlot(connect(store.url))
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    first, second = (TinyTrainingRuns(tmp_path / name, hall_slot=RedisSlot(connect(store.url), wait_step_s=0.1))
                     for name in ("a", "b"))
    _, training = first.start(LONG, "session A")
    deadline = time.monotonic() + 60
    while slot.holder() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert slot.holder().startswith("training:session A:")
    status, waiting = second.start(QUICK, "session B")
    assert status == "started"  # in its own process; it waits for the hall's slot
    time.sleep(3)
    assert waiting.log is None and not waiting.finished.is_set()
    training.stop.set()
    assert training.finished.wait(300) and waiting.finished.wait(300)
    assert training.log.stopped_at is not None  # stopped, not finished
    assert waiting.error is None and waiting.step == QUICK.steps  # it trained once the other run let go
    assert slot.holder() is None
