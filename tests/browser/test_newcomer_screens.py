"""What a new teacher met on a 1366 x 768 screen (Chromium + Playwright, tests/browser/conftest.py): the prediction
page opened by its name, the attention page's head-statistics table whole, the mixing page's Method box showing its
whole label, and the long pages' contents list taking the reader to a section.

    SCREENSHOT_DIR=out/screenshots OMP_NUM_THREADS=1 python -m pytest tests/browser/test_newcomer_screens.py -q
"""
from __future__ import annotations

from browser_support import SLOW, open_page, screenshot, settle, wait_until

LAPTOP = {"width": 1366, "height": 768}
HEADERS_DRAWN = ("() => { const h = [...document.querySelectorAll('[data-testid=stDataFrame] [role=columnheader]')];"
                 " return h.length > 0 && h[h.length - 1].textContent.trim().startsWith('next'); }")
MAIN_RIGHT = "() => document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect().right"


def test_the_prediction_page_opens_by_its_name(browser, app_url):
    page, errors = open_page(browser, app_url + "/prediction?text=The+[MASK]+barked.", LAPTOP)
    page.get_by_role("heading", name="Masked prediction", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert not page.get_by_text("Page not found").count()
    assert "/prediction" in page.url
    screenshot(page, "newcomer_prediction_by_name", full_page=False)
    assert not errors, errors
    page.context.close()


def test_the_head_statistics_table_fits_the_screen(browser, app_url):
    page, errors = open_page(browser, app_url + "/attention", LAPTOP)
    page.get_by_role("heading", name="Head statistics").wait_for(timeout=SLOW)
    settle(page, charts=4)
    table = page.locator("[data-testid=stDataFrame]").first
    table.scroll_into_view_if_needed()
    wait_until(page, HEADERS_DRAWN, timeout=SLOW)  # the table draws its columns after the script has ended
    box = table.bounding_box()
    assert box["x"] + box["width"] <= page.evaluate(MAIN_RIGHT) + 1
    headers = page.evaluate("() => [...document.querySelectorAll('[data-testid=stDataFrame] [role=columnheader]')]"
                            ".map(h => [h.textContent, h.getBoundingClientRect().right])")
    right = box["x"] + box["width"]
    assert [name for name, _ in headers][-1].strip().startswith("next"), headers
    assert all(edge <= right + 1 for _, edge in headers), f"a column is cut at the right edge: {headers}, table ends {right}"
    screenshot(page, "newcomer_head_statistics", full_page=False)

    page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollTo(0, 0)")
    page.locator("a[href='#head-statistics']").first.click()  # the contents list at the top
    wait_until(page, "() => { const top = document.getElementById('head-statistics').getBoundingClientRect().top;"
                     " return top >= 0 && top < window.innerHeight; }", timeout=SLOW)
    assert not errors, errors
    page.context.close()


def test_the_mixing_pages_method_box_shows_its_whole_label(browser, app_url):
    page, errors = open_page(browser, app_url + "/rollout", LAPTOP)
    page.get_by_text("Method", exact=True).first.wait_for(timeout=SLOW)
    settle(page, charts=1)
    shown, cut = page.evaluate(
        """() => { const box = [...document.querySelectorAll('[data-testid=stSelectbox]')].find(b => b.innerText.startsWith('Method'));
                   const value = box.querySelector('input');  // the chosen option is the combobox's value
                   return [value.value, [value, ...box.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1)
                                                                              .map(e => e.tagName + ' ' + (e.value || e.textContent))]; }""")
    assert "Attention weights (Abnar & Zuidema 2020 (rollout))" in shown
    assert cut == [], f"the Method box cuts its label: {cut}"
    screenshot(page, "newcomer_mixing_method", full_page=False)
    assert not errors, errors
    page.context.close()
