"""The recording pool (bert/recording_memory.py): a recorded pass reuses the memory of a cache that is gone, and
never the memory of one that is still read, through the cache, one of its entries or a numpy array sharing it."""
from __future__ import annotations

import gc
import threading

import pytest
import torch

from bert import recording_memory
from bert.recording_memory import RecordingMemory


@pytest.fixture
def model_and_inputs(tiny_model, tiny_batch):
    ids, types, mask = tiny_batch
    other = ids.flip(0)  # another input of the same shape: other activations in memory of the same size
    return tiny_model, (ids, types, mask), (other, types.flip(0), mask.flip(0))


def record(model, inputs):
    with torch.no_grad():
        return model.run_with_cache(*inputs)[1]


def test_a_cache_still_held_is_not_overwritten_by_the_next_pass(model_and_inputs):
    model, first, second = model_and_inputs
    cache = record(model, first)
    kept = {name: tensor.clone() for name, tensor in cache.items()}
    pattern = cache["pattern", 1]
    later = record(model, second)
    assert later.stack("pattern").data_ptr() != cache.stack("pattern").data_ptr()
    for name, tensor in cache.items():
        torch.testing.assert_close(tensor, kept[name], atol=0, rtol=0)
    assert torch.equal(pattern, kept[pattern_name(cache)])


def pattern_name(cache) -> str:
    return cache.name(("pattern", 1))


def test_one_entry_or_a_numpy_array_kept_from_a_cache_keeps_its_memory_from_the_next_pass(model_and_inputs):
    model, first, second = model_and_inputs
    cache = record(model, first)
    entry, array = cache["pattern", 1], cache["mlp_post", 0].numpy()  # both share the cache's memory
    entry_copy, array_copy = entry.clone(), array.copy()
    del cache
    gc.collect()
    for _ in range(3):
        record(model, second)
    assert torch.equal(entry, entry_copy) and (array == array_copy).all()


def test_the_memory_of_a_cache_that_is_gone_is_reused(model_and_inputs):
    model, first, second = model_and_inputs
    recording_memory.release()
    cache = record(model, first)
    held = recording_memory.RECORDING_MEMORY.held_bytes
    assert held >= cache.stack("pattern").numel() * 4  # the stacks are the pool's blocks
    del cache
    gc.collect()
    later = record(model, second)
    assert recording_memory.RECORDING_MEMORY.held_bytes == held  # no new block: every stack in a block let go


def test_passes_in_threads_get_memory_of_their_own(model_and_inputs):
    model, first, second = model_and_inputs
    expected = {key: record(model, inputs).stack("pattern").clone() for key, inputs in (("first", first), ("second", second))}
    results, problems = [], []

    def run(key, inputs):
        try:
            for _ in range(5):
                results.append((key, record(model, inputs).stack("pattern")))
        except Exception as error:  # pragma: no cover - reported below
            problems.append(error)

    threads = [threading.Thread(target=run, args=item) for item in (("first", first), ("second", second)) * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not problems
    assert len({pattern.data_ptr() for _, pattern in results}) == len(results)  # all alive: no memory shared
    for key, pattern in results:
        torch.testing.assert_close(pattern, expected[key], atol=0, rtol=0)


def test_the_pool_keeps_to_its_limit_and_lets_free_blocks_go():
    pool = RecordingMemory(limit=40_000)
    a, b = pool.empty((50, 100), torch.float32), pool.empty((50, 100), torch.float32)  # 20,000 bytes each
    assert pool.held_bytes == 40_000
    c = pool.empty((50, 100), torch.float32)  # over the limit with both in use: memory of its own, not pooled
    assert pool.held_bytes == 40_000 and c.shape == (50, 100)
    del a
    d = pool.empty((10, 10), torch.float32)  # 400 bytes: a's free block is more than twice that, so a new block
    assert pool.held_bytes == 20_400  # ... and a's block went to stay within the limit
    address = d.data_ptr()
    del d
    f = pool.empty((5, 20), torch.float32)  # d's free block, reused
    assert pool.held_bytes == 20_400 and f.shape == (5, 20) and f.data_ptr() == address
    del b, c, f
    pool.release()
    assert pool.held_bytes == 0
    assert pool.empty((60_000,), torch.float32).shape == (60_000,)  # larger than the limit: torch.empty
    assert pool.held_bytes == 0


def test_set_limit_zero_turns_the_pool_off(model_and_inputs):
    model, first, _ = model_and_inputs
    limit = recording_memory.RECORDING_MEMORY.limit
    try:
        recording_memory.set_limit(0)
        held = recording_memory.RECORDING_MEMORY.held_bytes  # only blocks a live tensor still reads
        cache = record(model, first)
        assert recording_memory.RECORDING_MEMORY.held_bytes <= held and cache.stack("pattern").is_contiguous()
    finally:
        recording_memory.set_limit(limit)


def test_a_size_no_free_block_fits_lets_every_free_block_go_before_new_memory_is_taken():
    pool = RecordingMemory(limit=1_000_000)
    kept, gone = pool.empty((100,), torch.float32), pool.empty((200,), torch.float32)
    del gone
    assert pool.held_bytes == 1_200  # the free block is kept for a recording of the same size
    larger = pool.empty((1_000,), torch.float32)
    assert pool.held_bytes == 400 + 4_000  # ... and let go once a size it does not fit is asked for
    assert kept.shape == (100,) and larger.shape == (1_000,)
