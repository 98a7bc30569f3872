""""How BERT was trained" in a real browser (Chromium + Playwright, as test_browser.py): a live tiny-BERT run
draws its progress, loss curve and guesses while it trains; a screenshot is taken mid-run (when $SCREENSHOT_DIR is set); Stop ends it.

    OMP_NUM_THREADS=1 python -m pytest tests/browser/test_browser_training.py -q
"""
from __future__ import annotations

import re
import time

from browser_support import SLOW, open_page, screenshot, settle

MID_RUN_STEP = 60  # the screenshot waits for this step: several evaluations drawn, far from the end


def _step(page) -> int:
    found = re.search(r"Training: step (\d+) of", page.locator("[data-testid=stProgress]").first.inner_text())
    return int(found.group(1)) if found else 0


def test_a_live_run_draws_while_it_trains_and_stops(browser, app_url):
    page, errors = open_page(browser, app_url + "/how_bert_was_trained")
    page.get_by_role("heading", name="How BERT was trained", exact=True).wait_for(timeout=SLOW)
    settle(page, charts=1)
    seed = page.get_by_label("Seed").nth(1)  # the first "Seed" is the masking draw's
    seed.fill("7")
    seed.press("Enter")
    settle(page, charts=0)
    page.get_by_role("button", name="Train it yourself").click()
    page.get_by_text("Training: step").wait_for(timeout=SLOW)
    deadline = time.time() + SLOW / 1000
    while _step(page) < MID_RUN_STEP and time.time() < deadline:
        time.sleep(1)
    assert _step(page) >= MID_RUN_STEP, "the progress bar moves while it trains"
    # drawn by the run's own updates, which a loaded machine's browser may show a moment after the progress bar
    page.get_by_text("Loss while it learns").first.wait_for(timeout=SLOW)
    page.get_by_text("He opened the [MASK] and walked into the room.", exact=False).first.wait_for(timeout=SLOW)
    screenshot(page, "how_bert_was_trained_mid_run")
    page.get_by_role("button", name="Stop").click()
    page.get_by_text("Stopped at step").wait_for(timeout=SLOW)
    assert not errors, errors
    page.context.close()
