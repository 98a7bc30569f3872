"""The sidebar on a 1366x768 laptop: the model picker and the model's one-line summary at the top, inside the viewport
without scrolling, above the page list; a page link there opens its page. A screenshot of the sidebar goes to
$SCREENSHOT_DIR/sidebar.png when it is set.

    SCREENSHOT_DIR=out/screenshots OMP_NUM_THREADS=1 python -m pytest tests/browser/test_sidebar.py -q
"""
from __future__ import annotations

from urllib.parse import urlsplit

from browser_support import open_page, screenshot_dir, settle
from viz_app.app.navigation import PAGES

LAPTOP = {"width": 1366, "height": 768}


def _inside(bounds: dict | None) -> bool:
    return bounds is not None and 0 <= bounds["y"] and bounds["y"] + bounds["height"] <= LAPTOP["height"] \
        and 0 <= bounds["x"] and bounds["x"] + bounds["width"] <= LAPTOP["width"]


def test_the_model_picker_is_on_the_first_screen_above_the_page_list(browser, app_url):
    page, errors = open_page(browser, app_url, LAPTOP)
    settle(page, charts=1)
    sidebar = page.locator("[data-testid=stSidebar]")
    if folder := screenshot_dir():
        sidebar.screenshot(path=str(folder / "sidebar.png"))
    picker = sidebar.get_by_label("Model", exact=False).first
    assert _inside(picker.bounding_box()), picker.bounding_box()
    summary = sidebar.get_by_text("layers", exact=False).first  # the one-line summary: "... 6 layers, 12 heads ..."
    assert _inside(summary.bounding_box()), summary.bounding_box()
    links = [sidebar.get_by_role("link", name=page.title) for page in PAGES.values()]  # the registry's order
    assert all(link.count() == 1 for link in links), [page.title for page in PAGES.values()]
    tops = [link.bounding_box()["y"] for link in links]
    assert tops == sorted(tops) and tops[0] > summary.bounding_box()["y"], tops
    sidebar.get_by_role("link", name=PAGES["attention"].title).click()
    page.wait_for_url(lambda url: urlsplit(url).path.rstrip("/").endswith("/attention"))
    settle(page, charts=1)
    assert page.get_by_role("heading", name="Attention").count() >= 1
    assert not errors, errors
