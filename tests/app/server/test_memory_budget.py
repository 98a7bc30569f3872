"""Memory in the cost: the probes' word vectors and the recorded pass priced in bytes before they are computed
(against the tensors really kept), every pass priced at its activations, a student's computation whose peak would
pass the server's memory budget refused with the numbers, and the server's stores bounded in entries, bytes and
time (viz_app/server/memory.py), sized from the server's setting. The peaks themselves are measured against the
resident memory of a BERT-base-shaped model in test_memory_peaks.py."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np
import pytest
import torch

from bert.analysis.probing.pipeline import ProbeSettings, extract_features, extract_features_cost
from bert.analysis.probing.sentence_sets import sentence_set
from bert.config import BertConfig
from bert.analysis.circuits.edge_scores import edge_scores_cost
from bert.costs import Cost
from bert.data import builtin_sentences
from bert_test_support import small_bert
from viz_app.server.access import Role
from viz_app.server.budget import Verdict, decide
from viz_app.server.memory import BoundedStore, bytes_held
from viz_app.server.settings import ServerSettings, read_settings

MB = 1_000_000


def features_bytes(features) -> int:
    """What extract_features keeps, counted tensor by tensor (numel x element size)."""
    parts = [features.train, features.test]
    tensors = [p.vectors for p in parts] + [t.vectors for p in parts for t in (p.tokens, p.pairs, p.masked) if t is not None]
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.mark.parametrize("tasks", [["pos"], ["segment", "masked_identity", "position"]])
def test_the_kept_bytes_bound_the_word_vectors_the_pipeline_keeps(tokenizer, tasks):
    model = small_bert(tokenizer.vocab_size, seed=0)
    data = sentence_set(builtin_sentences(60), "built-in")
    settings = ProbeSettings(seed=2, batch_size=7)
    cost = extract_features_cost(tokenizer, data, None, tasks, settings, model.config.max_position_embeddings, model.config)
    kept = features_bytes(extract_features(model, tokenizer, data, tasks=tasks, settings=settings))
    assert kept <= cost.kept_bytes <= 1.6 * kept, (kept, cost.kept_bytes)
    without = extract_features_cost(tokenizer, data, None, tasks, settings, model.config.max_position_embeddings)
    assert without.kept_bytes == 0 and without.forward_passes == cost.forward_passes


def test_a_student_run_that_would_keep_more_than_the_server_allows_is_refused_with_the_numbers():
    settings = ServerSettings(memory_budget=300)
    cost = Cost(14_954, 14, ("the number of sentences",), kept_bytes=1_774_000_000)
    refused = decide(cost, BertConfig(), Role.STUDENT, settings)
    assert refused.verdict is Verdict.REFUSE
    assert refused.message.startswith("This needs 14,954 forward passes of 14 tokens, keeping 1,774 MB: ")
    assert f"holding up to {cost.peak(BertConfig()) / MB:,.0f} MB while it runs" in refused.message
    assert "a computation may hold 300 MB of the server's memory" in refused.message
    assert "Lower the number of sentences" in refused.message
    for role in (Role.OWNER, Role.PRESENTER):
        assert decide(cost, BertConfig(), role, settings).verdict is Verdict.CONFIRM
    assert decide(Cost(10, 14, kept_bytes=250 * MB), BertConfig(), Role.STUDENT, settings).verdict is Verdict.START


def test_a_student_computation_whose_peak_would_pass_the_memory_budget_is_refused_with_the_numbers():
    """EAP-IG on a 512-token pair with BERT-base holds gigabytes of receiver streams for its backward pass, though
    its result keeps nothing: refused by its peak, with the numbers and what to lower."""
    config = BertConfig()
    cost = edge_scores_cost(config, 512, "eap-ig", 50)
    assert cost.kept_bytes == 0
    peak = cost.peak(config)
    assert peak > 10_000 * MB
    settings = ServerSettings(memory_budget=1000, request_budget=10**9, visitor_budget=10**9)
    refused = decide(cost, config, Role.STUDENT, settings)
    assert refused.verdict is Verdict.REFUSE
    assert f"holding up to {peak / MB:,.0f} MB while it runs" in refused.message
    assert "on this server a computation may hold 1,000 MB of the server's memory" in refused.message
    assert "Lower fewer pairs, a shorter pair of sentences or integration steps" in refused.message
    for role in (Role.OWNER, Role.PRESENTER):
        assert decide(cost, config, role, settings).verdict is Verdict.CONFIRM


def test_the_budget_reads_the_servers_memory_setting():
    config = BertConfig()
    cost = edge_scores_cost(config, 12, "eap-ig", 5)
    peak = cost.peak(config)
    for budget, verdict in ((peak // MB + 1, Verdict.START), (peak // MB - 1, Verdict.REFUSE)):
        settings = read_settings(["--memory-budget", str(budget)], {})
        assert decide(cost, config, Role.STUDENT, settings).verdict is verdict, budget


def test_every_computation_that_runs_a_pass_is_priced_above_zero_bytes():
    """A pass's own activations (bert/costs.py: pass_bytes): priced even where a cost function names no bytes."""
    from bert.costs import pass_bytes

    config = BertConfig()
    one = Cost(1, 512)
    assert one.peak(config) == pass_bytes(config, 512) > 100 * MB
    assert Cost(1, 512, backward_passes=1).peak(config) > 5 * one.peak(config), "the autograd graph of every layer"
    assert Cost(0, 0).peak(config) == 0


