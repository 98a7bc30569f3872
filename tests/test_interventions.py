"""Interventions: ablating and patching act exactly where asked, and nowhere upstream."""
from __future__ import annotations

import pytest
import torch

from bert import interventions
from bert.hooks import hook_name
from bert.errors import InvalidInputError
from bert_test_support import TINY_VOCAB, pad_rows, random_rows


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[1]) if parts[0] == "transformer" else None


def upstream_of(layer: int):
    """Hook names computed before layer `layer` starts: the embedding and every earlier layer."""
    return lambda name: name.startswith("embedding.") or (layer_of(name) is not None and layer_of(name) < layer)


@pytest.fixture(scope="module")
def clean(tiny_model, tiny_batch):
    return tiny_model.run_with_cache(*tiny_batch)


def assert_same(cache_a: dict, cache_b: dict, names) -> None:
    for name in names:
        assert torch.equal(cache_a[name], cache_b[name]), f"{name} changed"


def test_zero_one_head_changes_only_that_head_and_nothing_upstream(tiny_model, tiny_batch, clean):
    clean_logits, clean_cache = clean
    layer, head = 1, 2
    logits, cache = tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", layer): interventions.zero_heads(head)})
    z, clean_z = cache[hook_name("z", layer)], clean_cache[hook_name("z", layer)]
    assert torch.all(z[:, head] == 0) and clean_z[:, head].abs().sum() > 0
    others = [h for h in range(tiny_model.config.num_heads) if h != head]
    assert torch.equal(z[:, others], clean_z[:, others])
    assert_same(cache, clean_cache, filter(upstream_of(layer), cache))
    same_layer_before_z = [f"transformer.{layer}.attention.attention.hook_{x}" for x in ("q", "k", "v", "scores", "pattern")]
    assert_same(cache, clean_cache, same_layer_before_z)
    assert not torch.allclose(logits, clean_logits)
    assert not torch.allclose(cache[f"transformer.{layer}.hook_out"], clean_cache[f"transformer.{layer}.hook_out"])


def test_ablating_a_head_in_the_last_layer_leaves_earlier_layers_alone(tiny_model, tiny_batch, clean):
    clean_logits, clean_cache = clean
    last = tiny_model.config.num_layers - 1
    logits, cache = tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", last): interventions.zero_heads(0, 3)})
    upstream = list(filter(upstream_of(last), clean_cache))
    assert len(upstream) == 5 + 12 * last  # 5 embedding hooks, 12 per layer
    assert_same(cache, clean_cache, upstream)
    assert not torch.allclose(logits, clean_logits)


def test_zeroing_a_heads_z_equals_removing_its_share_of_the_output_projection(tiny_model, tiny_batch, clean):
    """Reference by hand: attention's result without head h is the output projection of z with h's columns cut."""
    _, clean_cache = clean
    layer, head = 0, 1
    _, cache = tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", layer): interventions.zero_heads(head)})
    projection = tiny_model.transformer[layer].attention.mlp
    head_dim = tiny_model.config.head_size
    z = clean_cache[hook_name("z", layer)]  # [batch, head, seq, head_dim]
    z_flat = z.permute(0, 2, 1, 3).reshape(z.shape[0], z.shape[2], -1)
    columns = slice(head * head_dim, (head + 1) * head_dim)
    expected = clean_cache[f"transformer.{layer}.attention.hook_result"] - z_flat[..., columns] @ projection.weight[:, columns].T
    torch.testing.assert_close(cache[f"transformer.{layer}.attention.hook_result"], expected, atol=1e-5, rtol=1e-5)


def test_mean_ablation_puts_the_mean_in_place(tiny_model, tiny_batch, clean):
    _, clean_cache = clean
    mean_z = clean_cache[hook_name("z", 0)].mean(dim=(0, 2))  # [head, head_dim]
    _, cache = tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", 0): interventions.mean_heads(mean_z, 3)})
    z = cache[hook_name("z", 0)]
    assert torch.equal(z[:, 3], mean_z[3].expand_as(z[:, 3]))
    assert torch.equal(z[:, :3], clean_cache[hook_name("z", 0)][:, :3])


