#!/usr/bin/env bash
# Install, fetch bert-base-uncased into the local Hugging Face cache when online (once; about 440 MB, with a
# progress bar), then start the app: open the address it prints. Offline, it says so and starts on the built-in model.
# Skip the download with --no-download or BERT_INSIDE_NO_DOWNLOAD=1.
# A class: --class (every visitor a student, the presenter moves them; it prints the presenter's and the students'
# links), --offer NAME=FOLDER, --settings FILE, --no-cached-hub-models go to the app (docs/teaching.md); the
# presenter's key (--presenter-key KEY, BERT_INSIDE_PRESENTER_KEY or the settings file; else a random one) reaches
# the app in the environment variable BERT_INSIDE_PRESENTER_KEY, never on a command line, which `ps` shows to every
# user of the machine. Other arguments go to `streamlit run` (e.g. --server.port 8502).
# A lecture hall: --processes N starts N app processes behind a proxy, sharing the class in a store
# (scripts/lecture.sh; --server.port is then the proxy's port, --store URL a store that already runs).
set -euo pipefail
cd "$(dirname "$0")/.."
download="${BERT_INSIDE_NO_DOWNLOAD:-0}"
args=()
app_args=()
port=8501
host=""
processes=0
lecture_args=()
while (($#)); do
    case "$1" in
        --no-download) download=1 ;;
        --processes) processes="${2:?--processes needs a number}"; shift ;;
        --store) lecture_args+=("$1" "${2:?--store needs redis://HOST:PORT/DB}"); shift ;;
        --class | --no-cached-hub-models) app_args+=("$1") ;;
        --offer | --settings) app_args+=("$1" "${2:?$1 needs a value}"); shift ;;
        --offer=* | --settings=*) app_args+=("$1") ;;
        # the key travels in the environment, never on a command line; the flag wins over the variable, as in the app
        --presenter-key) export BERT_INSIDE_PRESENTER_KEY="${2:?$1 needs a value}"; shift ;;
        --presenter-key=*) export BERT_INSIDE_PRESENTER_KEY="${1#*=}" ;;
        --server.port) port="${2:?--server.port needs a value}"; args+=("$1" "$2"); shift ;;
        --server.port=*) port="${1#*=}"; args+=("$1") ;;
        --server.address) host="${2:?--server.address needs a value}"; args+=("$1" "$2"); shift ;;
        --server.address=*) host="${1#*=}"; args+=("$1") ;;
        *) args+=("$1") ;;
    esac
    shift
done
if [[ "$processes" != "0" ]]; then bash scripts/install.sh --lecture; else bash scripts/install.sh; fi
if [[ "$download" != "1" ]]; then
    # exit 3: offline (one line already printed); anything else failing must not stop the app either
    python3 -m bert download bert-base-uncased || echo "Starting on the built-in model (minilm)." >&2
fi
if [[ "$processes" != "0" ]]; then
    exec bash scripts/lecture.sh --processes "$processes" --port "$port" ${host:+--bind "$host"} "${lecture_args[@]}" "${app_args[@]}"
fi
if [[ "$host" == "0.0.0.0" ]]; then host=""; fi
# class mode: prints the two links and gives the presenter's key (nothing otherwise); bad settings stop here
key="$(python3 -m viz_app.server.class_links "${app_args[@]}" --port "$port" ${host:+--host "$host"})"
if [[ -n "$key" ]]; then export BERT_INSIDE_PRESENTER_KEY="$key"; fi  # the app reads it: the printed link works
if ((${#app_args[@]})); then args+=(-- "${app_args[@]}"); fi
exec python3 -m streamlit run viz_app/Home.py "${args[@]}"
