#!/usr/bin/env bash
# Starts one release Tacos node on 127.0.0.1 with a fresh data dir, runs goose scenarios
# against it one after the other, and records the server's RSS and CPU time before and
# after each run. Everything stays on loopback, each run is bounded by -t, and the
# script stops only the Tacos process it started and removes only its own data dir.
#
# Usage (from the repo root, after `cargo build --release --workspace`):
#   loadtest/measure.sh                         # http_config_set, then http_config_query
#   loadtest/measure.sh http_config_set2        # any scenario binaries, in order
# Settings (environment): USERS=64 RATE=<USERS> TIME=30s PORT=18848
#   OUT=/tmp/loadtest-results-<time>  TACOS_BIN=target/release/tacos
#   BIN_DIR=target/release  EXTRA_ARGS="..." (more goose flags for every run)
#   SERVER_CMD="..." runs another server instead of Tacos (it must listen on PORT,
#   e.g. SERVER_CMD="rnacos" with RNACOS_HTTP_PORT set); the script still tracks its PID.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
PORT=${PORT:-18848}
USERS=${USERS:-64}
RATE=${RATE:-$USERS}
TIME=${TIME:-30s}
OUT=${OUT:-/tmp/loadtest-results-$(date +%Y%m%d-%H%M%S)}
EXTRA_ARGS=${EXTRA_ARGS:-}
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(http_config_set http_config_query)

mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/lt-data-XXXXXX)
CLK_TCK=$(getconf CLK_TCK)
SERVER_PID=

cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$DATA"
}
trap cleanup EXIT

# "<rss KiB> <peak rss KiB> <cpu seconds>" of the server process.
server_stats() {
    local rss hwm ticks
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")
    # utime and stime are fields 14 and 15; the command name (field 2) may hold spaces,
    # so count from the last ')'.
    ticks=$(sed 's/^.*) //' "/proc/$SERVER_PID/stat" | awk '{print $12 + $13}')
    echo "$rss $hwm $(awk -v t="$ticks" -v hz="$CLK_TCK" 'BEGIN {printf "%.2f", t / hz}')"
}

if [ -n "${SERVER_CMD:-}" ]; then
    # shellcheck disable=SC2086
    $SERVER_CMD >"$OUT/server.log" 2>&1 &
else
    "$TACOS_BIN" --data-dir "$DATA" --http-port "$PORT" >"$OUT/server.log" 2>&1 &
fi
SERVER_PID=$!
echo "server pid $SERVER_PID, data dir $DATA, results in $OUT"

ready=
for _ in $(seq 100); do
    # Any HTTP answer (a missing config is 404) means the server is up; this works for
    # Tacos, r-nacos and Java Nacos alike.
    code=$(curl -s -o /dev/null -w '%{http_code}' \
        "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=measure-ping&group=DEFAULT_GROUP" || true)
    if [ "${code:-000}" != 000 ]; then
        ready=1
        break
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.2
done
[ -n "$ready" ] || { echo "server did not become ready; see $OUT/server.log" >&2; exit 1; }

SUMMARY="$OUT/summary.txt"
printf '%-20s %12s %12s %12s %12s %12s %10s\n' scenario rss_before rss_after peak_rss \
    cpu_before cpu_after cpu_used | tee "$SUMMARY"
for s in "${SCENARIOS[@]}"; do
    read -r rss0 _ cpu0 < <(server_stats)
    # shellcheck disable=SC2086
    /usr/bin/time -f "goose: %e s wall, %U s user, %S s sys, %M KiB max RSS" \
        "$BIN_DIR/$s" --host "http://127.0.0.1:$PORT" -u "$USERS" -r "$RATE" -t "$TIME" \
        --report-file "$OUT/$s.html" --report-file "$OUT/$s.json" $EXTRA_ARGS \
        >"$OUT/$s.log" 2>&1 || echo "$s exited with $?" >&2
    read -r rss1 hwm1 cpu1 < <(server_stats)
    printf '%-20s %9s KiB %9s KiB %9s KiB %10s s %10s s %8.2f s\n' "$s" "$rss0" "$rss1" \
        "$hwm1" "$cpu0" "$cpu1" "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {print b - a}')" |
        tee -a "$SUMMARY"
done
echo | tee -a "$SUMMARY"
reports=()
for s in "${SCENARIOS[@]}"; do [ -f "$OUT/$s.json" ] && reports+=("$OUT/$s.json"); done
[ ${#reports[@]} -eq 0 ] || "$BIN_DIR/summarize" "${reports[@]}" | tee -a "$SUMMARY"
for s in "${SCENARIOS[@]}"; do
    echo "$s $(grep -h '^goose:' "$OUT/$s.log" || echo 'goose: no timing')" | tee -a "$SUMMARY"
done
echo "goose output: $OUT/<scenario>.log (tables at the end), reports: $OUT/<scenario>.html"