@pytest.mark.parametrize(
    "bad",
    [lambda a, n: a[:, :-1], lambda a, n: a.sum(), lambda a, n: None, lambda a, n: a.detach().numpy()],
    ids=["shorter", "scalar", "none", "numpy"],
)
def test_intervention_returning_the_wrong_thing_raises(tiny_model, tiny_batch, bad):
    with pytest.raises(InvalidInputError, match="transformer.0.attention.attention.hook_pattern"):
        tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("pattern", 0): bad})


def test_patching_a_full_layer_output_reproduces_the_other_run_downstream(tiny_model):
    """Two inputs of the same length and padding: patch layer 1's output from B into A's run."""
    vocab = len(TINY_VOCAB)
    layout = [(6, 0), (3, 4)]
    run_a = pad_rows(random_rows(vocab, layout, seed=10))
    run_b = pad_rows(random_rows(vocab, layout, seed=11))
    assert torch.equal(run_a[2], run_b[2]) and not torch.equal(run_a[0], run_b[0])
    logits_a, cache_a = tiny_model.run_with_cache(*run_a)
    logits_b, cache_b = tiny_model.run_with_cache(*run_b)
    patched_name = "transformer.1.hook_out"
    logits, cache = tiny_model.run_with_cache(*run_a, interventions={patched_name: interventions.patch(cache_b[patched_name])})
    torch.testing.assert_close(logits, logits_b, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(logits_a, logits_b)
    downstream = [n for n in cache if layer_of(n) is not None and layer_of(n) >= 2] + ["lm_head.hook_transform"]
    for name in downstream:
        torch.testing.assert_close(cache[name], cache_b[name], atol=1e-6, rtol=1e-6, msg=lambda m: f"{name}: {m}")
    assert_same(cache, cache_a, filter(upstream_of(1), cache))  # upstream is still A's


def test_patching_some_positions_of_a_head_output(tiny_model, tiny_batch, clean):
    _, clean_cache = clean
    source = torch.randn(clean_cache[hook_name("z", 0)].shape)
    patch = interventions.patch(source, positions=[1, 4])
    _, cache = tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", 0): patch})
    z, clean_z = cache[hook_name("z", 0)], clean_cache[hook_name("z", 0)]
    assert torch.equal(z[:, :, [1, 4]], source[:, :, [1, 4]])  # positions are the query axis of [batch, head, query, head_dim]
    keep = [p for p in range(z.shape[2]) if p not in (1, 4)]
    assert torch.equal(z[:, :, keep], clean_z[:, :, keep])


def test_zero_removes_what_the_mlp_adds(tiny_model, tiny_batch, clean):
    _, clean_cache = clean
    _, cache = tiny_model.run_with_cache(*tiny_batch, interventions={"transformer.0.residual.hook_result": interventions.zero})
    layer = tiny_model.transformer[0]
    expected = layer.residual.layer_norm(clean_cache["transformer.0.attention.hook_out"])
    torch.testing.assert_close(cache["transformer.0.hook_out"], expected)


def test_interventions_on_one_hook_apply_in_order(tiny_model, tiny_batch, clean):
    _, clean_cache = clean
    name = "embedding.hook_sum"
    pairs = [(name, lambda a, n: a * 2), (name, lambda a, n: a + 1)]
    _, cache = tiny_model.run_with_cache(*tiny_batch, interventions=pairs)
    torch.testing.assert_close(cache[name], clean_cache[name] * 2 + 1)


def test_a_run_with_interventions_leaves_the_next_run_clean(tiny_model, tiny_batch, clean):
    tiny_model.run_with_cache(*tiny_batch, interventions={hook_name("z", 0): interventions.zero_heads(0, 1, 2, 3)})
    logits, _ = tiny_model.run_with_cache(*tiny_batch)  # recording all, as `clean` did: the same attention path
    assert torch.equal(logits, clean[0])
