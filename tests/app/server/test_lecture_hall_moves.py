"""A lecture hall started by scripts/lecture.sh (a real redis-server, three app processes, HAProxy on 127.0.0.1):
browsers that arrive at once are spread over the three processes (the proxy starts only once every process answers:
before, the processes still loading were marked down and every early browser went to the first one up, for good);
a following student's page carries the listener for the class's moves (viz_app/server/class_moves.py), whose
stream through the proxy tells the presenter's move within seconds; the page's fragment, rerun with the listener's
event as the browser's script sends it, takes the step; a student whose page only keeps its stream open (no run of
the page) stays counted by the presenter's box. The browser's own script is run by
tests/browser/test_lecture_hall.py in Chromium; here the protocol is spoken as bench/class_following.py does."""
from __future__ import annotations

import queue
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bench.class_following import LISTENER, MovesStream
from bench.streamlit_session import Session
from redis_server import need_the_store
from viz_app.lessons import following
from viz_app.server.class_moves import ROUTE
from viz_app.server.class_room import HEARTBEAT_WINDOW_S
from viz_app.server.local_server import serve_lecture_hall

KEY = "a-presenter-key-for-the-moves"


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    need_the_store()
    log = tmp_path_factory.mktemp("hall") / "lecture.log"
    with serve_lecture_hall(log, 3, app_args=("--class", "--presenter-key", KEY)) as (url, folder):
        yield url


def opened(url: str, query: dict) -> Session:
    """A session on the Lessons page opened with the students' link ({"follow": "1"}) or the presenter's."""
    session = Session(url, 60)
    session.page_name, session.query_string = "lessons", urlencode(query)
    session.rerun()
    return session


def process_answering(url: str) -> str:
    with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as answer:
        cookies = [cookie.split(";")[0] for cookie in answer.headers.get_all("Set-Cookie") or []]
    return next(cookie for cookie in cookies if cookie.startswith("BERT_INSIDE_PROCESS="))


@pytest.mark.slow
def test_browsers_that_arrive_at_once_are_spread_over_every_process(hall):
    assert {process_answering(hall) for _ in range(6)} == {f"BERT_INSIDE_PROCESS=app{n}" for n in (1, 2, 3)}


@pytest.mark.slow
def test_a_following_page_hears_the_move_and_takes_the_step(hall):
    student = opened(hall, {"follow": "1"})
    component_id, data = student.components[LISTENER]
    assert data["url"] == ROUTE
    assert list(student.fragments.values())[-1] == following.STREAMED_POLL_S  # its timer only in case the stream is cut
    heard: queue.Queue = queue.Queue()
    stream = MovesStream(hall + data["url"], data["seen"], heard)
    try:
        presenter = Session(hall, 60)
        presenter.page_name, presenter.query_string = "lessons", urlencode({"key": KEY})
        page = presenter.rerun()
        pressed = time.monotonic()
        presenter.rerun(press=page.buttons["Start the lesson"])
        _, version = heard.get(timeout=10)
        assert version != data["seen"] and time.monotonic() - pressed < 10
        shown = []
        student.rerun(fragment=list(student.fragments)[-1], trigger=(component_id, "moved", version),
                      on_markdown=shown.append)
        assert any("step 1 of" in text for text in shown), shown[:5]
        assert student.components[LISTENER][1]["seen"] == version  # the page listens on from the version it drew
        presenter.close()
    finally:
        stream.close()
        student.close()


@pytest.mark.slow
def test_a_student_whose_page_keeps_its_stream_open_stays_counted(hall):
    student = opened(hall, {"follow": "1"})
    _, data = student.components[LISTENER]
    assert student.cookies.startswith("BERT_INSIDE_PROCESS=")  # the stream goes to the page's process, as a browser's
    stream = MovesStream(hall + data["url"], data["seen"], queue.Queue(), data["heard"], student.cookies)
    presenter = opened(hall, {"key": KEY})
    try:
        time.sleep(2 * HEARTBEAT_WINDOW_S)  # the page's own run told the class once, longer ago than the count looks back
        counts = [text for text in presenter.rerun().markdown if "follow" in text and "group" in text]
        assert any("**1** student follows" in text for text in counts), counts
        stream.close()
        time.sleep(HEARTBEAT_WINDOW_S + 1)
        counts = [text for text in presenter.rerun().markdown if "follow" in text and "group" in text]
        assert any("**0** students follow" in text for text in counts), counts  # the tab was closed
    finally:
        presenter.close()
        stream.close()
        student.close()
