"""The server's training room (viz_app/server/training_room.py): one run at a time, a second caller told it is busy,
a stop frees it and leaves no folder behind, finished runs kept per settings, and the model written as a folder
the app can load; a run belongs to the session that started it, and goes with its folder once that session is
gone (a fake of Streamlit's list of connected sessions and a fake clock stand in for the server); a run is priced
before it starts (its passes counted against the model's own watcher) and counted in its payer's hour at that price."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import bert
from bert.pretraining.miniature import TinySettings, tokenizer, train_tiny, training_cost
from bert.stopping import watching
from viz_app.server import sessions
from viz_app.server.access import Role
from viz_app.server.budget import Verdict, decide
from viz_app.server.heavy_jobs import HeavyJobs
from viz_app.server.settings import ServerSettings
from viz_app.server.training_room import TinyTrainingRuns

from training_settings import LONG, QUICK

WAIT = 600  # seconds, at most: the CPUs are shared


@pytest.mark.slow
def test_one_run_at_a_time_and_a_stop_frees_the_room(tmp_path):
    room = TinyTrainingRuns(tmp_path)
    status, first = room.start(LONG, "session A")
    assert status == "started"
    status, holder = room.start(QUICK, "session B")
    assert status == "busy" and holder is first, "the second caller is told who holds the room"
    first.stop.set()
    assert first.finished.wait(WAIT) and first.error is None
    assert first.log.stopped_at is not None and first.log.stopped_at < LONG.steps
    assert room.current is None and room.finished(LONG) is None, "a stopped run is not kept as the run of its settings"
    assert first.model_folder is None and not any(tmp_path.iterdir()), "a stopped run leaves no folder behind"


@pytest.mark.slow
def test_a_finished_run_is_kept_and_opens_as_a_model(tmp_path):
    room = TinyTrainingRuns(tmp_path)
    status, job = room.start(QUICK, "session A")
    assert status == "started" and job.finished.wait(WAIT) and job.error is None
    assert room.start(QUICK, "session B") == ("finished", job), "the same settings and seed come back at once"
    model, tokenizer = bert.load_pretrained(job.model_folder)
    assert model.config.num_layers == 1 and model.config.hidden_size == 32 and tokenizer.vocab_size == 8000
    assert model.has_mlm_head and not model.config.causal


class Server:
    """Which sessions have a browser connected, and the time: what the room asks Streamlit's runtime and its clock."""

    def __init__(self, *connected: str):
        self.connected, self.now = set(connected), 1000.0

    def is_connected(self, session: str) -> bool:
        return session in self.connected

    def clock(self) -> float:
        return self.now


@pytest.mark.slow
def test_a_run_whose_session_is_gone_stops_and_leaves_no_folder(tmp_path):
    server = Server("session A")
    room = TinyTrainingRuns(tmp_path, connected=server.is_connected, grace_s=0.0, clock=server.clock)
    status, job = room.start(LONG, "session A")
    assert status == "started"
    server.connected.clear()  # the tab was closed, and may not come back (no grace here)
    assert job.finished.wait(WAIT) and job.error is None
    assert job.log.stopped_at is not None and job.log.stopped_at < LONG.steps, "the loop stopped it"
    assert room.current is None and room.finished(LONG) is None
    assert job.model_folder is None and not any(tmp_path.iterdir()), "its folder went with it"


@pytest.mark.slow
def test_a_finished_run_goes_with_its_folder_once_its_session_is_gone(tmp_path):
    server = Server("session A", "session B")
    room = TinyTrainingRuns(tmp_path, connected=server.is_connected, grace_s=120.0, clock=server.clock)
    status, job = room.start(QUICK, "session A")
    assert status == "started" and job.finished.wait(WAIT) and job.error is None
    folder = Path(job.model_folder)
    assert folder.is_dir()

    server.connected.discard("session A")  # its browser went away: it may come back within the grace
    room.sweep()  # session B opens the training room
    server.now += 119
    room.sweep()
    assert room.finished(QUICK) is job and folder.is_dir(), "kept while the session may still reconnect"
    server.connected.add("session A")  # it did
    room.sweep()
    server.connected.discard("session A")
    server.now += 500
    room.sweep()  # away again, only just noticed: the grace starts again
    assert room.finished(QUICK) is job and folder.is_dir()
    server.now += 120
    room.sweep()
    assert room.finished(QUICK) is None and job.model_folder is None, "gone for good: the run is dropped"
    assert not any(tmp_path.iterdir()), "and its folder removed"
    status, again = room.start(QUICK, "session B")
    assert status == "started", "the same settings train again for whoever asks"
    assert again.finished.wait(WAIT)


