"""The fused attention path (torch's scaled_dot_product_attention): taken exactly when nobody records or changes
the scores or the pattern, and giving what the step-by-step path and transformers give (fp32, 1e-5, padding too)."""
from __future__ import annotations

import copy

import pytest
import torch

import bert
from bert import attention, hook_name
from bert.hooks import every_layer
from bert_test_support import hf_config, randomize_

CLOSE = dict(atol=1e-5, rtol=1e-5)


@pytest.fixture
def fused_calls(monkeypatch) -> list:
    """Counts the layers that took the fused kernel."""
    calls = []
    original = attention.fused_attention

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(attention, "fused_attention", counted)
    return calls


def step_by_step(model, batch, **kwargs):
    """The logits with every layer's pattern recorded: the path that builds scores and pattern."""
    return model.run_with_cache(*batch, names=every_layer("pattern", model.config.num_layers), **kwargs)[0]


def test_fused_and_step_by_step_agree_with_padding(tiny_model, tiny_batch, fused_calls):
    keep = tiny_batch[2].bool()
    assert not keep.all()  # the batch has padded keys
    with torch.no_grad():
        fused = tiny_model(*tiny_batch)
        assert len(fused_calls) == tiny_model.config.num_layers
        eager = step_by_step(tiny_model, tiny_batch)
    assert len(fused_calls) == tiny_model.config.num_layers  # the recorded pass did not take it
    torch.testing.assert_close(fused[keep], eager[keep], **CLOSE)


@pytest.mark.parametrize(
    "names, fused",
    [
        ([], True),
        ([hook_name("z", 0), hook_name("q", 0), hook_name("k", 1), hook_name("layer_out", 1)], True),
        ([hook_name("pattern", 1)], "all but layer 1"),
        ([hook_name("scores", 0)], "all but layer 0"),
    ],
)
def test_the_fused_path_is_taken_unless_scores_or_pattern_are_recorded(tiny_model, tiny_batch, fused_calls, names, fused):
    layers = tiny_model.config.num_layers
    with torch.no_grad():
        _, cache = tiny_model.run_with_cache(*tiny_batch, names=names)
    assert set(cache) == set(names)
    assert len(fused_calls) == (layers if fused is True else layers - 1)


def test_changing_the_pattern_or_recording_it_or_a_torch_hook_takes_the_step_by_step_path(tiny_model, tiny_batch, fused_calls):
    layers = tiny_model.config.num_layers
    with torch.no_grad():
        tiny_model.run_with_cache(*tiny_batch, names=[], interventions={hook_name("pattern", 2): lambda p, name: p})
        assert len(fused_calls) == layers - 1
        _, everything = tiny_model.run_with_cache(*tiny_batch)  # recording every hook, the scores too
        assert len(fused_calls) == layers - 1 and everything.shapes[hook_name("scores", 0)][-2:] == (tiny_batch[0].shape[1],) * 2
        model = copy.deepcopy(tiny_model)
        seen = []
        model.transformer[0].attention.attention.hook_pattern.register_forward_hook(lambda module, args, out: seen.append(out.shape))
        model(*tiny_batch)
        assert len(fused_calls) == 2 * layers - 2 and len(seen) == 1


def test_z_stays_recordable_and_patchable_on_the_fused_path(tiny_model, tiny_batch, fused_calls):
    """Zeroing a head's output through hook_z gives the same logits on both paths."""
    def silence_head_1(z, name):
        z = z.clone()
        z[:, 1] = 0
        return z

    patch = {hook_name("z", 0): silence_head_1}
    with torch.no_grad():
        fused, cache = tiny_model.run_with_cache(*tiny_batch, names=[hook_name("z", 0)], interventions=patch)
        eager = step_by_step(tiny_model, tiny_batch, interventions=patch)
    assert len(fused_calls) == tiny_model.config.num_layers and torch.all(cache["z", 0][:, 1] == 0)
    keep = tiny_batch[2].bool()
    torch.testing.assert_close(fused[keep], eager[keep], **CLOSE)


def test_gradients_agree(tiny_model, tiny_batch, fused_calls):
    """Fine-tuning and pre-training backpropagate through the fused kernel: the same gradients (dropout off)."""
    model = copy.deepcopy(tiny_model)
    keep = tiny_batch[2].bool()
    gradients = []
    for run in (lambda: model(*tiny_batch), lambda: step_by_step(model, tiny_batch, detach=False)):
        model.zero_grad()
        run()[keep].square().mean().backward()
        gradients.append({name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None})
    assert len(fused_calls) == model.config.num_layers and len(gradients[0]) > 40
    assert gradients[0].keys() == gradients[1].keys()
    for name in gradients[0]:
        torch.testing.assert_close(gradients[0][name], gradients[1][name], **CLOSE, msg=lambda m: f"{name}: {m}")


