#!/usr/bin/env bash
# Write throughput of one node beside a 3-node cluster, in one run, fsync on.
#
# Each round starts a fresh 1-node Tacos and runs the publish scenario against it, then a
# fresh 3-node cluster (on this same machine) and runs the same scenario against the leader
# and then against a follower (whose writes are forwarded to the leader); with LEARNERS=N,
# also a fresh 3-node cluster with N learners attached (--learner), against its leader: the
# commit throughput learners cost (they receive every entry but no commit waits for them). Rounds alternate
# the two setups so drift on a noisy machine hits both. Everything stays on loopback, each
# run is bounded by TIME, and the script stops only the processes it started and removes
# only its own data dirs.
#
# Usage (from the repo root, after `cargo build --release --workspace`):
#   loadtest/cluster_bench.sh
# Settings (environment): ROUNDS=2 USERS=64 TIME=20s SCENARIO=http_config_set LEARNERS=0
#   SETUPS="single cluster learners" (which setups each round runs; learners only with LEARNERS>0)
#   LEARNER_NICE=0: with 1, learners run under SCHED_IDLE (`chrt --idle 0`), so on a machine with
#     fewer cores than processes they take only CPU the voters and the load generator leave — a
#     stand-in for learners on machines of their own (what is left is the leader's cost of sending
#     them the log). `nice -n 19` was not enough: on 2 cores the learners still took 8-9 CPU s
#     of a 15 s run from the voters.
#   LEARNER_DATA=DIR: learners keep their data dirs under DIR (e.g. /dev/shm), so their fsyncs
#     do not queue on the voters' disk — with LEARNER_NICE=1 the stand-in for learners on
#     machines of their own (cores and disks); the voters stay on the disk
#   BASE_PORT=28848 (node i gets HTTP BASE_PORT+i, cluster BASE_PORT+100+i)
#   OUT=/tmp/cluster-bench-<time>  TACOS_BIN=target/release/tacos  BIN_DIR=target/release
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
# The admin routes this script polls need a login; the nodes it starts get
# this password at cluster init.
ADMIN_PASSWORD=bench-admin-password
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
ROUNDS=${ROUNDS:-2}
USERS=${USERS:-64}
TIME=${TIME:-20s}
SCENARIO=${SCENARIO:-http_config_set}
LEARNERS=${LEARNERS:-0}
SETUPS=${SETUPS:-single cluster learners}
LEARNER_NICE=${LEARNER_NICE:-0}
LEARNER_DATA=${LEARNER_DATA:-}
BASE_PORT=${BASE_PORT:-28848}
OUT=${OUT:-/tmp/cluster-bench-$(date +%Y%m%d-%H%M%S)}
CLK_TCK=$(getconf CLK_TCK)

mkdir -p "$OUT"
DATA=$(mktemp -d /tmp/cluster-bench-data-XXXXXX)
PIDS=()

stop_all() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    PIDS=()
}
LDATA=$DATA
[ -z "$LEARNER_DATA" ] || LDATA=$(mktemp -d "$LEARNER_DATA/cluster-bench-learners-XXXXXX")
trap 'stop_all; rm -rf "$DATA" "$LDATA"' EXIT

