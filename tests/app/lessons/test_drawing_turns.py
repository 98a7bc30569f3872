"""When the class moves, a process draws the new step for a few of its students at a time
(viz_app/lessons/following.py's `drawing_turn`, around viz_app/Home.py's drawing): at most that many blocks run at
once, the others wait their turn, one that waits too long runs anyway, a block that fails gives its turn back, and a
run that is not a class step never waits. Threads stand for the students' runs."""
from __future__ import annotations

import threading
import time

import pytest

from viz_app.lessons import following


def run_side_by_side(count: int, turns: threading.Semaphore, waits: bool = True, hold_s: float = 0.1,
                     wait_s: float = 10.0) -> tuple[int, list[float]]:
    """`count` blocks started at once; the most that ran at the same time and when each finished."""
    lock, running, most, finished = threading.Lock(), [0], [0], []
    start = threading.Barrier(count)
    began = time.monotonic()

    def block() -> None:
        start.wait()
        with following.turn_if(waits, turns, wait_s):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(hold_s)
            with lock:
                running[0] -= 1
        finished.append(time.monotonic() - began)

    threads = [threading.Thread(target=block) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return most[0], sorted(finished)


def test_a_few_at_a_time_and_the_first_ones_early():
    most, finished = run_side_by_side(8, threading.BoundedSemaphore(2))
    assert most == 2
    assert finished[-1] >= 0.38  # eight blocks of 0.1 s two at a time: four rounds at least


def test_a_run_that_is_not_a_class_step_never_waits():
    turns = threading.BoundedSemaphore(1)
    turns.acquire()  # every turn taken
    most, finished = run_side_by_side(4, turns, waits=False, wait_s=30.0)
    assert most == 4 and finished[-1] < 15  # none waited for a turn (that wait would be 30 s)


def test_a_page_that_waited_too_long_is_drawn_anyway():
    turns = threading.BoundedSemaphore(1)
    turns.acquire()  # a turn that is never given back (its run hung)
    most, finished = run_side_by_side(3, turns, wait_s=0.2)
    assert most == 3 and finished[0] >= 0.2  # each waited its 0.2 s, then all three ran
    turns.release()  # nothing but the one taken above was left to give back: no turn was released twice
    with pytest.raises(ValueError):
        turns.release()


def test_a_block_that_fails_gives_its_turn_back():
    turns = threading.BoundedSemaphore(1)
    with pytest.raises(RuntimeError):
        with following.turn_if(True, turns, 1.0):
            raise RuntimeError("the page failed")
    assert turns.acquire(timeout=0)
