"""Hook points: every hook name, with its shape; the names filter; what attention patterns must satisfy."""
from __future__ import annotations

import copy

import pytest
import torch

from bert import UnknownHookError, hook_name
from bert.errors import InvalidInputError
from bert_test_support import float32_tolerance


def expected_hooks(batch: int, seq: int, hidden: int, heads: int, intermediate: int, vocab: int, layers: int) -> dict[str, tuple]:
    """Written out by hand, not read from the model."""
    head_dim = hidden // heads
    shapes = {f"embedding.hook_{part}": (batch, seq, hidden) for part in ("token", "position", "token_type", "sum", "out")}
    for i in range(layers):
        attention = f"transformer.{i}.attention"
        shapes |= {f"{attention}.attention.hook_{x}": (batch, heads, seq, head_dim) for x in ("q", "k", "v", "z")}
        shapes |= {f"{attention}.attention.hook_{x}": (batch, heads, seq, seq) for x in ("scores", "pattern")}
        shapes |= {f"{attention}.hook_result": (batch, seq, hidden), f"{attention}.hook_out": (batch, seq, hidden)}
        shapes |= {
            f"transformer.{i}.residual.hook_pre": (batch, seq, intermediate),
            f"transformer.{i}.residual.hook_post": (batch, seq, intermediate),
            f"transformer.{i}.residual.hook_result": (batch, seq, hidden),
            f"transformer.{i}.hook_out": (batch, seq, hidden),
        }
    return shapes | {"lm_head.hook_transform": (batch, seq, hidden), "lm_head.hook_logits": (batch, seq, vocab)}


@pytest.fixture(scope="module")
def full_run(tiny_model, tiny_batch):
    return tiny_model.run_with_cache(*tiny_batch)


def test_every_hook_is_present_with_its_shape(tiny_model, tiny_batch, full_run):
    config = tiny_model.config
    batch, seq = tiny_batch[0].shape
    expected = expected_hooks(batch, seq, config.hidden_size, config.num_heads, config.intermediate_size, config.vocab_size, config.num_layers)
    logits, cache = full_run
    output_heads = {"pooler.hook_out", "nsp_head.hook_logits"}  # on the model, not on the masked-LM path
    assert set(tiny_model.hook_names()) == set(expected) | output_heads
    assert set(cache) == set(expected)
    assert {name: tuple(cache[name].shape) for name in expected} == expected
    assert logits.shape == (batch, seq, config.vocab_size)


def test_hook_names_come_in_forward_order(tiny_model):
    names = tiny_model.hook_names()
    assert names[0] == "embedding.hook_token" and names[-3:] == ["lm_head.hook_logits", "pooler.hook_out", "nsp_head.hook_logits"]
    order = [names.index(f"transformer.{i}.hook_out") for i in range(tiny_model.config.num_layers)]
    assert order == sorted(order)
    assert names.index("transformer.0.attention.attention.hook_q") < names.index("transformer.0.attention.attention.hook_pattern")


def test_cache_logits_equal_plain_forward(tiny_model, tiny_batch, full_run):
    """Recording nothing is a plain forward pass; recording the patterns takes the step-by-step attention
    instead of the fused kernel: the same logits to float rounding (tests/test_sdpa.py)."""
    logits, cache = full_run
    with torch.no_grad():
        plain = tiny_model(*tiny_batch)
        unrecorded, _ = tiny_model.run_with_cache(*tiny_batch, names=[])
    assert torch.equal(unrecorded, plain)
    torch.testing.assert_close(logits.detach(), plain, atol=1e-5, rtol=1e-5)
    assert torch.equal(cache["lm_head.hook_logits"], logits.detach())
    assert not any(t.requires_grad for t in cache.values())  # detach=True by default


def test_names_filter_list(tiny_model, tiny_batch):
    wanted = ["transformer.1.attention.attention.hook_pattern", "embedding.hook_sum"]
    _, cache = tiny_model.run_with_cache(*tiny_batch, names=wanted)
    assert set(cache) == set(wanted)


def test_names_filter_predicate(tiny_model, tiny_batch):
    _, cache = tiny_model.run_with_cache(*tiny_batch, names=lambda name: name.endswith("hook_z"))
    assert set(cache) == {f"transformer.{i}.attention.attention.hook_z" for i in range(tiny_model.config.num_layers)}


def test_empty_names_list_keeps_nothing_and_still_returns_logits(tiny_model, tiny_batch, full_run):
    logits, cache = tiny_model.run_with_cache(*tiny_batch, names=[])
    assert cache == {}
    torch.testing.assert_close(logits, full_run[0], atol=1e-5, rtol=1e-5)  # the fused attention: see above


@pytest.mark.parametrize("names", [["transformer.0.hook_nope"], ["embedding.hook_sum", "transformer.99.hook_out"], "hook_pattern"])
def test_unknown_names_raise(tiny_model, tiny_batch, names):
    with pytest.raises(UnknownHookError, match="unknown hook name"):
        tiny_model.run_with_cache(*tiny_batch, names=names)


