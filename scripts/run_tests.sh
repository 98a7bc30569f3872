#!/usr/bin/env bash
# Install the app and test dependencies (Chromium included), then run the whole test suite on every core
# (pytest-xdist: a worker a core and one more, since many tests wait on other processes: an app server, Chromium,
# Redis, torchrun's ranks; a Chromium test mostly waits for the page. On two cores three workers took less time and
# CPU than four: the servers and browsers those tests wait on use the cores too (docs/benchmarks.md, "The test
# suite"). The tests that share a module's model or app server stay on one worker, see tests/conftest.py; the
# tests run in the order tests/conftest.py gives them,
# which mixes the modules that mostly wait with those that compute). Arguments go to pytest after these, so they
# win: `-n 0` runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
exec python3 -m pytest -q -n "$(( $(nproc) + 1 ))" --dist loadgroup --no-loadscope-reorder "$@"
