"""Memory in the cost: the probes' word vectors priced in bytes before they are computed (against the tensors the
pipeline really keeps), a student's run that would keep more than the server's memory budget refused with the
numbers, and the server's store of word vectors bounded in entries, bytes and time (viz_app/server/memory.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert.analysis.probing.pipeline import ProbeSettings, extract_features, extract_features_cost
from bert.analysis.probing.sentence_sets import sentence_set
from bert.config import BertConfig
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
    assert "a computation may keep 300 MB of the server's memory" in refused.message
    assert "Lower the number of sentences" in refused.message
    for role in (Role.OWNER, Role.PRESENTER):
        assert decide(cost, BertConfig(), role, settings).verdict is Verdict.CONFIRM
    assert decide(Cost(10, 14, kept_bytes=300 * MB), BertConfig(), Role.STUDENT, settings).verdict is Verdict.START


def test_the_memory_budget_is_a_server_setting():
    assert read_settings([], {}).memory_budget == 500
    assert read_settings(["--memory-budget", "1200"], {}).memory_budget == 1200
    assert read_settings([], {"BERT_INSIDE_MEMORY_BUDGET": "50"}).memory_budget == 50


def test_costs_add_their_kept_memory_and_the_peak_on_top_of_what_is_kept():
    first, second = Cost(1, 5, kept_bytes=100, peak_bytes=150), Cost(2, 7, kept_bytes=30, peak_bytes=400)
    both = first + second
    assert (both.kept_bytes, both.peak_bytes) == (130, 500)


def test_bytes_held_counts_every_tensor_and_array_once_per_storage():
    base = torch.zeros(10, 4)
    value = {"a": (base, np.zeros(3, dtype=np.float64)), "b": [torch.ones(2, dtype=torch.float16)]}
    assert bytes_held(value) == 40 * 4 + 3 * 8 + 2 * 2
    assert bytes_held(base[:1]) == 40 * 4, "a view keeps its whole storage alive"


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_store_keeps_at_most_its_entries_and_bytes_the_newest_always():
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
    make("e", 5000)  # over the bytes alone: kept, as the newest
    assert len(store) == 1 and store.held() == 5000


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
