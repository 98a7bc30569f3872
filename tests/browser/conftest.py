"""The browser tests' shared fixtures: Chromium and Playwright present (else skip, or fail under CI=true), one app
server per test worker, shared by the modules that need a plain one (viz_app/server/local_server.py; a module
that needs class mode or other arguments starts its own), one Chromium per test module. Every test here is marked
`browser`. Screenshots only when asked: `SCREENSHOT_DIR=out/screenshots python -m pytest tests/browser`."""
from __future__ import annotations

from pathlib import Path

import pytest

from bert_test_support import required_under_ci
from viz_app.server.local_server import CHROMIUM, CHROMIUM_ARGS, browser_missing, serve

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.browser)


def require_the_browser() -> None:
    required_under_ci(browser_missing(), "browser tests")


@pytest.fixture(scope="module")
def browser_ready() -> None:
    require_the_browser()


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """`streamlit run viz_app/Home.py` on 127.0.0.1, started once per test worker (each start loads the model
    again); its output in a temporary folder. Each test opens its own browser context, so its own app session."""
    require_the_browser()
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
