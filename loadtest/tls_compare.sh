#!/usr/bin/env bash
# The cost of TLS on one node: the same release binary started fresh with and without
# TLS on its client ports (--cert-file; a CA and certificate made with openssl for
# 127.0.0.1), alternating plain/TLS rounds (who goes first alternates). Per start, one
# after another: http_config query and publish, grpc_config query and publish (CONNS
# keep-alive connections each), then http_config --reconnect (a new connection, so
# with TLS a full handshake, per request). Records each run's report, the server's CPU
# seconds and the load average.
#
# Usage (after `cargo build --release --bin tacos -p loadtest --bin http_config --bin grpc_config`):
#   loadtest/tls_compare.sh
# Each start waits (at most QUIET_WAIT s) for the machine to be calm (others using at
# most QUIET_CORES cores); each run records how many cores others used meanwhile
# (other_cores in runs.tsv). With MEDIAN_MAX_OTHER=C the medians leave out runs where
# others used more than C cores (unless that leaves a side with under half its runs).
# Settings: ROUNDS=3 TIME=8s QUIET_CORES=0.3 QUIET_WAIT=120 MEDIAN_MAX_OTHER=
#   RUNS="http-query http-publish grpc-query grpc-publish http-reconnect" CONNS=64 RECONNECT_CONNS=8 KEYS=100 PORT=18848
#   TACOS_BIN=target/release/tacos BIN_DIR=target/release OUT=/tmp/tls-compare-<time>
# Results: $OUT/results.md (medians, TLS/plain ratios), $OUT/runs.tsv, reports per run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
TIME=${TIME:-8s}
CONNS=${CONNS:-64}
RECONNECT_CONNS=${RECONNECT_CONNS:-8}
KEYS=${KEYS:-100}
PORT=${PORT:-18848}
GRPC_PORT=$((PORT + 1000))
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
OUT=${OUT:-/tmp/tls-compare-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
PKI="$OUT/pki"
CA="$PKI/ca.crt"
TICKS=$(getconf CLK_TCK)

make_pki() {
  mkdir -p "$PKI"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI/ca.key" -out "$CA" -days 30 -subj "/CN=tls_compare CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    "extendedKeyUsage=serverAuth" "basicConstraints=CA:FALSE" >"$PKI/ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI/server.key" -out "$PKI/server.csr" -subj "/CN=127.0.0.1" 2>/dev/null
  openssl x509 -req -in "$PKI/server.csr" -CA "$CA" -CAkey "$PKI/ca.key" \
    -CAcreateserial -days 30 -extfile "$PKI/ext" -out "$PKI/server.crt" 2>/dev/null
}

machine_busy() { # CPU seconds every process used since boot (all but idle and iowait)
  awk -v t="$TICKS" '/^cpu / { print ($2 + $3 + $4 + $7 + $8) / t }' /proc/stat
}

children_cpu() { # CPU seconds of this shell's finished children
  times | tail -n 1 | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }'
}

cpu_seconds() { # utime + stime of PID, in seconds
  awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"
}

SERVER_PID=
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}
trap stop_server EXIT

