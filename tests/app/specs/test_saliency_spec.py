"""The saliency page's spec (viz_app/specs/saliency.py) without Streamlit: a link's state read as the widgets
would, its parts priced by hand-counted passes, and its map equal to the library's on the same input."""
from __future__ import annotations

import numpy as np
import pytest

from bert.analysis.attribution.saliency import saliency as library_saliency
from viz_app.app import models
from viz_app.app.forward import prepare_input
from viz_app.specs import saliency
from viz_app.specs.base import Inputs, compute_all, planned_cost

TEXT = "the dog [MASK] at the cat ."


@pytest.fixture(scope="module")
def inputs(tiny_mlm_folder):
    loaded = models.load(models.ModelKey.of("folder", str(tiny_mlm_folder)))
    return Inputs(loaded, prepare_input(loaded.tokenizer, TEXT, "", (), False, loaded.summary.max_positions))


def test_a_link_s_nonsense_goes_back_to_the_defaults_and_the_first_mask(inputs):
    settings = saliency.Settings.from_state({"saliency_method": "guess", "saliency_steps": 7, "saliency_samples": 6,
                                             "saliency_mask": 99}, inputs)
    mask = inputs.prepared.all_masks[0]
    assert settings.explained == saliency.Explained("gradient_x_input", mask, None, None, 32, 25)
    assert not settings.deletion and not settings.words
    assert list(saliency.computations(settings)) == ["attributions"]


def test_the_parts_cost_what_they_run_counted_by_hand(inputs):
    """[CLS] the dog [MASK] at the cat . [SEP]: 9 tokens, 6 a perturbation may swap (not [CLS], [SEP], [MASK])."""
    tokens = len(inputs.prepared.masked)
    assert tokens == 9
    settings = saliency.Settings(saliency.Explained("occlusion", 3), deletion=True)
    planned = saliency.computations(settings)
    assert list(planned) == ["attributions", "deletion"]
    occlusion = 3 + 1 + 9  # the top guess, the embedding parts, f(x); the input itself; one window per position
    deletion = (1 + saliency.RANDOM_ORDERS) * (6 + 1)  # the map's order and 10 random ones, 0..6 tokens swapped
    cost = planned_cost(planned, inputs)
    assert (cost.forward_passes, cost.tokens) == (occlusion + occlusion + deletion, tokens)  # the curve's own map too


def test_the_map_is_the_library_s_on_the_input_the_model_reads(inputs):
    settings = saliency.Settings(saliency.Explained("integrated_gradients", 3, steps=8), words=True)
    results = compute_all(saliency.computations(settings), inputs)
    loaded = inputs.loaded
    expected = library_saliency(loaded.model, loaded.tokenizer, loaded.tokenizer.encode(TEXT), "integrated_gradients",
                                3, steps=8)
    np.testing.assert_allclose(results["attributions"].attributions, expected.attributions, rtol=1e-5, atol=1e-6)
    words = saliency.view(settings, inputs, results)["attributions"].data  # per word: each word's pieces summed
    pieces = saliency.view(saliency.Settings(settings.explained), inputs, results)["attributions"].data
    assert list(pieces["input token"]) == list(inputs.prepared.masked.tokens)
    parts = [column for column in pieces.columns if column != "input token"]
    np.testing.assert_allclose(words[parts].to_numpy().sum(0), pieces[parts].to_numpy().sum(0), rtol=1e-6, atol=1e-9)
