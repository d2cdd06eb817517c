#!/usr/bin/env bash
# What learners cost the leader, in instructions per committed entry (callgrind).
#
# Two cores cannot show a leader's throughput with learners fairly: every learner
# process receives, fsyncs and applies every entry on the same cores (docs/benchmarks.md,
# "With four learners attached"). Instructions do not depend on who else runs:
# `valgrind --tool=callgrind` counts what the leader process itself executes, the same
# for the same binary and workload whatever the machine is doing.
#
# For each count of learners in LEARNERS (default "0 4"): a fresh leader (node 1, one
# voter) under callgrind, that many learners (`--join --learner`, plain processes) until
# every node's /health answers 200, a warm-up, then the leader's counters are zeroed,
# `http_config --mode publish` runs TIME with CONNECTIONS connections (one publish in
# flight on each: with 1, every publish is an entry of its own, the worst case for what a
# learner costs per entry), and the counters are dumped. Instructions per committed
# entry = the dump's total / publishes acknowledged. The ratio with / without learners
# is what issue 37 asks to be at most 1.15.
#
# Usage (from the repo root, after `cargo build --release --workspace`):
#   loadtest/learner_cost.sh
# Settings (environment): LEARNERS="0 4" TIME=20s CONNECTIONS=1 BASE_PORT=33848
#   OUT=/tmp/learner-cost-<time> TACOS_BIN=target/release/tacos BIN_DIR=target/release
# Everything stays on loopback; the script stops only the processes it started.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
LEARNERS=${LEARNERS:-0 4}
TIME=${TIME:-20s}
CONNECTIONS=${CONNECTIONS:-1}
BASE_PORT=${BASE_PORT:-33848}
OUT=${OUT:-/tmp/learner-cost-$(date +%Y%m%d-%H%M%S)}
ADMIN_PASSWORD=bench-admin-password

command -v valgrind > /dev/null || { echo "learner_cost: needs valgrind" >&2; exit 2; }
command -v callgrind_control > /dev/null || { echo "learner_cost: needs callgrind_control" >&2; exit 2; }
[ -x "$TACOS_BIN" ] || { echo "learner_cost: no $TACOS_BIN (cargo build --release)" >&2; exit 2; }
[ -x "$BIN_DIR/http_config" ] || { echo "learner_cost: no $BIN_DIR/http_config" >&2; exit 2; }
mkdir -p "$OUT"

PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2> /dev/null || true; done
  PIDS=()
}
trap stop_all EXIT

http_port() { echo $((BASE_PORT + $1)); }
grpc_port() { echo $((BASE_PORT + 1000 + $1)); }
cluster_port() { echo $((BASE_PORT + 100 + $1)); }

# start_node DIR N [valgrind args...]: node N, the first one under the given wrapper
start_node() {
  local dir=$1 n=$2
  shift 2
  local args=(--data-dir "$dir/n$n/data" --bind 127.0.0.1 --node-id "$n"
    --http-port "$(http_port "$n")" --grpc-port "$(grpc_port "$n")"
    --cluster-port "$(cluster_port "$n")")
  [ "$n" -gt 1 ] && args+=(--join "127.0.0.1:$(cluster_port 1)" --learner)
  mkdir -p "$dir/n$n"
  TACOS_ADMIN_PASSWORD=$ADMIN_PASSWORD RUST_LOG=warn "$@" "$TACOS_BIN" "${args[@]}" \
    > "$dir/n$n/server.log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
}

wait_health() {
  local n=$1 deadline=$((SECONDS + 180))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(http_port "$n")/health")" = 200 ]; do
    [ $SECONDS -lt $deadline ] || { echo "learner_cost: node $n not healthy in 180 s" >&2; exit 1; }
    sleep 0.5
  done
}

printf '| learners | publishes acknowledged | leader instructions | per entry |\n|---:|---:|---:|---:|\n' > "$OUT/summary.md"
for learners in $LEARNERS; do
  dir=$OUT/l$learners
  mkdir -p "$dir"
  start_node "$dir" 1 valgrind --tool=callgrind --dump-instr=no \
    --callgrind-out-file="$dir/callgrind.out"
  leader=$LAST_PID
  wait_health 1
  for ((k = 2; k <= learners + 1; k++)); do
    start_node "$dir" "$k"
    wait_health "$k"
  done
  # Warm-up: the first publishes create the keys and settle the connections.
  "$BIN_DIR/http_config" --host "127.0.0.1:$(http_port 1)" --mode publish -c "$CONNECTIONS" \
    -t 3s --label warmup > "$dir/warmup.txt" 2>&1
  callgrind_control -z "$leader" > /dev/null 2>&1
  "$BIN_DIR/http_config" --host "127.0.0.1:$(http_port 1)" --mode publish -c "$CONNECTIONS" \
    -t "$TIME" --label "learners=$learners" --report-file "$dir/publish.json" > "$dir/publish.txt" 2>&1
  callgrind_control -d "$leader" > /dev/null 2>&1
  sleep 1
  stop_all
  python3 - "$dir" "$learners" >> "$OUT/summary.md" << 'PY'
import glob, json, re, sys
d, learners = sys.argv[1], sys.argv[2]
report = json.load(open(d + "/publish.json"))
ok = report["requests"]
# The dump after the run is the file with a ".1" suffix (the final one at exit holds
# only what ran after it).
text = open(d + "/callgrind.out.1").read()
total = int(re.search(r"^(?:totals|summary):\s+(\d+)", text, re.M).group(1))
print(f"| {learners} | {ok:,} | {total:,} | {total / ok:,.0f} |")
PY
done
cat "$OUT/summary.md"
echo "learner_cost: details in $OUT"
