"""Uploads and failures that should not reach a student as a traceback or a server path (AppTest): every upload box
states its cap and refuses a larger file unread, hostile lesson and labels files get one line each, a page that
fails shows a student one line and the owner the error; and the server's config sets the caps and hides details."""
from __future__ import annotations

import tomllib

import pytest
from streamlit.testing.v1 import AppTest

from app_helpers import HOME, ROOT, TIMEOUT, no_exception, open_page, texts
from viz_app.app import uploads
from viz_app.server import visitor
from viz_app.app import widgets

STUDENT_ADDRESS = "192.168.1.20"


def test_the_server_caps_uploads_and_hides_error_details():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == uploads.SERVER_CAP_MB
    assert config["client"]["showErrorDetails"] == "none"


def test_every_upload_box_goes_through_upload_box():
    """st.file_uploader is called in viz_app/app/uploads.py only, so every box states and enforces a cap."""
    callers = [path.relative_to(ROOT).as_posix() for folder in ("pages", "viz_app") for path in (ROOT / folder).rglob("*.py")
               if "st.file_uploader(" in path.read_text(encoding="utf-8")]
    assert callers == ["viz_app/app/uploads.py"]  # upload_box takes the cap as a required argument


def lessons_upload(at, name: str, content: bytes):
    at.selectbox(key="lesson_name").set_value("upload").run()
    at.file_uploader(key="lesson_file").set_value((name, content, "application/x-yaml")).run()
    no_exception(at)
    return at


@pytest.mark.slow
def test_the_lesson_box_states_its_cap_and_refuses_a_larger_file_unread():
    at = open_page("lessons", {})
    at.selectbox(key="lesson_name").set_value("upload").run()
    box = at.file_uploader(key="lesson_file")
    assert box.proto.max_upload_size_mb == 1 and "At most 200 kB" in box.proto.help
    at = lessons_upload(at, "big.yaml", b"#" * (uploads.LESSON_BYTES + 1))
    assert "this box takes at most 200,000 bytes (200 kB)" in at.warning[0].value
    assert not at.error  # never parsed


@pytest.mark.slow
@pytest.mark.parametrize("content, message", [
    (b'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
     b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\ntitle: *c\nsteps: [*c]\n", "line 1: this is not valid YAML (anchors and aliases"),
    (b"[" * 50_000, "line 1: this is not valid YAML (nested more than 20 levels deep)"),
    (b"title: T\nsteps:\n- title: S\n  page: [x]\n  text: x\n", "step 1 (S): page: unknown page a list"),
    (b"title: T\nsteps:\n- title: S\n  page: attention\n  text: x\n  state: {layer: " + b"9" * 5000 + b"}\n",
     "line 6: this is not valid YAML (a number 5,000 characters long; at most 30)"),
], ids=["alias bomb", "50 kB of brackets", "page a list", "5,000-digit number"])
def test_a_hostile_lesson_file_gets_one_line(content, message):
    at = lessons_upload(open_page("lessons", {}), "mine.yaml", content)
    assert len(at.error) == 1
    shown = at.error[0].value.replace("\\", "")  # the message is escaped for Markdown
    assert shown.startswith("This lesson cannot be used: mine.yaml") and message in shown, shown
    assert "\n" not in shown and len(shown) < 400


@pytest.fixture
def failing_page(monkeypatch):
    """The prediction page fails inside with a message that names a server path."""
    def fail(*args, **kwargs):
        raise RuntimeError("cannot read /srv/private/weights.bin")

    monkeypatch.setattr(widgets, "page_header", fail)


@pytest.mark.slow
def test_a_failing_page_shows_a_student_one_line_and_logs_the_traceback(failing_page, monkeypatch, caplog):
    monkeypatch.setattr(visitor, "address", lambda: STUDENT_ADDRESS)
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    with caplog.at_level("ERROR", logger="viz_app.Home"):
        at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["This page failed; the server's log says why. Change a setting, or open another page."]
    assert "/srv/private" not in texts(at)
    record = next(r for r in caplog.records if r.name == "viz_app.Home")
    assert record.exc_info and "/srv/private/weights.bin" in str(record.exc_info[1])


@pytest.mark.slow
def test_a_failing_page_shows_the_owner_the_error(failing_page):
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.run()
    assert len(at.exception) == 1 and "cannot read /srv/private/weights.bin" in at.exception[0].value
