"""Context mixing (bert/analysis/attention/mixing.py): each decomposition sums to what the model computed, each
rollout is the product of its layers' matrices with the residual share its paper gives, and DecompX's parts sum to
the logit the model outputs. A tiny random BERT whose every weight, LayerNorms and biases included, is random."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bert import Bert, BertConfig
from bert.analysis.attention.decompx import decompx
from bert.analysis.attention.mixing import METHODS, check_method, context_mixing, record_for_mixing
from bert.analysis.attention.mixing_parts import attention_parts, recorded_layers, transformed_values
from bert.analysis.attention.norm_based import alti_contributions, bias_parts, norm_matrix, token_parts
from bert.errors import InvalidInputError, MissingHeadError
from bert_test_support import TINY_VOCAB, randomize_, small_bert

SEQ = 9


@pytest.fixture(scope="module")
def recorded(tiny_model):
    input_ids = torch.tensor([[2] + list(range(10, 10 + SEQ - 2)) + [3]])
    _, cache = record_for_mixing(tiny_model, input_ids, torch.zeros_like(input_ids))
    return input_ids, cache, recorded_layers(tiny_model, cache)


def test_norm_parts_sum_exactly_to_the_attention_blocks_output(recorded, tiny_model):
    """Σ_j Σ_h α^h_ij f^h(x_j) + b_O is the attention block's output before the residual (attention_result)."""
    _, _, layers = recorded
    for layer in layers:
        parts = attention_parts(layer.pattern, transformed_values(layer.module, layer.x))
        assert parts.shape == (SEQ, SEQ, tiny_model.config.hidden_size)
        torch.testing.assert_close(parts.sum(1) + layer.module.attention.mlp.bias, layer.attention_result, atol=1e-5, rtol=0)
        torch.testing.assert_close(norm_matrix(layer, "norm"), parts.norm(dim=-1))


def test_norm_of_one_head_is_the_weight_times_the_transformed_vectors_norm():
    """One head: N_ij = α_ij ‖f(x_j)‖, Kobayashi et al. 2020's weight-times-norm, by hand on a 1-head model."""
    model = randomize_(Bert(BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=8, num_layers=1, num_heads=1,
                                       intermediate_size=16, max_position_embeddings=16)), seed=3).eval()
    input_ids = torch.tensor([[2, 10, 11, 12, 3]])
    _, cache = record_for_mixing(model, input_ids, torch.zeros_like(input_ids))
    (layer,) = recorded_layers(model, cache)
    linear_v, linear_o = model.transformer[0].attention.attention.project_value, model.transformer[0].attention.mlp
    f = (layer.x @ linear_v.weight.T + linear_v.bias) @ linear_o.weight.T  # [key, hidden]
    expected = layer.pattern[0] * f.norm(dim=-1)[None]
    torch.testing.assert_close(norm_matrix(layer, "norm"), expected, atol=1e-6, rtol=1e-5)


def test_alti_parts_sum_to_the_attention_blocks_output_after_layer_norm(recorded):
    """Σ_j T_i(x_j) + the biases' share = LN1(x_i + attention_result_i), the recorded attention_out."""
    _, _, layers = recorded
    for layer in layers:
        parts = token_parts(layer, slice(None), "ln1")
        torch.testing.assert_close(parts.sum(1) + bias_parts(layer)["ln1"], layer.attention_out, atol=1e-4, rtol=0)


def test_alti_contributions_from_their_definition(recorded):
    """c_ij = max(0, ‖y_i‖₁ − ‖y_i − T_i(x_j)‖₁) / Σ_k (...), y_i = Σ_j T_i(x_j), written out with numpy."""
    _, _, layers = recorded
    layer = layers[1]
    parts = token_parts(layer, slice(None), "ln1").numpy().astype(np.float64)  # [query, key, hidden]
    resultant = parts.sum(1)
    raw = np.maximum(0, np.abs(resultant).sum(-1)[:, None] - np.abs(resultant[:, None] - parts).sum(-1))
    np.testing.assert_allclose(alti_contributions(layer).numpy(), raw / raw.sum(-1, keepdims=True), atol=1e-5)


