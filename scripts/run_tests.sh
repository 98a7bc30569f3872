#!/usr/bin/env bash
# Install the app and test dependencies (Chromium included), then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh --test
exec python3 -m pytest -q "$@"
