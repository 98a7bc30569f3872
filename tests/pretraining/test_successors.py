"""The successors' objectives side by side (successors.py): every run through the trainer, measured the same way,
stoppable, and its cost counted before it starts an upper bound of the rows the models actually run."""
from __future__ import annotations

import pytest

from bert.errors import InvalidInputError
from bert.pretraining.successors import OBJECTIVES, ComparisonSettings, compare, comparison_cost
from bert.stopping import watching

TEXT = "The man went to the store. He bought a gallon of milk. Then he walked home in the rain."
QUICK = ComparisonSettings(steps=4, eval_every=2, sentences=32, eval_batches=2, batch_size=8)


@pytest.fixture(scope="module")
def counted():
    rows = []
    with watching(lambda n: rows.append(n)):
        runs = compare(TEXT, QUICK)
    return runs, sum(rows)


def test_every_objective_runs_and_is_measured_alike(counted):
    runs, _ = counted
    assert list(runs) == list(OBJECTIVES)
    for run in runs.values():
        assert run.steps == [0, 2, 4] and len(run.heldout_loss) == 3 and len(run.train_loss) == 4
        assert run.stopped_at is None and run.parameters > 0
    # the same initial weights and held-out masks: the two masked LMs start from the very same loss
    assert runs["static"].heldout_loss[0] == runs["dynamic"].heldout_loss[0]
    assert len(runs["electra"].replaced_loss) == 3 and not runs["dynamic"].replaced_loss


def test_the_cost_bounds_the_rows_run(counted):
    _, rows = counted
    cost = comparison_cost(QUICK, tuple(OBJECTIVES))
    assert 0.8 * cost.forward_passes <= rows <= cost.forward_passes
    assert cost.backward_passes == (1 + 1 + 1 + 2) * QUICK.steps * QUICK.batch_size
    assert comparison_cost(QUICK, ("dynamic",)).forward_passes < cost.forward_passes


def test_a_stop_ends_the_run_and_starts_no_other():
    runs = compare(TEXT, QUICK, ("dynamic", "electra"), should_stop=lambda: True)
    assert list(runs) == ["dynamic"] and runs["dynamic"].stopped_at == 1


def test_no_text_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="sentence"):
        compare("   ", QUICK)
