"""Numbers of the recorded pass expanded into their sums (bert/analysis/worked_sums.py): every cell of Q, K and V
worked as X's row times W's column plus the bias, every score as q·k ÷ √d and every softmax weight as exp over the
row's sum lies within float32 rounding (the bound each carries) of the hook's recorded value; the weights are
transformers' own modules' rows, and the worked cells match transformers' own Linear on the same input and its
returned attentions. BERT, RoBERTa, and ModernBERT (pre-norm, rotary, no biases), tiny random checkpoints."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import bert
from bert.analysis.one_pass import record_one_pass
from bert.analysis.worked_sums import UNIT_ROUNDOFF, projection_cell, score_cell, softmax_cell
from bert_test_support import TINY_CONFIGS, hf_config, randomize_
from families.family_support import build_hf, write_tiny_tokenizer

WORDS = "the dog barked at the [MASK] man ."
LAYER, HEAD = 1, 1
ARCHITECTURES = {"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM", "modernbert": "ModernBertForMaskedLM"}


@pytest.fixture(scope="module", params=list(ARCHITECTURES))
def walked(request, tmp_path_factory, tiny_vocab_file):
    """(family, transformers' model, the recorded walk of ours on the same weights, ids [1, seq])."""
    family = request.param
    if family == "bert":
        import transformers

        torch.manual_seed(0)
        theirs = randomize_(transformers.BertForMaskedLM(hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"])), seed=1)
    else:
        theirs = build_hf(family, ARCHITECTURES[family])
    theirs.eval()
    folder = tmp_path_factory.mktemp(family)
    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    ours, tokenizer = bert.load_pretrained(str(folder))
    encoding = tokenizer.encode(WORDS)
    ids = torch.tensor([encoding.input_ids])
    return family, theirs, record_one_pass(ours, ids, None, LAYER, HEAD), ids


def test_every_cell_of_q_k_v_is_its_worked_sum(walked):
    family, _, one, _ = walked
    seq, size = one.q.shape
    for kind in ("q", "k", "v"):
        for token in range(seq):
            for dimension in range(size):
                cell = projection_cell(one, kind, token, dimension)
                assert abs(cell.value - cell.recorded) <= cell.rounding, (family, kind, token, dimension)
                assert cell.rounding < 1e-4 * max(1.0, abs(cell.recorded))  # a bound, not a blanket
    assert (one.rotation is not None) == (family == "modernbert")
    assert (projection_cell(one, "q", 2, 0).turn is not None) == (family == "modernbert")


def test_every_score_and_weight_is_its_worked_sum(walked):
    family, _, one, _ = walked
    seq = one.q.shape[0]
    for query in range(seq):
        for key in range(seq):
            score = score_cell(one, query, key)
            weight = softmax_cell(one, query, key)
            if score.masked:  # ModernBERT's local layer: a key outside the window weighs nothing
                assert family == "modernbert" and abs(query - key) > 4 and weight.value == weight.recorded == 0
                continue
            assert abs(score.value - score.recorded) <= score.rounding, (family, query, key)
            assert abs(weight.value - weight.recorded) <= max(weight.rounding, 1e-45), (family, query, key)
        assert sum(softmax_cell(one, query, key).value for key in range(seq)) == pytest.approx(1.0, abs=1e-12)
    assert any(score_cell(one, 0, key).masked for key in range(seq)) == (family == "modernbert")


def test_a_wrong_column_is_outside_the_bound(walked):
    """The bound is tight enough to catch a slip: the neighbouring column of W gives another number."""
    _, _, one, _ = walked
    cell = projection_cell(one, "v", 3, 0)
    other = projection_cell(one, "v", 3, 1)
    assert abs(other.sum.value - cell.recorded) > 100 * cell.rounding


def _their_projections(theirs, family: str) -> dict[str, tuple[torch.Tensor, torch.Tensor | None]]:
    """transformers' weight [out, in] and bias of the chosen layer's query, key and value."""
    if family == "modernbert":
        fused = theirs.model.layers[LAYER].attn.Wqkv
        weights = fused.weight.detach().chunk(3)
        biases = fused.bias.detach().chunk(3) if fused.bias is not None else (None,) * 3
        return dict(zip("qkv", zip(weights, biases)))
    attention = getattr(theirs, family).encoder.layer[LAYER].attention.self
    return {kind: (linear.weight.detach(), linear.bias.detach())
            for kind, linear in (("q", attention.query), ("k", attention.key), ("v", attention.value))}


def test_the_weights_shown_are_transformers_and_work_as_its_linear(walked):
    family, theirs, one, _ = walked
    size = one.q.shape[-1]
    rows = slice(HEAD * size, (HEAD + 1) * size)
    x = torch.tensor(one.attention_in)
    for kind, (weight, bias) in _their_projections(theirs, family).items():
        np.testing.assert_array_equal(one.weights[kind], weight[rows].T.numpy())
        if bias is None:
            assert kind not in one.biases
        else:
            np.testing.assert_array_equal(one.biases[kind], bias[rows].numpy())
        theirs_projected = torch.nn.functional.linear(x, weight, bias)[:, rows].double().numpy()  # before any turn
        for token in (0, 3):
            for dimension in (0, size - 1):
                worked = projection_cell(one, kind, token, dimension).sum
                bound = worked.rounding + 2 * len(worked.left) * UNIT_ROUNDOFF * np.abs(worked.products).sum()
                assert abs(worked.value - theirs_projected[token, dimension]) <= bound, (kind, token, dimension)


def test_the_weights_shown_are_transformers_attentions(walked):
    family, theirs, one, ids = walked
    with torch.no_grad():
        reference = theirs(ids, output_attentions=True).attentions[LAYER][0, HEAD].double().numpy()
    worked = np.array([[softmax_cell(one, q, k).value for k in range(len(reference))] for q in range(len(reference))])
    np.testing.assert_allclose(worked, reference, atol=1e-6)
