"""Value zeroing's memory price (bert/analysis/attention/value_zeroing.py: zeroing_bytes; mixing.py:
rollout_bytes) against what it allocates: PyTorch's own count of its CPU allocations (the profiler's memory
events, "Total Allocated") for the batched passes, tracemalloc (which sees numpy's arrays) for the rollout of the
matrices. Small random models, a few zeroed tokens a batch: the price names every tensor, so it holds at any size."""
from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
import torch
from torch.profiler import profile

from bert import Bert, BertConfig
from bert.analysis.attention import value_zeroing as zeroing_module
from bert.analysis.attention.mixing import record_for_mixing, rollout, rollout_bytes
from bert.analysis.attention.mixing_parts import recorded_layers
from bert.devices import as_numpy

TOLERANCE = 0.01  # the price may exceed the allocations by this share (a few vectors of T floats it does not name)


def torch_peak_bytes(compute, folder) -> int:
    """The highest count of PyTorch's CPU allocations while `compute()` runs, over the count before it."""
    with profile(profile_memory=True) as profiler:
        compute()
    trace = folder / "trace.json"
    profiler.export_chrome_trace(str(trace))
    events = [event["args"] for event in json.loads(trace.read_text())["traceEvents"]
              if event.get("name") == "[memory]" and event["args"].get("Device Type") == 0]  # 0: the CPU
    before = events[0]["Total Allocated"] - events[0]["Bytes"]
    return max(event["Total Allocated"] for event in events) - before


@pytest.mark.parametrize("hidden, intermediate, heads, layers, tokens, rows", [
    (64, 256, 4, 2, 40, 3),  # batches of three zeroed tokens
    (64, 256, 4, 2, 40, 40),  # every token in one batch
    (128, 512, 8, 2, 64, 5),
])
def test_zeroing_bytes_is_what_the_batched_passes_allocate(hidden, intermediate, heads, layers, tokens, rows,
                                                           monkeypatch, tmp_path):
    config = BertConfig(vocab_size=100, hidden_size=hidden, num_layers=layers, num_heads=heads,
                        intermediate_size=intermediate, max_position_embeddings=128)
    torch.manual_seed(0)
    model = Bert(config).eval()
    input_ids = torch.randint(5, 100, (1, tokens))
    _, cache = record_for_mixing(model, input_ids, torch.zeros_like(input_ids))
    layer_list = recorded_layers(model, cache)
    monkeypatch.setattr(zeroing_module, "ROWS_BUDGET", rows * tokens * intermediate)
    assert zeroing_module.rows_per_pass(tokens, intermediate) == rows
    allocated = torch_peak_bytes(lambda: zeroing_module.value_zeroing(layer_list), tmp_path)
    priced = zeroing_module.zeroing_bytes(tokens, config)
    assert allocated <= priced <= allocated * (1 + TOLERANCE), (allocated, priced)


@pytest.mark.parametrize("layers, tokens", [(2, 200), (12, 96)])
def test_rollout_bytes_is_what_the_rollout_of_the_matrices_allocates(layers, tokens):
    """context_mixing's steps after the matrices: float64 copies, then the rollout with no extra residual. (numpy
    also allocates about 14 kB of its own, which the price leaves out: sizes where that is under the tolerance.)"""
    config = BertConfig(vocab_size=100, hidden_size=32, num_layers=layers, num_heads=4, intermediate_size=48)
    matrices = torch.rand(layers, tokens, tokens)
    tracemalloc.start()
    try:
        rollout(as_numpy(matrices).astype(np.float64), 0.0)
        _, allocated = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    priced = rollout_bytes(tokens, config)
    assert allocated <= priced <= allocated * (1 + TOLERANCE), (allocated, priced)
