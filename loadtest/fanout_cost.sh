#!/usr/bin/env bash
# What one fan-out notification costs a server, in instructions (callgrind).
#
# On two shared cores a fan-out's timing is as much the load tool's and the machine's as
# the server's (docs/benchmarks.md, "Where a fan-out's time goes"). Instructions are not:
# callgrind counts what the server process itself executes. For each server (Tacos, and
# r-nacos when RNACOS_BIN is set) three runs, each a fresh server under callgrind with
# N long polls + N gRPC listeners of `fanout` on one key:
#   a. 1 publish: the counters are zeroed once every listener is set up and dumped after
#      the last listener of the last publish was told;
#   b. 5 publishes, the same;
#   c. 1 publish with a long pause before it: the server's idle cost per second (timers,
#      its own samplers) with the listeners held.
# Instructions per notification = (b - a - idle rate x (b's window - a's window)) /
# (4 publishes x 2N listeners): what a notification costs, re-poll or ack included.
#
# Usage (from the repo root, after `cargo build --release --workspace`):
#   RNACOS_BIN=/path/to/rnacos loadtest/fanout_cost.sh
# Settings (environment): N=250 TACOS_BIN=target/release/tacos BIN_DIR=target/release
#   RNACOS_BIN= (unset: Tacos only)  BASE_PORT=34848  OUT=/tmp/fanout-cost-<time>
# Everything stays on loopback; the script stops only the processes it started.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
RNACOS_BIN=${RNACOS_BIN:-}
N=${N:-250}
BASE_PORT=${BASE_PORT:-34848}
OUT=${OUT:-/tmp/fanout-cost-$(date +%Y%m%d-%H%M%S)}
ZERO_AFTER=9 # seconds after the listeners are set up (the tool settles 14 s)

command -v callgrind_control > /dev/null || { echo "fanout_cost: needs valgrind" >&2; exit 2; }
[ -x "$TACOS_BIN" ] || { echo "fanout_cost: no $TACOS_BIN (cargo build --release)" >&2; exit 2; }
[ -x "$BIN_DIR/fanout" ] || { echo "fanout_cost: no $BIN_DIR/fanout" >&2; exit 2; }
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)"

SERVER=
stop() {
  [ -n "$SERVER" ] && { kill "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; }
  SERVER=
}
trap stop EXIT

# run KIND BINARY ROUNDS INTERVAL DIR
run() {
  local kind=$1 bin=$2 rounds=$3 interval=$4 dir=$5
  local http=$BASE_PORT grpc=$((BASE_PORT + 1000))
  mkdir -p "$dir"
  local vg=(valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$dir/callgrind.out")
  if [ "$kind" = tacos ]; then
    TACOS_ADMIN_PASSWORD=fanout-cost-admin RUST_LOG=warn "${vg[@]}" "$bin" --data-dir "$dir/data" \
      --bind 127.0.0.1 --node-id 1 --http-port "$http" --grpc-port "$grpc" \
      --cluster-port $((BASE_PORT + 100)) > "$dir/server.log" 2>&1 &
  else
    RNACOS_HTTP_PORT=$http RNACOS_GRPC_PORT=$grpc RNACOS_HTTP_CONSOLE_PORT=$((BASE_PORT + 200)) \
      RNACOS_SDK_HOST=127.0.0.1 RNACOS_CONSOLE_HOST=127.0.0.1 RNACOS_DATA_DIR="$dir/data" \
      RNACOS_CONFIG_DB_DIR="$dir/data" RNACOS_RAFT_NODE_ID=1 RNACOS_RAFT_NODE_ADDR="127.0.0.1:$grpc" \
      RNACOS_RAFT_AUTO_INIT=true RUST_LOG=warn "${vg[@]}" "$bin" > "$dir/server.log" 2>&1 &
  fi
  SERVER=$!
  local deadline=$((SECONDS + 120))
  until curl -s -m 2 -o /dev/null "http://127.0.0.1:$http/nacos/v1/cs/configs?dataId=x&group=g"; do
    [ $SECONDS -lt $deadline ] || { echo "fanout_cost: $kind did not answer in 120 s" >&2; exit 1; }
    sleep 0.5
  done
  sleep 3
  "$BIN_DIR/fanout" --hosts "127.0.0.1:$http" --grpc-hosts "127.0.0.1:$grpc" \
    --http-listeners "$N" --grpc-listeners "$N" --rounds "$rounds" --interval "$interval" \
    --settle 14s --notify-timeout 120s --timeout 120s --connect-concurrency 64 \
    --pid "$SERVER" --report-file "$dir/report.json" 2>&1 |
    while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done > "$dir/fanout.ts" &
  local tool=$!
  until grep -q "listeners set up" "$dir/fanout.ts" 2> /dev/null; do
    kill -0 "$tool" 2> /dev/null || { echo "fanout_cost: fanout ended before its listeners were set up ($dir)" >&2; exit 1; }
    sleep 0.2
  done
  sleep "$ZERO_AFTER"
  callgrind_control -z "$SERVER" > /dev/null 2>&1
  until [ "$(grep -c '^[0-9.]* round ' "$dir/fanout.ts")" -ge "$rounds" ]; do
    kill -0 "$tool" 2> /dev/null || { echo "fanout_cost: fanout ended early ($dir)" >&2; exit 1; }
    sleep 0.2
  done
  callgrind_control -d "$SERVER" > /dev/null 2>&1
  wait "$tool" || { echo "fanout_cost: fanout failed ($dir/fanout.ts)" >&2; exit 1; }
  stop
}

summary=$OUT/summary.md
printf '| server | instructions per notification | idle instructions/s | 1 publish | 5 publishes |\n|---|---:|---:|---:|---:|\n' > "$summary"
measure() {
  local kind=$1 bin=$2
  run "$kind" "$bin" 1 3s "$OUT/$kind-1"
  run "$kind" "$bin" 5 3s "$OUT/$kind-5"
  run "$kind" "$bin" 1 19s "$OUT/$kind-idle"
  python3 - "$OUT" "$kind" "$N" "$ZERO_AFTER" >> "$summary" << 'PY'
import re, sys
out, kind, n, zero_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def total(d):
    text = open(f"{out}/{kind}-{d}/callgrind.out.1").read()
    return int(re.search(r"^(?:totals|summary):\s+(\d+)", text, re.M).group(1))
def window(d):
    stamped = [l.split(" ", 1) for l in open(f"{out}/{kind}-{d}/fanout.ts")]
    set_up = next(float(t) for t, l in stamped if "listeners set up" in l)
    last = [float(t) for t, l in stamped if l.startswith("round ")][-1]
    return last - (set_up + zero_after)
one, five, idle = total("1"), total("5"), total("idle")
rate = (idle - one) / (window("idle") - window("1"))
per = (five - one - rate * (window("5") - window("1"))) / (4 * 2 * n)
print(f"| {kind} | {per:,.0f} | {rate:,.0f} | {one:,} | {five:,} |")
PY
}
measure tacos "$TACOS_BIN"
[ -n "$RNACOS_BIN" ] && measure rnacos "$RNACOS_BIN"
cat "$summary"
echo "fanout_cost: details in $OUT"
