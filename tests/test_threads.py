"""One shared model, many threads (as Streamlit sessions share a cached model): runs must not see each other.

Each concurrent run first waits at a barrier *inside* its forward pass (an identity intervention on the
embedding output), so all of them are mid-forward at the same time, hooks active, before any goes on.
"""
from __future__ import annotations

import threading

import torch

from bert import interventions
from bert.hooks import hook_name
from bert_test_support import TINY_VOCAB, pad_rows, random_rows

THREADS = 8
TIMEOUT = 60  # seconds; a barrier that times out fails the test instead of hanging it


def job(i: int, num_heads: int, num_layers: int):
    """Different inputs (lengths, pairs, padding) and different interventions for each thread."""
    layouts = [[(5, 0)], [(3, 0), (8, 0)], [(4, 4)], [(2, 0), (6, 3), (9, 0)]]
    batch = pad_rows(random_rows(len(TINY_VOCAB), layouts[i % len(layouts)], seed=100 + i))
    choices = [
        {},
        {hook_name("z", i % num_layers): interventions.zero_heads(i % num_heads)},
        {"transformer.0.residual.hook_result": interventions.zero},
        {hook_name("pattern", num_layers - 1): lambda p, name: torch.full_like(p, 1.0 / p.shape[-1])},
    ]
    return batch, choices[i % len(choices)]


def run(model, batch, edits, rendezvous=None):
    edits = dict(edits)
    if rendezvous is not None:
        def wait_for_everyone(activation, name):
            rendezvous.wait(TIMEOUT)
            return activation

        edits = [("embedding.hook_out", wait_for_everyone), *edits.items()]
    names = lambda name: name.endswith(("hook_z", "hook_pattern", "hook_out"))
    return model.run_with_cache(*batch, names=names, interventions=edits)


def assert_same_run(got, expected, who: str) -> None:
    (logits, cache), (expected_logits, expected_cache) = got, expected
    torch.testing.assert_close(logits, expected_logits, atol=1e-6, rtol=1e-6, msg=lambda m: f"{who} logits: {m}")
    assert set(cache) == set(expected_cache), f"{who}: cache has other names"
    for name in expected_cache:
        torch.testing.assert_close(cache[name], expected_cache[name], atol=1e-6, rtol=1e-6, msg=lambda m: f"{who} {name}: {m}")


def start(target, count: int) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads


def test_concurrent_runs_each_equal_the_same_run_alone(tiny_model):
    config = tiny_model.config
    jobs = [job(i, config.num_heads, config.num_layers) for i in range(THREADS)]
    alone = [run(tiny_model, batch, edits) for batch, edits in jobs]
    assert not torch.allclose(alone[0][0], run(tiny_model, jobs[0][0], {hook_name("z", 0): interventions.zero_heads(0)})[0])

    start_together, inside_forward = threading.Barrier(THREADS), threading.Barrier(THREADS)
    results, errors = [None] * THREADS, []

    def work(i: int) -> None:
        try:
            start_together.wait(TIMEOUT)
            batch, edits = jobs[i]
            results[i] = run(tiny_model, batch, edits, rendezvous=inside_forward)
        except Exception as error:  # reported below, from the main thread
            errors.append((i, error))
            inside_forward.abort()

    for thread in start(work, THREADS):
        thread.join(TIMEOUT)
    assert not errors, errors
    for i in range(THREADS):
        assert_same_run(results[i], alone[i], f"thread {i}")


def test_plain_forward_is_unaffected_while_another_thread_intervenes(tiny_model, tiny_batch):
    """Thread A zero-ablates every head and pauses inside its forward pass; meanwhile thread B runs a plain
    forward and a run_with_cache on the same model. B must see the clean model; A must still get its ablation."""
    all_heads = interventions.zero_heads(*range(tiny_model.config.num_heads))
    with torch.no_grad():
        clean_logits = tiny_model(*tiny_batch)
    clean_run = run(tiny_model, tiny_batch, {})
    ablated_run = run(tiny_model, tiny_batch, {hook_name("z", 0): all_heads})
    a_is_inside, b_is_done = threading.Event(), threading.Event()
    results, errors = {}, []

    def pause(activation, name):
        a_is_inside.set()
        assert b_is_done.wait(TIMEOUT), "thread B never finished"
        return activation

    def thread_a(_):
        try:
            results["a"] = tiny_model.run_with_cache(
                *tiny_batch, names=lambda name: name.endswith(("hook_z", "hook_pattern", "hook_out")),
                interventions=[(hook_name("z", 0), all_heads), ("transformer.1.hook_out", pause)],
            )
        except Exception as error:
            errors.append(error)
            a_is_inside.set()

    def thread_b(_):
        try:
            assert a_is_inside.wait(TIMEOUT), "thread A never reached its pause"
            with torch.no_grad():
                results["b_plain"] = tiny_model(*tiny_batch)
            results["b_cached"] = run(tiny_model, tiny_batch, {})
        except Exception as error:
            errors.append(error)
        finally:
            b_is_done.set()

    threads = start(thread_a, 1) + start(thread_b, 1)
    for thread in threads:
        thread.join(TIMEOUT)
    assert not errors, errors
    assert torch.equal(results["b_plain"], clean_logits)
    assert_same_run(results["b_cached"], clean_run, "thread B")
    assert_same_run(results["a"], ablated_run, "thread A")