start_server() { # mode dir
  local mode=$1 dir=$2 args=()
  mkdir -p "$dir"
  [ "$mode" = tls ] && args=(--cert-file "$PKI/server.crt" --key-file "$PKI/server.key")
  RUST_LOG=warn NO_COLOR=1 "$TACOS_BIN" --data-dir "$dir/data" --bind 127.0.0.1 \
    --http-port "$PORT" --grpc-port "$GRPC_PORT" --cluster-port $((PORT + 2001)) \
    "${args[@]}" >"$dir/server.log" 2>&1 &
  SERVER_PID=$!
  local scheme=http curl_ca=()
  [ "$mode" = tls ] && scheme=https && curl_ca=(--cacert "$CA")
  for _ in $(seq 200); do
    if [ "$(curl -s "${curl_ca[@]}" -o /dev/null -w '%{http_code}' --max-time 1 \
      "$scheme://127.0.0.1:$PORT/health" || true)" = 200 ]; then
      return 0
    fi
    sleep 0.1
  done
  echo "the server did not start; see $dir/server.log" >&2
  exit 1
}

run_one() { # mode round name command...
  local mode=$1 round=$2 name=$3
  shift 3
  local report="$OUT/$mode-$round/$name.json" before after load busy0 busy1 tool0 tool1
  before=$(cpu_seconds "$SERVER_PID")
  busy0=$(machine_busy)
  tool0=$(children_cpu)
  "$@" --report-file "$report" >"$OUT/$mode-$round/$name.log" 2>&1 || true
  tool1=$(children_cpu)
  busy1=$(machine_busy)
  after=$(cpu_seconds "$SERVER_PID")
  load=$(cut -d' ' -f1 /proc/loadavg)
  python3 - "$report" "$mode" "$round" "$name" "$before" "$after" "$load" \
    "$busy0" "$busy1" "$tool0" "$tool1" >>"$OUT/runs.tsv" <<'PY'
import json, sys
path, mode, rnd, name, before, after, load, b0, b1, t0, t1 = sys.argv[1:]
r = json.load(open(path))
cpu = float(after) - float(before)
tool = float(t1) - float(t0)
# What other processes (other people's builds and tests) used meanwhile, in cores.
others = (float(b1) - float(b0) - cpu - tool) / r["duration_s"]
req = r["requests"]
print("\t".join(map(str, [mode, rnd, name, req, r["errors"], r["throughput"],
      r["latency"]["p50_ms"], r["latency"]["p99_ms"], round(cpu, 3),
      round(cpu / max(req, 1) * 1e6, 1), load, round(max(others, 0), 2)])))
PY
  tail -n 1 "$OUT/$mode-$round/$name.log"
}

# Waits (at most QUIET_WAIT seconds, 120) until the machine is idle but for
# QUIET_CORES, sampled over 2 s, so each start begins on a calm machine.
wait_quiet() {
  local deadline=$((SECONDS + ${QUIET_WAIT:-120})) b0 b1
  while [ "$SECONDS" -lt "$deadline" ]; do
    b0=$(machine_busy)
    sleep 2
    b1=$(machine_busy)
    awk -v a="$b0" -v b="$b1" -v q="${QUIET_CORES:-0.3}" 'BEGIN { exit !((b - a) / 2 <= q) }' && return 0
  done
  echo "   (the machine stayed busy; measuring anyway)"
}

RUNS=${RUNS:-http-query http-publish grpc-query grpc-publish http-reconnect}
wanted() { [[ " $RUNS " == *" $1 "* ]]; }

measure() { # mode round
  local mode=$1 round=$2 dir="$OUT/$1-$2" tls=()
  [ "$mode" = tls ] && tls=(--tls --cacert "$CA")
  wait_quiet
  echo "== round $round, $mode ($(cut -d' ' -f1-3 /proc/loadavg))"
  start_server "$mode" "$dir"
  local H="$BIN_DIR/http_config" G="$BIN_DIR/grpc_config"
  wanted http-query && run_one "$mode" "$round" http-query "$H" --host "127.0.0.1:$PORT" "${tls[@]}" --mode query -c "$CONNS" -t "$TIME" --keys "$KEYS"
  wanted http-publish && run_one "$mode" "$round" http-publish "$H" --host "127.0.0.1:$PORT" "${tls[@]}" --mode publish -c "$CONNS" -t "$TIME" --keys "$KEYS"
  wanted grpc-query && run_one "$mode" "$round" grpc-query "$G" --host "127.0.0.1:$GRPC_PORT" "${tls[@]}" --mode query -c "$CONNS" -t "$TIME" --keys "$KEYS"
  wanted grpc-publish && run_one "$mode" "$round" grpc-publish "$G" --host "127.0.0.1:$GRPC_PORT" "${tls[@]}" --mode publish -c "$CONNS" -t "$TIME" --keys "$KEYS"
  wanted http-reconnect && run_one "$mode" "$round" http-reconnect "$H" --host "127.0.0.1:$PORT" "${tls[@]}" --mode query --reconnect -c "$RECONNECT_CONNS" -t "$TIME" --keys "$KEYS"
  stop_server
  rm -rf "$dir/data"
}

make_pki
printf 'mode\tround\trun\trequests\terrors\treq_s\tp50_ms\tp99_ms\tserver_cpu_s\tcpu_us_per_req\tload1\tother_cores\n' >"$OUT/runs.tsv"
{
  echo "binary: $("$TACOS_BIN" --version 2>/dev/null || echo tacos), $(git -C "$ROOT" describe --always --dirty 2>/dev/null || true)"
  echo "start: $(date -Is), uptime: $(uptime)"
} >"$OUT/meta.txt"
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="plain tls"; else order="tls plain"; fi
  for mode in $order; do
    measure "$mode" "$round"
  done
done
echo "end: $(date -Is), uptime: $(uptime)" >>"$OUT/meta.txt"

python3 - "$OUT/runs.tsv" "${MEDIAN_MAX_OTHER:-inf}" >"$OUT/results.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
quiet = float(sys.argv[2])
def usable(run, mode):
    mine = [r for r in rows if r["run"] == run and r["mode"] == mode]
    calm = [r for r in mine if float(r["other_cores"]) <= quiet]
    return calm if 2 * len(calm) >= len(mine) else mine
runs = [run for run in ["http-query", "http-publish", "grpc-query", "grpc-publish", "http-reconnect"]
        if any(r["run"] == run for r in rows)]
print("| run | plain req/s | TLS req/s | ratio | plain p99 ms | TLS p99 ms | ratio | plain CPU us/req | TLS CPU us/req | ratio | errors | runs used (plain+TLS) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
def med(run, mode, key):
    return statistics.median(float(r[key]) for r in usable(run, mode))
for run in runs:
    p = [med(run, "plain", k) for k in ("req_s", "p99_ms", "cpu_us_per_req")]
    t = [med(run, "tls", k) for k in ("req_s", "p99_ms", "cpu_us_per_req")]
    errors = sum(int(r["errors"]) for r in rows if r["run"] == run)
    cells = []
    for a, b in zip(p, t):
        cells += [f"{a:,.1f}", f"{b:,.1f}", f"{b / a:.2f}" if a else "-"]
    used = f"{len(usable(run, 'plain'))}+{len(usable(run, 'tls'))}"
    print(f"| {run} | " + " | ".join(cells) + f" | {errors} | {used} |")
PY
cat "$OUT/meta.txt" "$OUT/results.md"
