"""What a page says when something fails on the server's side, through the real Home.py (AppTest): the person at
the server's machine reads the error, a visitor from another machine one neutral line with no server path
(viz_app/server/access.py's `failure`). The visitor is played through the app's one reading of the address."""
from __future__ import annotations

import pytest

from app_helpers import go, no_exception, texts
from bert.errors import BertError
from bert.pretraining.miniature import TinySettings
from viz_app import cache
from viz_app.lessons import steps
from viz_app.server import visitor
from viz_app.server.access import SERVER_LOG
from viz_app.server.memory import BoundedStore
from viz_app.server.training_room import Job

pytestmark = pytest.mark.slow  # every test here runs the app

SECRET = "/srv/inside-bert/private-folder"  # a server path an error names
VISITORS = {"at the server": "127.0.0.1", "from another machine": "192.168.1.20"}


@pytest.fixture(params=list(VISITORS))
def visitor_from(request, monkeypatch) -> bool:
    """Plays each visitor in turn; True for the person at the server's machine."""
    monkeypatch.setattr(visitor, "address", lambda: VISITORS[request.param])
    return request.param == "at the server"


def shown(at) -> str:
    """What the page reads as (the Markdown escapes of quoted text removed)."""
    return (texts(at) + "\n" + "\n".join(str(e.value) for e in at.sidebar.error)).replace("\\", "")


def check(at, owner: bool, line: str) -> None:
    """The owner reads the error (with its path); anyone else `line` with SERVER_LOG, and no path anywhere."""
    no_exception(at)
    page = shown(at)
    if owner:
        assert SECRET in page, page
    else:
        assert SECRET not in page and line.format(why=SERVER_LOG) in page, page


def test_settings_that_cannot_be_used(open_app, visitor_from, monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_SETTINGS", f"{SECRET}/class.yaml")  # no such file
    at = open_app()
    check(at, visitor_from, "The server's settings cannot be used ({why}).")


def test_a_failed_training_run(open_app, visitor_from):
    at = open_app("how_bert_was_trained")
    settings = TinySettings(layers=2, hidden=128, heads=2, seed=0, causal=False)  # the form's first settings
    failed = Job(settings, "this browser session", error=f"OSError: cannot write {SECRET}/model")
    failed.finished.set()
    at.session_state["tiny_job"] = failed
    at.run()
    check(at, visitor_from, "The run failed ({why}).")


def test_a_model_that_does_not_load(open_app, visitor_from, monkeypatch):
    def missing(key):
        raise BertError(f"no weights in {SECRET}")

    monkeypatch.setattr(cache, "load_model", missing)
    at = open_app("how_bert_was_trained")
    check(at, visitor_from, "Could not load 'minilm' ({why}). Pick another model.")  # the sidebar
    check(at, visitor_from, "The built-in model is missing ({why}); the masking and pairs need its vocabulary.")


def test_a_lesson_step_whose_figures_fail(open_app, visitor_from, monkeypatch):
    def failing(*args):
        raise RuntimeError(f"cannot read {SECRET}/figures")

    monkeypatch.setattr(steps, "view_charts", failing)
    monkeypatch.setattr(cache, "shared_store", lambda: BoundedStore(4, 10**9, 60))  # no step kept by another test
    at = go(open_app(), "lessons")
    at.button(key="lesson_start").click().run()
    check(at, visitor_from, "The figures of this step could not be drawn here ({why}); open the page instead.")
