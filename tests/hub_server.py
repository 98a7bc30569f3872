"""A local stand-in for the Hugging Face hub (127.0.0.1 only), so download tests run the real huggingface_hub code.

It answers what huggingface_hub 2.x's `hf_hub_download` / `snapshot_download` ask for (read from its source):
    GET  /api/models/{repo}/revision/{rev}     -> {"id", "sha", "siblings"}            (HfApi.repo_info)
    GET  /api/models/{repo}/tree/{rev}?...      -> [{"type": "file", "path", "size", "oid", "lfs"?}]  (list_repo_tree)
    HEAD /{repo}/resolve/{rev}/{file}           -> X-Repo-Commit, ETag (X-Linked-Etag/-Size for LFS), Content-Length
    GET  /{repo}/resolve/{rev}/{file}           -> the bytes
An unknown repository answers 404 with X-Error-Code: RepoNotFound, an unknown file 404 with EntryNotFound, as the
hub does. Usage: `with HubServer({"bert-tiny": {"config.json": b"...", ...}}) as server: server.url`.
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"  # every repository has this one commit
LFS_SUFFIXES = (".safetensors", ".bin")  # stored with Git LFS on the hub, as weights are


def repo_from_folder(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in Path(folder).iterdir() if p.is_file()}


class HubServer:
    def __init__(self, repos: dict[str, dict[str, bytes]]):
        self.repos = repos
        self.requests: list[str] = []  # "METHOD path", in order
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "HubServer":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def _answer(self, with_body: bool) -> None:
        self.hub.requests.append(f"{self.command} {self.path}")
        path = self.path.split("?")[0]
        if match := re.fullmatch(r"/api/models/(.+)/revision/([^/]+)", path):
            repo = self._repo(match[1])
            if repo is not None:
                self._json({"id": match[1], "sha": COMMIT, "siblings": [{"rfilename": f} for f in repo]}, with_body)
        elif match := re.fullmatch(r"/api/models/(.+)/tree/([^/]+)", path):
            repo = self._repo(match[1])
            if repo is not None:
                self._json([_tree_entry(name, data) for name, data in repo.items()], with_body)
        elif match := re.fullmatch(r"/(.+)/resolve/([^/]+)/(.+)", path):
            repo = self._repo(match[1])
            if repo is not None:
                self._file(repo, match[3], with_body)
        elif path in ("/api/models", "/"):
            self._json([], with_body)
        else:
            self._error(404, "NotFound", with_body)

    def _repo(self, repo_id: str) -> dict[str, bytes] | None:
        if repo_id not in self.hub.repos:
            self._error(404, "RepoNotFound", True)
            return None
        return self.hub.repos[repo_id]

    def _file(self, repo: dict[str, bytes], name: str, with_body: bool) -> None:
        if name not in repo:
            self._error(404, "EntryNotFound", with_body)
            return
        data = repo[name]
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        if name.endswith(LFS_SUFFIXES):
            sha256 = hashlib.sha256(data).hexdigest()
            self.send_header("ETag", f'"{sha256}"')
            self.send_header("X-Linked-Etag", f'"{sha256}"')
            self.send_header("X-Linked-Size", str(len(data)))
        else:
            self.send_header("ETag", f'"{_git_oid(data)}"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if with_body:
            self.wfile.write(data)

    def _json(self, value, with_body: bool) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def _error(self, status: int, code: str, with_body: bool) -> None:
        body = json.dumps({"error": code}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)


def _tree_entry(name: str, data: bytes) -> dict:
    entry = {"type": "file", "path": name, "size": len(data), "oid": _git_oid(data)}
    if name.endswith(LFS_SUFFIXES):
        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return entry