def test_unknown_intervention_name_raises(tiny_model, tiny_batch):
    with pytest.raises(UnknownHookError):
        tiny_model.run_with_cache(*tiny_batch, interventions={"transformer.0.attention.hook_z": lambda a, n: a})


def test_attention_rows_sum_to_one_and_padded_keys_get_exactly_zero(tiny_model, tiny_batch, full_run):
    _, cache = full_run
    attention_mask = tiny_batch[2]
    assert (attention_mask == 0).any(), "the batch must have padding for this test to mean anything"
    padded_key = (attention_mask == 0)[:, None, None, :]
    for i in range(tiny_model.config.num_layers):
        pattern = cache[f"transformer.{i}.attention.attention.hook_pattern"]
        torch.testing.assert_close(pattern.sum(-1), torch.ones(pattern.shape[:3]))
        assert (pattern >= 0).all()
        assert torch.all(pattern.masked_select(padded_key.expand_as(pattern)) == 0)


def test_pattern_is_softmax_of_scores_over_scaled_dot_products(tiny_model, tiny_batch, full_run):
    """Recomputed here from q and k with plain torch: q k^T / sqrt(head_dim), softmax over real keys."""
    _, cache = full_run
    attention_mask = tiny_batch[2]
    q, k = cache["transformer.0.attention.attention.hook_q"], cache["transformer.0.attention.attention.hook_k"]
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    expected = scores.masked_fill((attention_mask == 0)[:, None, None, :], float("-inf")).softmax(-1)
    torch.testing.assert_close(cache["transformer.0.attention.attention.hook_pattern"], expected)


def test_embedding_sum_is_token_plus_position_plus_token_type(tiny_model, tiny_batch, full_run):
    _, cache = full_run
    input_ids, token_type_ids, _ = tiny_batch
    summed = cache["embedding.hook_token"] + cache["embedding.hook_position"] + cache["embedding.hook_token_type"]
    torch.testing.assert_close(cache["embedding.hook_sum"], summed)
    # and each part is what its table says: row `id` of the token table, row `position` of the position table
    embedding = tiny_model.embedding
    torch.testing.assert_close(cache["embedding.hook_token"], embedding.token_embedding.weight[input_ids])
    torch.testing.assert_close(cache["embedding.hook_token_type"], embedding.token_type_embedding.weight[token_type_ids])
    positions = torch.arange(input_ids.shape[1])
    torch.testing.assert_close(cache["embedding.hook_position"][1], embedding.position_embedding.weight[positions])


def test_layer_hooks_chain(tiny_model, full_run):
    """A layer's output is the next layer's input: residual adds what attention and the MLP wrote."""
    _, cache = full_run
    layer = tiny_model.transformer[1]
    before = cache["transformer.0.hook_out"]
    after_attention = layer.attention.layer_norm(before + cache["transformer.1.attention.hook_result"])
    torch.testing.assert_close(cache["transformer.1.attention.hook_out"], after_attention)
    after_mlp = layer.residual.layer_norm(after_attention + cache["transformer.1.residual.hook_result"])
    torch.testing.assert_close(cache["transformer.1.hook_out"], after_mlp)


def test_logit_mask_gives_the_full_runs_logits_at_those_positions(tiny_model, tiny_batch, full_run):
    full_logits, _ = full_run
    logit_mask = torch.zeros(tiny_batch[0].shape, dtype=torch.bool)
    logit_mask[0, 3] = logit_mask[2, 1] = logit_mask[2, 7] = True
    logits, cache = tiny_model.run_with_cache(*tiny_batch, logit_mask=logit_mask)
    assert logits.shape == (3, tiny_model.config.vocab_size)
    # the output head on 3 rows or on the whole batch: its two matrix products (hidden_size terms each) may add in
    # other orders
    atol = float32_tolerance(full_logits.abs().max().item(), tiny_model.config.hidden_size, sums=2)
    torch.testing.assert_close(logits, full_logits[logit_mask], atol=atol, rtol=0)
    assert cache["lm_head.hook_logits"].shape == (3, tiny_model.config.vocab_size)
    with torch.no_grad():
        torch.testing.assert_close(tiny_model(*tiny_batch, logit_mask=logit_mask), logits)


@pytest.mark.parametrize("bad", [torch.ones(5, 3, dtype=torch.bool), "int"], ids=["wrong-shape", "not-bool"])
def test_bad_logit_mask_raises(tiny_model, tiny_batch, bad):
    mask = torch.ones(tiny_batch[0].shape, dtype=torch.long) if bad == "int" else bad
    with pytest.raises(InvalidInputError):
        tiny_model(*tiny_batch, logit_mask=mask)


def test_detach_false_keeps_the_graph(tiny_model, tiny_batch):
    _, cache = tiny_model.run_with_cache(*tiny_batch, names=["transformer.0.hook_out"], detach=False)
    assert cache["transformer.0.hook_out"].requires_grad


def test_no_recording_outside_run_with_cache(tiny_model, tiny_batch, full_run):
    """After a run, a plain forward records nothing anywhere (no state left on the shared model)."""
    _, cache = full_run
    size_before = len(cache)
    with torch.no_grad():
        tiny_model(*tiny_batch)
    assert len(cache) == size_before


