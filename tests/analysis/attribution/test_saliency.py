"""Saliency through Captum: integrated gradients against a hand-written midpoint rule and completeness, gradient x
input against finite differences and LayerNorm's zero sum, occlusion against masking a token, Shapley values' sum,
every output (a [MASK], [CLS]'s classes, a token's tag) and the contrastive target."""
import copy

import numpy as np
import pytest
import torch

from bert.analysis.attribution.saliency import METHODS, PARTS, baseline_parts, embedding_parts, saliency
from bert.analysis.attribution.target import TargetFunction
from bert.errors import InvalidInputError
from bert_test_support import small_bert


@pytest.fixture(scope="module")
def smooth_model(tokenizer):
    """A tiny random BERT at BERT's own initialisation scale: a smooth function of its embeddings."""
    model = small_bert(tokenizer.vocab_size, seed=0)
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
    model = small_bert(tokenizer.vocab_size, seed=1, mlm_head=False, nsp_head=True)
    with torch.no_grad():
        for layer in model.transformer:
            layer.attention.attention.project_query.weight.mul_(20)
        model.nsp_head.weight.mul_(50)  # classes far enough apart that the attributions are not all tiny
    return model


def test_class_attributions_add_up_to_the_log_probability_difference(nsp_model, tokenizer):
    encoding = tokenizer.encode("the dog went to the park", "her dog sat at the cat")
    for target in (0, 1):
        result = saliency(nsp_model, tokenizer, encoding, "integrated_gradients", steps=64, output="nsp", target_id=target)
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
    result = saliency(nsp_model, tokenizer, encoding, "gradient_x_input", output="nsp")
    k, eps = 3, 1e-3
    input_ids, token_type_ids = encoding.tensors()

    def score(scale: float) -> float:
        with torch.no_grad():
            logits, _ = nsp_model.run_with_cache(input_ids, token_type_ids, names=[], output="nsp",
                                                 interventions={"embedding.hook_token_type": scale_token(k, scale)})
        return float(logits[0].double().log_softmax(-1)[result.target.token_id])

    numeric = (score(1 + eps) - score(1 - eps)) / (2 * eps)
    assert abs(numeric) > 1e-4
    assert result.attributions[PARTS.index("segment"), k] == pytest.approx(numeric, rel=0.05, abs=1e-4)


