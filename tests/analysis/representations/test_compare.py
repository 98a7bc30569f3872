"""Comparing two models: linear CKA (Kornblith et al. 2019) and the Jensen-Shannon distance of attention rows,
checked against hand-computed cases and their defining invariances; then compare_models on tiny BERTs."""
import numpy as np
import pytest
import torch

from bert import Bert, BertConfig, BertTokenizer
from bert.analysis.representations.compare import compare_models, js_distance, linear_cka
from bert.errors import InvalidInputError
from bert_test_support import SENTENCES, TINY_VOCAB


def random_representation(rows=50, features=8, seed=0):
    return np.random.default_rng(seed).normal(size=(rows, features))


def test_cka_of_a_representation_with_itself_is_one():
    x = random_representation()
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_cka_ignores_rotation_isotropic_scaling_and_shifts():
    x = random_representation()
    rotation, _ = np.linalg.qr(random_representation(8, 8, seed=1))  # a random orthogonal matrix
    assert linear_cka(x, 3.5 * x @ rotation + 2.0) == pytest.approx(1.0, abs=1e-12)
    y = random_representation(seed=2)
    assert linear_cka(x @ rotation * 0.1, y) == pytest.approx(linear_cka(x, y), abs=1e-12)


def test_cka_is_not_blind_to_anisotropic_scaling():
    x = random_representation()
    assert linear_cka(x, x * np.arange(1, 9)) < 0.99  # a per-feature stretch is a different representation


def test_cka_hand_computed_case():
    # One feature each: x = [1, 2, 3] centres to [-1, 0, 1]; y = [0, 0, 3] centres to [-1, -1, 2].
    # CKA = (x·y)² / (|x|² |y|²) = 3² / (2 · 6) = 0.75.
    assert linear_cka([[1.0], [2.0], [3.0]], [[0.0], [0.0], [3.0]]) == pytest.approx(0.75, abs=1e-12)


def test_cka_of_unrelated_representations_is_small():
    assert linear_cka(random_representation(2000, 4, 0), random_representation(2000, 4, 1)) < 0.02


def test_cka_refuses_mismatched_or_constant_inputs():
    with pytest.raises(InvalidInputError, match="same examples"):
        linear_cka(np.ones((4, 2)), np.ones((5, 2)))
    with pytest.raises(InvalidInputError, match="same for every example"):
        linear_cka(np.ones((4, 2)), random_representation(4, 2))


def test_js_distance_of_identical_patterns_is_zero():
    pattern = np.random.default_rng(0).dirichlet(np.ones(7), size=(3, 5))
    np.testing.assert_allclose(js_distance(pattern, pattern), 0.0, atol=1e-7)


