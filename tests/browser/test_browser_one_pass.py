"""The page "One pass, step by step" (pages/one_pass.py) in Chromium at a laptop's 1366×768: the step picker's blocks,
clicking a block of the diagram opens its step and the tokens' dots flow there (their place sampled as they move,
screenshots before, during and after), none under reduced motion, the token picker moves every step to that token,
zeroing a head draws the second guess and changes it; no JavaScript error.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_one_pass.py -q
"""
from __future__ import annotations

from playwright.sync_api import TimeoutError

from browser_support import SLOW, open_page, screenshot, settle, wait_until

LAPTOP = {"width": 1366, "height": 768}
GUESS_BARS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(plot => plot.data && plot.data[0].type === 'bar')
    .map(plot => plot.data.flatMap(trace => trace.y.map((label, i) => label + " " + trace.text[i])))"""  # "1. barked 31.2%"

DIAGRAM = "[...document.querySelectorAll('.js-plotly-plot')].find(plot => plot.layout?.title?.text?.includes('The whole pass'))"
DOTS = f"{DIAGRAM}.querySelectorAll('.scatterlayer .trace:last-child .point')"  # the tokens' dots (viz_app/charts/one_pass.py)
RECORD_FLOW = f"""() => {{ window.flow = []; const tick = () => {{
    const dots = {DIAGRAM} ? {DOTS} : [];
    const moving = dots.length ? dots[0].getAnimations().filter(a => a.playState === 'running') : [];
    if (moving.length) {{ const at = dots[0].getBoundingClientRect(), plot = {DIAGRAM}.getBoundingClientRect();
        window.flow.push([moving[0].currentTime, at.x - plot.x, at.y - plot.y]); }}
    if (!window.flowRead) requestAnimationFrame(tick); }}; requestAnimationFrame(tick); }}"""  # each frame, till read
DOT_AT = f"() => {{ const at = {DOTS}[0].getBoundingClientRect(), plot = {DIAGRAM}.getBoundingClientRect(); return [at.x - plot.x, at.y - plot.y]; }}"  # in the diagram
SEEK = f"fraction => {DOTS}.forEach(dot => dot.getAnimations().forEach(a => {{ a.pause(); a.currentTime = fraction * a.effect.getComputedTiming().duration; }}))"


def click_block(page, step: str, layer: int) -> None:
    """Click the diagram's block that opens (step, layer) where plotly draws it."""
    box = page.evaluate(f"""() => {{ const plot = {DIAGRAM};
        const i = plot.data[0].customdata.findIndex(([s, l]) => s === '{step}' && l === {layer});
        const at = plot.querySelectorAll('.scatterlayer .trace:first-child .point')[i].getBoundingClientRect();
        return [at.x + at.width / 2, at.y + at.height / 2]; }}""")
    page.mouse.click(*box)


def open_block(page, title: str, shown: str) -> None:
    """Click a block of the overview (a single-choice pill is a radio) and wait for its step."""
    page.get_by_role("radio", name=title, exact=True).click()
    page.get_by_text(shown).first.wait_for(timeout=SLOW)
    settle(page, charts=1)


def pick(page, label: str, option: str) -> None:
    """Choose `option` in the selectbox labelled `label`; a click that lands while the charts below are still
    drawing can leave the list closed, so a second click opens it."""
    box, choice = page.locator("[data-testid=stSelectbox]").filter(has_text=label).first, page.get_by_role("option", name=option)
    box.click()
    try:
        choice.wait_for(timeout=5000)
    except TimeoutError:
        box.click()
    choice.click()


def test_overview_blocks_token_picker_and_a_zeroed_head(browser, app_url):
    page, errors = open_page(browser, app_url + "/one_pass?text=The+dog+%5BMASK%5D+at+the+mailman.", LAPTOP)
    page.get_by_role("heading", name="One pass, step by step", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    for title in ("Word pieces", "Embeddings", "Attention: one head", "Heads joined", "MLP", "Every layer", "The guess"):
        assert page.get_by_role("radio", name=title, exact=True).count() == 1, title
    screenshot(page, "one_pass_overview", full_page=False)

    page.locator("[data-testid=stPlotlyChart]").first.scroll_into_view_if_needed()  # the diagram, the page's first chart
    screenshot(page, "flow_before", full_page=False)
    before = page.evaluate(DOT_AT)  # in the word pieces' block
    page.evaluate(RECORD_FLOW)
    click_block(page, "attention", 0)  # the dots flow to layer 0's attention, through the embeddings
    page.get_by_text("every query against every key (outlined: [MASK])").first.wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert "pass_step=attention" in page.url
    wait_until(page, f"() => [...{DOTS}].every(dot => dot.getAnimations().every(a => a.playState === 'finished'))")
    after, flow = page.evaluate(DOT_AT), page.evaluate("() => { window.flowRead = true; return window.flow; }")
    assert after[0] > before[0] + 100 and after[1] < before[1] - 50, (before, after)  # right and up, to attention
    sampled = {(round(x), round(y)) for _, x, y in flow}  # the dots' place at each frame while the flow ran
    assert len(flow) >= 2 and len(sampled) >= 2 and flow[0][0] < flow[-1][0], flow  # they moved as time passed
    assert all(before[0] - 1 <= x <= after[0] + 1 and after[1] - 1 <= y <= before[1] + 1 for _, x, y in flow), flow
    screenshot(page, "flow_after", full_page=False)
    page.evaluate(SEEK, 0.7)  # the flow held on its way, between the embeddings and the attention, for the eye
    halfway = page.evaluate(DOT_AT)
    assert before[0] < halfway[0] < after[0], (before, halfway, after)
    screenshot(page, "flow_during", full_page=False)
    page.evaluate(SEEK, 1)
    screenshot(page, "one_pass_attention", full_page=False)
    pick(page, "Token to follow", "2: dog")
    page.get_by_text("every query against every key (outlined: dog)").first.wait_for(timeout=SLOW)
    open_block(page, "Embeddings", "Embeddings of dog and their sum")  # no stale click on the diagram reopens attention
    page.emulate_media(reduced_motion="reduce")
    open_block(page, "MLP", "neurons for dog")
    assert page.evaluate(f"() => {DOTS}[0].getAnimations().length") == 0  # the dots stand in the MLP, not moving
    page.emulate_media(reduced_motion="no-preference")
    open_block(page, "Heads joined", "every head of dog, joined and projected")
    screenshot(page, "one_pass_step", full_page=False)

    open_block(page, "The guess", "The [MASK] at 3: its final vector")
    before = page.evaluate(GUESS_BARS)
    assert len(before) == 1 and len(before[0]) == 8, before
    page.get_by_text("Zero head 0 of layer 0 and see the guess change").click()
    page.get_by_text("Without head 0 of layer 0").first.wait_for(timeout=SLOW)
    settle(page, charts=3)
    after = page.evaluate(GUESS_BARS)
    assert len(after) == 2 and after[0] == before[0] and after[1] != before[0]
    screenshot(page, "one_pass_zeroed")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