def test_streamlits_runtime_says_which_sessions_are_connected(monkeypatch):
    assert sessions.is_connected("any") is True  # no server running: nothing ends a session
    monkeypatch.setattr(sessions.runtime, "exists", lambda: True)
    monkeypatch.setattr(sessions.runtime, "get_instance",
                        lambda: SimpleNamespace(is_active_session=lambda session: session == "connected"))
    assert sessions.is_connected("connected") and not sessions.is_connected("closed tab")
    with pytest.raises(sessions.NoSessionError):
        sessions.this_session()  # not inside a run of the app's script


@pytest.mark.slow
def test_a_run_stops_at_its_time_limit_and_the_queue_moves_on(tmp_path):
    server = Server("session A", "session B", "session C")
    room = TinyTrainingRuns(tmp_path, connected=server.is_connected, clock=server.clock)
    status, first = room.start(LONG, "session A", limit_s=60.0, queue=True)
    assert status == "started"
    assert room.start(QUICK, "session B", limit_s=60.0, queue=True) == ("queued", first)
    assert room.start(LONG, "session C", queue=True) == ("queued", first)
    assert room.start(QUICK, "session B", queue=True) == ("queued", first)  # asking again keeps one place
    assert (room.place("session B"), room.place("session C"), room.place("session A")) == (1, 2, None)
    server.connected.discard("session C")  # gone while waiting: skipped when the slot frees
    server.now += 61.0  # a minute of training: past session A's limit
    assert first.finished.wait(WAIT) and first.timed_out
    assert first.log.stopped_at is not None and first.log.stopped_at < LONG.steps
    second = room.current
    assert second is not None and second.owner == "session B" and second.settings == QUICK  # started by itself
    assert second.finished.wait(WAIT) and not second.timed_out and room.finished(QUICK) is second
    assert room.current is None and room.place("session C") is None


def test_the_queue_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("viz_app.server.training_room.MAX_QUEUE", 2)
    room = TinyTrainingRuns(tmp_path)
    room.current = holder = SimpleNamespace(owner="session A")  # a run holding the slot (nothing trains)
    assert [room.start(QUICK, f"session {n}", queue=True)[0] for n in "BCD"] == ["queued", "queued", "full"]
    assert room.start(QUICK, "session B", queue=True) == ("queued", holder)  # one already waiting keeps its place
    assert room.start(QUICK, "session D")[0] == "busy"  # without queueing: told who holds the slot
    room.leave_queue("session B")
    assert room.place("session C") == 1


def test_a_run_is_priced_before_it_starts_at_the_passes_it_makes(tmp_path):
    """training_cost counts the rows run forward (training, each evaluation's held-out batches and guesses, the
    cloze set at the end) and the training rows' backward passes; counted here with the model's own watcher."""
    rows = []
    with watching(rows.append):
        log, model, _ = train_tiny(QUICK, tmp_path)
    cost = training_cost(QUICK)
    assert cost.forward_passes == sum(rows) and cost.backward_passes == QUICK.steps * QUICK.batch_size
    assert cost.tokens == QUICK.max_length
    parameters = sum(p.numel() for p in model.parameters())
    assert cost.peak_bytes >= 4 * 4 * parameters  # weights, gradients and Adam's two moments, in float32
    assert cost.work(QUICK.bert_config(tokenizer().vocab_size)) > 0


def test_a_students_run_over_the_budget_is_refused_with_its_numbers():
    cost = training_cost(TinySettings(layers=4, hidden=256, heads=4, steps=3000))
    decision = decide(cost, TinySettings(layers=4, hidden=256, heads=4).bert_config(tokenizer().vocab_size),
                      Role.STUDENT, ServerSettings())
    assert decision.verdict is Verdict.REFUSE and "steps" in decision.message and "forward passes" in decision.message


@pytest.mark.slow
def test_a_run_takes_its_slot_at_its_real_work_in_its_payers_hour(tmp_path):
    jobs = HeavyJobs(1, connected=lambda session: True)
    room = TinyTrainingRuns(tmp_path, jobs=jobs)
    status, job = room.start(QUICK, "session A", payer="address 192.0.2.7")
    assert status == "started" and job.finished.wait(WAIT) and job.error is None
    work = training_cost(QUICK).work(QUICK.bert_config(tokenizer().vocab_size))
    assert work > 0 and jobs.spent_this_hour("address 192.0.2.7") == pytest.approx(work)