def test_an_output_the_model_lacks_is_named(smooth_model, nsp_model, tokenizer):
    with pytest.raises(InvalidInputError, match="no classifier head"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="classifier")
    with pytest.raises(InvalidInputError, match="no next-sentence head"):
        saliency(smooth_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="nsp")
    with pytest.raises(InvalidInputError, match="masked-LM head"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the [MASK]"))
    with pytest.raises(InvalidInputError, match="not one of the 2 outputs"):
        saliency(nsp_model, tokenizer, tokenizer.encode("the dog", "a cat"), output="nsp", target_id=2)


def test_classifier_attributions_add_up_and_carry_the_label_name(tokenizer):
    model = small_bert(tokenizer.vocab_size, seed=2, mlm_head=False, classifier_labels=["sad", "calm", "happy"])
    with torch.no_grad():
        model.classifier.weight.mul_(50)
    encoding = tokenizer.encode("her dog went to the park")
    result = saliency(model, tokenizer, encoding, "integrated_gradients", steps=64, output="classifier", target_id=2)
    difference = result.score - result.baseline_score
    assert abs(difference) > 1e-3 and result.total == pytest.approx(difference, rel=0.01, abs=1e-4)
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        expected = model(input_ids, token_type_ids, output="classifier")[0].double().log_softmax(-1)[2]
    assert result.score == pytest.approx(float(expected), abs=1e-5) and result.target.token == "happy"
    with pytest.raises(InvalidInputError, match="no next-sentence head"):
        saliency(model, tokenizer, encoding, output="nsp")


# --- Captum against the hand-written integral; the perturbation methods; tags; contrastive targets -----------


def handwritten_integrated_gradients(function, inputs, baselines, steps: int) -> np.ndarray:
    """Integrated gradients by the midpoint rule, written out: (x - b) · mean over α of ∂f/∂x at b + α(x - b)."""
    summed = [torch.zeros_like(x) for x in inputs]
    for step in range(steps):
        alpha = (step + 0.5) / steps
        path = [(b + alpha * (x - b)).detach().requires_grad_(True) for x, b in zip(inputs, baselines)]
        gradients = torch.autograd.grad(function(*path).sum(), path)
        summed = [total + g for total, g in zip(summed, gradients)]
    return np.stack([((x - b) * total / steps).sum(-1)[0].detach().numpy() for x, b, total in zip(inputs, baselines, summed)])


def function_and_parts(model, tokenizer, encoding, target):
    function = TargetFunction(model, encoding, target)
    parts = embedding_parts(model, *encoding.tensors())
    base = baseline_parts(model, tokenizer, encoding, parts)
    return function, tuple(parts[p] for p in PARTS), tuple(base[p] for p in PARTS)


@pytest.mark.parametrize("foil", [False, True])
def test_captums_integrated_gradients_equal_the_handwritten_ones(smooth_model, tokenizer, foil):
    encoding = tokenizer.encode("the dog [MASK] at the cat", "her dog went to the park")
    foil_id = tokenizer.token_to_id("dog") if foil else None
    result = saliency(smooth_model, tokenizer, encoding, "integrated_gradients", steps=16, batch_size=5, foil_id=foil_id)
    function, inputs, baselines = function_and_parts(smooth_model, tokenizer, encoding, result.explained)
    expected = handwritten_integrated_gradients(function, inputs, baselines, 16)
    assert np.abs(expected).max() > 1e-3
    np.testing.assert_allclose(result.attributions, expected, atol=1e-4, rtol=0)
    assert result.samples == 16 and result.evaluations == 16 + 1  # the path's points, and f(b)


def test_contrastive_target_is_the_logit_difference_and_adds_up(smooth_model, tokenizer):
    """f = logit(answer) - logit(foil) at the [MASK], read off the model's own logits; completeness holds for it."""
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    answer, foil = tokenizer.token_to_id("dog"), tokenizer.token_to_id("went")
    result = saliency(smooth_model, tokenizer, encoding, "integrated_gradients", steps=64, target_id=answer, foil_id=foil)
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        logits = smooth_model(input_ids, token_type_ids)[0, result.position].double()
    assert result.score == pytest.approx(float(logits[answer] - logits[foil]), abs=1e-5)
    assert (result.target.token, result.foil.token) == ("dog", "went")
    assert result.foil.probability == pytest.approx(float(logits.softmax(-1)[foil]), abs=1e-6)
    difference = result.score - result.baseline_score
    assert abs(difference) > 1e-3 and result.total == pytest.approx(difference, rel=0.01, abs=1e-4)
    with pytest.raises(InvalidInputError, match="foil must differ"):
        saliency(smooth_model, tokenizer, encoding, target_id=answer, foil_id=answer)


def test_contrastive_gradient_x_input_is_the_answers_minus_the_foils(smooth_model, tokenizer):
    """logit(a) - logit(b) = log p(a) - log p(b) (the softmax's normaliser cancels), and gradient x input is linear in
    the explained function: the contrastive map is the answer's log p map minus the foil's."""
    encoding = tokenizer.encode("the dog [MASK] at the cat", "her dog went to the park")
    answer, foil = tokenizer.token_to_id("dog"), tokenizer.token_to_id("went")
    contrast = saliency(smooth_model, tokenizer, encoding, "gradient_x_input", target_id=answer, foil_id=foil)
    of_answer = saliency(smooth_model, tokenizer, encoding, "gradient_x_input", target_id=answer)
    of_foil = saliency(smooth_model, tokenizer, encoding, "gradient_x_input", target_id=foil)
    assert np.abs(contrast.attributions).max() > 1e-3 and contrast.foil.token == "went"
    np.testing.assert_allclose(contrast.attributions, of_answer.attributions - of_foil.attributions, atol=1e-5, rtol=0)
    assert contrast.score == pytest.approx(of_answer.score - of_foil.score, abs=1e-5)


@pytest.fixture(scope="module")
def peaked_model(smooth_model):
    """The smooth model with larger logits, so that probabilities move visibly when a token is masked."""
    model = copy.deepcopy(smooth_model)
    with torch.no_grad():
        model.lm_head.layer_norm.weight.mul_(30)
    return model


def masked_ids(encoding, position: int, mask_id: int) -> torch.Tensor:
    ids = torch.tensor([encoding.input_ids])
    ids[0, position] = mask_id
    return ids


@pytest.mark.parametrize("foil", [False, True])
def test_one_token_occlusion_is_the_change_that_masking_the_token_makes(peaked_model, tokenizer, foil):
    """Occlusion, window 1, explaining p(answer) (or the logit difference): for every word token, exactly what the
    model gives with that token and with [MASK] in its place; [CLS], [SEP] and the [MASK] itself get 0."""
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    foil_id = tokenizer.token_to_id("went") if foil else None
    result = saliency(peaked_model, tokenizer, encoding, "occlusion", score="probability", foil_id=foil_id)
    input_ids, token_type_ids = encoding.tensors()
    answer, at = result.target.token_id, result.position

    def explained(ids: torch.Tensor) -> float:
        with torch.no_grad():
            logits = peaked_model(ids, token_type_ids)[0, at].double()
        return float(logits[answer] - logits[foil_id]) if foil else float(logits.softmax(-1)[answer])

    changes = [explained(input_ids) - explained(masked_ids(encoding, i, tokenizer.mask_id)) for i in range(len(encoding))]
    for i, special in enumerate(encoding.special):
        if special or i == at:
            changes[i] = 0.0
    assert result.parts == ("token",) and max(abs(c) for c in changes) > 1e-3
    np.testing.assert_allclose(result.token_attributions, changes, atol=1e-5)
    assert result.score == pytest.approx(explained(input_ids), abs=1e-5)
    assert result.samples == len(encoding) and result.evaluations == len(encoding) + 1


def every_word_masked(input_ids, encoding, tokenizer):
    """The input with every token but [CLS] and [SEP] replaced by [MASK] (Shapley value sampling's baseline)."""
    masked = input_ids.clone()
    masked[0, [i for i, special in enumerate(encoding.special) if not special]] = tokenizer.mask_id
    return masked


def test_shapley_values_add_up_to_the_change_from_all_masked(smooth_model, tokenizer):
    """Sampled Shapley values are efficient in every sampled order: they sum to f(x) - f(every word masked)."""
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    result = saliency(smooth_model, tokenizer, encoding, "shapley_value_sampling", samples=6, batch_size=4)
    input_ids, token_type_ids = encoding.tensors()
    all_masked = every_word_masked(input_ids, encoding, tokenizer)
    with torch.no_grad():
        masked_score = float(smooth_model(all_masked, token_type_ids)[0, result.position].double().log_softmax(-1)[result.target.token_id])
    assert result.total == pytest.approx(result.score - masked_score, abs=1e-4)
    assert result.samples == 6 and np.count_nonzero(result.token_attributions) == 5  # five word tokens
    again = saliency(smooth_model, tokenizer, encoding, "shapley_value_sampling", samples=6, batch_size=4)
    np.testing.assert_array_equal(again.attributions, result.attributions)  # seeded


def test_contrastive_shapley_values_add_up_to_the_logit_difference_from_all_masked(peaked_model, tokenizer):
    """Efficiency for f = logit(answer) - logit(foil), read off the model's own logits with every word masked; with
    the same seed (the same orders) the contrastive values are also the answer's log p values minus the foil's."""
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    answer, foil = tokenizer.token_to_id("dog"), tokenizer.token_to_id("went")
    result = saliency(peaked_model, tokenizer, encoding, "shapley_value_sampling", samples=6, batch_size=4,
                      target_id=answer, foil_id=foil)
    input_ids, token_type_ids = encoding.tensors()
    all_masked = every_word_masked(input_ids, encoding, tokenizer)
    with torch.no_grad():
        logits = peaked_model(torch.cat([input_ids, all_masked]), token_type_ids.expand(2, -1))[:, result.position].double()
    full, masked = (float(row[answer] - row[foil]) for row in logits)
    assert abs(full - masked) > 1e-3 and result.score == pytest.approx(full, abs=1e-5)
    assert result.total == pytest.approx(full - masked, abs=1e-4)
    of_answer = saliency(peaked_model, tokenizer, encoding, "shapley_value_sampling", samples=6, batch_size=4, target_id=answer)
    of_foil = saliency(peaked_model, tokenizer, encoding, "shapley_value_sampling", samples=6, batch_size=4, target_id=foil)
    np.testing.assert_allclose(result.attributions, of_answer.attributions - of_foil.attributions, atol=1e-5, rtol=0)


def test_a_token_tag_is_explained_at_its_token(tokenizer):
    """output "tagger": f = log p(label) of one token, from the token-classification head's own logits."""
    model = small_bert(tokenizer.vocab_size, seed=3, mlm_head=False, tagger_labels=["O", "B-ANIMAL", "I-ANIMAL"])
    with torch.no_grad():
        model.tagger.weight.mul_(50)
    encoding = tokenizer.encode("her dog went to the park")
    input_ids, token_type_ids = encoding.tensors()
    with torch.no_grad():
        expected = model(input_ids, token_type_ids, output="tagger")[0, 2].double().log_softmax(-1)
    for method in METHODS:
        result = saliency(model, tokenizer, encoding, method, output="tagger", position=2, target_id=1, steps=64, samples=4)
        assert result.score == pytest.approx(float(expected[1]), abs=1e-5) and result.target.token == "B-ANIMAL"
        assert result.position == 2 and np.abs(result.attributions).max() > 1e-4
        if method == "integrated_gradients":
            assert result.total == pytest.approx(result.score - result.baseline_score, rel=0.01, abs=1e-4)
    with pytest.raises(InvalidInputError, match="no token-classification head"):
        saliency(small_bert(tokenizer.vocab_size, classifier_labels=2), tokenizer, encoding, output="tagger")


def test_bad_perturbation_settings_get_clear_errors(smooth_model, tokenizer):
    encoding = tokenizer.encode("the [MASK]")
    with pytest.raises(InvalidInputError, match="steps must be at least 2"):  # a midpoint rule needs two points
        saliency(smooth_model, tokenizer, encoding, "integrated_gradients", steps=1)
    with pytest.raises(InvalidInputError, match="samples must be at least 1"):
        saliency(smooth_model, tokenizer, encoding, "shapley_value_sampling", samples=0)
    with pytest.raises(InvalidInputError, match="wider than"):
        saliency(smooth_model, tokenizer, encoding, "occlusion", window=9)
    with pytest.raises(InvalidInputError, match="output must be one of"):
        saliency(smooth_model, tokenizer, encoding, output="pooler")
