"""The server's heavy computations (viz_app/server/heavy_jobs.py) with a fake list of live browser sessions and a model
that counts its forward passes: a computation stops within moments of its session going, waits for a free slot,
one per visitor (a newer request stops the older); and the budgets' verdicts (viz_app/server/budget.py)."""
from __future__ import annotations

import threading
import time

import pytest

from bert import Bert, BertConfig
from bert.analysis.attribution.saliency import saliency
from bert.costs import Cost
from bert.errors import StoppedError
from viz_app.server.access import Role
from viz_app.server.budget import Verdict, decide
from viz_app.server.heavy_jobs import HOUR, HeavyJobs
from viz_app.server.settings import ServerSettings
from bert_test_support import small_bert

LONG = "the dog [MASK] at the cat and her dog went to the park . the cat is"


class Sessions:
    """The browser sessions a server still has (what viz_app/server/sessions.py asks Streamlit's runtime)."""

    def __init__(self, *live: str):
        self.live = set(live)

    def is_connected(self, session: str) -> bool:
        return session in self.live


@pytest.fixture(scope="module")
def slow_model(tokenizer):
    """A tiny BERT whose every forward pass takes 20 ms and is counted (rows), like a long input on a busy CPU."""
    model = small_bert(tokenizer.vocab_size, seed=0)
    model.passes = 0

    def count_and_wait(module, args):
        model.passes += args[0].shape[0]
        time.sleep(0.02)

    model.embedding.register_forward_pre_hook(count_and_wait)
    return model


def wait_until(condition, timeout_s: float = 30) -> None:
    """Return once `condition()` holds, or after `timeout_s` (the assertion that follows says what was missing)."""
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def in_thread(target) -> tuple[threading.Thread, list]:
    outcome = []

    def run():
        try:
            outcome.append(target())
        except BaseException as error:  # noqa: BLE001 - the test reads what ended the thread
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_computation_stops_soon_after_its_session_is_gone(slow_model, tokenizer):
    sessions = Sessions("student")
    jobs = HeavyJobs(1, sessions.is_connected, check_every_s=0.1)
    encoding = tokenizer.encode(LONG)

    def shapley():  # 200 orders x 17 features: about 70 s of passes at 20 ms each
        with jobs.job("student", "student", 1.0, 3400):
            return saliency(slow_model, tokenizer, encoding, "shapley_value_sampling", samples=200, batch_size=1)

    slow_model.passes = 0
    thread, outcome = in_thread(shapley)
    wait_until(lambda: slow_model.passes > 10)  # its first pass imports Captum: seconds on a busy machine
    assert slow_model.passes > 10 and thread.is_alive()
    sessions.live.clear()  # the tab is closed
    gone = time.monotonic()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - gone < 2.0
    assert isinstance(outcome[0], StoppedError)
    stopped_at = slow_model.passes
    time.sleep(0.3)
    assert slow_model.passes == stopped_at < 3400  # nothing runs on
    assert jobs.running() == 0


def test_a_second_computation_waits_for_the_slot_and_stops_waiting_when_its_session_goes(slow_model, tokenizer):
    sessions = Sessions("first", "second")
    jobs = HeavyJobs(1, sessions.is_connected, check_every_s=0.05, wait_step_s=0.05)
    encoding = tokenizer.encode(LONG)
    waits = []

    def shapley(visitor, on_progress=lambda share, text: None):  # 89 passes: about 2 s
        with jobs.job(visitor, visitor, 1.0, 89, on_progress):
            return saliency(slow_model, tokenizer, encoding, "shapley_value_sampling", samples=5, batch_size=1)

    first, first_outcome = in_thread(lambda: shapley("first"))
    time.sleep(0.2)
    passes_of_the_first = slow_model.passes
    second, second_outcome = in_thread(lambda: shapley("second", lambda share, text: waits.append(text)))
    wait_until(lambda: any("waiting for a free slot" in text for text in waits))  # a busy machine: a while to ask
    assert any("waiting for a free slot" in text for text in waits)
    assert first.is_alive(), "the first computation still holds the slot"
    sessions.live.discard("second")
    second.join(5)
    assert isinstance(second_outcome[0], StoppedError) and jobs.spent_this_hour("second") == 0  # it never ran
    first.join(10)
    assert first_outcome[0].evaluations == 86 and slow_model.passes > passes_of_the_first


