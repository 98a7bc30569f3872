"""The app in a real browser: Chromium (Debian's package) driven by Playwright against `streamlit run` on localhost.

Opens every page on a laptop's screen (its charts, its Sentence box on the first screen), types a sentence with
[MASK], waits for predictions, clicks a token to mask it, checks that two browser sessions keep their own sentences, and, when asked, saves a screenshot of each page to
$SCREENSHOT_DIR. Skips when Chromium or Playwright is missing, except under CI=true, where missing tools are a
failure. The fixtures (server, Chromium) are in conftest.py.

    apt-get install -y chromium && pip install playwright
    OMP_NUM_THREADS=1 python -m pytest tests/browser -q
    SCREENSHOT_DIR=out/screenshots OMP_NUM_THREADS=1 python -m pytest tests/browser -q   # with screenshots
"""
from __future__ import annotations

from browser_support import DRAWING_S, SLOW, new_page, open_page, page_errors, screenshot, settle, wait_until
from viz_app.app.navigation import DEFAULT_PAGE, NO_SENTENCE_BOX, PAGES

TITLES = {"attention": "Attention", "architecture": "Architecture"}


def test_every_page_and_a_typed_mask(browser, app_url):
    page, errors = open_page(browser, app_url + "/")
    settle(page, charts=1)

    # type a sentence with a [MASK] into the box at the top, as a student would
    box = page.get_by_label("Sentence", exact=True)
    box.fill("Paris is the [MASK] of France.")
    box.press("Control+Enter")
    page.get_by_text("[MASK] #1 (position 4)").wait_for(timeout=SLOW)
    settle(page, charts=1)
    assert page.locator(".js-plotly-plot").count() == 1
    bars = page.locator(".js-plotly-plot .bars .point")
    assert bars.count() == 10, "ten candidates, as bars"
    assert "text=Paris" in page.url, "the sentence goes into the URL"

    # click a token chip to mask it too: a second chart with the original token's rank
    page.get_by_role("button", name="france", exact=True).click()
    page.get_by_text("was “france”").wait_for(timeout=SLOW)
    settle(page, charts=2)
    assert page.locator(".js-plotly-plot").count() == 2
    assert page.get_by_text("The masked token").count() >= 1
    assert "masks=" in page.url
    screenshot(page, "prediction_masked")

    for name in ("attention", "architecture"):  # every page's own drawing: the walk below
        page.get_by_role("link", name=TITLES[name]).click()  # the navigation keeps the session and its sentence
        page.get_by_role("heading", name=TITLES[name], exact=True).wait_for(timeout=SLOW)
        settle(page, charts=0 if name == "architecture" else 1)
        assert page.get_by_text("Paris").count() >= 1 or name == "architecture"
        assert "text=" in page.url, f"{name}: the URL keeps the sentence for sharing"
    assert not errors, errors
    page.context.close()


LAPTOP = {"width": 1366, "height": 768}
CHARTS = {  # url_path -> charts drawn with the default sentence (the others are checked to run and lay out)
    "prediction": 1, "attention": 1, "embeddings": 1, "mlp": 1, "logit_lens": 1, "mixing": 2,
    "saliency": 1,  # the attributions (the deletion curve waits for its toggle)
}


def test_every_page_draws_with_the_sentence_box_on_a_laptop_s_first_screen(browser, app_url):
    """Every page of the navigation (pages added later too), reached by its link as a visitor would on a 1366x768
    laptop: it runs without an exception, draws its charts, and shows the Sentence box at the top of the main area
    inside the viewport without scrolling (the pages that read no sentence show none; the sidebar never does)."""
    page, errors = open_page(browser, app_url + "/", LAPTOP)
    assert len(PAGES) >= 15 and set(NO_SENTENCE_BOX) <= set(PAGES)
    for path, spec in PAGES.items():
        if path != DEFAULT_PAGE:
            heading = page.locator("h1").first.inner_text()
            page.get_by_role("link", name=spec.title, exact=True).click()
            wait_until(page, "old => { const h = document.querySelector('h1');"
                             " return h !== null && h.innerText !== old; }", arg=heading)
        settle(page, charts=CHARTS.get(path, 0), drawing_s=DRAWING_S if path in CHARTS else 0.0)
        assert page.locator(".js-plotly-plot").count() >= CHARTS.get(path, 0), f"/{path}: charts missing"
        assert not page.get_by_text("Traceback").count(), f"/{path}: an exception is shown"
        box = page.locator("[data-testid=stMain]").get_by_label("Sentence", exact=True)
        if path in NO_SENTENCE_BOX:
            assert box.count() == 0, f"/{path} reads no sentence but shows the box"
        else:
            assert box.count() == 1, f"/{path}: no Sentence box in the main area"
            for label in ("Sentence", "Second sentence (optional)"):
                bounds = page.locator("[data-testid=stMain]").get_by_label(label, exact=True).bounding_box()
                assert bounds is not None, f"/{path}: the {label} box is not drawn"
                assert 0 <= bounds["x"] and bounds["x"] + bounds["width"] <= LAPTOP["width"], (path, label, bounds)
                assert 0 <= bounds["y"] and bounds["y"] + bounds["height"] <= LAPTOP["height"], (path, label, bounds)
        if path == DEFAULT_PAGE:
            screenshot(page, "first_screen", full_page=False)  # the viewport only: what a laptop shows
        screenshot(page, path)
    assert page.locator("[data-testid=stSidebar]").get_by_label("Sentence", exact=True).count() == 0
    assert not errors, errors
    page.context.close()


