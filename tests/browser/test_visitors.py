"""Who may do what, against a real server: the browser on the server's own machine (127.0.0.1, for which
Streamlit's `st.context.ip_address` is None) is the owner and keeps the folder and download boxes
(viz_app/server/visitor.py, viz_app/server/access.py). Visitors from other machines are played through the same seam in
tests/app/server/test_class_access.py; in class mode every visitor is a student (tests/browser/test_class_following.py)."""
from __future__ import annotations

from browser_support import open_page, settle


def test_the_browser_on_the_servers_machine_may_download_a_model(browser, app_url):
    page, errors = open_page(browser, app_url)
    settle(page, charts=1)
    sidebar = page.locator("[data-testid=stSidebar]").inner_text()
    assert "Download a model" in sidebar
    assert not errors, errors
