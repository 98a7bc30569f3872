"""The app on this machine, for scripts: `serve(log)` starts `streamlit run viz_app/Home.py` on 127.0.0.1 and a
free port, waits until it answers, yields (url, server process) and stops it at the end; CHROMIUM and
CHROMIUM_ARGS open it in a headless Chromium (Debian's package, driven by Playwright), and `browser_missing()`
says why that cannot happen here. The benchmarks (`python -m bench.classroom`, `python -m bench.class_server`)
and the browser tests (tests/browser/conftest.py) use them. `serve_lecture_hall(log, processes)` starts
scripts/lecture.sh instead (Redis, `processes` app processes, HAProxy on a free port of 127.0.0.1) and yields the
proxy's url and the folder where the script keeps its logs and its processes' ids (app1.pid, ..., redis.pid,
haproxy.pid); it stops the hall as Ctrl-C does."""
from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
POLL_S = 0.25  # how often a starting server is asked whether it answers (a start takes seconds)
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


def browser_missing() -> str | None:
    """Why a headless Chromium cannot open the app here, or None."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        return f"Chromium is not at {CHROMIUM} (apt-get install -y chromium, or set CHROMIUM=/path/to/chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install playwright)"
    return None


@contextlib.contextmanager
def serve(log_path: Path, timeout_s: float = 180, app_args: tuple[str, ...] = ()):
    """Streamlit's output goes to `log_path`; OMP_NUM_THREADS=1 unless set. `app_args` go to the app (after `--`:
    `--class`, ...; docs/teaching.md)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "viz_app" / "Home.py"), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", *(["--", *app_args] if app_args else [])],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for_health(url, server, timeout_s, log_path)
            yield url, server
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=30)


def _wait_for_health(url: str, server: subprocess.Popen, timeout_s: float, log_path: Path) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {server.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(POLL_S)
    raise RuntimeError(f"streamlit did not answer at {url} within {timeout_s:.0f} s")


@contextlib.contextmanager
def serve_lecture_hall(log_path: Path, processes: int, app_args: tuple[str, ...] = (), timeout_s: float = 300):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        # Ctrl-C as at a teacher's terminal: a shell cannot trap a signal its parent ignored (a test runner's worker,
        # a job started in the background ignore SIGINT), so the script starts with SIGINT's default
        script = subprocess.Popen(["bash", str(ROOT / "scripts" / "lecture.sh"), "--processes", str(processes),
                                   "--port", str(port), "--bind", "127.0.0.1", *app_args],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                  preexec_fn=_sigint_default)
    try:
        yield url, _wait_for_hall(url, processes, script, timeout_s, log_path)
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGINT)  # Ctrl-C
            try:
                script.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(script.pid, signal.SIGKILL)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_hall(url: str, processes: int, script: subprocess.Popen, timeout_s: float, log_path: Path) -> Path:
    """The script's folder, once the proxy answers and every app process has said it serves."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if script.poll() is not None:
            raise RuntimeError(f"scripts/lecture.sh exited with code {script.returncode}; see {log_path}")
        found = re.search(r"logs in (\S+)\.", log_path.read_text())
        if found:
            folder = Path(found.group(1))
            logs = [folder / f"app{number}.log" for number in range(1, processes + 1)]
            if all(log.exists() and "You can now view" in log.read_text() for log in logs):
                _wait_for_health(url, script, deadline - time.time(), log_path)
                return folder
        time.sleep(POLL_S)
    raise RuntimeError(f"the lecture hall did not start within {timeout_s:.0f} s; see {log_path}")