def test_a_shared_link_opens_the_same_view_and_sessions_stay_apart(browser, app_url):
    first, second = new_page(browser), new_page(browser)
    first.goto(app_url + "/attention?text=The+cat+sat+on+the+mat.&layer=2&head=5")
    second.goto(app_url + "/attention?text=Colourless+green+ideas+sleep.&layer=4&head=1")
    for page, title, word in ((first, "Layer 2, head 5", "cat"), (second, "Layer 4, head 1", "colour")):
        page.get_by_text(title).first.wait_for(timeout=SLOW)
        settle(page, charts=1)
        assert page.locator(".js-plotly-plot").first.get_by_text(word, exact=True).count() >= 1
    assert first.locator(".js-plotly-plot").first.get_by_text("colour", exact=True).count() == 0
    first.context.close()
    second.context.close()


def test_an_experiment_link_reopens_its_selections_and_nonsense_falls_back(browser, app_url):
    page = new_page(browser)
    page.goto(app_url + "/head_ablation?text=The+%5BMASK%5D+barked.&ablation_mode=mean&ablation_heads=0.1,5.11&ablation_layers=2,40")
    page.get_by_text("14 head(s) ablated").wait_for(timeout=SLOW)  # layer 2's 12 heads and the two named
    settle(page, charts=0)  # the script has finished: every element it writes is there
    for chip in ("layer 0, head 1", "layer 5, head 11", "layer 2"):
        assert page.get_by_text(chip, exact=True).count() >= 1, chip
    assert page.get_by_role("radio", name="mean (corpus average)").is_checked()
    screenshot(page, "head_ablation_shared_link")
    page.goto(app_url + "/saliency?text=The+%5BMASK%5D+barked.&saliency_method=guess&saliency_steps=7")
    settle(page, charts=1)
    assert page.get_by_role("radio", name="gradient × input").is_checked()  # the default, one pass
    assert not page.get_by_text("Traceback").count()
    page.context.close()


def test_sentence_tasks_and_model_comparison(browser, app_url):
    from bert.pretrained import MINILM_NSP_FILE

    page = new_page(browser)
    errors = page_errors(page)
    if MINILM_NSP_FILE.is_file():
        page.goto(app_url + "/sentence_tasks?model=minilm&text=The+man+went+to+the+store.&pair=He+bought+a+gallon+of+milk.")
        page.get_by_text("P(B follows A), as typed").wait_for(timeout=SLOW)
        settle(page, charts=0)  # the swapped pair's metric comes in the next delta
        assert page.get_by_text("P(A follows B), swapped").count() == 1
        screenshot(page, "sentence_tasks")
        page.goto(app_url + "/sentence_tasks?model=minilm&text=The+man+went+to+the+store.")  # no pair
        page.get_by_text("Type a second sentence").wait_for(timeout=SLOW)
    from bert.pretrained import FINETUNED_FILES

    if FINETUNED_FILES["minilm-trec"].is_file():  # the shipped classifier: classes and what drove the top one
        page.goto(app_url + "/sentence_tasks?model=minilm-trec&text=Who+wrote+Hamlet%3F")
        page.get_by_role("heading", name="Classes", exact=True).wait_for(timeout=SLOW)
        settle(page, charts=2)
        assert page.locator(".js-plotly-plot").count() == 2  # class probabilities, saliency of the chosen class
        assert page.locator(".js-plotly-plot").first.get_by_text("HUM", exact=True).count() >= 1
        screenshot(page, "sentence_tasks_classifier")
    page.goto(app_url + "/sentence_tasks?model=minilm-encoder&text=Hello+there.&pair=Hi.")  # no head for it
    page.get_by_text("no sentence-level head", exact=False).wait_for(timeout=SLOW)
    settle(page, charts=0)
    assert page.get_by_text("built-in minilm", exact=False).count() >= 1

    page.goto(app_url + "/compare_models?model=minilm&compare_count=20")
    page.get_by_role("heading", name="Compare two models", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=3)
    assert page.locator(".js-plotly-plot").count() == 3  # CKA by layer, CKA matrix, attention change
    assert page.get_by_text("Merchant et al.", exact=False).count() >= 1
    assert "compare_count=20" in page.url
    screenshot(page, "compare_models")
    page.goto(app_url + "/compare_models?model=minilm&compare_with=minilm")
    page.get_by_text("same as model A", exact=False).wait_for(timeout=SLOW)
    assert not page.get_by_text("Traceback").count()
    assert not errors, errors
    page.context.close()
