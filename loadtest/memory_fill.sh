#!/usr/bin/env bash
# RSS of a server holding many configs with history: starts it on 127.0.0.1 with a
# fresh data dir, records its RSS idle, publishes KEYS configs VERSIONS times each
# (http_config_set2 over KEYS keys: USERS users x KEYS*VERSIONS/USERS iterations, so
# about VERSIONS history rows per config), records RSS, restarts it on the same data
# dir (Tacos rebuilds its memory from snapshot + log), times how long until the last
# write before the restart reads back (all state served), and records RSS 2 s and 30 s
# after that. Stops only the processes it started and removes only its own data dir.
#
# Usage (after `cargo build --release -p tacos -p loadtest --bins`):
#   loadtest/memory_fill.sh                                  # target/release/tacos
#   TACOS_BIN=/path/to/other/tacos loadtest/memory_fill.sh   # another build (A/B)
#   RNACOS_BIN=/path/to/rnacos loadtest/memory_fill.sh       # r-nacos instead
# Settings: KEYS=100000 VERSIONS=10 USERS=64 PORT=18848 BIN_DIR=target/release
#   SERVER_ENV="K=V ..." (environment for the server only)
#   SERVER_LOG=FILE (keep the server's log there; the data dir is removed)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
KEYS=${KEYS:-100000}
VERSIONS=${VERSIONS:-10}
USERS=${USERS:-64}
PORT=${PORT:-18848}
SERVER_ENV=${SERVER_ENV:-}
DATA=$(mktemp -d /tmp/memfill-XXXXXX)
SERVER_PID=

stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=
}
cleanup() {
    stop_server
    if [ -n "${SERVER_LOG:-}" ]; then cp "$DATA/server.log" "$SERVER_LOG" || true; fi
    rm -rf "$DATA"
}
trap cleanup EXIT

start_server() {
    if [ -n "${RNACOS_BIN:-}" ]; then
        # shellcheck disable=SC2086
        # `exec env`, so the PID recorded below is r-nacos' own.
        (cd "$DATA" && exec env $SERVER_ENV RNACOS_HTTP_PORT="$PORT" RNACOS_GRPC_PORT=$((PORT + 1000)) \
            RNACOS_HTTP_CONSOLE_PORT=$((PORT + 2000)) RNACOS_SDK_HOST=127.0.0.1 \
            RNACOS_CONSOLE_HOST=127.0.0.1 RNACOS_DATA_DIR="$DATA/db" RNACOS_CONFIG_DB_DIR="$DATA/db" \
            "$RNACOS_BIN" >>"$DATA/server.log" 2>&1) &
    else
        # shellcheck disable=SC2086
        env $SERVER_ENV "$TACOS_BIN" --data-dir "$DATA/tacos" --http-port "$PORT" \
            >>"$DATA/server.log" 2>&1 &
    fi
    SERVER_PID=$!
    for _ in $(seq 600); do
        code=$(curl -s -o /dev/null -w '%{http_code}' \
            "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=memfill-ping&group=DEFAULT_GROUP" || true)
        [ "${code:-000}" != 000 ] && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || break
        sleep 0.2
    done
    echo "server did not become ready; log:" >&2
    tail -20 "$DATA/server.log" >&2
    exit 1
}

rss() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$SERVER_PID/status"; }

start_server
sleep 2
idle=$(rss)
iterations=$((KEYS * VERSIONS / USERS))
start=$(date +%s)
"$BIN_DIR/http_config_set2" --host "http://127.0.0.1:$PORT" -u "$USERS" -r "$USERS" \
    --iterations "$iterations" --keys "$KEYS" --key-prefix memfill- >"$DATA/goose.log" 2>&1 ||
    echo "http_config_set2 exited with $?" >&2
took=$(($(date +%s) - start))
# The last write: after the restart, all state is served once it reads back.
marker="marker-$(date +%s%N)"
curl -sf -o /dev/null -X POST "http://127.0.0.1:$PORT/nacos/v1/cs/configs" \
    --data-urlencode dataId=memfill-marker --data-urlencode group=DEFAULT_GROUP \
    --data-urlencode "content=$marker" || echo "publishing the marker failed" >&2
sleep 2
filled=$(rss)
stop_server
restart_at=$(date +%s.%N)
start_server
served_s=
for _ in $(seq 3000); do
    got=$(curl -s "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=memfill-marker&group=DEFAULT_GROUP" || true)
    if [ "$got" = "$marker" ]; then
        served_s=$(awk -v now="$(date +%s.%N)" -v at="$restart_at" 'BEGIN { printf "%.2f", now - at }')
        break
    fi
    sleep 0.1
done
[ -n "$served_s" ] || echo "the marker was not served within 300 s of the restart" >&2
sleep 2
restarted=$(rss)
sleep 28
settled=$(rss)
echo "keys=$KEYS versions=$VERSIONS publishes=$((iterations * USERS)) fill_s=$took" \
    "rss_idle_mib=$idle rss_filled_mib=$filled restart_served_s=${served_s:-none}" \
    "rss_after_restart_mib=$restarted rss_30s_after_restart_mib=$settled"
grep -h -i -E "panicked|error" "$DATA/server.log" | head -5 >&2 || true
