"""Saliency split by embedding part: completeness of integrated gradients, LayerNorm's zero-sum gradient x input."""
import numpy as np
import pytest
import torch

from bert import Bert, BertConfig, BertTokenizer
from bert.analysis.attribution.saliency import PARTS, saliency
from bert.errors import InvalidInputError


@pytest.fixture(scope="module")
def tokenizer(tiny_vocab_file):
    return BertTokenizer.from_vocab(tiny_vocab_file)


@pytest.fixture(scope="module")
def smooth_model(tokenizer):
    """A tiny random BERT at BERT's own initialisation scale: a smooth function of its embeddings."""
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=48,
                        max_position_embeddings=64)
    torch.manual_seed(0)
    model = Bert(config).eval()
    with torch.no_grad():
        for layer in model.transformer:  # sharper attention than at initialisation, so that the test means something
            layer.attention.attention.project_query.weight.mul_(20)
    return model


def scale_token(k: int, scale: float):
    """An intervention that multiplies token k's activation by `scale` (for finite differences)."""
    def scaled(activation, name):
        activation = activation.clone()
        activation[:, k] *= scale
        return activation
    return scaled


def test_integrated_gradients_add_up_to_the_output_difference(smooth_model, tokenizer):
    encoding = tokenizer.encode("the dog [MASK] at the cat", "her dog went to the park")
    result = saliency(smooth_model, tokenizer, encoding, "integrated_gradients", steps=64)
    difference = result.score - result.baseline_score
    assert abs(difference) > 1e-3  # the test is not vacuous
    assert result.total == pytest.approx(difference, rel=0.01, abs=1e-4)
    assert abs(result.completeness_gap) <= 0.01 * abs(difference) + 1e-4
    assert result.attributions.shape == (3, len(encoding))


def test_single_sentence_has_no_segment_attribution(smooth_model, tokenizer):
    """Every token is in segment A, which is the baseline: nothing to attribute."""
    result = saliency(smooth_model, tokenizer, tokenizer.encode("the dog [MASK] at the cat"), steps=8)
    np.testing.assert_allclose(result.attributions[PARTS.index("segment")], 0.0, atol=1e-7)


def test_gradient_x_input_sums_to_zero_per_token(smooth_model, tokenizer):
    """The embedding LayerNorm ignores the scale of token + position + segment, so the gradient is orthogonal to
    their sum: the three parts' gradient x input cancel for every token."""
    result = saliency(smooth_model, tokenizer, tokenizer.encode("a [MASK] is at the park"), "gradient_x_input")
    assert np.abs(result.attributions).max() > 1e-4
    np.testing.assert_allclose(result.attributions.sum(axis=0), 0.0, atol=1e-5)


def test_gradient_matches_a_finite_difference(smooth_model, tokenizer):
    """d log p / d(scale of token k's token embedding) at 1 equals token k's token gradient x input."""
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    result = saliency(smooth_model, tokenizer, encoding, "gradient_x_input")
    k, eps = 2, 1e-3
    input_ids, token_type_ids = encoding.tensors()

    def score(scale: float) -> float:
        with torch.no_grad():
            logits, _ = smooth_model.run_with_cache(input_ids, token_type_ids, names=[],
                                                    interventions={"embedding.hook_token": scale_token(k, scale)})
        return float(logits[0, result.position].double().log_softmax(-1)[result.target.token_id])

    numeric = (score(1 + eps) - score(1 - eps)) / (2 * eps)
    assert result.attributions[0, k] == pytest.approx(numeric, rel=0.05, abs=1e-4)


def test_bad_requests_get_clear_errors(smooth_model, tokenizer):
    with pytest.raises(InvalidInputError, match="no \\[MASK\\]"):
        saliency(smooth_model, tokenizer, tokenizer.encode("the dog"))
    with pytest.raises(InvalidInputError, match="method"):
        saliency(smooth_model, tokenizer, tokenizer.encode("the [MASK]"), method="lime")


# --- a class read from [CLS] (here the next-sentence head), instead of a word at a [MASK] -------------------


