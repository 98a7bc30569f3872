"""The first screen on a 1366x768 laptop: every page that reads the sentence shows the Sentence box at the top of
the main area, inside the viewport without scrolling; the pages that read no sentence show none. A screenshot of
the prediction page's first screen goes to $SCREENSHOT_DIR/first_screen.png when it is set.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_first_screen.py -q
"""
from __future__ import annotations

from browser_support import new_page, screenshot, settle
from viz_app.app.navigation import DEFAULT_PAGE, NO_SENTENCE_BOX, PAGES

LAPTOP = {"width": 1366, "height": 768}


def _url_paths() -> list[str]:
    """Every page of the app's navigation, by url_path ("" for the default page), so pages added later are covered."""
    return ["" if path == DEFAULT_PAGE else path for path in PAGES]


def test_the_sentence_box_is_on_the_first_screen_of_every_page_that_reads_it(browser, app_url):
    page = new_page(browser, LAPTOP)
    paths = _url_paths()
    assert len(paths) >= 15 and set(NO_SENTENCE_BOX) <= set(paths)
    for path in paths:
        page.goto(f"{app_url}/{path}")
        settle(page, charts=0)
        box = page.locator("[data-testid=stMain]").get_by_label("Sentence", exact=True)
        if path in NO_SENTENCE_BOX:
            assert box.count() == 0, f"/{path} reads no sentence but shows the box"
            continue
        assert box.count() == 1, f"/{path}: no Sentence box in the main area"
        bounds = box.bounding_box()
        assert bounds is not None, f"/{path}: the Sentence box is not drawn"
        assert 0 <= bounds["x"] and bounds["x"] + bounds["width"] <= LAPTOP["width"], (path, bounds)
        assert 0 <= bounds["y"] and bounds["y"] + bounds["height"] <= LAPTOP["height"], (path, bounds)
        second = page.locator("[data-testid=stMain]").get_by_label("Second sentence (optional)", exact=True)
        assert second.bounding_box()["y"] + second.bounding_box()["height"] <= LAPTOP["height"], path
        if path == "":
            screenshot(page, "first_screen", full_page=False)  # the viewport only: what a laptop shows
    assert page.locator("[data-testid=stSidebar]").get_by_label("Sentence", exact=True).count() == 0
    page.context.close()
