"""The browser tests' shared check: Chromium and Playwright present, else skip (or fail under CI=true)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench import classroom  # noqa: E402  (the server and browser set-up, shared with the classroom benchmark)


@pytest.fixture(scope="module")
def browser_ready() -> None:
    reason = classroom.browser_missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"browser tests cannot run under CI=true: {reason}")
        pytest.skip(reason)
