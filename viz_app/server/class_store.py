"""The class and the hour of budget kept in Redis, for a lecture hall: several app processes (scripts/lecture.sh)
that share one class. No Streamlit here.

With BERT_INSIDE_STORE=redis://HOST:PORT/DB set, every process's class (viz_app/server/singletons.py) is a
`RedisClassRoom` and every process counts an address's hour in a `RedisSpending`: the presenter's lesson and step,
the answers to the step showing (one per voter, whichever process the voter's tab is on: one Lua script decides,
so two tabs clicking at once still count once), the followers' heartbeats, the presenter's key and what each
address spent in the last hour. Without it, one process keeps all of it in memory (viz_app/server/class_room.py's
`ClassRoom`, heavy_jobs.py's `MemorySpending`), as before. The heavy computations' slots stay per process: each
process counts its own cores.

Times are the store's own clock (Redis's TIME in the scripts), so app processes on several machines agree.

The store not answering (restarting, or down): every call retries for a few tenths of a second while the store
refuses connections, so a page stays responsive; then a read of the class gives the last value this process saw
(the class stays where it was), a heartbeat is dropped, the counts are unknown (None, never 0), an answer is not
sent (Answer.NOT_SENT: the student's button does not light up, they click again), and the presenter's move is
refused (StoreUnavailableError, which the page says in one line): never kept to be written later, so a press the
presenter was told failed never lands after the store comes back. Where the presenter's step lives: the class's
step is the presenter's (viz_app/lessons/following.py's `resume_presenting` puts it into a presenter's session on
any process), so a presenter whose process died, or who opens the link again, goes on from it.
scripts/lecture.sh runs Redis with `appendonly yes` and `appendfsync always`: an answer the store acknowledged is
on disk before the student's page hears "counted", and a restarted store comes back at the presenter's step with
its answers.

The lesson travels as a pickle (the presenter's lesson may come from a file the teacher uploaded), read back by an
unpickler that builds a lesson's own classes and nothing else (`read_step`): a value someone else wrote into the
store cannot run code in the app. The store is still trusted with the class, as the server's own memory is. It listens on 127.0.0.1 (scripts/lecture.sh), or on a network with a
password (docs/teaching.md); never let others write to it.
"""
from __future__ import annotations

import contextlib
import io
import logging
import pickle
import secrets
import threading
from collections import Counter
from typing import Any, Callable, Iterator

from bert.errors import BertError
from viz_app.server.class_room import HEARTBEAT_WINDOW_S, MAX_SESSIONS, Answer, ClassStep, NotPresenterError

log = logging.getLogger(__name__)

STORE_VARIABLE = "BERT_INSIDE_STORE"  # redis://HOST:PORT/DB: the lecture hall's store (unset: one process, in memory)
PREFIX = "bert-inside:"
HOUR = 3600.0
# how long one call waits for a store that does not answer: a page makes a few calls per run and stays responsive
CONNECT_S, ANSWER_S = 1.0, 2.0  # a store that accepts no connection / that does not reply on one
RETRIES, RETRY_BASE_S, RETRY_CAP_S = 2, 0.05, 0.2  # a refused connection is tried again twice, within 0.3 s

