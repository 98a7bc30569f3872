"""The page "One pass, step by step" (pages/one_pass.py) in Chromium at a laptop's 1366×768: the step picker's blocks,
clicking a block opens its step, the token picker moves every step to that token, zeroing a head draws the second
guess and changes it; no JavaScript error.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_one_pass.py -q
"""
from __future__ import annotations

from playwright.sync_api import TimeoutError

from browser_support import SLOW, open_page, screenshot, settle

LAPTOP = {"width": 1366, "height": 768}
GUESS_BARS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(plot => plot.data && plot.data[0].type === 'bar')
    .map(plot => plot.data.flatMap(trace => trace.y.map((label, i) => label + " " + trace.text[i])))"""  # "1. barked 31.2%"


def open_block(page, title: str, shown: str) -> None:
    """Click a block of the overview (a single-choice pill is a radio) and wait for its step."""
    page.get_by_role("radio", name=title, exact=True).click()
    page.get_by_text(shown).first.wait_for(timeout=SLOW)
    settle(page, charts=1)


def pick(page, label: str, option: str) -> None:
    """Choose `option` in the selectbox labelled `label`; a click that lands while the charts below are still
    drawing can leave the list closed, so a second click opens it."""
    box, choice = page.locator("[data-testid=stSelectbox]").filter(has_text=label).first, page.get_by_role("option", name=option)
    box.click()
    try:
        choice.wait_for(timeout=5000)
    except TimeoutError:
        box.click()
    choice.click()


def test_overview_blocks_token_picker_and_a_zeroed_head(browser, app_url):
    page, errors = open_page(browser, app_url + "/one_pass?text=The+dog+%5BMASK%5D+at+the+mailman.", LAPTOP)
    page.get_by_role("heading", name="One pass, step by step", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    for title in ("Word pieces", "Embeddings", "Attention: one head", "Heads joined", "MLP", "Every layer", "The guess"):
        assert page.get_by_role("radio", name=title, exact=True).count() == 1, title
    screenshot(page, "one_pass_overview", full_page=False)

    open_block(page, "Attention: one head", "every query against every key (outlined: [MASK])")
    assert "pass_step=attention" in page.url
    screenshot(page, "one_pass_attention", full_page=False)
    pick(page, "Token to follow", "2: dog")
    page.get_by_text("every query against every key (outlined: dog)").first.wait_for(timeout=SLOW)
    open_block(page, "Embeddings", "Embeddings of dog and their sum")
    open_block(page, "MLP", "neurons for dog")
    open_block(page, "Heads joined", "every head of dog, joined and projected")
    screenshot(page, "one_pass_step", full_page=False)

    open_block(page, "The guess", "The [MASK] at 3: its final vector")
    before = page.evaluate(GUESS_BARS)
    assert len(before) == 1 and len(before[0]) == 8, before
    page.get_by_text("Zero head 0 of layer 0 and see the guess change").click()
    page.get_by_text("Without head 0 of layer 0").first.wait_for(timeout=SLOW)
    settle(page, charts=3)
    after = page.evaluate(GUESS_BARS)
    assert len(after) == 2 and after[0] == before[0] and after[1] != before[0]
    screenshot(page, "one_pass_zeroed")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
