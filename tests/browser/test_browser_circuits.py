"""The page "Which connections carry the answer?" (/circuits) in a real browser at 1366×768: the graph draws with
the edges the link asks for, the slider changes how many are drawn, hovering an edge shows its score, and patching
the strongest edge from the picker changes the [MASK]'s logit difference, with no JavaScript error.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_circuits.py -q
"""
from __future__ import annotations

import re

from browser_support import SLOW, open_page, screenshot, settle

EDGE_LINES = ("() => document.querySelectorAll('.js-plotly-plot')[0].data"
              ".filter(trace => trace.mode === 'lines').length")


def test_graph_slider_hover_and_patching_an_edge(browser, app_url):
    page, errors = open_page(browser, app_url + "/circuits?circuit_method=eap&circuit_shown=5",
                             viewport={"width": 1366, "height": 768})
    page.get_by_role("heading", name="Which connections carry the answer?", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=2)
    assert page.evaluate(EDGE_LINES) == 5

    page.get_by_role("slider").first.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_function(EDGE_LINES.replace("() =>", "() => (") + ") === 8", timeout=SLOW)
    settle(page, charts=2)
    assert "circuit_shown=8" in page.url

    graph = page.locator(".js-plotly-plot").first
    graph.scroll_into_view_if_needed()
    midpoint = page.evaluate(
        "() => { const plot = document.querySelectorAll('.js-plotly-plot')[0];"
        " const trace = plot._fullData.find(t => t.name === 'edges');"
        " const xa = plot._fullLayout.xaxis, ya = plot._fullLayout.yaxis, box = plot.getBoundingClientRect();"
        " return [box.left + xa._offset + xa.l2p(trace.x[0]), box.top + ya._offset + ya.l2p(trace.y[0])]; }")
    page.mouse.move(*midpoint)
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    assert "score" in page.locator(".hovertext").first.text_content()
    screenshot(page, "circuits", full_page=False)

    page.mouse.move(0, 0)  # the hover label away
    picker = page.locator("[data-testid=stSelectbox]").filter(has_text="Patch one edge or node").first
    picker.scroll_into_view_if_needed()
    picker.locator("input").click()
    page.get_by_role("option", name=re.compile("^edge: ")).first.click()  # the strongest edge
    page.get_by_text("with it patched").first.wait_for(timeout=SLOW)
    line = page.get_by_text("with it patched").first.text_content()
    before, after = map(float, re.search(r"Logit difference (-?[\d.]+) → (-?[\d.]+)", line).groups())
    assert before != after and "circuit_part=edge" in page.url
    screenshot(page, "circuits_patched")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