def test_the_recorded_pass_is_priced_at_what_it_keeps(tokenizer):
    """The pages' recorded pass (viz_app/specs/recorded.py) keeps every head's q and k, the MLP activations and
    the embeddings, and the patterns once read: its kept bytes bound the arrays of the result, counted one by one."""
    from viz_app.app.forward import prepare_input
    from viz_app.app.models import LoadedModel, ModelKey, summarize
    from viz_app.specs import recorded
    from viz_app.specs.base import Inputs

    model = small_bert(tokenizer.vocab_size, seed=0)
    loaded = LoadedModel(ModelKey("small"), model, tokenizer, summarize(model))
    prepared = prepare_input(tokenizer, "the dog barked at the [MASK] and the cat went to the park", "", [], False, 64)
    inputs = Inputs(loaded, prepared)
    computation, work = recorded.FULL
    cost = computation.cost(inputs, work)
    result = computation.compute(inputs, work)
    held = bytes_held(result) + bytes_held(result.attention)  # the patterns: computed on first read, then kept
    assert 0 < held <= cost.kept_bytes <= 1.05 * held, (held, cost.kept_bytes)
    assert cost.peak(model.config) > cost.kept_bytes


def test_the_stores_are_sized_from_the_servers_memory_setting(monkeypatch):
    from viz_app import cache

    monkeypatch.setenv("BERT_INSIDE_MEMORY_BUDGET", "37")
    assert cache.results_store().max_bytes == cache.RESULT_BUDGETS * 37 * MB
    assert cache.kept_parts().max_bytes == cache.KEPT_PART_BUDGETS * 37 * MB
    assert cache.shared_store().max_bytes == cache.SHARED_BUDGETS * 37 * MB
    monkeypatch.setenv("BERT_INSIDE_MEMORY_BUDGET", "41")
    assert cache.results_store().max_bytes == cache.RESULT_BUDGETS * 41 * MB


def test_the_memory_budget_is_a_server_setting():
    assert read_settings([], {}).memory_budget == 1000
    assert read_settings(["--memory-budget", "1200"], {}).memory_budget == 1200
    assert read_settings([], {"BERT_INSIDE_MEMORY_BUDGET": "50"}).memory_budget == 50


def test_costs_add_their_kept_memory_and_the_peak_on_top_of_what_is_kept():
    first, second = Cost(1, 5, kept_bytes=100, peak_bytes=150), Cost(2, 7, kept_bytes=30, peak_bytes=400, rows_at_once=3)
    both = first + second
    assert (both.kept_bytes, both.peak_bytes, both.rows_at_once) == (130, 500, 3)


