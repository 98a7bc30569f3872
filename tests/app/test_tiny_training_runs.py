"""The server's training room (viz_app/tiny_training.py): one run at a time, a second caller told it is busy,
a stop frees it and leaves no folder behind, finished runs kept per settings, and the model written as a folder
the app can load."""
from __future__ import annotations

import pytest

import bert
from bert.pretraining.miniature import TinySettings
from viz_app.tiny_training import TinyTrainingRuns

LONG = TinySettings(layers=1, hidden=32, heads=2, steps=3000, batch_size=8, eval_every=1000, eval_batches=1)
QUICK = TinySettings(layers=1, hidden=32, heads=2, steps=4, batch_size=8, eval_every=2, eval_batches=1, warmup_steps=1)
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