def test_globenc_parts_with_the_mlp_share_sum_to_the_layers_output(recorded):
    """g2 of the LN1 parts, plus g2 of (the biases' LN1 share + the MLP's output) + β2, is LN2's output."""
    from bert.analysis.attention.mixing_parts import layer_norm_bias_part, layer_norm_scale

    _, _, layers = recorded
    for layer in layers:
        ln2 = layer.module.residual.layer_norm
        scale = layer_norm_scale(layer.attention_out + layer.mlp_result, ln2)
        rest = layer_norm_bias_part(bias_parts(layer)["ln1"] + layer.mlp_result, scale, ln2)
        torch.testing.assert_close(token_parts(layer, slice(None), "ln2").sum(1) + rest, layer.layer_out, atol=1e-4, rtol=0)
        torch.testing.assert_close(norm_matrix(layer, "globenc"), token_parts(layer, slice(None), "ln2").norm(dim=-1))


def test_key_chunks_give_the_same_matrices(recorded, monkeypatch):
    """Keys one at a time (the smallest chunk) and all at once agree."""
    from bert.analysis.attention import norm_based

    _, _, layers = recorded
    whole = {method: norm_matrix(layers[2], method) for method in ("norm", "norm-residual", "globenc", "alti")}
    monkeypatch.setattr(norm_based, "PARTS_BUDGET", 1)
    for method, matrix in whole.items():
        torch.testing.assert_close(norm_matrix(layers[2], method), matrix, atol=1e-6, rtol=1e-5)


def _rollout_by_hand(matrices: np.ndarray, residual: float) -> np.ndarray:
    eye = np.eye(matrices.shape[-1])
    mixed = [(1 - residual) * m / m.sum(-1, keepdims=True) + residual * eye for m in matrices]
    return np.linalg.multi_dot(mixed[::-1])


@pytest.mark.parametrize("method, residual", [("attention", 0.5), ("globenc", 0.0), ("alti", 0.0), ("value-zeroing", 0.0)])
def test_rollout_is_the_product_of_the_layers_with_the_papers_residual_share(recorded, tiny_model, method, residual):
    """Attention: Abnar & Zuidema's 0.5·A + 0.5·I; GlobEnc, ALTI and value zeroing: their row-normalised matrices
    as they are (the residual is inside each layer's matrix)."""
    _, cache, _ = recorded
    mixing = context_mixing(tiny_model, cache, method)
    assert mixing.layers.shape == (tiny_model.config.num_layers, SEQ, SEQ)
    np.testing.assert_allclose(mixing.whole_model, _rollout_by_hand(mixing.layers, residual), atol=1e-10)
    np.testing.assert_allclose(mixing.whole_model.sum(-1), 1.0, atol=1e-6)


def test_methods_without_a_rollout_in_their_paper_have_no_whole_model(recorded, tiny_model):
    _, cache, _ = recorded
    for method in ("norm", "norm-residual"):
        assert context_mixing(tiny_model, cache, method).whole_model is None
    assert METHODS["decompx"].rollout_residual is None


def test_rows_that_are_shares_sum_to_one(recorded, tiny_model):
    _, cache, _ = recorded
    for method, info in METHODS.items():
        mixing = context_mixing(tiny_model, cache, method)
        assert np.all(mixing.layers >= 0)
        if info.rows_sum_to_one:
            np.testing.assert_allclose(mixing.layers.sum(-1), 1.0, atol=1e-5)


def test_decompx_parts_sum_to_the_masked_lm_logits(recorded, tiny_model):
    """Σ_k logit_part[i, k] + the bias part = the logit the model outputs at i for i's top token."""
    input_ids, _, layers = recorded
    result = decompx(tiny_model, layers)
    with torch.no_grad():
        logits = tiny_model(input_ids, torch.zeros_like(input_ids))[0]  # [seq, vocab]
    expected = logits.gather(-1, logits.argmax(-1, keepdim=True))[:, 0]
    torch.testing.assert_close(result.targets, logits.argmax(-1))
    torch.testing.assert_close(result.logit_parts.sum(-1) + result.logit_bias, expected, atol=1e-4, rtol=0)
    torch.testing.assert_close(result.logits, expected, atol=1e-5, rtol=0)


