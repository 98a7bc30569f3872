"""The activation cache run_with_cache returns: a mapping by full hook name that also takes TransformerLens's
short forms (`cache["pattern", 3]`, `cache.stack("pattern")`), checked against the per-name entries themselves."""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch

from bert import UnknownHookError, hook_name
from bert.activation_cache import ActivationCache
from bert.errors import InvalidInputError
from bert.hooks import every_layer


@pytest.fixture(scope="module")
def cache(tiny_model, tiny_batch) -> ActivationCache:
    return tiny_model.run_with_cache(*tiny_batch)[1]


def test_it_is_a_mapping_by_full_hook_name(tiny_model, cache):
    assert isinstance(cache, Mapping)
    assert list(cache) == [name for name in tiny_model.hook_names() if name in cache]
    assert len(cache) == len(list(cache)) and dict(cache).keys() == set(cache)
    name = "transformer.1.attention.attention.hook_pattern"
    assert name in cache and cache[name] is cache.get(name)


def test_short_keys_name_the_same_tensors(tiny_model, cache):
    last = tiny_model.config.num_layers - 1
    assert cache["pattern", 1] is cache["transformer.1.attention.attention.hook_pattern"]
    assert cache["layer_out", -1] is cache[f"transformer.{last}.hook_out"]
    assert cache["token"] is cache["embedding.hook_token"] and cache["logits"] is cache["lm_head.hook_logits"]
    assert ("pattern", 0) in cache and "pooled" not in cache and "pattern" not in cache and "no.such.hook" not in cache


def test_stack_puts_layers_first(tiny_model, cache):
    layers = tiny_model.config.num_layers
    stacked = cache.stack("pattern")
    assert stacked.shape == (layers, *cache["pattern", 0].shape)
    for layer in range(layers):
        assert torch.equal(stacked[layer], cache[hook_name("pattern", layer)])


def test_residual_stream_is_the_embeddings_then_every_layer(tiny_model, cache):
    stream = cache.residual_stream()
    assert stream.shape[0] == tiny_model.config.num_layers + 1
    assert torch.equal(stream[0], cache["embedding.hook_out"])
    assert torch.equal(stream[-1], cache["layer_out", -1])


def test_to_numpy_copies_every_entry(cache):
    arrays = cache.to_numpy()
    assert arrays.keys() == set(cache)
    name = "transformer.0.residual.hook_post"
    assert isinstance(arrays[name], np.ndarray) and np.array_equal(arrays[name], cache[name].numpy())


def test_stacked_kinds_are_written_into_one_tensor_with_the_same_values(tiny_model, tiny_batch, cache):
    with torch.no_grad():
        layers = tiny_model.config.num_layers
        _, stacked = tiny_model.run_with_cache(*tiny_batch, names=every_layer("pattern", layers) + every_layer("mlp_post", layers))
    assert set(stacked) == {hook_name(kind, layer) for kind in ("pattern", "mlp_post") for layer in range(tiny_model.config.num_layers)}
    patterns = stacked.stack("pattern")
    assert stacked["pattern", 1].data_ptr() == patterns[1].data_ptr()  # a view: stacking copied nothing
    torch.testing.assert_close(patterns, cache.stack("pattern"), atol=0, rtol=0)
    torch.testing.assert_close(stacked.stack("mlp_post"), cache.stack("mlp_post"), atol=0, rtol=0)


def test_scores_pattern_and_neurons_are_written_where_they_are_recorded_not_copied_there(tiny_model, tiny_batch):
    """A kind kept at every layer is computed straight into its layer's slice (HookPoint.slot): no [batch, head,
    query, key] or [batch, seq, intermediate] tensor is copied, and the values are those of a pass that records
    the same hooks one layer short (each activation kept as computed, nothing written in place)."""
    ids, types, _ = tiny_batch  # no attention mask: the scores need no masking after the product
    config = tiny_model.config
    kinds = ("scores", "pattern", "z", "mlp_post")
    with torch.no_grad(), torch.profiler.profile(record_shapes=True) as profile:
        _, cache = tiny_model.run_with_cache(ids, types, names=[hook_name(kind, layer) for kind in kinds for layer in range(config.num_layers)])
    batch, seq = ids.shape
    wide = ([batch, config.num_heads, seq, seq], [batch, seq, config.intermediate_size])
    copies = [event for event in profile.key_averages(group_by_input_shape=True) if event.key == "aten::copy_"]
    assert not [event.input_shapes for event in copies if event.input_shapes and event.input_shapes[0] in wide]
    with torch.no_grad():
        _, short = tiny_model.run_with_cache(ids, types, names=[hook_name(kind, layer) for kind in kinds for layer in range(config.num_layers - 1)])
    for kind in kinds:
        assert cache[kind, 0].data_ptr() == cache.stack(kind)[0].data_ptr()
        for layer in range(config.num_layers - 1):
            torch.testing.assert_close(cache[kind, layer], short[kind, layer])  # float32 rounding: another product kernel


def test_recording_every_layer_with_gradients_on_keeps_the_graph(tiny_model, tiny_batch, cache):
    """A kind kept at every layer is written into one tensor only when no gradient flows through it: with
    gradients on, the pass goes on with the original activation, so the output still has its graph."""
    logits, recorded = tiny_model.run_with_cache(*tiny_batch)
    assert logits.requires_grad and not recorded["pattern", 0].requires_grad
    logits.sum().backward()
    assert tiny_model.embedding.token_embedding.weight.grad is not None
    tiny_model.zero_grad(set_to_none=True)
    torch.testing.assert_close(recorded.stack("pattern"), cache.stack("pattern"), atol=0, rtol=0)


def test_what_was_not_recorded_is_a_clear_error(tiny_model, tiny_batch):
    _, cache = tiny_model.run_with_cache(*tiny_batch, names=[hook_name("pattern", 0)])
    with pytest.raises(UnknownHookError, match="holds no"):
        cache["pattern", 1]
    with pytest.raises(UnknownHookError, match="some layers only"):
        cache.stack("pattern")
    with pytest.raises(UnknownHookError, match="holds no 'mlp_post'"):
        cache.stack("mlp_post")
    with pytest.raises(InvalidInputError, match="per layer"):
        cache["pattern"]
    with pytest.raises(UnknownHookError, match="unknown hook kind"):
        cache.stack("patterns")
