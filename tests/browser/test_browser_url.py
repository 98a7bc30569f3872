"""The address bar in a real browser (Chromium + Playwright, as test_browser.py): widgets kept in the URL by
viz_app/app/state.py write their value there as the user changes them, a page switch keeps them, and the address bar
reopens the same view in a new session.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_url.py -q
"""
from __future__ import annotations

from browser_support import SLOW, new_page, open_page, screenshot, settle, wait_until


def _wait_for_url(page, wanted: str, timeout_s: float = 60) -> None:
    """Until the address bar holds `wanted` (asked of the browser: the server writes it after a rerun, and
    `page.url` alone is not refreshed while the test waits)."""
    from playwright.sync_api import TimeoutError as Timeout

    try:
        wait_until(page, "wanted => window.location.href.includes(wanted)", arg=wanted, timeout=timeout_s * 1000)
    except Timeout:
        pass  # the assert below names what the address bar holds
    assert wanted in page.url, f"{wanted!r} not in {page.url}"


def test_selections_go_into_the_url_survive_a_page_switch_and_reopen(browser, app_url):
    page, errors = open_page(browser, app_url + "/attention?text=The+cat+sat+on+the+%5BMASK%5D.&head=5")
    page.get_by_text("Layer 0, head 5").first.wait_for(timeout=SLOW)
    settle(page, charts=1)
    page.locator("[data-testid=stSelectbox]").filter(has_text="Layer").first.click()
    page.get_by_role("option", name="3", exact=True).click()
    page.get_by_text("Layer 3, head 5").first.wait_for(timeout=SLOW)
    _wait_for_url(page, "layer=3")
    assert "head=5" in page.url and "text=The+cat" in page.url

    page.get_by_role("link", name="MLP activations").click()
    page.get_by_role("heading", name="MLP activations", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    page.get_by_role("link", name="Attention", exact=True).click()
    page.get_by_text("Layer 3, head 5").first.wait_for(timeout=SLOW)
    _wait_for_url(page, "layer=3")
    shared = page.url

    other = new_page(browser)  # someone opens the shared link
    other.goto(shared)
    other.get_by_text("Layer 3, head 5").first.wait_for(timeout=SLOW)
    settle(other, charts=1)
    assert other.locator(".js-plotly-plot").first.get_by_text("cat", exact=True).count() >= 1
    other.context.close()

    page.get_by_role("link", name="Masked prediction").click()
    settle(page, charts=1)
    slider = page.locator("[data-testid=stSlider]").filter(has_text="Candidates per [MASK]").get_by_role("slider")
    slider.focus()
    for _ in range(7):
        slider.press("ArrowLeft")  # 10 -> 3
    _wait_for_url(page, "top_k=3")
    settle(page, charts=1)
    assert page.locator(".js-plotly-plot .bars .point").count() == 3
    screenshot(page, "prediction_top_3")
    assert not errors, errors
    page.context.close()


def test_the_default_page_opens_at_its_own_address_too(browser, app_url):
    """The prediction page is served at / and at /prediction (its registry address): no "Page not found"."""
    page, errors = open_page(browser, app_url + "/prediction?text=The+cat+sat+on+the+%5BMASK%5D.")
    page.get_by_role("heading", name="Masked prediction", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert page.get_by_text("Page not found").count() == 0
    assert page.locator(".js-plotly-plot").count() >= 1  # the candidates at the [MASK]
    assert not errors, errors
    page.context.close()
