"""Bad input never crashes a page: each gets a short message that says what to do, or is shown safely as text."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app_helpers import NO_MODEL, NO_SENTENCE, PAGES, array, figures, go, no_exception, texts
from bert.pretrained import MINILM_HEAD_FILE

needs_head = pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} (MiniLM's MLM head) is not there yet")


WRITE_HTML = {"corpus_search", "sentence_tasks", "how_bert_was_trained", "lessons", "features"}  # chips, matches, top examples: escaped
DRAWN_FROM_ANY_SENTENCE = {"attention", "embeddings", "mlp", "architecture", "mixing"}  # figures for any input, no [MASK] needed


def every_page(at):
    """Visit every page of the app (viz_app/app/navigation.py); yield (name, at) after each run, having checked that it
    raised nothing."""
    for page in PAGES:
        go(at, page)
        no_exception(at)
        yield page, at


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "   \n\t  "], ids=["empty", "only-spaces"])
def test_empty_text_asks_for_a_sentence(open_app, text):
    at = open_app(text=text)
    for page, at in every_page(at):
        if page not in NO_SENTENCE:
            assert "Type a sentence in the Sentence box at the top" in texts(at), page
            assert not figures(at), page


@pytest.mark.slow
def test_only_control_characters(open_app):
    at = open_app(text="\x00\x01\x07\x1b")
    for page, at in every_page(at):
        if page not in NO_SENTENCE:
            assert "Nothing is left of this text after tokenization" in texts(at), page


@pytest.mark.slow
def test_too_long_input_says_so_and_offers_an_explicit_cut(open_app):
    text = "The dog barked at the mailman again. " * 150  # about 5,500 characters, over 1,000 tokens
    at = open_app("attention", text=text)
    no_exception(at)
    assert "tokens long, but the model has only 512 positions" in texts(at)
    assert not figures(at)
    [cut] = at.main.checkbox
    assert cut.label == "Cut to 512 tokens" and cut.value is False
    cut.check().run()
    no_exception(at)
    pattern, _query_key, overview, _ = [t for f in figures(at) for t in f["data"] if t["type"] == "heatmap"]
    assert array(pattern["z"]).shape == (512, 512)
    assert "coarsened to 32×32" in figures(at)[4]["layout"]["title"]["text"]  # after the neuron view's two charts
    assert array(overview["z"]).shape == (6 * 36, 12 * 36)
    assert "512 tokens of 512" in "\n".join(c.value for c in at.main.caption)
    assert "cut from the end" in "\n".join(c.value for c in at.main.caption)
    assert at.query_params["truncate"] == "1"
    for page, at in every_page(at):
        assert figures(at) or page not in DRAWN_FROM_ANY_SENTENCE, page


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        "I love 🍕 and 🎻 music! 😀",
        "مرحبا بالعالم، كيف حالك؟",
        "שלום עולם [MASK] טוב",
        "The dog\x00\x07 barked\x1b at the [MASK].",
        "Ünïcödé naïve café — “quotes” … ½ ∑ 漢字",
    ],
    ids=["emoji", "arabic-rtl", "hebrew-rtl-mask", "control-characters", "unicode-mix"],
)
def test_unusual_scripts_run_on_every_page(open_app, text):
    at = open_app(text=text)
    for page, at in every_page(at):
        if page in DRAWN_FROM_ANY_SENTENCE:
            assert figures(at), page


@pytest.mark.slow
def test_html_is_shown_as_text_never_rendered(open_app):
    text = "<script>alert('x')</script> <b>bold</b> <img src=x onerror=alert(1)> [MASK] & *stars* $x$"
    at = open_app(text=text)
    for page, at in every_page(at):
        if page in WRITE_HTML:  # their own HTML holds the user's text escaped
            for element in [*at.get("html"), *(m for m in at.markdown if m.proto.allow_html)]:
                body = element.proto.body if hasattr(element.proto, "body") else element.value
                assert "<script>" not in body and "<img" not in body and "<b>bold" not in body, page
        else:
            assert not at.get("html"), page
            for element in at.markdown:
                assert not element.proto.allow_html, (page, element.value)
        for figure in figures(at):
            for trace in figure["data"]:
                for axis in ("x", "y", "text"):
                    labels = trace.get(axis)
                    if isinstance(labels, list) and labels and isinstance(labels[0], str):
                        assert not any("<" in label and "<br>" not in label for label in labels), (page, labels)
    go(at, "prediction")
    options = at.pills(key="mask_chips").options
    assert "\\<" in options and "script" in options and "\\*" in options and "\\$" in options
    go(at, "attention")
    assert "&lt;" in figures(at)[0]["data"][0]["x"]


@needs_head
def test_no_mask_says_how_to_add_one(open_app):
    at = open_app(text="The dog barked at the mailman.")
    no_exception(at)
    assert "No [MASK] yet: click a token above, or type [MASK] in the sentence." in texts(at)
    assert not figures(at)


@needs_head
def test_every_token_masked(open_app):
    at = open_app(text="dogs bark loudly", masks="1,2,3")
    no_exception(at)
    assert at.pills(key="mask_chips").value == [1, 2, 3]
    assert "Every token is masked" in texts(at)
    assert len(figures(at)) == 3
    many = open_app(text="[MASK] [MASK] [MASK] [MASK] [MASK] [MASK]")
    no_exception(many)
    assert len(many.dataframe[0].value) == 6  # more than 4 masks: a summary table first ...
    assert len(figures(many)) == 2  # ... and charts for the chosen ones
    assert "You typed this [MASK]" in texts(many)


@pytest.mark.slow
def test_model_without_mlm_head_explains_why_on_prediction_and_works_elsewhere(open_app):
    at = open_app(model="minilm-encoder")
    no_exception(at)
    assert "has no masked-LM head" in texts(at)
    assert "No masked-LM head" in "\n".join(c.value for c in at.sidebar.caption)
    for page, at in every_page(at):
        if page in DRAWN_FROM_ANY_SENTENCE:
            assert figures(at) or page == "architecture", page


@pytest.mark.parametrize("kind", ["missing", "not-json", "bad-weights"])
def test_unreadable_model_folder(open_app, tmp_path, kind):
    folder = tmp_path / "model"
    if kind != "missing":
        folder.mkdir()
        (folder / "config.json").write_text("{not json" if kind == "not-json" else json.dumps({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10}))
        (folder / "model.safetensors").write_bytes(b"definitely not safetensors")
        (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    at = open_app(model=str(folder))
    assert at.selectbox(key="model_choice").value == "folder"
    for page, at in every_page(at):
        assert any("Could not load" in e.value for e in at.sidebar.error), page
        if page not in NO_MODEL:
            assert "Pick another model" in texts(at), page
            assert not figures(at), page


def test_empty_second_sentence_is_left_out(open_app):
    at = open_app("attention", pair="\x00\x07")
    no_exception(at)
    assert "second sentence has no tokens left" in "\n".join(c.value for c in at.main.caption)
    assert np.asarray(figures(at)[0]["data"][0]["x"]).size == 10
