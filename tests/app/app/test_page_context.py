"""How a page gets its context: Home.py serves it for the page's run (viz_app/app/page_context.py)."""
from __future__ import annotations

import pytest

from app_helpers import ROOT, TIMEOUT, figures, no_exception
from viz_app.app import page_context

pytestmark = pytest.mark.slow  # AppTest: every test renders pages on a model (the fast run keeps tests/app/app/test_app_pages.py's)


def test_a_page_run_without_home_asks_for_the_app_and_draws_nothing():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "pages" / "attention.py"), default_timeout=TIMEOUT).run()
    no_exception(at)
    assert "streamlit run viz_app/Home.py" in at.info[0].value and not figures(at)


def test_home_serves_the_context_to_the_page(open_app):
    at = open_app("attention", text="The cat sat on the mat.")
    no_exception(at)
    assert figures(at)  # the page got its context ...
    assert "_context" not in at.session_state  # ... not through session state


def test_serve_sets_the_context_for_its_block_and_restores_the_previous_one():
    outer, inner = object(), object()
    assert page_context.current() is None
    with page_context.serve(outer):
        with page_context.serve(inner):
            assert page_context.current() is inner
        assert page_context.current() is outer
    assert page_context.current() is None