def _hook_name_tests_model(mlm_head: bool):
    from bert import Bert, BertConfig

    config = BertConfig(vocab_size=50, hidden_size=16, num_layers=3, num_heads=2, intermediate_size=24, max_position_embeddings=32)
    return Bert(config, mlm_head=mlm_head, pooler=mlm_head, nsp_head=mlm_head)


@pytest.mark.parametrize("mlm_head", [True, False], ids=["every head", "encoder only"])
def test_hook_name_builds_every_hook_of_the_model(mlm_head):
    from bert.hooks import EMBEDDING_HOOKS, LAYER_HOOKS, MLM_HOOKS, every_hook_name

    model = _hook_name_tests_model(mlm_head)
    heads = ("pooled", "nsp_logits") if mlm_head else ()
    built = every_hook_name(model.config.num_layers, lm_head=mlm_head, output_hooks=heads)
    assert set(model.hook_names()) == set(built) and len(built) == len(set(built))
    assert len(built) == len(EMBEDDING_HOOKS) + 3 * len(LAYER_HOOKS) + (len(MLM_HOOKS) + 2 if mlm_head else 0)


def test_hook_name_spells_the_module_paths_and_refuses_nonsense(tiny_model):
    from bert import hook_name

    assert hook_name("pattern", 2) == "transformer.2.attention.attention.hook_pattern"
    assert hook_name("mlp_post", 0) == "transformer.0.residual.hook_post"
    assert hook_name("layer_out", 1) == "transformer.1.hook_out"
    assert hook_name("token_type") == "embedding.hook_token_type" and hook_name("logits") == "lm_head.hook_logits"
    for name in (hook_name("z", 1), hook_name("attention_result", 2), hook_name("embedding_out")):
        assert name in tiny_model.hook_names()
    with pytest.raises(InvalidInputError, match="per layer"):
        hook_name("pattern")
    with pytest.raises(InvalidInputError, match="not per layer"):
        hook_name("logits", 1)
    with pytest.raises(UnknownHookError, match="unknown hook kind"):
        hook_name("attention", 0)


def test_stack_layers_and_per_head_hooks(tiny_model, tiny_batch, full_run):
    from bert.hooks import hook_name, is_per_head, stack_layers

    _, cache = full_run
    layers = tiny_model.config.num_layers
    stacked = stack_layers(cache, "pattern")
    assert stacked.shape == (layers, *cache["transformer.0.attention.attention.hook_pattern"].shape)
    for layer in range(layers):
        assert torch.equal(stacked[layer], cache[f"transformer.{layer}.attention.attention.hook_pattern"])
    with pytest.raises(UnknownHookError):
        stack_layers({}, "pattern")
    per_head = {name for name in tiny_model.hook_names() if is_per_head(name)}
    assert per_head == {hook_name(kind, layer) for kind in ("q", "k", "v", "scores", "pattern", "z") for layer in range(layers)}
    assert all(cache[name].shape[1] == tiny_model.config.num_heads for name in per_head)


def test_untouched_hooks_pass_through_and_the_cache_has_every_shape(tiny_model, tiny_batch, full_run):
    _, full = full_run
    with torch.no_grad():
        logits, cache = tiny_model.run_with_cache(*tiny_batch, names=["embedding.hook_sum"])
    assert set(cache) == {"embedding.hook_sum"} and torch.equal(cache["embedding.hook_sum"], full["embedding.hook_sum"])
    batch, seq = tiny_batch[0].shape
    config = tiny_model.config
    reached = [name for name in tiny_model.hook_names() if not name.startswith(("pooler.", "nsp_head."))]
    assert list(full.shapes) == reached  # every hook the masked-LM pass reaches, in order
    assert full.shapes[hook_name("scores", 0)] == (batch, config.num_heads, seq, seq)
    assert full.shapes[hook_name("mlp_post", 1)] == (batch, seq, config.intermediate_size)
    assert cache.shapes == {"embedding.hook_sum": (batch, seq, config.hidden_size)}


def test_pytorchs_own_module_hooks_on_a_hook_point_fire(tiny_model, tiny_batch, full_run):
    """register_forward_pre_hook / register_forward_hook on a hook point work as on any nn.Module: the hook points
    skip nn.Module's call machinery only while no such hook is registered."""
    model = copy.deepcopy(tiny_model)  # the shared fixture stays untouched
    name = hook_name("pattern", 1)
    point = model.get_submodule(name)
    seen = []
    handles = [
        point.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone())),
        point.register_forward_hook(lambda module, args, output: torch.zeros_like(output)),
    ]
    with torch.no_grad():
        hooked = model(*tiny_batch)
        zeroed, _ = tiny_model.run_with_cache(*tiny_batch, names=[], interventions={name: lambda a, n: torch.zeros_like(a)})
        for handle in handles:
            handle.remove()
        plain = model(*tiny_batch)
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], full_run[1][name])
    torch.testing.assert_close(hooked, zeroed)
    assert not torch.allclose(hooked, plain)
    torch.testing.assert_close(plain, full_run[0])
