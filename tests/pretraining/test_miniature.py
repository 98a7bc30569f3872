"""Tiny BERT runs (bert.pretraining.miniature): the trainer's on_step callback and stop, determinism for a seed,
and the shipped logs (recipes/tiny_runs.py) are what their settings say, without weights."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from bert.pretraining.miniature import DEFAULT_RUNS, RunLog, TinySettings, train_tiny

SHIPPED = Path(__file__).resolve().parents[2] / "bert" / "data" / "tiny_runs"
QUICK = TinySettings(layers=1, hidden=32, heads=2, steps=6, batch_size=8, eval_every=3, eval_batches=1, warmup_steps=2)


@pytest.mark.slow
def test_the_same_seed_gives_the_same_run_and_another_seed_another(tmp_path):
    first, _, _ = train_tiny(QUICK, tmp_path / "a")
    again, _, _ = train_tiny(QUICK, tmp_path / "b")
    other, _, _ = train_tiny(TinySettings(**{**asdict(QUICK), "seed": 1}), tmp_path / "c")
    assert len(first.train_loss) == QUICK.steps and [e["step"] for e in first.evals] == [0, 3, 6]
    assert first.train_loss == again.train_loss and first.evals == again.evals
    assert first.right_context == again.right_context
    assert first.train_loss != other.train_loss


@pytest.mark.slow
def test_on_step_sees_every_step_and_a_stop_ends_the_run(tmp_path):
    seen = []
    log, model, _ = train_tiny(QUICK, tmp_path, on_update=lambda grown: seen.append(len(grown.train_loss)),
                               should_stop=lambda: len(seen) >= 3)
    assert log.stopped_at == 4 and len(log.train_loss) == 4, "asked after step 4 (3 updates seen): stops there"
    assert log.done and log.right_context["sentences"] == 28
    assert not model.training


@pytest.mark.parametrize("settings", DEFAULT_RUNS, ids=lambda s: s.name)
def test_the_shipped_logs_are_what_their_settings_say(settings):
    path = SHIPPED / f"{settings.name}.json"
    if not path.is_file():
        pytest.skip(f"{path.name} is not shipped yet: python recipes/tiny_runs.py")
    assert path.stat().st_size < 400_000, "a log, not weights"
    log = RunLog.from_dict(json.loads(path.read_text()))
    assert log.settings == asdict(settings)
    assert len(log.train_loss) == settings.steps and log.stopped_at is None and log.done
    assert [e["step"] for e in log.evals] == list(range(0, settings.steps + 1, settings.eval_every))
    for evaluation in log.evals:
        pattern = evaluation["attention"]  # [query, key] of the logged head: rows sum to 1
        assert all(abs(sum(row) - 1) < 0.01 for row in pattern)
        if settings.causal:  # and a left-to-right model's rows put nothing on the right
            assert all(value == 0 for q, row in enumerate(pattern) for value in row[q + 1 :])