def test_a_visitors_new_request_stops_the_old_one_and_a_cached_result_costs_nothing(slow_model, tokenizer):
    """The input changed: Streamlit starts the page's new run while the old one is still in its loop. The old
    computation stops at its next pass, the new one runs; one at a time for the visitor."""
    jobs = HeavyJobs(2, lambda session: True, check_every_s=0.05)
    encoding = tokenizer.encode(LONG)

    def old_request():
        with jobs.job("student", "tab", 1.0, 3400):
            return saliency(slow_model, tokenizer, encoding, "shapley_value_sampling", samples=200, batch_size=1)

    slow_model.passes = 0
    thread, outcome = in_thread(old_request)
    wait_until(lambda: slow_model.passes > 0)  # the old computation is in its loop (its first pass may import Captum)
    changed = time.monotonic()
    with jobs.job("student", "tab", 2.0, 4):
        assert time.monotonic() - changed < 2.0 and not thread.is_alive()
        assert isinstance(outcome[0], StoppedError)
        result = saliency(slow_model, tokenizer, tokenizer.encode("the [MASK] barked"), "gradient_x_input")
    assert result.evaluations == 1 and jobs.running() == 0
    assert jobs.spent_this_hour("student") == 3.0  # both ran
    with jobs.job("another", "tab", 500.0, 10):
        pass  # no forward pass in the block: the result came from a cache
    assert jobs.spent_this_hour("another") == 0


def test_a_light_pass_runs_at_once_beside_a_heavy_one_that_holds_the_only_slot(slow_model, tokenizer):
    """A page's own light pass (slot=False) is counted in its visitor's hour and stops with its tab like a heavy
    one, but never waits for a slot: a class's new sentences are not queued behind one student's long computation."""
    sessions = Sessions("heavy", "light")
    jobs = HeavyJobs(1, sessions.is_connected, check_every_s=0.0, wait_step_s=0.05)
    encoding = tokenizer.encode(LONG)

    def heavy():  # about 2 s of passes, holding the server's one slot
        with jobs.job("heavy", "heavy", 1.0, 89):
            return saliency(slow_model, tokenizer, encoding, "shapley_value_sampling", samples=5, batch_size=1)

    thread, outcome = in_thread(heavy)
    time.sleep(0.2)
    assert jobs.waiting() == 0 and thread.is_alive()
    waits = []
    with jobs.job("light", "light", 3.0, 1, lambda share, text: waits.append(text), slot=False):
        light = saliency(slow_model, tokenizer, tokenizer.encode("the [MASK] barked"), "gradient_x_input")
    assert light.evaluations == 1 and thread.is_alive()  # ran while the slot was held, never queued:
    assert waits and not any("waiting for a free slot" in text for text in waits)
    assert jobs.spent_this_hour("light") == 3.0
    sessions.live.discard("light")
    with pytest.raises(StoppedError):  # its tab gone: stopped at its first pass, as a heavy one
        with jobs.job("light", "light", 3.0, 1, slot=False):
            saliency(slow_model, tokenizer, tokenizer.encode("the [MASK] barked"), "gradient_x_input")
    thread.join(10)
    assert outcome[0].evaluations == 86


def test_the_hour_counts_the_work_of_computations_that_ran(tokenizer):
    now = [0.0]
    jobs = HeavyJobs(1, lambda session: True, clock=lambda: now[0])
    model = Bert(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=1, num_heads=4,
                            intermediate_size=48, max_position_embeddings=64)).eval()
    with jobs.job("student", "student", 700.0, 4):
        saliency(model, tokenizer, tokenizer.encode("the [MASK] barked"), "gradient_x_input")
    assert jobs.spent_this_hour("student") == 700.0 and jobs.spent_this_hour("another") == 0
    now[0] = HOUR + 1
    assert jobs.spent_this_hour("student") == 0


def test_two_tabs_of_one_address_share_the_hour_and_still_run_one_each(tokenizer):
    """The payer (the address) pays for both tabs' computations; each tab (a visitor) keeps its own one-at-a-time."""
    jobs = HeavyJobs(2, lambda session: True)
    model = Bert(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=1, num_heads=4,
                            intermediate_size=48, max_position_embeddings=64)).eval()
    encoding = tokenizer.encode("the [MASK] barked")
    with jobs.job("tab 1", "tab 1", 300.0, 4, payer="address 10.0.0.5"):
        with jobs.job("tab 2", "tab 2", 200.0, 4, payer="address 10.0.0.5"):  # not a replacement: another visitor
            saliency(model, tokenizer, encoding, "gradient_x_input")
        saliency(model, tokenizer, encoding, "gradient_x_input")
    assert jobs.spent_this_hour("address 10.0.0.5") == 500.0
    assert jobs.spent_this_hour("tab 1") == jobs.spent_this_hour("tab 2") == 0


SETTINGS = ServerSettings(request_budget=1_000, visitor_budget=3_000)
BASE = BertConfig()


def test_within_the_budgets_it_starts_for_everyone():
    for role in Role:
        assert decide(Cost(10, 100), BASE, role, SETTINGS).verdict is Verdict.START


