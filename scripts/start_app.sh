#!/usr/bin/env bash
# Install, fetch bert-base-uncased into the local Hugging Face cache when online (once; about 440 MB, with a
# progress bar), then start the app: open the address it prints. Offline, it says so and starts on the built-in model.
# Skip the download with --no-download or BERT_INSIDE_NO_DOWNLOAD=1. Other arguments go to `streamlit run`.
set -euo pipefail
cd "$(dirname "$0")/.."
download="${BERT_INSIDE_NO_DOWNLOAD:-0}"
args=()
for arg in "$@"; do
    if [[ "$arg" == "--no-download" ]]; then download=1; else args+=("$arg"); fi
done
bash scripts/install.sh
if [[ "$download" != "1" ]]; then
    # exit 3: offline (one line already printed); anything else failing must not stop the app either
    python3 -m bert download bert-base-uncased || echo "Starting on the built-in model (minilm)." >&2
fi
exec python3 -m streamlit run viz_app/Home.py "${args[@]}"
