"""Value zeroing (bert/analysis/attention/value_zeroing.py) against `transformers`: the same checkpoint, each
layer recomputed by Hugging Face's own BertLayer with a forward hook that zeroes one token's value vectors, in
float64; and the batched computation against the one-token-at-a-time loop through our own layer."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import bert
from bert.analysis.attention.mixing import context_mixing, record_for_mixing
from bert.analysis.attention.mixing_parts import recorded_layers
from bert.analysis.attention.value_zeroing import value_zeroing, value_zeroing_loop, zeroed_outputs
from bert.analysis.cosine import cosine_distance

TEXT = "the dog barked at the mailman ."


@pytest.fixture(scope="module")
def checkpoint(tiny_mlm_folder):
    """(our model, its tokenizer, transformers' BertModel) on the same saved weights, in float64."""
    from transformers import BertModel

    ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    reference = BertModel.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    return ours.double(), tokenizer, reference.double()


def _reference_value_zeroing(reference, input_ids, token_type_ids) -> np.ndarray:
    """Mohebbi et al. 2023's definition with Hugging Face's layers: [layer, query, key], rows normalised; the
    distance as torch's own 1 − cos, exact enough in float64 (give the reference in float64)."""
    with torch.no_grad():
        hidden_states = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states
    seq = input_ids.shape[1]
    matrices = []
    for number, layer in enumerate(reference.encoder.layer):
        layer_input = hidden_states[number]
        zeroed = {"token": None}

        def zero_value(module, args, output):
            if zeroed["token"] is None:
                return output
            output = output.clone()
            output[:, zeroed["token"]] = 0  # [batch, seq, hidden]: every head's value of that token
            return output

        handle = layer.attention.self.value.register_forward_hook(zero_value)
        try:
            with torch.no_grad():
                outputs = []
                for token in [None, *range(seq)]:
                    zeroed["token"] = token
                    out = layer(layer_input)
                    outputs.append((out[0] if isinstance(out, tuple) else out)[0])
        finally:
            handle.remove()
        torch.testing.assert_close(outputs[0], hidden_states[number + 1][0])  # nothing zeroed: the layer's own output
        distances = torch.stack([1 - F.cosine_similarity(changed, outputs[0], dim=-1) for changed in outputs[1:]], dim=1)
        matrices.append((distances / distances.sum(-1, keepdim=True)).numpy())
    return np.stack(matrices)


def test_value_zeroing_equals_transformers_with_forward_hooks(checkpoint):
    ours, tokenizer, reference = checkpoint
    input_ids, token_type_ids = tokenizer.encode(TEXT).tensors()
    _, cache = record_for_mixing(ours, input_ids, token_type_ids)
    mixing = context_mixing(ours, cache, "value-zeroing")
    expected = _reference_value_zeroing(reference, input_ids, token_type_ids)
    assert mixing.layers.shape == expected.shape == (2, input_ids.shape[1], input_ids.shape[1])
    np.testing.assert_allclose(mixing.layers, expected, atol=1e-5, rtol=0)


def test_value_zeroing_in_float32_equals_transformers_in_float64_on_the_builtin_model(minilm, minilm_path):
    """The built-in model in float32 against the same weights in transformers' BertModel in float64: every row of
    every layer within 1e-4. Where a token barely changes (the [CLS] row of the first layers) 1 − cos in float32
    would be off by 4e-2 after normalising; the distance as ‖a/|a| − b/|b|‖² / 2 keeps it."""
    from transformers import BertModel

    model, tokenizer = minilm
    reference = BertModel.from_pretrained(minilm_path, attn_implementation="eager").eval().double()
    input_ids, token_type_ids = tokenizer.encode("The doctor said that [MASK] was tired after the long shift.").tensors()
    _, cache = record_for_mixing(model, input_ids, token_type_ids)
    mixing = context_mixing(model, cache, "value-zeroing")
    expected = _reference_value_zeroing(reference, input_ids, token_type_ids)
    assert next(model.parameters()).dtype == torch.float32 and mixing.layers.shape == expected.shape
    np.testing.assert_allclose(mixing.layers, expected, atol=1e-4, rtol=0)


def test_nothing_zeroed_is_the_recorded_output_and_zero_distance(tiny_model):
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 14, 3]])
    _, cache = record_for_mixing(tiny_model, input_ids, torch.zeros_like(input_ids))
    for layer in recorded_layers(tiny_model, cache):
        unchanged = zeroed_outputs(layer, torch.ones(2, 7))
        torch.testing.assert_close(unchanged[0], layer.layer_out, atol=1e-5, rtol=0)
        assert torch.all(cosine_distance(unchanged, layer.layer_out[None]).abs() < 1e-6)


def test_batched_and_one_token_at_a_time_agree(tiny_model, monkeypatch):
    """The batched passes (every token's zeroing in one batch; then one row per pass) and the loop through our own
    layer with an intervention on its value hook. In float64, so that the cosine distances' float32 rounding (about
    1e-5 of a row's share) does not hide a difference."""
    from bert.analysis.attention import value_zeroing as module

    tiny_model = copy.deepcopy(tiny_model).double()
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 14, 15, 3]])
    _, cache = record_for_mixing(tiny_model, input_ids, torch.zeros_like(input_ids))
    layers = recorded_layers(tiny_model, cache)
    looped = value_zeroing_loop(tiny_model, layers)
    torch.testing.assert_close(value_zeroing(layers), looped, atol=1e-10, rtol=0)
    monkeypatch.setattr(module, "ROWS_BUDGET", 1)
    seen = []
    torch.testing.assert_close(value_zeroing(layers, lambda done, total: seen.append((done, total))), looped, atol=1e-10, rtol=0)
    assert seen == [(done, 24) for done in range(1, 25)]  # 8 rows in each of 3 layers, one per pass


def test_batched_equals_the_loop_in_float32(tiny_model):
    """The library's own precision: each share within 1e-5 of the one-token loop through the model's layer."""
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 14, 15, 16, 17, 3]])
    _, cache = record_for_mixing(tiny_model, input_ids, torch.zeros_like(input_ids))
    layers = recorded_layers(tiny_model, cache)
    looped = value_zeroing_loop(tiny_model, layers)
    assert looped.min() >= 0 and (looped.amax(-1) - looped.amin(-1)).min() > 1e-3  # shares that differ between keys
    torch.testing.assert_close(value_zeroing(layers), looped, atol=1e-5, rtol=0)


def test_progress_can_stop_the_work(tiny_model):
    input_ids = torch.tensor([[2, 10, 11, 3]])
    _, cache = record_for_mixing(tiny_model, input_ids, torch.zeros_like(input_ids))

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop

    with pytest.raises(Stop):
        context_mixing(tiny_model, cache, "value-zeroing", progress=stop)
