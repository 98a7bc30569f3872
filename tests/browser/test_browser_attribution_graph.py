"""The page "How did it get to that guess?" (/attribution_graph) in a real browser at 1366×768, on the built-in
model and a short sentence: the graph draws, hovering a feature shows its label and what it raises, clicking it
switches it off, and the graph's prediction shows beside the measured change, with no JavaScript error. One page
load: the graph is the page's dearest computation.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_attribution_graph.py -q
"""
from __future__ import annotations

import re

from browser_support import MARKER, SLOW, open_page, screenshot, settle, wait_until

FEATURES = "transcoder features"  # the chart's trace of feature nodes (viz_app/charts/attribution_graph.py)


def test_graph_hover_and_switching_a_feature_off(browser, app_url):
    page, errors = open_page(browser, app_url + "/attribution_graph?text=Bees+make+%5BMASK%5D+.&graph_max_features=50",
                             viewport={"width": 1366, "height": 768})
    page.get_by_role("heading", name="How did it get to that guess?", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    graph = page.locator(".js-plotly-plot").first
    graph.scroll_into_view_if_needed()

    *where, node = page.evaluate(MARKER, [FEATURES, 0])
    page.mouse.move(0, 0)
    page.mouse.move(*where)
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    hover = page.locator(".hovertext").first.text_content()
    assert "of layer" in hover and "fires most on:" in hover and "raises the words" in hover, hover
    screenshot(page, "attribution_graph", full_page=False)

    page.mouse.click(*where)
    wait_until(page, "node => new URLSearchParams(location.search).get('graph_node') === node", arg=node,
                     timeout=SLOW)
    result = page.get_by_text(re.compile("the graph predicts")).first
    result.wait_for(timeout=SLOW)
    shown = result.text_content()
    predicted = re.search(r"the graph predicts ([+-][\d.]+)", shown)
    measured = re.search(r"measured: ([+-][\d.]+) with attention frozen, ([+-][\d.]+) with it live", shown)
    assert predicted and measured, shown
    assert "switched off" in shown
    screenshot(page, "attribution_graph_switched_off")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