def test_over_the_request_budget_a_student_reads_the_numbers_and_what_to_lower():
    cost = Cost(36, 30, ("integration steps", "a shorter text"), backward_passes=32)
    decision = decide(cost, BASE, Role.STUDENT, SETTINGS)
    assert decision.verdict is Verdict.REFUSE and decision.work == (36 + 64) * 30
    assert decision.message.startswith("This needs 36 forward passes of 30 tokens (and 32 backward passes): 3,000 "
                                       "BERT-base token passes; on this server a computation may cost 1,000.")
    assert "Lower integration steps or a shorter text" in decision.message and "Nothing was started" in decision.message
    for role in (Role.OWNER, Role.PRESENTER):
        assert decide(cost, BASE, role, SETTINGS).verdict is Verdict.CONFIRM


def test_the_visitor_budget_counts_the_hour_and_a_small_model_costs_less():
    assert decide(Cost(10, 50), BASE, Role.STUDENT, SETTINGS, spent_this_hour=2_400).verdict is Verdict.START
    refused = decide(Cost(10, 70), BASE, Role.STUDENT, SETTINGS, spent_this_hour=2_400)
    assert refused.verdict is Verdict.REFUSE and "3,000 an hour, 600 of which are left" in refused.message
    small = BertConfig(hidden_size=384, num_layers=6, num_heads=12, intermediate_size=1536)  # MiniLM-L6's shape: 1/8
    assert decide(Cost(40, 200), small, Role.STUDENT, SETTINGS).work == 1_000


def test_a_nicer_thread_is_scheduled_after_the_others():
    """Linux schedules each thread with its own nice value: the heavy computation's thread gives up NICER_BY."""
    import os

    from viz_app.server.heavy_jobs import NICER_BY, nicer_thread

    seen = []
    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def in_a_thread():
        before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        nicer_thread()
        seen.append((before, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    before, after = seen[0]
    assert after == min(19, before + NICER_BY)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_before  # the other threads keep theirs


def test_a_stopped_eap_ig_stops_within_a_pass_and_frees_what_it_held(tokenizer):
    """The tab closed mid-EAP-IG: the job stops at the next pass or layer (checked every time here), and no tensor
    the computation made stays referenced, even by the StoppedError a caller keeps (Streamlit keeps it as the
    context of its own stop): every MLP output it made is gone by reference counting alone, with the cyclic
    garbage collector off, as the server runs it (.streamlit/config.toml: postScriptGC)."""
    import gc
    import weakref

    from bert.analysis.causal.patching import prepare_contrast
    from bert.analysis.circuits.edge_scores import edge_scores

    model = small_bert(tokenizer.vocab_size, seed=0)
    contrast = prepare_contrast(tokenizer, "the dog [MASK] at the cat", "the cat [MASK] at the dog", "is", "at", 64)
    made, passes = [], []
    checks = [0]

    def keep_a_weak_reference(module, args, output):
        made.append(weakref.ref(output))

    def pass_started(module, args):
        passes.append(checks[0])

    for layer in model.transformer:  # the circuit graph's run calls each MLP's layers and LayerNorm itself
        for module in (layer.residual.mlp1, layer.residual.layer_norm):
            module.register_forward_hook(keep_a_weak_reference)
    model.transformer[0].residual.mlp1.register_forward_pre_hook(pass_started)

    def connected(session: str) -> bool:  # the tab closes at the job's 12th check, in the EAP-IG steps
        checks[0] += 1
        return checks[0] < 12

    jobs = HeavyJobs(1, connected, check_every_s=0.0)
    gc.disable()
    try:
        with pytest.raises(StoppedError) as stopped:
            with jobs.job("student", "student", 1.0, 52):
                edge_scores(model, [contrast], "eap-ig", steps=50)
        assert len([at for at in passes if at >= 12]) <= 1, "at most the pass that had started when the tab closed"
        assert made and not [ref for ref in made if ref() is not None], "freed, though the error is kept"
        assert stopped.value.__traceback__ is not None
    finally:
        gc.enable()
    assert jobs.running() == 0


def test_releasing_freed_memory_gives_back_the_recording_pools_free_blocks(tokenizer):
    """After a heavy computation the server hands back what it freed: the [layer, ...] tensors of recordings whose
    caches are gone (bert/recording_memory.py) too, not kept for a next recording that may not come."""
    import gc

    import torch

    from bert import recording_memory
    from viz_app.server.heavy_jobs import release_freed_memory

    model = small_bert(tokenizer.vocab_size, seed=0)
    ids = torch.tensor([tokenizer.encode(LONG).input_ids])
    with torch.no_grad():
        cache = model.run_with_cache(ids)[1]
    recording_memory.release()
    held = recording_memory.RECORDING_MEMORY.held_bytes
    assert held >= cache.stack("pattern").numel() * 4  # the live cache's blocks stay
    del cache
    gc.collect()
    release_freed_memory()
    assert recording_memory.RECORDING_MEMORY.held_bytes < held
