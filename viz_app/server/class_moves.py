"""The class's moves told to every following page at once, instead of each page asking twice a second.

The lecture hall's app processes (scripts/lecture.sh) run viz_app/lecture_hall.py, which serves the app and, beside
it, ROUTE: a stream of Server-Sent Events that sends the class's version when it changes (and a comment every
PING_S, so that a proxy keeps the stream open). In each process one task reads the class's version every WATCH_S
while a page listens, whatever the number of pages: a hall's 120 students cost a process ten reads a second, not
240 runs of a page. A following student's page listens through a small component (viz_app/lessons/following.py)
that reruns the page's listening fragment when a version it has not drawn arrives; that fragment takes the step as
before. Nothing is learnt from the stream but a number the class's links already give away (how many moves the
class has made) and, with the page's signed name for the class (`presence`), that the student is still there: while
a page's stream is open, its process tells the room so every HEARTBEAT_S for it, in place of a run of the page
every HEARTBEAT_S (a hall's 120 students, 60 runs a second, most of the server's work between steps). The answers
stay in the page's own runs.

No Streamlit here: the process's entry gives the way to its class (`serve`), the same room its pages read, and
`serving()` tells a page whether this process serves the stream (plain `streamlit run viz_app/Home.py` does not:
its pages ask at their fragment's interval, as before).
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import re
import secrets
import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # Starlette is imported where the stream is served (the lecture hall's entry), not by every page
    from starlette.requests import Request
    from starlette.responses import Response

from viz_app.server.class_room import HEARTBEAT_S

log = logging.getLogger(__name__)

ROUTE = "/_class/moves"
WATCH_S = 0.1  # how often a process reads the class's version while any of its pages listens
PING_S = 15.0  # a comment on an idle stream this often (HAProxy's client and server timeouts are 60 s)
RETRY_MS = 1000  # the browser opens a dropped stream again after this long (EventSource's own reconnection)
MAX_SEEN = 10**12  # a `seen` the browser sends is a version, never larger
PRESENCE = re.compile(r"([0-9a-f]{32})\.([01])\.([0-9a-f]{64})")  # session . following . its HMAC-SHA256


class ClassMoves:
    """One process's watch over its class's version, and the streams that wait on it (all on one event loop)."""

    def __init__(self, watch_s: float = WATCH_S, ping_s: float = PING_S, heartbeat_s: float = HEARTBEAT_S):
        self._watch_s, self._ping_s, self._heartbeat_s = watch_s, ping_s, heartbeat_s
        self._secret = secrets.token_bytes(32)  # this process's: a name signed here is read back here (the proxy's cookie)
        self._present: dict[object, tuple[str, bool]] = {}  # an open stream -> (session, following) it speaks for
        self._told_at = float("-inf")
        self._room_of: Callable[[], Any] | None = None
        self._room: Any = None  # made once, at the first watch
        self._served = False
        self._latest: int | None = None
        self._changed: asyncio.Event | None = None
        self._listeners = 0
        self._watcher: asyncio.Task | None = None

    def serve(self, room_of: Callable[[], Any]) -> None:
        """Called by the process's entry (viz_app/lecture_hall.py) when it serves ROUTE. `room_of`: this process's
        class (a room with `version`: the one its pages read, made if none has been yet), or None where the server is
        not in class mode; called at the first watch."""
        self._served, self._room_of = True, room_of

    def serving(self) -> bool:
        return self._served

    def presence(self, session: str, following: bool) -> str:
        """What a page puts in its stream's address (`heard`) so that its process tells the room the student is there,
        following or not, while the stream is open; signed, so that a stream speaks only for a session this process
        named (`session`: 32 hexadecimal digits, viz_app/lessons/following.py's)."""
        body = f"{session}.{int(following)}"
        return f"{body}.{hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()}"

    def _heard(self, presence: str) -> tuple[str, bool] | None:
        """(session, following) of a presence this process signed; None for any other text."""
        match = PRESENCE.fullmatch(presence)
        if match is None:
            return None
        body = f"{match.group(1)}.{match.group(2)}"
        expected = hmac.new(self._secret, body.encode(), hashlib.sha256).hexdigest()
        return (match.group(1), match.group(2) == "1") if hmac.compare_digest(expected, match.group(3)) else None

    async def stream(self, request: Request) -> Response:
        """ROUTE: `?seen=N` (the version the page drew): the class's version at once when it is not N, then each
        new version, until the browser goes. `&heard=P` (`presence`): the student is told to the room every
        HEARTBEAT_S meanwhile (a presence this process did not sign, one of a process that has restarted, is
        ignored: the page's own runs still say the student is there)."""
        from starlette.responses import PlainTextResponse, StreamingResponse

        try:
            seen = int(request.query_params.get("seen", "-1"))
        except ValueError:
            return PlainTextResponse("seen must be a whole number", status_code=400)
        if not -1 <= seen <= MAX_SEEN:
            return PlainTextResponse("seen is out of range", status_code=400)
        heard = self._heard(request.query_params.get("heard", ""))
        return StreamingResponse(self._events(seen, heard), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def _events(self, seen: int, heard: tuple[str, bool] | None = None):
        stream = object()
        self._listen()
        if heard is not None:
            self._present[stream] = heard
        try:
            yield f"retry: {RETRY_MS}\n\n"
            while True:
                changed = self._changed
                if self._latest is not None and self._latest != seen:
                    seen = self._latest
                    yield f"data: {seen}\n\n"
                    continue
                try:
                    await asyncio.wait_for(changed.wait(), self._ping_s)
                except asyncio.TimeoutError:
                    yield ": still here\n\n"
        finally:
            self._present.pop(stream, None)
            self._leave()

    def _listen(self) -> None:
        if self._changed is None:
            self._changed = asyncio.Event()
        self._listeners += 1
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def _leave(self) -> None:
        self._listeners -= 1

    async def _watch(self) -> None:
        """Read the version every WATCH_S while any stream listens; wake them all when it changes; tell the room every
        HEARTBEAT_S which students' streams are open."""
        while self._listeners > 0:
            if self._room is None and self._room_of is not None:
                try:
                    self._room = await asyncio.to_thread(self._room_of)
                except Exception as error:  # noqa: BLE001 - the streams wait; the pages say what is wrong
                    log.warning("the class could not be made: %s", error)
            if self._room is not None:
                try:
                    version = await asyncio.to_thread(lambda: self._room.version)  # Redis's client blocks: not on the loop
                except Exception as error:  # noqa: BLE001 - a room that cannot be read: the streams wait on
                    log.warning("the class's version could not be read: %s", error)
                else:
                    if version != self._latest:
                        self._latest = version
                        changed, self._changed = self._changed, asyncio.Event()
                        changed.set()
                if self._present and time.monotonic() - self._told_at >= self._heartbeat_s:
                    self._told_at = time.monotonic()
                    try:
                        await asyncio.to_thread(self._tell, self._room, list(self._present.values()))
                    except Exception as error:  # noqa: BLE001 - the next round tells again
                        log.warning("the open streams' students could not be told to the class: %s", error)
            await asyncio.sleep(self._watch_s)
        self._latest = None  # read afresh when a page listens again


    @staticmethod
    def _tell(room: Any, present: list[tuple[str, bool]]) -> None:
        for session, following in present:
            room.heartbeat(session, following)


HALL = ClassMoves()  # this process's: one class a process (the presenter key given at the start)
