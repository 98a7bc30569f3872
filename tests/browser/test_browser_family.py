"""The prediction and attention pages in Chromium with a RoBERTa-shaped model: a tiny random RobertaForMaskedLM saved
by `transformers`, with a byte-level BPE tokenizer trained in the test (tests/tokenizer_support.py), opened by its
folder in the link as the person at the server's machine may. "[MASK]" typed in the sentence is the model's
<mask>; the word pieces show in the scheme's own way, "Ġ" marking a word start, and the page says so."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_support import SLOW, open_page, screenshot, settle

SENTENCE = "The dog [MASK] at the mailman."


@pytest.fixture(scope="module")
def roberta_folder(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    import torch

    from tokenizer_support import build_tokenizer

    folder = tmp_path_factory.mktemp("roberta")
    tokenizer = build_tokenizer("roberta", folder)
    config = transformers.RobertaConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
        max_position_embeddings=66, type_vocab_size=1, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    transformers.RobertaForMaskedLM(config).save_pretrained(folder)  # its config.json replaces the tokenizer's
    return folder


def test_prediction_and_attention_pages_with_a_roberta_model(browser, app_url, roberta_folder):
    query = urllib.parse.urlencode({"model": str(roberta_folder), "text": SENTENCE})
    page, errors = open_page(browser, f"{app_url}/?{query}")
    page.get_by_text("[MASK] #1 (position 3)").wait_for(timeout=SLOW)  # <s> The dog <mask>: the model's mask token
    settle(page, charts=1)
    assert page.locator(".js-plotly-plot .bars .point").count() == 10, "ten candidates, as bars"
    assert page.get_by_role("button", name="Ġdog", exact=True).count() == 1  # the scheme's own pieces, Ġ a word start
    assert page.get_by_text("<s> and </s> cannot be masked; Ġ marks a piece that starts a word").count() == 1
    assert page.get_by_text("## marks").count() == 0
    screenshot(page, "roberta_prediction")

    page.goto(f"{app_url}/attention?{query}")
    page.get_by_role("heading", name="Attention", exact=False).first.wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert page.get_by_text("Traceback").count() == 0
    screenshot(page, "roberta_attention")
    assert not errors, errors
    page.context.close()
