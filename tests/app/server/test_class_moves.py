"""The class's moves as a stream (viz_app/server/class_moves.py): a page that drew version N hears the class's version
at once when it is not N, then each new version once, a comment while nothing moves, and nothing from a version
it drew; one watch a process reads the version while any page listens and stops when none does; `seen` is checked;
an open stream whose page gave its signed name tells the class its student is there, and no other name is heard.
The stream's generator is read directly, on one event loop, with the room's version a variable the test moves."""
from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlencode

import pytest
from starlette.requests import Request

from viz_app.server.class_moves import ClassMoves


class Room:
    def __init__(self):
        self.moved_to, self.reads = 0, 0
        self.heard: list[tuple[str, bool]] = []

    def heartbeat(self, session: str, following: bool) -> None:
        self.heard.append((session, following))

    @property
    def version(self) -> int:
        self.reads += 1
        return self.moved_to


def moves_of(room: Room, ping_s: float = 30.0, heartbeat_s: float = 30.0) -> ClassMoves:
    moves = ClassMoves(watch_s=0.01, ping_s=ping_s, heartbeat_s=heartbeat_s)
    moves.serve(lambda: room)
    return moves


class Page:
    """A page's stream, read as the browser reads it: every event as it comes, into a queue the test looks at."""

    def __init__(self, moves: ClassMoves, seen: int, presence: str = ""):
        self.events: asyncio.Queue[str] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._read(moves._events(seen, moves._heard(presence))))

    async def _read(self, events) -> None:
        async for event in events:
            self.events.put_nowait(event)

    async def next(self, within_s: float = 2.0) -> str:
        return await asyncio.wait_for(self.events.get(), within_s)

    async def nothing_within(self, seconds: float) -> bool:
        await asyncio.sleep(seconds)
        return self.events.empty()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def test_a_page_hears_each_new_version_once_and_never_its_own():
    async def scenario():
        room = Room()
        room.moved_to = 3
        page = Page(moves_of(room), seen=3)  # the page drew version 3
        assert await page.next() == "retry: 1000\n\n"
        assert await page.nothing_within(0.2)  # version 3 is the one drawn: nothing to say
        room.moved_to = 4
        assert await page.next() == "data: 4\n\n"
        room.moved_to = 6  # any version but the one last told, not only the next
        assert await page.next() == "data: 6\n\n"
        assert await page.nothing_within(0.2)
        await page.close()

    asyncio.run(scenario())


def test_a_page_that_drew_an_older_version_hears_the_class_at_once():
    async def scenario():
        room = Room()
        room.moved_to = 5
        page = Page(moves_of(room), seen=2)  # it reconnected after the class moved on
        await page.next()
        assert await page.next() == "data: 5\n\n"
        await page.close()

    asyncio.run(scenario())


def test_an_idle_stream_says_it_is_still_there():
    async def scenario():
        page = Page(moves_of(Room(), ping_s=0.05), seen=0)
        await page.next()
        assert await page.next() == ": still here\n\n"
        await page.close()

    asyncio.run(scenario())


def test_one_watch_for_every_page_and_none_once_they_have_gone():
    async def scenario():
        room = Room()
        moves = moves_of(room)
        pages = [Page(moves, seen=0) for _ in range(50)]
        for page in pages:
            await page.next()
        await asyncio.sleep(0.3)
        reads = room.reads
        assert 1 <= reads <= 45  # at most one read every 10 ms for the 50 pages together, not one a page
        room.moved_to = 1
        assert [await page.next() for page in pages] == ["data: 1\n\n"] * 50
        for page in pages:
            await page.close()
        for _ in range(40):  # the watch's last read, if one was under way, lands within its round
            reads = room.reads
            await asyncio.sleep(0.05)
            if room.reads == reads:
                break
        await asyncio.sleep(0.3)
        assert room.reads == reads  # nobody listens: the store is not read

    asyncio.run(scenario())


