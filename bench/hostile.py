"""Students who ask for the heaviest computations a class server allows them, for bench/class_server.py.

- `Hostile`: sessions that each open the saliency page with a 511-token paragraph and the heaviest method the
  default budget lets a student start there (occlusion: 515 passes of 511 tokens, 32,900 BERT-base token passes on
  the built-in model, under the 60,000 of a request; viz_app/server/settings.py), then the same with one word
  changed, again and again, until closed: what a student who keeps changing a word does.
- `changed_input_seconds`: how soon a page whose input changed drops the long computation for the new one.
- `idle_after`: how long after the heavy sessions closed the server's CPU went back to idle.
- `attention_seconds`: one session's time to open the attention page on a new sentence (the light page a student
  waits for meanwhile).
"""
from __future__ import annotations

import statistics
import threading
import time
from urllib.parse import urlencode

from bench import classroom
from bench.streamlit_session import Session

SENTENCE_LABEL = "Sentence"
SHORT = "The [MASK] barked at the mailman."
WORDS = ("the", "dog", "cat", "was", "in", "a", "big", "small", "park", "and", "it", "ran", "day", "to", "house")


def long_text(tokens: int = 511, variant: int = 0) -> str:
    """A paragraph of `tokens` word pieces with [CLS] and [SEP] (common words, one piece each) and one [MASK]; each
    variant differs in a word or two (a student changing a word: a new computation)."""
    words = [WORDS[(i * 7 + i // 15) % len(WORDS)] for i in range(tokens - 2)]
    words[len(words) // 2] = "[MASK]"
    words[5], words[6] = WORDS[variant % len(WORDS)], WORDS[variant // len(WORDS) % len(WORDS)]
    return " ".join(words)


def heavy_query(variant: int, method: str = "occlusion") -> str:
    return urlencode({"text": long_text(511, variant), "saliency_method": method})


class Hostile:
    """`count` sessions asking for heavy computations one after the other until `close()`."""

    def __init__(self, url: str, count: int, method: str = "occlusion", timeout_s: float = 1800):
        self.url, self.method, self.timeout_s = url, method, timeout_s
        self.requests = [0] * count  # computations asked for, per session
        self.finished = [0] * count  # of which the page ran to its end (a chart or the budget's message)
        self.refused = [0] * count  # of which the page said the budget does not allow it
        self.sessions: list[Session] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(count)]
        for thread in self._threads:
            thread.start()

    def _run(self, number: int) -> None:
        try:
            session = Session(self.url, self.timeout_s)
        except Exception:  # noqa: BLE001 - a session that cannot connect asks for nothing
            return
        self.sessions.append(session)
        session.page_name = "saliency"
        variant = number * 100
        while not self._stop.is_set():
            session.query_string = heavy_query(variant, self.method)
            self.requests[number] += 1
            try:
                page = session.rerun()
            except Exception:  # noqa: BLE001 - closed by close(): the tab is gone
                return
            self.finished[number] += 1
            self.refused[number] += any("BERT-base token passes" in text for text in page.markdown)
            variant += 1

    def close(self) -> float:
        """Close every session (the tabs), and return when: the server's idle time counts from here."""
        self._stop.set()
        closed = time.monotonic()
        for session in list(self.sessions):
            session.close()
        for thread in self._threads:
            thread.join(timeout=5)
        return closed


def changed_input_seconds(url: str, timeout_s: float = 600, running_s: float = 8.0) -> tuple[float, bool]:
    """A student types the 511-token paragraph into the Sentence box of the saliency page (occlusion: the heaviest
    a student may start there) and, `running_s` later, a short sentence instead. Returns the seconds from the change
    until the page had run for the short sentence, and whether its chart came: Streamlit runs a browser session's
    runs one after the other, so this is minutes unless the long computation stopped at the change."""
    session = Session(url, timeout_s)
    session.page_name, session.query_string = "saliency", urlencode({"text": SHORT, "saliency_method": "occlusion"})
    box = session.rerun().widgets[SENTENCE_LABEL]
    finished: list = []
    reader = threading.Thread(target=lambda: finished.append(session.rerun({box: long_text(511, 7)})), daemon=True)
    reader.start()
    time.sleep(running_s)
    changed = time.monotonic()
    session.send_rerun({box: SHORT.replace("barked", "growled")})
    reader.join(timeout_s)
    seconds = time.monotonic() - changed
    session.close()
    return seconds, bool(finished and finished[0].charts)


def idle_after(server_pid: int, since: float, within_s: float = 60, window_s: float = 2.0, idle_share: float = 0.1) -> float | None:
    """Seconds from `since` until the server's CPU stays under `idle_share` of a core over a `window_s` window;
    None when it is not idle within `within_s`."""
    while time.monotonic() - since < within_s:
        start_cpu, start = classroom.cpu_seconds(server_pid), time.monotonic()
        time.sleep(window_s)
        if (classroom.cpu_seconds(server_pid) - start_cpu) / (time.monotonic() - start) < idle_share:
            return start - since
    return None


def attention_seconds(url: str, sentences: list[str], timeout_s: float = 300) -> list[float]:
    """One new session per sentence opening the attention page on it: seconds until its run finished."""
    seconds = []
    for sentence in sentences:
        session = Session(url, timeout_s)
        session.page_name, session.query_string = "attention", urlencode({"text": sentence})
        start = time.monotonic()
        page = session.rerun()
        seconds.append(time.monotonic() - start)
        session.close()
        if page.exceptions:
            raise RuntimeError("the attention page raised " + "; ".join(page.exceptions))
    return seconds


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
