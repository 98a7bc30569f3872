"""PyTorch's threads are the server's, set once at start (viz_app/server/threads.py): two overlapping runs of a
page's computations and a live training run neither change them while they run nor leave them changed.

`torch.set_num_threads` is process-wide, so the runs are watched with a spy on it: any call from a run is a
change another visitor's pass would see."""
from __future__ import annotations

import threading

import pytest
import torch

from bert.analysis.probing.structural_probe import StructuralProbeSettings, fit_structural_probes
from bert.analysis.probing.treebank import TreebankSentence
from bert.analysis.probing.word_features import WordFeatures
from bert.pretraining.successors import ComparisonSettings
from viz_app.specs.how_bert_was_trained.successors import RUNS, RunsWork
from viz_app.server import threads
from viz_app.server.settings import ServerSettings
from viz_app.server.training_room import TinyTrainingRuns

from training_settings import QUICK

QUICK_SUCCESSORS = ComparisonSettings(steps=4, eval_every=2, sentences=32, eval_batches=2, batch_size=8)
TEXT = "The man went to the store. He bought a gallon of milk. Then he walked home in the rain."
WAIT = 600  # seconds, at most: the CPUs are shared


def test_the_cores_are_shared_out_between_the_heavy_slots_and_the_light_pages():
    assert threads.server_threads(ServerSettings(heavy_jobs=1), cores=2) == 1
    assert threads.server_threads(ServerSettings(heavy_jobs=1), cores=16) == 8
    assert threads.server_threads(ServerSettings(heavy_jobs=3), cores=16) == 4
    assert threads.server_threads(ServerSettings(heavy_jobs=40), cores=2) == 1, "at least one"
    assert threads.server_threads(ServerSettings(threads=3), cores=2) == 3, "the teacher's setting wins"


def test_the_first_call_decides_and_later_ones_change_nothing(monkeypatch):
    calls = []
    monkeypatch.setattr(threads, "_decided", [])
    monkeypatch.setattr(torch, "set_num_threads", calls.append)
    assert threads.set_once(ServerSettings(threads=3)) == 3
    assert threads.set_once(ServerSettings(threads=5)) == 3
    assert calls == [3]


def structural_features():
    """A small treebank's word vectors: 40 sentences of 6 words, chain trees, random vectors."""
    generator = torch.Generator().manual_seed(0)
    sentences = tuple(TreebankSentence(tuple(f"w{i}" for i in range(6)), {}, (0, 1, 2, 3, 4, 5)) for _ in range(40))
    starts = tuple(range(0, 6 * 41, 6))
    return WordFeatures(torch.randn(2, 6 * 40, 16, generator=generator), starts, sentences, ("embeddings", "after layer 0"), "first")


@pytest.mark.slow
def test_overlapping_runs_and_a_live_training_run_leave_the_threads_alone(monkeypatch, tmp_path):
    before = torch.get_num_threads()
    changes = []
    monkeypatch.setattr(torch, "set_num_threads", lambda count: changes.append((threading.current_thread().name, count)))
    errors = []
    together = threading.Barrier(2, timeout=WAIT)

    def overlapping(run):
        def target():
            try:
                together.wait()  # both start at once, so they overlap
                run()
            except Exception as error:  # noqa: BLE001 - reported by the assertion below
                errors.append(error)
        return target

    features = structural_features()
    probes = lambda: fit_structural_probes(features, settings=StructuralProbeSettings(rank=4, epochs=2), seed=0)
    successors = lambda: RUNS.compute(None, RunsWork(TEXT, QUICK_SUCCESSORS, ("static",), 0))  # the page's computation
    room = TinyTrainingRuns(tmp_path)
    status, live = room.start(QUICK, "session A")
    assert status == "started"
    runs = [threading.Thread(target=overlapping(run), name=name) for run, name in ((probes, "probes"), (successors, "successors"))]
    for run in runs:
        run.start()
    for run in runs:
        run.join(WAIT)
    assert live.finished.wait(WAIT) and live.error is None, live.error
    assert not errors, errors
    assert changes == [], f"a run changed the process's threads: {changes}"
    assert torch.get_num_threads() == before
    seen = []
    fresh = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    fresh.start()
    fresh.join()
    assert seen == [before], "a new thread (a new page run) starts on the server's threads"
