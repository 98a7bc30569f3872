"""Deletion curves, checked by hand on a tiny model: the order, each point against the model's own output with those
tokens masked, the trapezoid area, and the random orders' curve."""
import dataclasses

import numpy as np
import pytest
import torch

from bert.analysis.attribution.deletion import deletion_curve
from bert.analysis.attribution.saliency import saliency
from bert.errors import InvalidInputError
from bert_test_support import float32_tolerance, small_bert


@pytest.fixture(scope="module")
def model(tokenizer):
    model = small_bert(tokenizer.vocab_size, seed=3)
    with torch.no_grad():  # token embeddings that stand out from position ones, peakier probabilities: p moves visibly
        model.embedding.token_embedding.weight.mul_(10)
        model.lm_head.layer_norm.weight.mul_(3)
    return model


def with_token_attributions(result, values):
    return dataclasses.replace(result, parts=("token",), attributions=np.array([values], dtype=float))


def probability_with_masked(model, tokenizer, encoding, positions, at, answer) -> float:
    input_ids, token_type_ids = encoding.tensors()
    input_ids = input_ids.clone()
    input_ids[0, list(positions)] = tokenizer.mask_id
    with torch.no_grad():
        return float(model(input_ids, token_type_ids)[0, at].softmax(-1)[answer])


def test_two_words_by_hand(model, tokenizer):
    """[CLS] dog [MASK] cat [SEP]: attributions say cat (3) before dog (1). Points: nothing, cat, both masked;
    area = (v0 + v1) / 4 + (v1 + v2) / 4; every random order starts and ends at the same two points."""
    encoding = tokenizer.encode("dog [MASK] cat")
    result = with_token_attributions(saliency(model, tokenizer, encoding, "gradient_x_input"), [0.0, 0.2, 0.0, 0.7, 0.0])
    curve = deletion_curve(model, tokenizer, encoding, result, random_orders=50)
    answer = result.target.token_id
    v0, v1, v2 = (probability_with_masked(model, tokenizer, encoding, masked, 2, answer) for masked in ([], [3], [3, 1]))
    assert curve.order == [3, 1] and curve.measure == "probability"
    # probabilities from passes of another batch: each layer's sums may add in other orders
    atol = float32_tolerance(1.0, model.config.hidden_size, sums=model.config.num_layers)
    np.testing.assert_allclose(curve.values, [v0, v1, v2], atol=atol)
    assert curve.area == pytest.approx((v0 + v1) / 4 + (v1 + v2) / 4, abs=atol)
    np.testing.assert_allclose(curve.fraction_removed, [0, 0.5, 1])
    only_dog = probability_with_masked(model, tokenizer, encoding, [1], 2, answer)
    assert curve.random_values[0] == pytest.approx(v0, abs=1e-6) and curve.random_values[2] == pytest.approx(v2, abs=1e-6)
    assert min(v1, only_dog) - 1e-6 <= curve.random_values[1] <= max(v1, only_dog) + 1e-6
    assert abs(v1 - only_dog) > 1e-3  # the two orders differ, so the comparison means something


def test_ordered_by_occlusion_the_first_step_is_the_largest_drop(model, tokenizer):
    """With two words, occlusion's order removes the word whose masking lowers p most first: it cannot lose to
    random orders, which share its two end points."""
    encoding = tokenizer.encode("dog [MASK] cat")
    result = saliency(model, tokenizer, encoding, "occlusion", score="probability")
    curve = deletion_curve(model, tokenizer, encoding, result, random_orders=20)
    assert curve.values[1] == pytest.approx(min(curve.values[0] - result.token_attributions[[1, 3]]), abs=1e-6)
    assert curve.area <= curve.random_area + 1e-9


def test_contrastive_curve_follows_the_logit_difference(model, tokenizer):
    encoding = tokenizer.encode("the dog [MASK] at the cat")
    answer, foil = tokenizer.token_to_id("went"), tokenizer.token_to_id("park")
    result = saliency(model, tokenizer, encoding, "occlusion", target_id=answer, foil_id=foil)
    curve = deletion_curve(model, tokenizer, encoding, result, random_orders=3)
    input_ids, token_type_ids = encoding.tensors()
    ids = input_ids.clone()
    ids[0, curve.order[:2]] = tokenizer.mask_id
    with torch.no_grad():
        logits = model(ids, token_type_ids)[0, 3]
    assert curve.measure == "logit difference" and len(curve.values) == 5 + 1
    assert curve.values[2] == pytest.approx(float(logits[answer] - logits[foil]), abs=1e-5)
    assert curve.values[0] == pytest.approx(result.score, abs=1e-5)


def test_bad_requests(model, tokenizer):
    encoding = tokenizer.encode("dog [MASK] cat")
    result = saliency(model, tokenizer, encoding, "gradient_x_input")
    with pytest.raises(InvalidInputError, match="another input"):
        deletion_curve(model, tokenizer, tokenizer.encode("cat [MASK] dog"), result)
    with pytest.raises(InvalidInputError, match="random_orders"):
        deletion_curve(model, tokenizer, encoding, result, random_orders=0)
    only_mask = tokenizer.encode("[MASK]")
    with pytest.raises(InvalidInputError, match="no word token"):
        deletion_curve(model, tokenizer, only_mask, saliency(model, tokenizer, only_mask, "gradient_x_input"))
