"""The Features page in a real browser (Chromium + Playwright): the sentence's features and a feature's page draw
with the shipped sparse autoencoder, a label typed by the user names the feature in the heatmap (escaped), switching
the feature changes the [MASK] guess chart, and the neuron view draws. Screenshots go to $SCREENSHOT_DIR when set.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_features.py -q
"""
from __future__ import annotations

from browser_support import SLOW, open_page, screenshot, settle


def test_features_page_draws_labels_and_switches(browser, app_url):
    page, errors = open_page(browser, app_url + "/features?text=The+%5BMASK%5D+barked+at+the+mailman.",
                             {"width": 1440, "height": 3200})  # tall: Streamlit draws a chart once it is visible
    page.get_by_role("heading", name="Features", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=4)  # heatmap, histogram, promoted tokens, the [MASK] guess
    assert page.get_by_text("Where feature").count() >= 1
    assert page.locator("mark").count() >= 5  # top examples, their token marked
    box = page.get_by_role("textbox", name="Your label for this feature")
    box.fill("<b>dogs</b>")
    box.press("Enter")
    settle(page, charts=4)
    page.locator(".js-plotly-plot").first.get_by_text("<b>dogs</b>", exact=False).first.wait_for(timeout=SLOW)
    assert page.locator(".js-plotly-plot b").filter(has_text="dogs").count() == 0  # shown as typed, not as HTML
    screenshot(page, "features")

    page.get_by_role("radio", name="MLP neurons").click()
    page.get_by_text("Where neuron").first.wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert "features_look_at=MLP" in page.url
    screenshot(page, "features_neurons")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
