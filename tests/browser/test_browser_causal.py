"""The causal tracing page in a real browser (Chromium + Playwright, tests/browser/conftest.py): the two-sentence sweeps
draw, a heatmap cell shows its value on hover, an edited sentence goes into the address bar, and a sentence of
another length gets a message instead of charts.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_causal.py -q
"""
from __future__ import annotations

from browser_support import SLOW, open_page, screenshot, settle, wait_until


def test_causal_tracing_draws_hovers_and_keeps_its_sentences_in_the_url(browser, app_url):
    page, errors = open_page(browser, app_url + "/causal_tracing")
    page.get_by_role("heading", name="Causal tracing", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=6)
    assert page.locator(".js-plotly-plot").count() == 6  # four sweeps, heads by position, attribution against exact
    assert page.get_by_text("logit(he) − logit(she)").count() >= 1
    heatmap = page.locator(".js-plotly-plot").first
    box = heatmap.locator(".nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.1)  # a cell of the top row
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    assert "restored:" in page.locator(".hovertext").first.text_content()  # an SVG group: its text, not inner_text
    screenshot(page, "causal_tracing")

    corrupted = page.get_by_label("Corrupted sentence (as many word pieces, one word changed)")
    corrupted.fill("The old woman said that [MASK] was tired.")
    corrupted.press("Enter")
    page.get_by_text("same number of word pieces").first.wait_for(timeout=SLOW)
    settle(page, charts=0)
    assert page.locator(".js-plotly-plot").count() == 0
    wait_until(page, "() => location.search.includes('patch_corrupted=The+old+woman')", timeout=SLOW)
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
