#!/usr/bin/env bash
# A lecture hall on one machine: the class's store (Redis), N app processes and a proxy (HAProxy) in front.
#   bash scripts/lecture.sh --processes N [--port 8501] [--store redis://HOST:PORT/DB] [app flags: --class ...]
# scripts/start_app.sh --processes N runs it after installing (docs/teaching.md). Every process reads the same
# settings and the same presenter key (BERT_INSIDE_PRESENTER_KEY, set by start_app.sh), and shares the class and the
# hours of budget in the store (viz_app/server/class_store.py); the proxy pins each browser to one process
# (scripts/lecture/haproxy.cfg.in). Each process runs viz_app/lecture_hall.py: the app, and the stream that tells
# its following students' pages the moment the class moves (viz_app/server/class_moves.py).
# --store: a store that already runs (on another machine: docs/teaching.md);
# without it one is started here, on 127.0.0.1, saving every write to disk before answering (appendfsync always).
# Ctrl-C stops them all. Needs redis-server and haproxy (scripts/install.sh --lecture installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
processes=2
port=8501
bind="0.0.0.0"
store="${BERT_INSIDE_STORE:-}"
app_args=()
while (($#)); do
    case "$1" in
        --processes) processes="${2:?--processes needs a number}"; shift ;;
        --port) port="${2:?--port needs a number}"; shift ;;
        --bind) bind="${2:?--bind needs an address}"; shift ;;
        --store) store="${2:?--store needs redis://HOST:PORT/DB}"; shift ;;
        *) app_args+=("$1") ;;
    esac
    shift
done
if ! [[ "$processes" =~ ^[1-9][0-9]?$ ]]; then echo "error: --processes takes 1 to 99, not '$processes'" >&2; exit 2; fi
for tool in haproxy ${store:+true} ${store:-redis-server}; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: $tool is not installed (bash scripts/install.sh --lecture installs it)" >&2; exit 2
    fi
done
run_dir="$(mktemp -d "${TMPDIR:-/tmp}/bert-inside-lecture.XXXXXX")"
pids=()
stop_all() {  # each part asked to stop; one still running 20 s later (an app busy on a page) is killed
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for _ in $(seq 40); do
        running=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
        [[ "$running" == 0 ]] && break
        sleep 0.5
    done
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "The lecture hall stopped (its logs: $run_dir)." >&2
}
trap stop_all INT TERM EXIT
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
if [[ -z "$store" ]]; then
    store_port="$(free_port)"
    redis-server --port "$store_port" --bind 127.0.0.1 --dir "$run_dir" --appendonly yes --appendfsync always \
        --save "" --daemonize no >"$run_dir/redis.log" 2>&1 &
    pids+=($!)
    echo $! >"$run_dir/redis.pid"
    store="redis://127.0.0.1:$store_port/0"
fi
export BERT_INSIDE_STORE="$store"
export BERT_INSIDE_BEHIND_PROXY=1  # the app reads each browser's address from the proxy's X-Forwarded-For
# the store answers (or one line and exit 2), bad settings stop here, class mode prints the links with the proxy's port
for _ in 1 2 3 4 5 6 7 8 9 10; do python3 -c "import redis, sys; redis.Redis.from_url(sys.argv[1]).ping()" "$store" 2>/dev/null && break; sleep 0.5; done
key="$(python3 -m viz_app.server.class_links "${app_args[@]}" --port "$port")"
if [[ -n "$key" ]]; then export BERT_INSIDE_PRESENTER_KEY="$key"; fi
# one cookie secret for every process (in the environment, not on a command line): a browser that moves to another
# process (its own died) keeps a valid XSRF cookie, so its uploads still work there
STREAMLIT_SERVER_COOKIE_SECRET="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
export STREAMLIT_SERVER_COOKIE_SECRET
servers=""
app_ports=()
for number in $(seq 1 "$processes"); do
    app_port="$(free_port)"
    python3 -m streamlit run viz_app/lecture_hall.py --server.headless true --server.address 127.0.0.1 \
        --server.port "$app_port" --browser.gatherUsageStats false --server.fileWatcherType none \
        ${app_args[@]:+-- "${app_args[@]}"} >"$run_dir/app$number.log" 2>&1 &
    pids+=($!)
    echo $! >"$run_dir/app$number.pid"
    servers+="    server app$number 127.0.0.1:$app_port cookie app$number"$'\n'
    app_ports+=("$app_port")
done
# the proxy starts once every app process answers: one that starts while the others load marks them down for its
# first seconds (two failed health checks) and sends every browser that arrives then to the one that answered,
# where they stay (a class that joins at once would share one process's one core)
python3 - "${app_ports[@]}" <<'WAIT' || exit 2
import sys, time, urllib.request
deadline = time.monotonic() + 300
for port in sys.argv[1:]:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as answer:
                if answer.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f"error: the app process on port {port} did not answer within 300 s; see its log")
        time.sleep(0.2)
WAIT
sed -e "s/@BIND@/$bind/" -e "s/@PORT@/$port/" scripts/lecture/haproxy.cfg.in \
    | python3 -c 'import sys; sys.stdout.write(sys.stdin.read().replace("@SERVERS@\n", sys.argv[1]))' "$servers" \
    >"$run_dir/haproxy.cfg"
haproxy -db -f "$run_dir/haproxy.cfg" >"$run_dir/haproxy.log" 2>&1 &
proxy=$!
echo "$proxy" >"$run_dir/haproxy.pid"
pids+=("$proxy")
echo "Lecture hall: $processes app processes behind http://$bind:$port, the class in $store, logs in $run_dir." >&2
echo "Ctrl-C stops it." >&2
# an app process that dies leaves the others serving (the proxy sends its browsers to them); the proxy ending ends all
wait "$proxy" || true
echo "error: the proxy stopped; see $run_dir/haproxy.log" >&2
