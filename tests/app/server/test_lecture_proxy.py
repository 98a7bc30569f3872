"""The lecture hall's proxy (scripts/lecture/haproxy.cfg.in, as scripts/lecture.sh fills it) and the address the app
reads behind it (viz_app/server/visitor.py): HAProxy pins a browser to the process its cookie names, sends it to
another when that one is down, and writes the browser's own address in X-Forwarded-For, replacing a forged one;
the app trusts that header only behind the proxy. A real haproxy in front of two small HTTP servers on 127.0.0.1."""
from __future__ import annotations

import http.server
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from redis_server import free_port, need_the_store
from viz_app.server import visitor

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("ip_address, headers, behind_proxy, expected", [
    (None, {"Host": "h", "X-Forwarded-For": "192.168.1.20"}, True, "192.168.1.20"),
    (None, {"Host": "h", "x-forwarded-for": "10.9.9.9, 192.168.1.20"}, True, "192.168.1.20"),  # the proxy's: last
    (None, {"Host": "h", "X-Forwarded-For": "192.168.1.20"}, False, "127.0.0.1"),  # not behind it: a forgery
    ("192.168.1.30", {"Host": "h", "X-Forwarded-For": "192.168.1.20"}, True, "192.168.1.30"),  # not via the proxy
    (None, {"Host": "h"}, True, "127.0.0.1"),
])
def test_the_forwarded_address_is_trusted_only_behind_the_proxy(ip_address, headers, behind_proxy, expected):
    assert visitor.address_of(ip_address, headers, behind_proxy=behind_proxy) == expected


class Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path.startswith("/_stcore/health"):
            time.sleep(getattr(self.server, "health_delay_s", 0.0))  # a process busy drawing a step answers late
        body = f"{self.server.name} {self.headers.get('X-Forwarded-For')}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _server(name: str) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    server.name = name
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _get(url: str, headers: dict[str, str]) -> tuple[str, str]:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode(), response.headers.get("Set-Cookie") or ""


def _proxy(apps: list[http.server.ThreadingHTTPServer], folder: Path) -> tuple[subprocess.Popen, str]:
    """A real haproxy from the hall's template in front of `apps` (app1, app2, ...): the process and its address."""
    port = free_port()
    servers = "".join(f"    server app{n} 127.0.0.1:{app.server_address[1]} cookie app{n}\n" for n, app in enumerate(apps, 1))
    text = (ROOT / "scripts" / "lecture" / "haproxy.cfg.in").read_text()
    config = text.replace("@BIND@", "127.0.0.1").replace("@PORT@", str(port)).replace("@SERVERS@\n", servers)
    (folder / "haproxy.cfg").write_text(config)
    proxy = subprocess.Popen(["haproxy", "-db", "-f", str(folder / "haproxy.cfg")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proxy, f"http://127.0.0.1:{port}/"


@pytest.mark.slow
def test_a_process_that_answers_its_health_check_late_stays_in(tmp_path):
    """A process drawing a step for a hall of students answers late, not never: with its checks taking 2.5 s each
    (longer than the checks' interval), browsers pinned to it still reach it."""
    need_the_store()
    apps = [_server("app1"), _server("app2")]
    apps[1].health_delay_s = 2.5
    proxy, url = _proxy(apps, tmp_path)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                _get(url, {})
                break
            except OSError:
                assert time.monotonic() < deadline, "haproxy did not answer"
                time.sleep(0.2)
        time.sleep(7)  # two or more late checks
        for _ in range(3):
            body, _ = _get(url, {"Cookie": "BERT_INSIDE_PROCESS=app2"})
            assert body.startswith("app2 ")  # not left out
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        for app in apps:
            app.shutdown()


@pytest.mark.slow
def test_the_proxy_pins_by_cookie_fails_over_and_writes_the_real_address(tmp_path):
    need_the_store()
    apps = [_server("app1"), _server("app2")]
    proxy, url = _proxy(apps, tmp_path)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                body, cookie = _get(url, {})
                break
            except OSError:
                assert time.monotonic() < deadline, "haproxy did not answer"
                time.sleep(0.2)
        assert "BERT_INSIDE_PROCESS=app" in cookie
        for pinned in ("app1", "app2", "app2", "app1"):
            body, _ = _get(url, {"Cookie": f"BERT_INSIDE_PROCESS={pinned}", "X-Forwarded-For": "6.6.6.6"})
            assert body == f"{pinned} 127.0.0.1"  # the real address, the forged one dropped
        apps[1].shutdown()
        apps[1].server_close()
        time.sleep(3)  # two failed health checks, one a second
        body, cookie = _get(url, {"Cookie": "BERT_INSIDE_PROCESS=app2"})
        assert body.startswith("app1 ") and "BERT_INSIDE_PROCESS=app1" in cookie  # moved, and pinned there now
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
        apps[0].shutdown()
