#!/usr/bin/env bash
# Install the app and test dependencies (Chromium included), then run the whole test suite on every core
# (pytest-xdist: one worker a core and one more, since many tests wait on other processes: an app server, Chromium,
# Redis, torchrun's ranks: on the 2-core VM 3 workers left the CPUs 2% idle where 2 left them 13% idle. The tests
# that share a module's model or app server stay on one worker, see tests/conftest.py). Arguments go to pytest
# after these, so they win: `-n 0` runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
exec python3 -m pytest -q -n "$(( $(nproc) + 1 ))" --dist loadgroup "$@"