def test_bytes_held_counts_every_tensor_and_array_once_per_storage():
    base = torch.zeros(10, 4)
    value = {"a": (base, np.zeros(3, dtype=np.float64)), "b": [torch.ones(2, dtype=torch.float16)],
             "c": MappingProxyType({"d": np.zeros(5, dtype=np.int16)})}
    assert bytes_held(value) == 40 * 4 + 3 * 8 + 2 * 2 + 5 * 2
    assert bytes_held(base[:1]) == 40 * 4, "a view keeps its whole storage alive"


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_store_keeps_at_most_its_entries_and_bytes():
    store = BoundedStore(max_entries=2, max_bytes=1000, ttl_s=60)
    computed = []

    def make(key, size):
        def compute():
            computed.append(key)
            return np.zeros(size, dtype=np.uint8)
        return store.get_or_compute(key, compute)

    make("a", 400), make("b", 400)
    make("a", 400)  # kept: not computed again, and now the most recently used
    assert computed == ["a", "b"] and store.held() == 800
    make("c", 400)  # a third entry: the least recently used ("b") goes
    assert len(store) == 2 and store.held() == 800
    make("a", 400)
    assert computed == ["a", "b", "c"]
    make("d", 900)  # over the bytes with any other: kept alone
    assert len(store) == 1 and store.held() == 900


def test_the_store_evicts_before_it_grows_past_its_bytes():
    from collections import OrderedDict

    class WatchedEntries(OrderedDict):
        most = 0

        def __setitem__(self, key, entry):
            super().__setitem__(key, entry)
            WatchedEntries.most = max(WatchedEntries.most, sum(size for _, size, _ in self.values()))

    store = BoundedStore(max_entries=8, max_bytes=1000, ttl_s=60)
    store._entries = WatchedEntries()
    for key in "abcdef":
        store.get_or_compute(key, lambda: np.zeros(400, dtype=np.uint8))
    assert store.held() == 800 and len(store) == 2
    assert WatchedEntries.most == 800, "never more than max_bytes, not even for a moment"


def test_a_result_larger_than_the_store_is_handed_back_and_not_kept():
    store = BoundedStore(max_entries=4, max_bytes=1000, ttl_s=60)
    store.get_or_compute("a", lambda: np.zeros(600, dtype=np.uint8))
    large = store.get_or_compute("large", lambda: np.ones(5000, dtype=np.uint8))
    assert large.shape == (5000,) and large.sum() == 5000, "the caller gets its result"
    assert store.get("large") is None and len(store) == 1 and store.held() == 600, "kept: what was there, not more"
    copies = BoundedStore(max_entries=4, max_bytes=1000, ttl_s=60, copies=True)
    assert copies.get_or_compute("large", lambda: np.ones(5000, dtype=np.uint8)).sum() == 5000
    assert len(copies) == 0 and copies.held() == 0


def test_the_store_forgets_an_entry_after_its_time():
    clock = Clock()
    store = BoundedStore(max_entries=4, max_bytes=10_000, ttl_s=60, clock=clock)
    store.get_or_compute("a", lambda: np.zeros(10))
    clock.now = 61
    store.get_or_compute("b", lambda: np.zeros(10))
    assert len(store) == 1 and store.held() == 80


def test_a_store_of_copies_counts_the_pickle_and_hands_out_a_fresh_copy_each_time():
    """The per-visitor results (viz_app/cache.py's `computed`): each session gets its own copy, as from
    `st.cache_data`, and the bytes counted are those kept (the pickle: arrays and plain objects alike)."""
    import pickle

    store = BoundedStore(max_entries=8, max_bytes=3000, ttl_s=60, copies=True)
    value = {"words": ["a"] * 100, "array": np.arange(200, dtype=np.int32)}
    first = store.get_or_compute("a", lambda: value)
    second = store.get_or_compute("a", lambda: pytest.fail("computed again"))
    assert first is value and second is not value and second["array"] is not value["array"]
    assert second["words"] == value["words"] and np.array_equal(second["array"], value["array"])
    second["array"][0] = 99  # a session that changes its copy changes no one else's
    assert store.get_or_compute("a", lambda: None)["array"][0] == 0
    assert store.held() == len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    store.get_or_compute("b", lambda: np.zeros(2500, dtype=np.uint8))  # over 3000 bytes with "a": "a" goes
    assert len(store) == 1