# KEYS: state hash, answers hash, refused counter. ARGV: pickled (lesson, step, model), or "" to end the lesson.
SHOW = """
local version = redis.call('HINCRBY', KEYS[1], 'version', 1)
if ARGV[1] == '' then redis.call('HDEL', KEYS[1], 'step') else redis.call('HSET', KEYS[1], 'step', ARGV[1]) end
redis.call('DEL', KEYS[2])
redis.call('SET', KEYS[3], 0)
return version
"""
# KEYS: state hash, answers hash, refused counter. ARGV: voter, choice, version, MAX_SESSIONS.
ANSWER = """
local state = redis.call('HMGET', KEYS[1], 'version', 'step')
if not state[2] or state[1] ~= ARGV[3] then return 'moved on' end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then
    redis.call('INCR', KEYS[3])
    return 'full'
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 'counted'
"""
# KEYS: following (sorted set: session -> when heard). ARGV: session, 1 if it follows, MAX_SESSIONS.
HEARTBEAT = """
local now = redis.call('TIME')
if ARGV[2] == '1' then
    redis.call('ZADD', KEYS[1], tonumber(now[1]) + tonumber(now[2]) / 1e6, ARGV[1])
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -tonumber(ARGV[3]) - 1)
else
    redis.call('ZREM', KEYS[1], ARGV[1])
end
"""
# KEYS: following. ARGV: window in seconds. Followers heard from within the window.
FOLLOWERS = """
local now = redis.call('TIME')
local since = tonumber(now[1]) + tonumber(now[2]) / 1e6 - tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. since)
return redis.call('ZCARD', KEYS[1])
"""
# KEYS: the payer's spending (sorted set: "when:random:work" -> when). ARGV: work (or "" only to read), window.
SPEND = """
local now = redis.call('TIME')
now = tonumber(now[1]) + tonumber(now[2]) / 1e6
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (now - tonumber(ARGV[2])))
if ARGV[1] ~= '' then
    redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[3] .. ':' .. ARGV[1])
    redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
end
local total = 0
for _, entry in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
    total = total + tonumber(string.match(entry, '([^:]+)$'))
end
return tostring(total)
"""


# KEYS: the slot. ARGV: its holder. Deletes it only if the holder still holds it (a lease that ran out is another's).
RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
# KEYS: the slot. ARGV: its holder, lease ms. Extends it only if the holder still holds it.
RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""


LESSON_CLASSES = frozenset({("viz_app.lessons.format", name) for name in ("Lesson", "Step", "ComputedValue")})


class _LessonUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) not in LESSON_CLASSES:
            raise pickle.UnpicklingError(f"the class store holds a lesson, not {module}.{name}")
        return super().find_class(module, name)


def read_step(data: bytes) -> tuple[Any, int, str | None]:
    """(lesson, step, model) as `ClassStore.show` wrote them; pickle.UnpicklingError for anything but a lesson's
    own classes and plain values."""
    return _LessonUnpickler(io.BytesIO(data)).load()


class StoreUnavailableError(BertError):
    """The lecture hall's store (Redis) does not answer; the message says where it was looked for."""


def connect(url: str):
    """A client of the store at `url` that has answered a PING; raises StoreUnavailableError with one line."""
    try:
        import redis
        from redis.backoff import ExponentialBackoff
        from redis.retry import Retry
    except ImportError:
        raise StoreUnavailableError("the lecture hall needs the redis client: pip install -e '.[lecture]' "
                                    "(scripts/install.sh --lecture)") from None
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_S, socket_timeout=ANSWER_S,
                                      health_check_interval=10,
                                      retry=Retry(ExponentialBackoff(cap=RETRY_CAP_S, base=RETRY_BASE_S), RETRIES),
                                      retry_on_error=[redis.ConnectionError, redis.TimeoutError])
        client.ping()
    except ValueError as error:
        raise StoreUnavailableError(f"{STORE_VARIABLE}: {error} (write redis://HOST:PORT/DB)") from None
    except redis.RedisError as error:
        raise StoreUnavailableError(f"the class's store at {_shown(url)} does not answer ({error}); start it "
                                    "(scripts/lecture.sh does) or correct " + STORE_VARIABLE) from None
    return client


def _shown(url: str) -> str:
    """The store's address without its password."""
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.rpartition('@')[2]}"


def _unavailable(error: Exception) -> StoreUnavailableError:
    return StoreUnavailableError(f"the class's store does not answer ({error}); it may be restarting: try again")


def answering(client) -> bool:
    """Whether the store answers now (a page that said it does not asks this to come back by itself)."""
    try:
        return bool(client.ping())
    except redis_errors():
        return False


