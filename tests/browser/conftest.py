"""The browser tests' shared fixtures: Chromium and Playwright present (else skip, or fail under CI=true), one app
server per test module (viz_app/local_server.py), one Chromium per test module. Every test here is marked
`browser`. Screenshots only when asked: `SCREENSHOT_DIR=out/screenshots python -m pytest tests/browser`."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from browser_support import CHROMIUM, CHROMIUM_ARGS
from viz_app.local_server import serve

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.browser)


def _browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"Chromium is not at {CHROMIUM} (apt-get install -y chromium, or set CHROMIUM=/path/to/chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright)"
    return None


@pytest.fixture(scope="module")
def browser_ready() -> None:
    reason = _browser_missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run under CI=true: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def app_url(browser_ready, tmp_path_factory):
    """`streamlit run viz_app/Home.py` on 127.0.0.1, for the tests of one module; its output in a temporary folder."""
    with serve(tmp_path_factory.mktemp("streamlit") / "streamlit.log") as (url, _server):
        yield url


@pytest.fixture(scope="module")
def browser(browser_ready):
    """Chromium (Debian's package) driven by Playwright, headless."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