def test_js_distance_hand_computed_cases():
    # Disjoint supports: the maximum, 1 in base 2.
    assert js_distance([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    # p = [1, 0], q = [½, ½]: m = [¾, ¼]; KL(p‖m) = log2(4/3); KL(q‖m) = ½ log2(2/3) + ½ log2(2).
    divergence = (np.log2(4 / 3) + 0.5 * np.log2(2 / 3) + 0.5) / 2
    assert js_distance([1.0, 0.0], [0.5, 0.5]) == pytest.approx(np.sqrt(divergence))  # 0.5579...
    assert js_distance([0.5, 0.5], [1.0, 0.0]) == pytest.approx(np.sqrt(divergence))  # symmetric


def tiny_bert(vocab_size, seed, num_layers=2):
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_layers=num_layers, num_heads=4, intermediate_size=48,
                        max_position_embeddings=64)
    torch.manual_seed(seed)
    return Bert(config, mlm_head=False).eval()


def test_a_model_compared_with_itself_is_identical_everywhere(tokenizer):
    model = tiny_bert(tokenizer.vocab_size, 0)
    result = compare_models(model, model, tokenizer, SENTENCES[:8], batch_size=3)
    np.testing.assert_allclose(result.layer_cka, 1.0, atol=1e-9)
    np.testing.assert_allclose(result.attention_js, 0.0, atol=1e-6)
    assert result.attention_js.shape == (2, 4) and result.cka.shape == (3, 3)
    assert result.num_sentences == 8 and result.num_examples == sum(len(tokenizer.encode(s)) for s in SENTENCES[:8])


def test_changing_only_the_top_layer_leaves_the_lower_layers_at_cka_one(tokenizer):
    base = tiny_bert(tokenizer.vocab_size, 0)
    tuned = tiny_bert(tokenizer.vocab_size, 0)
    with torch.no_grad():
        top = tuned.transformer[1]  # only the top layer changes: its attention and its MLP
        top.attention.attention.project_query.weight.mul_(30)
        top.residual.mlp2.weight.normal_(std=1.0)
    result = compare_models(base, tuned, tokenizer, SENTENCES[:8])
    np.testing.assert_allclose(result.layer_cka[:2], 1.0, atol=1e-9)  # embeddings and layer 1: untouched
    assert result.layer_cka[2] < 0.999
    np.testing.assert_allclose(result.attention_js[0], 0.0, atol=1e-6)
    assert (result.attention_js[1] > 0.05).all()
    lower, upper = result.lower_and_upper()
    assert lower > upper


def test_attention_distance_matches_a_direct_computation(tokenizer):
    """One sentence, so no padding: the per-head mean over queries of the row distances."""
    a, b = tiny_bert(tokenizer.vocab_size, 0), tiny_bert(tokenizer.vocab_size, 1)
    sentences = [SENTENCES[1], SENTENCES[1]]
    result = compare_models(a, b, tokenizer, sentences)
    ids, types = tokenizer.encode(SENTENCES[1]).tensors()
    name = "transformer.1.attention.attention.hook_pattern"
    pa, pb = (m.run_with_cache(ids, types, names=[name])[1][name][0] for m in (a, b))  # [head, query, key]
    expected = js_distance(pa, pb).mean(-1)
    np.testing.assert_allclose(result.attention_js[1], expected, atol=1e-6)


def test_different_depths_give_a_layer_by_layer_matrix_and_no_head_distances(tokenizer):
    shallow, deep = tiny_bert(tokenizer.vocab_size, 0), tiny_bert(tokenizer.vocab_size, 1, num_layers=3)
    deep.embedding.load_state_dict(shallow.embedding.state_dict())
    result = compare_models(shallow, deep, tokenizer, SENTENCES[:4])
    assert result.cka.shape == (3, 4) and result.layer_cka is None and result.attention_js is None
    assert result.cka[0, 0] == pytest.approx(1.0)  # the same embedding tables


def test_models_with_different_vocabularies_are_compared_by_words(tokenizer, tmp_path):
    other_vocab = tmp_path / "vocab.txt"
    other_vocab.write_text("\n".join(list(reversed(TINY_VOCAB[5:])) + TINY_VOCAB[:5]) + "\n")  # same size, other ids
    other = BertTokenizer.from_vocab(other_vocab)
    model = tiny_bert(tokenizer.vocab_size, 0)
    result = compare_models(model, model, tokenizer, SENTENCES[:4], tokenizer_b=other)
    assert result.unit == "word" and result.attention_js is None and result.skipped == 0
    words = sum(len(set(e.word_ids) - {None}) for e in map(tokenizer.encode, SENTENCES[:4]))  # "hi" "." ...
    assert result.num_examples == words < sum(len(e) - 2 for e in map(tokenizer.encode, SENTENCES[:4]))
    by_tokens = compare_models(model, model, tokenizer, SENTENCES[:4])
    assert by_tokens.unit == "token"
    with pytest.raises(InvalidInputError, match="different vocabularies"):
        compare_models(model, model, tokenizer, SENTENCES[:4], tokenizer_b=other, unit="token")