class RedisClassRoom:
    """viz_app/server/class_room.py's ClassRoom, kept in the store: the same methods, shared by every process."""

    def __init__(self, client, key: str | None = None, namespace: str = "class"):
        import redis

        self._errors = (redis.RedisError,)
        self._client = client
        name = f"{PREFIX}{namespace}:"
        self._state, self._answers, self._refused = name + "state", name + "answers", name + "refused"
        self._following, key_name = name + "following", name + "key"
        client.set(key_name, key or secrets.token_urlsafe(16), nx=True)  # the first process's key is the class's
        if key is not None:
            client.set(key_name, key)  # the teacher's key: every process was given the same one
        self.key = client.get(key_name).decode()
        self._show, self._answer = client.register_script(SHOW), client.register_script(ANSWER)
        self._heartbeat, self._followers = client.register_script(HEARTBEAT), client.register_script(FOLLOWERS)
        self._seen: ClassStep | None = None  # the last step read, unpickled once per version
        self._last_read: tuple[int, ClassStep | None] | None = None  # (version, step) last read from the store
        self._version = 0

    def is_presenter_key(self, key: str | None) -> bool:
        return isinstance(key, str) and secrets.compare_digest(key.encode(), self.key.encode())

    @property
    def version(self) -> int:
        try:
            self._version = int(self._client.hget(self._state, "version") or 0)
        except self._errors as error:
            log.warning("the class's store does not answer (%s): the class stays at version %d", error, self._version)
        return self._version

    @property
    def current(self) -> ClassStep | None:
        return self.now()[1]

    def now(self) -> tuple[int, ClassStep | None]:
        """The class's version and its step at that version, a matching pair: one small read of the version each time
        (every following student's page asks at every run), and the pickled step read with it (one command, so the
        two match) and unpickled only when the version is not the one last read."""
        try:
            version = int(self._client.hget(self._state, "version") or 0)
            read = self._last_read  # (version, step) as last read: one tuple, so that threads see a matching pair
            if read is not None and read[0] == version:
                return read
            version, step = self._client.hmget(self._state, "version", "step")
        except self._errors as error:
            log.warning("the class's store does not answer (%s): the class stays where it was", error)
            return self._last_read or (self._version, None)
        version = int(version or 0)
        if step is None:
            self._seen = None
        elif self._seen is None or self._seen.version != version:
            lesson, index, model = read_step(step)
            self._seen = ClassStep(lesson, index, version, model)
        self._last_read = (version, self._seen)
        return self._last_read

    def show(self, key: str | None, lesson: Any, step: int, model: str | None = None) -> ClassStep:
        self._check(key)
        if not 0 <= step < len(lesson.steps):
            raise IndexError(f"the lesson has {len(lesson.steps)} steps, not a step {step + 1}")
        version = self._move(pickle.dumps((lesson, step, model), protocol=pickle.HIGHEST_PROTOCOL))
        return ClassStep(lesson, step, version, model)

    def end(self, key: str | None) -> int:
        self._check(key)
        return self._move("")

    def _move(self, step: bytes | str) -> int:
        """The presenter's move, applied now or refused (StoreUnavailableError): never kept to be written later."""
        return int(self._run(self._show, step))

    def heartbeat(self, session: str, following: bool) -> None:
        try:
            self._heartbeat(keys=[self._following], args=[session, int(following), MAX_SESSIONS])
        except self._errors as error:
            log.warning("a follower's heartbeat was dropped: %s", error)

    def followers(self) -> int | None:
        """None: unknown (the store does not answer)."""
        count = self._read(lambda: self._followers(keys=[self._following], args=[HEARTBEAT_WINDOW_S]))
        return None if count is None else int(count)

    def answer(self, voter: str, choice: str, version: int) -> Answer:
        try:
            return Answer(self._run(self._answer, voter, choice, version, MAX_SESSIONS).decode())
        except StoreUnavailableError as error:
            log.warning("an answer was not sent: %s", error)
            return Answer.NOT_SENT  # the student's button stays unlit: they click again

    def refused(self) -> int | None:
        """None: unknown (the store does not answer)."""
        refused = self._read(lambda: self._client.get(self._refused) or 0)
        return None if refused is None else int(refused)

    def answers(self) -> dict[str, int] | None:
        """None: unknown (the store does not answer), never an empty count."""
        values = self._read(lambda: self._client.hvals(self._answers))
        return None if values is None else dict(Counter(value.decode() for value in values))

    def answer_of(self, voter: str) -> str | None:
        mine = self._read(lambda: self._client.hget(self._answers, voter))
        return None if mine is None else mine.decode()

    def _run(self, script, *args):
        try:
            return script(keys=[self._state, self._answers, self._refused], args=list(args))
        except self._errors as error:
            raise _unavailable(error) from None

    def _read(self, call):
        try:
            return call()
        except self._errors as error:
            log.warning("the class's store does not answer (%s)", error)
            return None

    def _check(self, key: str | None) -> None:
        if not self.is_presenter_key(key):
            raise NotPresenterError("only the presenter's link can move the class")