def test_training_mode_applies_attention_dropout_on_the_fused_path(tiny_model, tiny_batch, fused_calls):
    model = copy.deepcopy(tiny_model).train()
    with torch.no_grad():
        torch.manual_seed(0)
        first = model.encode(*tiny_batch)
        torch.manual_seed(0)
        again = model.encode(*tiny_batch)
        torch.manual_seed(1)
        other = model.encode(*tiny_batch)
    assert len(fused_calls) == 3 * model.config.num_layers
    assert torch.equal(first, again) and not torch.allclose(first, other)


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_fused_path_matches_transformers(implementation, save_hf_model, tiny_batch, fused_calls):
    from transformers import BertModel

    theirs = randomize_(BertModel(hf_config(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=80)), seed=3).eval()
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    theirs = BertModel.from_pretrained(save_hf_model(theirs), attn_implementation=implementation).eval()
    keep = tiny_batch[2].bool()
    with torch.no_grad():
        reference = theirs(input_ids=tiny_batch[0], token_type_ids=tiny_batch[1], attention_mask=tiny_batch[2]).last_hidden_state
        hidden = ours.encode(*tiny_batch)
    assert len(fused_calls) == 2
    torch.testing.assert_close(hidden[keep], reference[keep], **CLOSE)


def test_minilm_fused_and_step_by_step_agree_on_real_sentences(minilm, minilm_batch, fused_calls):
    model, _ = minilm
    keep = minilm_batch[2].bool()
    with torch.no_grad():
        fused = model.encode(*minilm_batch)
        _, cache = model.run_with_cache(*minilm_batch, names=[hook_name("layer_out", 5), *every_layer("pattern", model.config.num_layers)])
    assert len(fused_calls) == model.config.num_layers
    torch.testing.assert_close(fused[keep], cache["layer_out", 5][keep], **CLOSE)


def test_patterns_from_the_fused_pass_q_and_k_match_transformers(save_hf_model, tiny_batch, fused_calls):
    """A pass that records q and k only stays fused; attention_pattern(q, k) on what it recorded gives
    transformers' eager output_attentions (padding included) and what the step-by-step path records."""
    from transformers import BertModel

    theirs = randomize_(BertModel(hf_config(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=80)), seed=5).eval()
    ours, _ = bert.load_pretrained(str(save_hf_model(theirs)))
    theirs = BertModel.from_pretrained(save_hf_model(theirs), attn_implementation="eager").eval()
    layers = ours.config.num_layers
    with torch.no_grad():
        reference = theirs(input_ids=tiny_batch[0], token_type_ids=tiny_batch[1], attention_mask=tiny_batch[2],
                           output_attentions=True).attentions
        _, cache = ours.run_with_cache(*tiny_batch, names=every_layer("q", layers) + every_layer("k", layers))
        assert len(fused_calls) == layers
        _, recorded = ours.run_with_cache(*tiny_batch, names=every_layer("pattern", layers))
    keep = tiny_batch[2].bool()
    for layer in range(layers):
        pattern = attention.attention_pattern(cache["q", layer], cache["k", layer], tiny_batch[2])
        rows = lambda patterns: patterns.transpose(1, 2)[keep]  # the real queries' rows: [query, head, key]
        torch.testing.assert_close(rows(pattern), rows(reference[layer]), **CLOSE)
        torch.testing.assert_close(pattern, recorded["pattern", layer], **CLOSE)


def test_the_causal_pattern_from_q_and_k_is_the_recorded_one():
    """With causal=True the pattern from q and k hides every key right of its query, as the step-by-step path does."""
    config = bert.BertConfig(vocab_size=40, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=48,
                             max_position_embeddings=32, causal=True)
    torch.manual_seed(0)
    model = randomize_(bert.Bert(config), seed=4).eval()
    ids = torch.randint(0, 40, (2, 9))
    with torch.no_grad():
        _, cache = model.run_with_cache(ids, torch.zeros_like(ids), names=["transformer.1.attention.attention.hook_q",
                                                                           "transformer.1.attention.attention.hook_k",
                                                                           "transformer.1.attention.attention.hook_pattern"])
    pattern = attention.attention_pattern(cache["q", 1], cache["k", 1], causal=True)
    assert torch.all(pattern.triu(1) == 0)
    torch.testing.assert_close(pattern, cache["pattern", 1], rtol=0, atol=0)
