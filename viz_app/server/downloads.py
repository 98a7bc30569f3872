"""Download a hub model while reporting progress (no Streamlit here: the sidebar passes a callback).

huggingface_hub drives tqdm progress bars from its worker threads; `download_with_progress` hands it a tqdm class
that only records counts, runs the download in a thread, and polls those counts from the caller's thread (where
Streamlit allows drawing) a few times a second.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from tqdm.std import tqdm

from bert import hub

POLL_S = 0.25


class _Discard:
    """A file that forgets what tqdm writes to it (the bars are drawn by the callback instead)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


class ProgressTally:
    """Every progress bar huggingface_hub opens during one download, read from another thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._bars: list[tqdm] = []

    def tqdm_class(self) -> type[tqdm]:
        tally = self

        class RecordingTqdm(tqdm):
            def __init__(self, *args, **kwargs):
                kwargs.pop("name", None)  # huggingface_hub's own tqdm takes a name; plain tqdm does not
                super().__init__(*args, **{**kwargs, "file": _Discard(), "disable": False})
                with tally._lock:
                    tally._bars.append(self)

        return RecordingTqdm

    def state(self) -> tuple[float, str]:
        """(fraction done 0-1, a short text such as "12.3 of 440.5 MB")."""
        with self._lock:
            bars = [(b.n, b.total, b.unit) for b in self._bars if b.total]
        byte_bars = [(n, total) for n, total, unit in bars if unit == "B"]
        if byte_bars:
            n, total = max(byte_bars, key=lambda bar: bar[0] / bar[1])
            return min(n / total, 1.0), f"{n / 1e6:.1f} of {total / 1e6:.1f} MB"
        if bars:
            n, total, _ = bars[0]
            return min(n / total, 1.0), f"{n:.0f} of {total:.0f} files"
        return 0.0, "asking the hub…"


def download_with_progress(repo_id: str, on_progress: Callable[[float, str], None]) -> Path:
    """hub.download(repo_id), calling on_progress(fraction, text) from this thread until it is done.
    Raises what hub.download raises (bert.errors.DownloadError with a one-line message)."""
    tally = ProgressTally()
    with ThreadPoolExecutor(max_workers=1) as pool:
        job = pool.submit(hub.download, repo_id, tally.tqdm_class())
        while not job.done():
            on_progress(*tally.state())
            time.sleep(POLL_S)
        folder = job.result()
    on_progress(1.0, "done")
    return folder