def test_a_room_that_cannot_be_read_keeps_the_stream_waiting():
    async def scenario():
        failing = [True]

        class Unanswering(Room):
            @property
            def version(self) -> int:
                if failing[0]:
                    raise ConnectionError("the store does not answer")
                return self.moved_to

        room = Unanswering()
        moves = ClassMoves(watch_s=0.01)
        moves.serve(lambda: room)
        page = Page(moves, seen=0)
        await page.next()
        room.moved_to = 2
        assert await page.nothing_within(0.2)
        failing[0] = False
        assert await page.next() == "data: 2\n\n"
        await page.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("query, status", [(b"seen=x", 400), (b"seen=-2", 400), (b"seen=10000000000000", 400),
                                           (b"seen=4", 200), (b"", 200)])
def test_seen_is_a_version(query, status):
    async def scenario():
        request = Request({"type": "http", "method": "GET", "path": "/_class/moves", "query_string": query,
                           "headers": []})
        answer = await moves_of(Room()).stream(request)
        assert answer.status_code == status
        if status == 200:
            assert answer.media_type == "text/event-stream"
            await answer.body_iterator.aclose()

    asyncio.run(scenario())


def test_a_stream_before_any_page_made_the_class_makes_it():
    async def scenario():
        room = Room()
        room.moved_to = 7
        made = []

        def room_of():
            made.append(room)
            return room

        moves = ClassMoves(watch_s=0.01)
        moves.serve(room_of)
        assert moves.serving()
        page = Page(moves, seen=0)
        await page.next()
        assert await page.next() == "data: 7\n\n"
        assert len(made) == 1  # made once, then watched
        await page.close()

    asyncio.run(scenario())


SESSION, OTHER = "0123456789abcdef" * 2, "fedcba9876543210" * 2


def test_an_open_stream_tells_the_class_its_student_is_there_until_it_closes():
    async def scenario():
        room = Room()
        moves = moves_of(room, heartbeat_s=0.05)
        following, exploring = Page(moves, 0, moves.presence(SESSION, True)), Page(moves, 0, moves.presence(OTHER, False))
        await asyncio.sleep(0.5)
        assert room.heard.count((SESSION, True)) >= 3 and room.heard.count((OTHER, False)) >= 3  # every round, each
        assert set(room.heard) == {(SESSION, True), (OTHER, False)}
        await following.close()
        await asyncio.sleep(0.1)  # a round under way when it closed
        told = len(room.heard)
        await asyncio.sleep(0.3)
        assert (SESSION, True) not in room.heard[told:] and (OTHER, False) in room.heard[told:]
        await exploring.close()

    asyncio.run(scenario())


def test_only_a_name_this_process_signed_is_heard():
    moves, elsewhere = moves_of(Room()), moves_of(Room())
    signed = moves.presence(SESSION, True)
    assert moves._heard(signed) == (SESSION, True)
    assert moves._heard(moves.presence(OTHER, False)) == (OTHER, False)
    session, _, mac = signed.split(".")
    assert moves._heard(f"{session}.0.{mac}") is None  # following turned into exploring: the signature no longer fits
    assert moves._heard(f"{OTHER}.1.{mac}") is None  # another session under this one's signature
    assert moves._heard(elsewhere.presence(SESSION, True)) is None  # another process's (one restarted since)
    for text in ("", "x", signed + "0", signed.upper(), "../" + signed, f"{session}.1.{mac[:-1]}"):
        assert moves._heard(text) is None


def test_a_stream_with_a_name_not_signed_here_moves_on_but_says_nothing():
    async def scenario():
        room = Room()
        moves = moves_of(room, heartbeat_s=0.01)
        query = urlencode({"seen": 0, "heard": moves_of(Room()).presence(SESSION, True)}).encode()
        answer = await moves.stream(Request({"type": "http", "method": "GET", "path": "/_class/moves",
                                             "query_string": query, "headers": []}))
        assert answer.status_code == 200
        events = answer.body_iterator
        assert await events.__anext__() == "retry: 1000\n\n"
        room.moved_to = 1
        assert await asyncio.wait_for(events.__anext__(), 2) == "data: 1\n\n"  # the moves still reach the page
        await asyncio.sleep(0.1)
        assert room.heard == []
        await events.aclose()

    asyncio.run(scenario())
