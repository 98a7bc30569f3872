"""The page "Which connections carry the answer?" (/circuits) in a real browser at 1366×768: the graph draws with
the edges the link asks for, the slider changes how many are drawn, hovering an edge shows its score, clicking an
edge's diamond or a node's circle patches it live (its score shown, the [MASK]'s logit difference changed), and the
picker under the graph does the same from the keyboard, with no JavaScript error.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_circuits.py -q
"""
from __future__ import annotations

import re

from browser_support import MARKER, SLOW, open_page, screenshot, settle, wait_until

EDGE_LINES = ("() => document.querySelectorAll('.js-plotly-plot')[0].data"  # the drawn edges: not the legend's entries
              ".filter(trace => trace.mode === 'lines' && trace.showlegend === false).length")


def test_graph_slider_hover_and_patching_an_edge(browser, app_url):
    page, errors = open_page(browser, app_url + "/circuits?circuit_method=eap&circuit_shown=5",
                             viewport={"width": 1366, "height": 768})
    page.get_by_role("heading", name="Which connections carry the answer?", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=2)
    assert page.evaluate(EDGE_LINES) == 5

    page.get_by_role("slider").first.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_until(page, EDGE_LINES.replace("() =>", "() => (") + ") === 8", timeout=SLOW)
    settle(page, charts=2)
    assert "circuit_shown=8" in page.url

    graph = page.locator(".js-plotly-plot").first
    graph.scroll_into_view_if_needed()
    *midpoint, strongest = page.evaluate(MARKER, ["edges", 0])
    page.mouse.move(*midpoint)
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    assert "read by" in page.locator(".hovertext").first.text_content()  # the edge in words
    screenshot(page, "circuits", full_page=False)

    click_marker(page, "edges", 0)  # the strongest edge's diamond
    patched(page, strongest)
    assert "circuit_part=edge" in page.url
    settle(page, charts=2)  # the rerun that patched the edge has drawn its charts: a click lands on the new graph

    node = click_marker(page, "nodes", "node:a1.h0")
    patched(page, node)
    screenshot(page, "circuits_clicked_node")
    # the rerun that patched the node has finished: while a run draws, Streamlit redraws the picker and its open list
    # (an option clicked then is detached from the page, and the click retried until the timeout on a busy machine)
    settle(page, charts=2, drawing_s=0)

    page.mouse.move(0, 0)  # the hover label away
    picker = page.locator("[data-testid=stSelectbox]").filter(has_text="Patch one edge or node").first
    picker.scroll_into_view_if_needed()
    picker.locator("input").click()
    option = page.get_by_role("option", name=re.compile("^edge: ")).nth(1)  # the second strongest edge, in words
    option.click()
    wait_until(page, "node => { const part = new URLSearchParams(location.search).get('circuit_part');"
                     " return part !== null && part.startsWith('edge:'); }", arg=node, timeout=SLOW)
    patched(page, page.evaluate("() => new URLSearchParams(location.search).get('circuit_part')"))
    screenshot(page, "circuits_patched")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()


def click_marker(page, trace: str, index) -> str:
    """Point at a marker of the graph (by its index or its customdata), wait for its hover label (so Plotly has it
    under the cursor and the chart is drawn), then click it; its customdata back."""
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    *where, part = page.evaluate(MARKER, [trace, index])
    page.mouse.move(0, 0)
    page.mouse.move(*where)
    page.locator(".hovertext").first.wait_for(timeout=SLOW)
    page.mouse.click(*where)
    return part


def patched(page, part: str) -> None:
    """Wait for the page to patch `part` ("edge:..." / "node:..."): the address names it, its result says what
    patching it did, and the [MASK]'s logit difference changes."""
    wait_until(page, "part => new URLSearchParams(location.search).get('circuit_part') === part", arg=part,
                     timeout=SLOW)
    line = page.get_by_text(re.compile(r"^Patched with the counterfactual's value: "))
    line.first.wait_for(timeout=SLOW)
    before, after = map(float, re.search(r"(-?[\d.]+) → (-?[\d.]+) with it patched", line.first.text_content()).groups())
    assert before != after, line.first.text_content()
