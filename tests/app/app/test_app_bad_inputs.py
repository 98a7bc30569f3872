"""Bad input never crashes a page: each gets a short message that says what to do, or is shown safely as text. Here
what a page does with a few of them; every bad input is prepared in tests/app/app/test_bad_input_cases.py, and every page
opened with each kind in the every-page sweep (tests/app/app/test_every_page.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app_helpers import array, figures, no_exception, texts
from bert.pretrained import MINILM_HEAD_FILE

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)

needs_head = pytest.mark.skipif(not MINILM_HEAD_FILE.is_file(), reason=f"{MINILM_HEAD_FILE} (MiniLM's MLM head) is not there yet")


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
def test_model_without_mlm_head_explains_why_on_prediction(open_app):
    at = open_app(model="minilm-encoder")
    no_exception(at)
    assert "has no masked-LM head" in texts(at)
    assert "No masked-LM head" in "\n".join(c.value for c in at.sidebar.caption)


@pytest.mark.parametrize("kind", ["missing", "not-json", "bad-weights"])
def test_unreadable_model_folder(open_app, tmp_path, kind):
    folder = tmp_path / "model"
    if kind != "missing":
        folder.mkdir()
        (folder / "config.json").write_text("{not json" if kind == "not-json" else json.dumps({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10}))
        (folder / "model.safetensors").write_bytes(b"definitely not safetensors")
        (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    at = open_app(model=str(folder))
    no_exception(at)
    assert at.selectbox(key="model_choice").value == "folder"
    assert any("Could not load" in e.value for e in at.sidebar.error)
    assert "Pick another model" in texts(at)
    assert not figures(at)


def test_empty_second_sentence_is_left_out(open_app):
    at = open_app("attention", pair="\x00\x07")
    no_exception(at)
    assert "second sentence has no tokens left" in "\n".join(c.value for c in at.main.caption)
    assert np.asarray(figures(at)[0]["data"][0]["x"]).size == 10