cpu_seconds() { # total user+sys CPU seconds of the given pids
    local total=0 ticks
    for pid in "$@"; do
        ticks=$(sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')
        total=$((total + ticks))
    done
    awk -v t="$total" -v hz="$CLK_TCK" 'BEGIN {printf "%.1f", t / hz}'
}

rss_mib() { # summed RSS of the given pids
    local total=0 kib
    for pid in "$@"; do
        kib=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
        total=$((total + kib))
    done
    awk -v k="$total" 'BEGIN {printf "%.0f", k / 1024}'
}

# start_node ID DIR [ARGS...]  (IDLE=1 start_node ... runs it under SCHED_IDLE)
start_node() {
    local id=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    RUST_LOG=warn TACOS_ADMIN_PASSWORD=$ADMIN_PASSWORD ${IDLE:+chrt --idle 0} "$TACOS_BIN" --node-id "$id" --data-dir "$dir/data" \
        --http-port $((BASE_PORT + id)) --cluster-port $((BASE_PORT + 100 + id)) "$@" \
        >"$dir/tacos.log" 2>&1 &
    PIDS+=($!)
}

# wait_learners PORT N: until the node on PORT sees N learners.
wait_learners() {
    for _ in $(seq 300); do
        if curl -sf -m 2 -u "nacos:$ADMIN_PASSWORD" "http://127.0.0.1:$1/tacos/v1/admin/raft" | python3 -c "
import json, sys
m = json.load(sys.stdin)
sys.exit(0 if len(m['members']['learners']) == $2 else 1)" 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    echo "cluster on port $1 did not reach $2 learners; logs in $DATA" >&2
    exit 1
}

# wait_voters PORT N: until the node on PORT sees N voters and a leader.
wait_voters() {
    for _ in $(seq 300); do
        if curl -sf -m 2 -u "nacos:$ADMIN_PASSWORD" "http://127.0.0.1:$1/tacos/v1/admin/raft" | python3 -c "
import json, sys
m = json.load(sys.stdin)
sys.exit(0 if m['leader'] and len(m['members']['voters']) == $2 else 1)" 2>/dev/null; then
            return 0
        fi
        sleep 0.2
    done
    echo "cluster on port $1 did not reach $2 voters; logs in $DATA" >&2
    exit 1
}

leader_port() {
    curl -sf -u "nacos:$ADMIN_PASSWORD" "http://127.0.0.1:$1/tacos/v1/admin/raft" | python3 -c "
import json, sys
m = json.load(sys.stdin)
print([v['httpAddr'] for v in m['members']['voters'] if v['id'] == m['leader']][0].split(':')[1])"
}

# run NAME PORT: one goose run, then a line of server CPU and RSS.
run() {
    local name=$1 port=$2 cpu0 cpu1 vcpu0 vcpu1
    # The first three processes are the voters (or the one node): their CPU alone says
    # what learners cost the nodes that commit.
    cpu0=$(cpu_seconds "${PIDS[@]}")
    vcpu0=$(cpu_seconds "${PIDS[@]:0:3}")
    "$BIN_DIR/$SCENARIO" --host "http://127.0.0.1:$port" -u "$USERS" -r "$USERS" -t "$TIME" \
        --report-file "$OUT/$name.json" >"$OUT/$name.log" 2>&1 || echo "$name: goose exited $?" >&2
    cpu1=$(cpu_seconds "${PIDS[@]}")
    vcpu1=$(cpu_seconds "${PIDS[@]:0:3}")
    echo "$name server_cpu_s=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {print b - a}') voters_cpu_s=$(awk -v a="$vcpu0" -v b="$vcpu1" 'BEGIN {print b - a}') server_rss_mib=$(rss_mib "${PIDS[@]}")" |
        tee -a "$OUT/resources.txt"
}

has_setup() { [[ " $SETUPS " == *" $1 "* ]]; }

for round in $(seq "$ROUNDS"); do
  if has_setup single; then
    dir="$DATA/r$round-single"
    start_node 1 "$dir/n1"
    wait_voters $((BASE_PORT + 1)) 1
    run "r$round-1node" $((BASE_PORT + 1))
    stop_all
  fi

  if has_setup cluster; then
    dir="$DATA/r$round-cluster"
    start_node 1 "$dir/n1"
    wait_voters $((BASE_PORT + 1)) 1
    start_node 2 "$dir/n2" --join "127.0.0.1:$((BASE_PORT + 101))"
    start_node 3 "$dir/n3" --join "127.0.0.1:$((BASE_PORT + 101))"
    wait_voters $((BASE_PORT + 1)) 3
    leader=$(leader_port $((BASE_PORT + 1)))
    follower=$((BASE_PORT + 1))
    [ "$follower" != "$leader" ] || follower=$((BASE_PORT + 2))
    run "r$round-3node-leader" "$leader"
    run "r$round-3node-follower" "$follower"
    stop_all
  fi

    if [ "$LEARNERS" -gt 0 ] && has_setup learners; then
        dir="$DATA/r$round-learners"
        start_node 1 "$dir/n1"
        wait_voters $((BASE_PORT + 1)) 1
        start_node 2 "$dir/n2" --join "127.0.0.1:$((BASE_PORT + 101))"
        start_node 3 "$dir/n3" --join "127.0.0.1:$((BASE_PORT + 101))"
        wait_voters $((BASE_PORT + 1)) 3
        idle_learners=
        [ "$LEARNER_NICE" = 1 ] && idle_learners=1
        for id in $(seq 4 $((3 + LEARNERS))); do
            IDLE=$idle_learners start_node "$id" "$LDATA/r$round-n$id" --join "127.0.0.1:$((BASE_PORT + 101))" --learner
        done
        wait_learners $((BASE_PORT + 1)) "$LEARNERS"
        run "r$round-3node+${LEARNERS}learners-leader" "$(leader_port $((BASE_PORT + 1)))"
        stop_all
    fi
done

{
    echo "| run | requests | failures | req/s | avg ms | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for report in "$OUT"/r*.json; do
        # summarize names the row after the scenario; name it after the run instead.
        "$BIN_DIR/summarize" "$report" | tail -n 1 | sed "s/^| [^|]* |/| $(basename "$report" .json) |/"
    done
} | tee "$OUT/summary.md"
cat "$OUT/resources.txt" >>"$OUT/summary.md"
echo "results in $OUT"