class RedisSpending:
    """What each payer (an address) spent in the last `hour_s` seconds, in BERT-base token passes, kept in the
    store: heavy_jobs.py's MemorySpending shared by every process."""

    def __init__(self, client, hour_s: float = HOUR, namespace: str = "spent"):
        import redis

        self._errors = (redis.RedisError,)
        self._hour_s, self._prefix = hour_s, f"{PREFIX}{namespace}:"
        self._script = client.register_script(SPEND)

    def add(self, payer: str, work: float) -> None:
        self._call(payer, repr(float(work)))

    def spent_this_hour(self, payer: str) -> float:
        return self._call(payer, "")

    def _call(self, payer: str, work: str) -> float:
        try:
            return float(self._script(keys=[self._prefix + payer], args=[work, self._hour_s, secrets.token_hex(4)]))
        except self._errors as error:
            raise _unavailable(error) from None


class RedisSlot:
    """One slot for the whole lecture hall (the live training room's: viz_app/server/training_room.py), held as a
    lease in the store: taken with SET NX, renewed every third of `lease_s` while held, so that a process that dies
    frees it within `lease_s` seconds."""

    def __init__(self, client, name: str = "training-slot", lease_s: float = 15.0, wait_step_s: float = 0.5):
        self._client, self._key = client, f"{PREFIX}{name}"
        self._lease_ms, self._wait_step_s = int(lease_s * 1000), wait_step_s
        self._release, self._renew = client.register_script(RELEASE), client.register_script(RENEW)

    def holder(self) -> str | None:
        held = self._client.get(self._key)
        return None if held is None else held.decode()

    @contextlib.contextmanager
    def held(self, holder: str, give_up: Callable[[], bool] = lambda: False) -> Iterator[bool]:
        """Wait for the slot, then hold it for the block; yields False (and holds nothing) if `give_up()` turned
        true while waiting."""
        token = f"{holder}:{secrets.token_hex(4)}"
        while not self._client.set(self._key, token, nx=True, px=self._lease_ms):
            if give_up():
                yield False
                return
            threading.Event().wait(self._wait_step_s)
        done = threading.Event()
        renewing = threading.Thread(target=self._keep, args=(token, done), daemon=True, name="hall slot lease")
        renewing.start()
        try:
            yield True
        finally:
            done.set()
            renewing.join()
            try:
                self._release(keys=[self._key], args=[token])
            except redis_errors() as error:
                log.warning("the hall's slot will free itself when its lease runs out: %s", error)

    def _keep(self, token: str, done: threading.Event) -> None:
        while not done.wait(self._lease_ms / 3000):
            try:
                self._renew(keys=[self._key], args=[token, self._lease_ms])
            except redis_errors() as error:
                log.warning("the hall's slot lease was not renewed: %s", error)


def redis_errors() -> tuple[type[Exception], ...]:
    import redis

    return (redis.RedisError,)
