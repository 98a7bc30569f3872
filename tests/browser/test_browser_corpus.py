"""Corpus search and "One word, many contexts" in a real browser (Chromium + Playwright, as test_browser.py):
the built-in index (its first 250 sentences) builds with a progress bar, a token chip searches, uploads (empty, 10 MB, a small text) are
answered, and a word missing from a sentence gets a message. Screenshots go to $SCREENSHOT_DIR when it is set.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_corpus.py -q
"""
from __future__ import annotations

import time

import pytest

from browser_support import SLOW, new_page, open_page, screenshot, settle
from viz_app.server.local_server import serve

TALL = {"width": 1440, "height": 2600}  # every chart on screen: Streamlit draws a chart only once it is visible


@pytest.fixture(scope="module")
def unindexed_url(browser_ready, tmp_path_factory):
    """A server of this module's own: the worker's shared one may hold the built-in index already (another test
    opened the page), and then no progress bar is drawn."""
    with serve(tmp_path_factory.mktemp("streamlit") / "streamlit.log") as (url, _server):
        yield url


def test_corpus_search_builds_with_progress_searches_and_answers_uploads(browser, unindexed_url, tmp_path):
    page, errors = open_page(browser, unindexed_url + "/corpus_search?text=The+dog+barked+at+the+mailman.", TALL)
    seen_progress, deadline = False, time.time() + SLOW / 1000
    while page.locator(".js-plotly-plot").count() < 2 and time.time() < deadline:  # the index builds (seconds)
        seen_progress = seen_progress or page.get_by_text("Indexing every token of the first 250 of the 992").count() > 0
        time.sleep(0.2)
    assert seen_progress, "a progress bar while the built-in sentences are indexed"
    settle(page, charts=2)
    assert page.locator("mark").first.inner_text() == "barked"  # the default token, in its sentence
    assert page.get_by_text("Searching 2,909 tokens").count() == 1  # the first 250 sentences
    page.get_by_role("radio", name="dog", exact=True).click()  # a single-choice pill is a radio
    page.get_by_text("matches after layer 5 are “dog” itself").wait_for(timeout=SLOW)
    settle(page, charts=2)
    assert "search_position=2" in page.url
    screenshot(page, "corpus_search")

    page.get_by_text("Upload a .txt file").click()
    page.get_by_text("Choose a .txt file with one sentence per line").wait_for(timeout=SLOW)
    upload = page.locator("input[type=file]")
    for name, content, answer in [
        ("empty.txt", b"", "That file is empty"),
        ("big.txt", b"The dog barked.\n" * 700_000, "File must be 2.0MB or smaller"),  # the browser refuses it unsent (the box's cap)
        ("mine.txt", b"<i>My</i> dog barked at the mailman.\nA cat sat on the mat.\n", "Searching 26 tokens of mine"),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        upload.set_input_files(str(path))
        page.get_by_text(answer).first.wait_for(timeout=SLOW)
        settle(page, charts=2 if name == "mine.txt" else 0)
    assert page.get_by_text("<i>My</i> dog", exact=False).count() >= 1  # shown as typed, not as HTML
    assert page.locator("li i").count() == 0
    screenshot(page, "corpus_search_upload")
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()


def test_word_contexts_draws_and_names_a_sentence_without_the_word(browser, app_url):
    page = new_page(browser, TALL)
    page.goto(app_url + "/word_contexts")
    page.get_by_role("heading", name="One word, many contexts", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=2)
    assert page.get_by_text("What Ethayarajh found").count() == 1
    screenshot(page, "word_contexts")
    box = page.get_by_label("Word", exact=True)
    box.fill("river")
    box.press("Enter")
    page.get_by_text("is not a word of sentence 2").wait_for(timeout=SLOW)
    settle(page, charts=0)
    assert page.locator(".js-plotly-plot").count() == 0
    assert "contexts_word=river" in page.url
    page.context.close()
