"""The AppTest fixtures: open the app on a page, with URL query parameters, as the person at the server's machine."""
from __future__ import annotations

import pytest

from app_helpers import HOME, TIMEOUT, go
from viz_app.server import visitor
from viz_app.app.navigation import DEFAULT_PAGE

SERVER_MACHINE = "127.0.0.1"  # the address of a browser on the server's own machine


@pytest.fixture(autouse=True)
def at_the_server(monkeypatch):
    """AppTest has no connection, and a visitor without an address is a student (viz_app/server/access.py): every app test
    plays the person at the server's machine through the app's one reading of the address, unless it replaces it
    again (tests/app/server/test_class_access.py plays a visitor from another machine)."""
    monkeypatch.setattr(visitor, "address", lambda: SERVER_MACHINE)


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
