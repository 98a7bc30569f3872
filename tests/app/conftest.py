"""The AppTest fixture: open the app on a page, with URL query parameters."""
from __future__ import annotations

import pytest

from app_helpers import HOME, TIMEOUT, go
from viz_app.navigation import DEFAULT_PAGE


@pytest.fixture
def open_app():
    """open_app(page="prediction", **query) -> an AppTest that has run that page once, opened with these URL
    query parameters (as a shared link would)."""
    from streamlit.testing.v1 import AppTest

    def open_(page: str = "prediction", **query):
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({k: str(v) for k, v in query.items()})
        at.run()
        if page != DEFAULT_PAGE:
            go(at, page)
        return at

    return open_
