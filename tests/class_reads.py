"""Reading a class while its presenter moves it: the pairs a student's page reads (ClassRoom.now), for the tests that
every pair matches, on the in-memory room and on the lecture hall's store."""
from __future__ import annotations

import threading
import time
from typing import Callable


def reads_while_moving(read: Callable[[], tuple], move: Callable[[int], object], versions: int = 20,
                       timeout_s: float = 60) -> list[tuple]:
    """`read()` in a thread of its own until it has seen the class at `versions` versions (a loaded machine takes
    longer; at most `timeout_s`), while this thread calls `move(n)` for n = 0, 1, 2, ...: every pair read."""
    pairs, seen = [], set()
    deadline = time.monotonic() + timeout_s

    def reading():
        while len(seen) < versions and time.monotonic() < deadline:
            pairs.append(read())
            seen.add(pairs[-1][0])

    reader = threading.Thread(target=reading)
    reader.start()
    try:
        move_number = 0
        while reader.is_alive():
            move(move_number)
            move_number += 1
    finally:
        reader.join()
    assert len(seen) >= versions, f"the reads saw the class at {len(seen)} versions"
    return pairs
