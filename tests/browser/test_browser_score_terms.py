"""The attention page in Chromium with a tiny DeBERTa-v2 (He et al. 2021) saved by transformers' own class: the
section "Where does this head's score come from?" draws the chosen head's three score terms, and the three panels'
titles (content → content, content → position, position → content, each with its share) are rendered on the page."""
from __future__ import annotations

import urllib.parse

import pytest

from browser_support import SLOW, open_page, screenshot, settle

SENTENCE = "the dog barked at the cat and the man went to the park with the [MASK]."
TITLES = ("content → content", "content → position", "position → content")
# the subplot titles plotly drew into the page (its annotations' text elements)
DRAWN_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot .annotation-text')].map(text => text.textContent)"""
# the score-terms figure: its first panel's tokens, and the labels plotly drew on its x axis (key) and y axis (query)
DRAWN_LABELS = """() => { const plot = [...document.querySelectorAll('.js-plotly-plot')].find(p => p.textContent.includes('where each score comes from'));
    const labels = (axis) => [...plot.querySelectorAll(`.${axis}tick text`)].filter(t => t.textContent).length;
    return [plot.data[0].x.length, ['x', 'x2', 'x3'].map(labels), labels('y')]; }"""


@pytest.fixture(scope="module")
def deberta_folder(tmp_path_factory, tiny_vocab_file):
    pytest.importorskip("transformers")
    from families.family_support import build_hf, write_tiny_tokenizer

    folder = tmp_path_factory.mktemp("deberta")
    build_hf("deberta-v2", "DebertaV2ForMaskedLM").save_pretrained(folder)
    write_tiny_tokenizer(folder, tiny_vocab_file)
    return folder


def test_the_attention_page_draws_a_deberta_heads_three_terms(browser, app_url, deberta_folder):
    query = urllib.parse.urlencode({"model": str(deberta_folder), "text": SENTENCE, "layer": 1, "head": 1})
    page, errors = open_page(browser, f"{app_url}/attention?{query}")
    page.get_by_text("Where does this head's score come from?").wait_for(timeout=SLOW)
    settle(page, charts=0)
    page.get_by_text("Layer 1, head 1: where each score comes from").wait_for(timeout=SLOW)
    drawn = page.evaluate(DRAWN_TITLES)
    for title in TITLES:
        (shown,) = [text for text in drawn if text.startswith(title)]  # two lines: the term, then its share
        assert shown.endswith("% of the magnitude"), shown
    tokens, keys, queries = page.evaluate(DRAWN_LABELS)
    assert tokens > 15 and keys == [tokens] * 3 and queries == tokens, "every token labelled, in each panel"
    screenshot(page, "deberta_score_terms")
    assert page.get_by_text("Traceback").count() == 0
    assert not errors, errors
    page.context.close()
