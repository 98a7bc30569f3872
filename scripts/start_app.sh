#!/usr/bin/env bash
# Install, then start the app: open the address it prints.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec python3 -m streamlit run viz_app/Home.py "$@"
