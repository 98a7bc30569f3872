"""The watch the class tests time students with (tests/browser/panel_watch.py), on a page with a class panel and no
app behind it: a hand-made `.st-key-class_panel` whose text the test changes as a following student's panel does.
The panel's text changes every half second while it shows a step (its fragment reruns), so the case that matters is
a second watch on the same page while the panel still shows the step before: the first watch, which matched that
step, must not stamp the second (the next step would seem to show before the presenter pressed)."""
from __future__ import annotations

import pytest

from browser_support import new_page
from panel_watch import panel_seen_at, watch_panel

PANEL = '<div class="st-key-class_panel"><p id="panel">Following the class · step {number} of 7</p></div>'
# the panel drawn again with the same step (as its fragment's rerun does), then every MutationObserver callback that
# change queued has run by the time the timer fires
REDRAW = """async (text) => { document.getElementById('panel').textContent = text;
    await new Promise(resolve => setTimeout(resolve, 0)); }"""


def step_pattern(number: int) -> str:
    return rf"Following the class[\s\S]*step {number} of"


@pytest.fixture
def page(browser):
    page = new_page(browser)
    page.set_content(PANEL.format(number=2))
    yield page
    page.context.close()


def test_a_new_watch_is_not_stamped_by_the_one_before(page):
    watch_panel(page, step_pattern(2))
    assert panel_seen_at(page) is not None  # the panel shows step 2: seen at once
    watch_panel(page, step_pattern(3))
    assert panel_seen_at(page) is None
    for _ in range(3):  # the panel redrawn at step 2: the step 2 watch is gone, the step 3 one does not match
        page.evaluate(REDRAW, "Following the class · step 2 of 7")
        assert panel_seen_at(page) is None
    page.evaluate(REDRAW, "Following the class · step 3 of 7")
    assert panel_seen_at(page) is not None


def test_a_watch_on_another_page_waits_for_that_page(page):
    watch_panel(page, step_pattern(2), path="/lessons")  # the panel shows step 2, but on about:blank
    page.evaluate(REDRAW, "Following the class · step 2 of 7")
    assert panel_seen_at(page) is None
