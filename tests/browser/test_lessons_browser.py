"""Lessons and exports in Chromium: a lesson walked end to end with the arrow keys (a screenshot per step when
$SCREENSHOT_DIR names a folder); a bad lesson file's message; an exported lesson and an exported attention
view opened from disk with every request but the file itself blocked: their figures draw and nothing leaves the page.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from viz_app.server.class_room import network_host
from browser_support import SLOW, new_page, open_page, screenshot, settle

LESSON = "fill_in_the_blank"


@pytest.fixture(scope="module")
def minilm():
    from bert.pretrained import MINILM_HEAD_FILE
    from viz_app.app import models

    if not MINILM_HEAD_FILE.is_file():
        pytest.skip(f"{MINILM_HEAD_FILE} is not there")
    return models.load(models.ModelKey.of("minilm"))


def test_a_lesson_walked_with_the_arrow_keys(browser, app_url):
    from viz_app.lessons.format import builtin_lessons

    lesson = builtin_lessons()[LESSON]
    page, errors = open_page(browser, app_url + "/lessons?model=minilm")
    page.get_by_role("button", name="Start the lesson").click()
    page.get_by_role("heading", name=lesson.steps[0].title, exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    page.get_by_label("Sentence", exact=True).click()  # typing in a text box: the arrows move the cursor only
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    settle(page, charts=1)
    assert page.get_by_text(f"step 1 of {len(lesson.steps)}").count() == 1
    for number, step in enumerate(lesson.steps, 1):
        page.get_by_role("heading", name=step.title, exact=True).wait_for(timeout=SLOW)
        settle(page, charts=1 if step.page in ("prediction", "attention") else 0)
        assert page.get_by_text(f"step {number} of {len(lesson.steps)}").count() == 1
        assert page.locator(".js-plotly-plot").count() >= 1
        assert "model=minilm" in page.locator("code").last.inner_text()
        screenshot(page, f"lesson_{LESSON}_step{number}")
        page.locator("h2").first.click()  # focus on the page, not in a text box: the shortcut needs it
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")  # the last step: Next is off; Back goes one step back
    page.get_by_role("heading", name=lesson.steps[-2].title, exact=True).wait_for(timeout=SLOW)
    page.get_by_role("button", name="Open this step in the app").click()
    page.get_by_role("heading", name="Masked prediction", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert "text=The+%5BMASK%5D+barked+at+the+%5BMASK%5D." in page.url, page.url
    assert page.locator(".js-plotly-plot").count() == 2  # the step's two masks
    assert not errors, errors
    page.context.close()


def test_download_buttons_give_the_html_files(browser, app_url, tmp_path):
    """The app's own buttons: the attention page's two views, and a whole lesson from the Lessons page."""
    page = new_page(browser)
    page.goto(app_url + "/attention?model=minilm&layer=1&head=2")
    page.get_by_text("Layer 1, head 2").first.wait_for(timeout=SLOW)
    settle(page, charts=3)
    for label, title in (("Download this head's view", "Layer 1, head 2: where each token (row) looks"),
                         ("Download the all-heads view", "All 72 heads at a glance")):
        with page.expect_download(timeout=SLOW) as download:
            page.get_by_role("button", name=label).click()
        saved = download.value.path().read_text(encoding="utf-8")
        assert saved.count("Plotly.newPlot(") == 2 and title in saved, label
    page.goto(app_url + "/lessons?model=minilm")
    with page.expect_download(timeout=SLOW) as download:
        page.get_by_role("button", name="Download this lesson").click()
    assert download.value.suggested_filename == f"{LESSON}.html"
    saved = download.value.path().read_text(encoding="utf-8")
    assert "Step 7 of 7: Where the model is wrong" in saved and "<details>" in saved
    # each step's link: the class link's address, this machine's on its network (the browser reached it at 127.0.0.1)
    assert f"{app_url.replace('127.0.0.1', network_host())}/?model=minilm" in saved
    page.context.close()


def test_a_bad_lesson_file_says_what_is_wrong(browser, app_url, tmp_path):
    bad = tmp_path / "my_lesson.yaml"
    bad.write_text("title: Mine\nsteps:\n- title: First\n  page: nowhere\n  text: Hello.\n")
    page = new_page(browser)
    page.goto(app_url + "/lessons?model=minilm")
    page.get_by_role("heading", name="Lessons", exact=True).wait_for(timeout=SLOW)
    page.get_by_role("combobox", name="Lesson").click()
    page.get_by_role("option", name="Your own lesson file (.yaml)…").click()
    page.locator("input[type=file]").set_input_files(str(bad))
    page.get_by_text("unknown page 'nowhere'", exact=False).wait_for(timeout=SLOW)
    assert page.get_by_text("my_lesson.yaml: step 1 (First): page:", exact=False).count() == 1
    assert not page.get_by_text("Traceback").count()
    page.context.close()


def open_offline(browser, path: Path) -> tuple[object, list[str]]:
    """Open a file with every other request blocked; returns the page and the URLs it tried to fetch."""
    context = browser.new_context(viewport={"width": 1300, "height": 1000}, offline=True)
    page = context.new_page()
    asked = []

    def route(request_route):
        url = request_route.request.url
        if url == path.as_uri():
            request_route.continue_()
        else:
            asked.append(url)
            request_route.abort()

    page.route("**/*", route)
    page.on("request", lambda request: request.url != path.as_uri() and asked.append(request.url))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    return page, asked


def test_an_exported_lesson_opens_offline(browser, minilm, tmp_path):
    from viz_app.lessons.export import lesson_html
    from viz_app.lessons.format import builtin_lessons

    lesson = builtin_lessons()["where_each_word_looks"]
    path = tmp_path / "lesson.html"
    path.write_text(lesson_html(lesson, minilm, "minilm"), encoding="utf-8")
    page, asked = open_offline(browser, path)
    figures = page.locator(".plotly-graph-div")
    page.locator(".plotly-graph-div .main-svg").first.wait_for(timeout=60_000)
    count = figures.count()
    assert count >= len(lesson.steps)  # attention steps draw three figures, the ablation step one
    assert page.locator(".plotly-graph-div:has(.main-svg)").count() == count, "every figure is drawn"
    assert page.locator("details").count() == sum(bool(s.question) for s in lesson.steps)
    assert page.locator("h2").count() == len(lesson.steps)
    page.locator("details summary").first.click()
    assert page.locator("details[open]").count() == 1
    page.set_viewport_size({"width": 1300, "height": 1000})
    screenshot(page, "exported_lesson", full_page=False)
    assert asked == [], asked
    page.context.close()


def test_an_exported_attention_view_opens_offline_and_stays_interactive(browser, minilm, tmp_path):
    from viz_app.app import forward
    from viz_app.charts.attention import attention_bars, heads_overview, pattern_heatmap
    from viz_app.export.html import view_document

    text = "The cat sat on the mat. <script>alert('hi')</script>"
    prepared = forward.prepare_input(minilm.tokenizer, text, "", [], False, 512)
    result = forward.record(minilm.model, minilm.tokenizer, prepared)
    positions = list(range(result.seq))
    charts = [pattern_heatmap(result.attention[2, 3], result.tokens, positions, 2, 3),
              attention_bars(result.attention[2, 3, 1], result.tokens, positions, 1, 2, 3),
              heads_overview(result.attention, positions, (2, 3))]
    path = tmp_path / "attention.html"
    path.write_text(view_document("Attention, layer 2, head 3", charts, f"Sentence: {text}"), encoding="utf-8")
    dialogs = []
    page, asked = open_offline(browser, path)
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.locator(".plotly-graph-div .main-svg").first.wait_for(timeout=60_000)
    assert page.locator(".plotly-graph-div:has(.main-svg)").count() == 3
    assert page.get_by_text("Layer 2, head 3: where each token (row) looks").count() == 1
    assert "<script>alert('hi')</script>" in page.locator("p.meta").inner_text()  # shown as text, not run
    assert page.evaluate("document.querySelectorAll('body script').length") == 3  # the figures' own scripts only
    page.locator(".plotly-graph-div").first.hover()  # the toolbar appears: the figure is live, not a picture
    assert page.locator(".modebar").first.is_visible()
    assert dialogs == [] and asked == [], (dialogs, asked)
    screenshot(page, "exported_attention_view", full_page=False)
    page.context.close()
