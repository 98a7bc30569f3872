"""A real `redis-server` on 127.0.0.1 and a free port, for the lecture hall's tests (viz_app/server/class_store.py):
its data in a temporary folder, every write on disk before it answers (appendonly, appendfsync always), as
scripts/lecture.sh runs it; `restart()` kills it (SIGKILL: nothing is flushed on the way out) and starts it again on
the same port and folder. `store_missing()` says why the tests cannot run here: they skip, or fail under CI=true
(CI installs redis-server and haproxy with `bash scripts/install.sh --test`, the README's test command)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

from bert_test_support import required_under_ci


def store_missing() -> str | None:
    for tool in ("redis-server", "haproxy"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (bash scripts/install.sh --test installs it)"
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis client is not installed (pip install -e '.[lecture]')"
    return None


def need_the_store() -> None:
    required_under_ci(store_missing(), "the lecture hall's tests")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, folder: Path):
        self.folder, self.port = folder, free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis.from_url(self.url).ping()
                return self
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {self.port}")
                time.sleep(0.1)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self, down_s: float = 0.5) -> None:
        self.kill()
        time.sleep(down_s)
        self.start()