def test_decompx_parts_sum_to_the_classifiers_logit():
    model = randomize_(small_bert(len(TINY_VOCAB), seed=0, mlm_head=False, classifier_labels=3), seed=4).eval()
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 3]])
    _, cache = record_for_mixing(model, input_ids, torch.zeros_like(input_ids))
    for target in range(3):
        result = decompx(model, recorded_layers(model, cache), output="classifier", targets=torch.tensor([target]))
        with torch.no_grad():
            expected = model(input_ids, torch.zeros_like(input_ids), output="classifier")[0, target]
        assert result.logit_parts.shape == (1, 6)
        torch.testing.assert_close(result.logit_parts.sum() + result.logit_bias[0], expected, atol=1e-4, rtol=0)
    with pytest.raises(MissingHeadError, match="masked-LM head"):
        decompx(model, recorded_layers(model, cache))


def test_decompx_parts_sum_to_transformers_logit_where_the_heads_activation_is_not_the_mlps(tmp_path, tiny_vocab_file):
    """RoBERTa's masked-LM head applies GELU whatever its MLP's hidden_act (here ReLU): DecompX makes each
    activation linear where it belongs, so the parts sum to the logit transformers' RobertaForMaskedLM gives."""
    from families.family_support import build_hf, load_saved

    theirs = build_hf("roberta", "RobertaForMaskedLM", hidden_act="relu").eval()
    ours = load_saved(theirs, tmp_path / "roberta", tiny_vocab_file).eval()
    assert (ours.config.activation, ours.config.lm_activation) == ("relu", "gelu")
    input_ids = torch.tensor([[2, 10, 11, 12, 13, 14, 3]])
    _, cache = record_for_mixing(ours, input_ids, torch.zeros_like(input_ids))
    result = decompx(ours, recorded_layers(ours, cache))
    with torch.no_grad():
        logits = theirs(input_ids=input_ids).logits[0]  # [seq, vocab]
    expected = logits.gather(-1, result.targets[:, None])[:, 0]
    torch.testing.assert_close(result.targets, logits.argmax(-1))
    torch.testing.assert_close(result.logit_parts.sum(-1) + result.logit_bias, expected, atol=1e-4, rtol=0)


def test_decompx_token_chunks_give_the_same_parts(recorded, tiny_model, monkeypatch):
    from bert.analysis.attention import decompx as decompx_module

    _, _, layers = recorded
    whole = decompx(tiny_model, layers)
    monkeypatch.setattr(decompx_module, "PARTS_BUDGET", 1)
    seen = []
    chunked = decompx(tiny_model, layers, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(done, SEQ) for done in range(1, SEQ + 1)]
    torch.testing.assert_close(chunked.logit_parts, whole.logit_parts, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(chunked.layers, whole.layers, atol=1e-6, rtol=1e-5)


def test_padding_is_cut_to_the_real_tokens(tiny_model):
    """A sentence padded in a batch gives the matrices it gives alone, once cut to its length."""
    alone = torch.tensor([[2, 10, 11, 12, 3]])
    padded = torch.tensor([[2, 10, 11, 12, 3, 0, 0], [2, 13, 14, 15, 16, 17, 3]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1] * 7])
    _, cache_alone = record_for_mixing(tiny_model, alone, torch.zeros_like(alone))
    with torch.no_grad():
        from bert.analysis.attention.mixing_parts import mixing_hook_names

        _, cache_padded = tiny_model.run_with_cache(padded, torch.zeros_like(padded), mask, names=mixing_hook_names(3))
    for method in ("alti", "value-zeroing"):
        expected = context_mixing(tiny_model, cache_alone, method)
        got = context_mixing(tiny_model, cache_padded, method, row=0, length=5)
        np.testing.assert_allclose(got.layers, expected.layers, atol=1e-5)


def test_bad_method_and_missing_hooks_say_what_to_do(recorded, tiny_model):
    input_ids, cache, _ = recorded
    with pytest.raises(InvalidInputError, match="method must be one of attention, norm"):
        check_method("gradient")
    _, partial = tiny_model.run_with_cache(input_ids, torch.zeros_like(input_ids), names=["embedding.hook_out"])
    with pytest.raises(InvalidInputError, match="record_for_mixing"):
        context_mixing(tiny_model, partial, "norm")
    with pytest.raises(InvalidInputError, match="length must lie in 1..9"):
        context_mixing(tiny_model, cache, "norm", length=10)