@pytest.fixture(scope="module")
def nsp_model(tokenizer):
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=48,
                        max_position_embeddings=64)
    torch.manual_seed(1)
    model = Bert(config, mlm_head=False, nsp_head=True).eval()
    with torch.no_grad():
        for layer in model.transformer:
            layer.attention.attention.project_query.weight.mul_(20)
        model.nsp_head.weight.mul_(50)  # classes far enough apart that the attributions are not all tiny
    return model


def test_class_attributions_add_up_to_the_log_probability_difference(nsp_model, tokenizer):
    encoding = tokenizer.encode("the dog went to the park", "her dog sat at the cat")
    for target in (0, 1):
        result = saliency(nsp_model, tokenizer, encoding, "integrated_gradients", steps=64, output="next_sentence", target_id=target)
        difference = result.score - result.baseline_score
        assert abs(difference) > 1e-3
        assert result.total == pytest.approx(difference, rel=0.01, abs=1e-4)
        assert result.position == 0 and result.target.token_id == target
        assert result.target.token == ("B follows A", "B does not follow A")[target]
        input_ids, token_type_ids = encoding.tensors()
        with torch.no_grad():
            logits = nsp_model.nsp_logits(nsp_model.encode(input_ids, token_type_ids))[0].double()
        assert result.score == pytest.approx(float(logits.log_softmax(-1)[target]), abs=1e-5)  # f = log p(class)
        assert result.target.probability == pytest.approx(float(logits.softmax(-1)[target]), abs=1e-5)


def test_class_gradient_matches_a_finite_difference(nsp_model, tokenizer):
    encoding = tokenizer.encode("the dog went to the park", "her dog sat at the cat")
    result = saliency(nsp_model, tokenizer, encoding, "gradient_x_input", output="next_sentence")
    k, eps = 3, 1e-3
    input_ids, token_type_ids = encoding.tensors()

    def score(scale: float) -> float:
        with torch.no_grad():
            logits, _ = nsp_model.run_with_cache(input_ids, token_type_ids, names=[], output="next_sentence",
                                                 interventions={"embedding.hook_token_type": scale_token(k, scale)})
        return float(logits[0].double().log_softmax(-1)[result.target.token_id])

    numeric = (score(1 + eps) - score(1 - eps)) / (2 * eps)
    assert abs(numeric) > 1e-4
    assert result.attributions[PARTS.index("segment"), k] == pytest.approx(numeric, rel=0.05, abs=1e-4)


def test_a_head_the_model_lacks_is_named(smooth_model, nsp_model, tokenizer):
    with pytest.raises(InvalidInputError, match="no classifier head"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="classify")
    with pytest.raises(InvalidInputError, match="no next-sentence head"):
        saliency(smooth_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="next_sentence")
    with pytest.raises(InvalidInputError, match="masked-LM head"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the [MASK]"))
    with pytest.raises(InvalidInputError, match="not one of the 2 outputs"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="next_sentence", target_id=2)


def test_classifier_attributions_add_up_and_carry_the_label_name(tokenizer):
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=48,
                        max_position_embeddings=64)
    torch.manual_seed(2)
    model = Bert(config, mlm_head=False, classifier_labels=["sad", "calm", "happy"]).eval()
    with torch.no_grad():
        model.classifier.weight.mul_(50)
    encoding = tokenizer.encode("her dog went to the park")
    result = saliency(model, tokenizer, encoding, "integrated_gradients", steps=64, output="classify", target_id=2)
    difference = result.score - result.baseline_score
    assert abs(difference) > 1e-3 and result.total == pytest.approx(difference, rel=0.01, abs=1e-4)
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        expected = model.classify(input_ids, token_type_ids)[0].double().log_softmax(-1)[2]
    assert result.score == pytest.approx(float(expected), abs=1e-5) and result.target.token == "happy"
    with pytest.raises(InvalidInputError, match="no next-sentence head"):
        saliency(model, tokenizer, encoding, output="next_sentence")
