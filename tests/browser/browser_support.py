"""Helpers the browser tests share (fixtures are in conftest.py): a patient page, opened with its JavaScript errors
collected, waiting for the app to settle, screenshots when asked for."""
from __future__ import annotations

import os
import time
from pathlib import Path

SLOW = 180_000  # ms: patient with a busy 2-core machine, yet a missing element fails within minutes, not ten
SCREENSHOT_VARIABLE = "SCREENSHOT_DIR"  # screenshots are taken only when this names a folder


def new_page(browser, viewport: dict | None = None):
    """A page in its own browser context (its own Streamlit session), patient with a busy machine."""
    page = browser.new_context(viewport=viewport or {"width": 1440, "height": 1000}).new_page()
    page.set_default_timeout(SLOW)
    page.set_default_navigation_timeout(SLOW)
    return page


def page_errors(page) -> list[str]:
    """The JavaScript errors the page raises from now on: a list that fills as they come (tests end with
    `assert not errors, errors`)."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def open_page(browser, url: str, viewport: dict | None = None):
    """(page, errors): a `new_page` opened at `url`, its JavaScript errors collected from the start (`page_errors`)."""
    page = new_page(browser, viewport)
    errors = page_errors(page)
    page.goto(url)
    return page, errors


PLOTS_DRAWN = (  # every plotly chart on the page has laid out and drawn its SVG, with no drawing promise pending
    "() => [...document.querySelectorAll('.js-plotly-plot')].every(g => g._fullLayout && g.querySelector('.main-svg')"
    " && !(g._promises && g._promises.length))"
)


# the screen point of a marker in the first chart (trace name, and an index or a customdata value), and its
# customdata: where a test hovers or clicks
MARKER = ("([trace, index]) => { const plot = document.querySelectorAll('.js-plotly-plot')[0];"
          " const data = plot._fullData.find(t => t.name === trace);"
          " const xa = plot._fullLayout.xaxis, ya = plot._fullLayout.yaxis, box = plot.getBoundingClientRect();"
          " const i = typeof index === 'number' ? index : data.customdata.indexOf(index);"
          " return [box.left + xa._offset + xa.l2p(data.x[i]), box.top + ya._offset + ya.l2p(data.y[i]),"
          " data.customdata[i]]; }")


POLL_MS = 100  # how often a test's wait asks the page (`wait_until`, `settle`)


def wait_until(page, expression: str, arg=None, timeout: float | None = None):
    """Playwright's `wait_for_function`, asking every POLL_MS rather than at every animation frame (its default):
    polling by frame makes Chromium draw a frame 60 times a second for as long as a test waits, on the CPU."""
    return page.wait_for_function(expression, arg=arg, timeout=timeout, polling=POLL_MS)


DRAWING_S = 0.25  # s after the charts report drawn, for the last frame to reach the screen


def settle(page, charts: int, timeout_s: float = SLOW / 1000, drawing_s: float = DRAWING_S) -> None:
    """Wait until the script has finished, at least `charts` plotly charts are there (no loading skeletons left) and
    every chart has drawn (PLOTS_DRAWN), then `drawing_s` more (0 where no chart is looked at)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        state = page.evaluate(
            "() => { const app = document.querySelector('[data-testid=stApp]');"
            " return [app ? app.getAttribute('data-test-script-state') : null,"
            " document.querySelectorAll('.js-plotly-plot').length,"
            " document.querySelectorAll('[data-testid=stSkeleton]').length,"
            f" ({PLOTS_DRAWN})()]; }}"
        )
        if state[0] == "notRunning" and state[1] >= charts and state[2] == 0 and state[3]:
            time.sleep(drawing_s)
            return
        time.sleep(POLL_MS / 1000)
    raise AssertionError(f"the page did not settle within {timeout_s:.0f} s: {state}")


def screenshot_dir() -> Path | None:
    """$SCREENSHOT_DIR (created), or None when no screenshots were asked for."""
    if not os.environ.get(SCREENSHOT_VARIABLE):
        return None
    folder = Path(os.environ[SCREENSHOT_VARIABLE])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page, name: str, full_page: bool = True) -> None:
    """Save the page as $SCREENSHOT_DIR/NAME.png when screenshots were asked for. full_page: Streamlit scrolls inside
    its main block, so the viewport grows to fit it first; otherwise the viewport only, as the screen shows it."""
    folder = screenshot_dir()
    if folder is None:
        return
    if not full_page:
        page.screenshot(path=str(folder / f"{name}.png"))
        return
    viewport = page.viewport_size
    height = page.evaluate("() => document.querySelector('[data-testid=stMainBlockContainer]').scrollHeight")
    page.set_viewport_size({"width": viewport["width"], "height": min(max(int(height) + 150, 900), 12000)})
    time.sleep(1.5)
    page.screenshot(path=str(folder / f"{name}.png"))
    page.set_viewport_size(viewport)
