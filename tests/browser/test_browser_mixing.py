"""The context-mixing page ("What each word takes", at /mixing) in a real browser (Chromium + Playwright,
tests/browser/conftest.py): two methods from the link draw side by side, a cell shows its value on hover, choosing
another method beside them goes into the address bar and draws it, with no JavaScript error.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_mixing.py -q
"""
from __future__ import annotations

import time

from browser_support import SLOW, open_page, screenshot, settle


def _wait_for_url(page, wanted: str, timeout_s: float = SLOW / 1000) -> None:
    deadline = time.time() + timeout_s
    while wanted not in page.url and time.time() < deadline:
        time.sleep(0.2)
    assert wanted in page.url, f"{wanted!r} not in {page.url}"


def test_two_methods_side_by_side_hover_and_the_url(browser, app_url):
    page, errors = open_page(browser, app_url + "/mixing?text=The+%5BMASK%5D+barked+at+the+mailman."
                                                "&mixing_method=norm-residual&mixing_compare=value-zeroing")
    page.get_by_role("heading", name="What each word takes from the others", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=6)  # norm-residual: layer and row; value zeroing: layer, row, whole model and its row
    assert page.get_by_text("Value zeroing, whole model").count() >= 1
    heatmap = page.locator(".js-plotly-plot").first
    box = heatmap.locator(".nsewdrag").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.3)
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    assert "takes from" in page.locator(".hovertext").first.text_content()
    screenshot(page, "mixing")

    page.locator("[data-testid=stSelectbox]").filter(has_text="Beside it").first.click()
    page.get_by_role("option", name="DecompX (Modarressi et al. 2023)").click()
    page.get_by_text("DecompX, whole model").first.wait_for(timeout=SLOW)
    _wait_for_url(page, "mixing_compare=decompx")
    assert "mixing_method=norm-residual" in page.url
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
