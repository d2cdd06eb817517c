#!/usr/bin/env bash
# gRPC side by side: grpc_config (query, publish) and grpc_fanout against Tacos and
# r-nacos, alternating A/B rounds on one machine (who goes first alternates, so warm-up
# and drift fall on both sides). Each round starts each server fresh (new data dir,
# 127.0.0.1 only), runs the scenarios one after another against that one process,
# records the server's CPU time and RSS and the machine's CPU use by everything else,
# stops the server by its PID and removes its data dir.
#
# Usage (after `cargo build --release -p tacos -p loadtest` and `cargo install rnacos`):
#   RNACOS_BIN=/path/to/rnacos loadtest/grpc_compare.sh
#   ROUNDS=2 TIME=15s CONNS=64 LISTENERS=1000 FANOUT_ROUNDS=10 loadtest/grpc_compare.sh
# Settings: ROUNDS=2 TIME=15s CONNS=64 KEYS=100 LISTENERS=1000 FANOUT_ROUNDS=10
#   PORT=18848 (gRPC: PORT+1000) SERVERS="tacos rnacos" SCENARIOS="query publish fanout"
#   TACOS_BIN=target/release/tacos BIN_DIR=target/release RNACOS_BIN=rnacos
#   OUT=/tmp/grpc-compare-<time> QUIET_PCT=25 (wait, at most 5 min, until the machine is
#   below this CPU use before each scenario)
# Results: $OUT/results.md (per run and medians with Tacos/r-nacos ratios),
# $OUT/<server>-<round>/{<scenario>.json,<scenario>.log,<scenario>.metrics,server.log,usage.txt}.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-2}
TIME=${TIME:-15s}
CONNS=${CONNS:-64}
KEYS=${KEYS:-100}
LISTENERS=${LISTENERS:-1000}
FANOUT_ROUNDS=${FANOUT_ROUNDS:-10}
PORT=${PORT:-18848}
GRPC_PORT=$((PORT + 1000))
SERVERS=${SERVERS:-tacos rnacos}
SCENARIOS=${SCENARIOS:-query publish fanout}
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
RNACOS_BIN=${RNACOS_BIN:-rnacos}
OUT=${OUT:-/tmp/grpc-compare-$(date +%Y%m%d-%H%M%S)}
QUIET_PCT=${QUIET_PCT:-25}
# A run during which other processes used more CPU seconds than this is marked `*`
# and left out of the medians (unless a server has no other run).
CLEAN_MAX_OTHER=${CLEAN_MAX_OTHER:-1.5}
mkdir -p "$OUT"

SERVER_PID=
SERVER_DIR=
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    [ -n "$SERVER_DIR" ] && rm -rf "$SERVER_DIR"
    SERVER_PID= SERVER_DIR=
}
trap cleanup EXIT INT TERM

# Busy and total jiffies of the whole machine.
machine_cpu() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
proc_cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
proc_rss() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

wait_quiet() {
    local waited=0 b0 t0 b1 t1 pct
    while :; do
        read -r b0 t0 < <(machine_cpu); sleep 2; read -r b1 t1 < <(machine_cpu)
        pct=$(( (b1 - b0) * 100 / (t1 - t0 > 0 ? t1 - t0 : 1) ))
        [ "$pct" -lt "$QUIET_PCT" ] && return 0
        waited=$((waited + 2))
        if [ "$waited" -ge 300 ]; then echo "machine still ${pct}% busy after 5 min; going on" >&2; return 0; fi
        [ $((waited % 30)) -eq 2 ] && echo "waiting for the machine to calm down (${pct}% busy)" >&2
    done
}

wait_http() {
    for _ in $(seq 100); do
        curl -s -m 1 -o /dev/null "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=x&group=y" && return 0
        sleep 0.1
    done
    return 1
}

start_tacos() {
    SERVER_DIR=$(mktemp -d /tmp/grpc-compare-tacos-XXXXXX)
    "$TACOS_BIN" --data-dir "$SERVER_DIR/data" --http-port "$PORT" >"$1/server.log" 2>&1 &
    SERVER_PID=$!
    wait_http
}

start_rnacos() {
    # r-nacos 0.8 sometimes panics at start and then acknowledges writes it does not
    # keep: retry until a write reads back and the log has no panic.
    for attempt in 1 2 3 4 5; do
        SERVER_DIR=$(mktemp -d /tmp/grpc-compare-rnacos-XXXXXX)
        (cd "$SERVER_DIR" && RNACOS_HTTP_PORT=$PORT RNACOS_GRPC_PORT=$GRPC_PORT \
            RNACOS_HTTP_CONSOLE_PORT=$((PORT + 2000)) RNACOS_SDK_HOST=127.0.0.1 \
            RNACOS_CONSOLE_HOST=127.0.0.1 RNACOS_CONFIG_DB_DIR="$SERVER_DIR/db" \
            RNACOS_DATA_DIR="$SERVER_DIR/db" exec "$RNACOS_BIN") >"$1/server.log" 2>&1 &
        SERVER_PID=$!
        local ok=0
        for _ in $(seq 50); do
            sleep 0.2
            grep -q panicked "$1/server.log" && break
            if curl -s -m 2 -X POST "http://127.0.0.1:$PORT/nacos/v1/cs/configs" \
                    -d 'dataId=probe&group=DEFAULT_GROUP&content=probe' | grep -q true &&
                [ "$(curl -s -m 2 "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=probe&group=DEFAULT_GROUP")" = probe ]; then
                ok=1; break
            fi
        done
        sleep 1
        if [ "$ok" = 1 ] && ! grep -q panicked "$1/server.log"; then return 0; fi
        echo "r-nacos start attempt $attempt failed (panic or not ready); retrying" >&2
        mv "$1/server.log" "$1/server-failed-$attempt.log"
        cleanup
    done
    return 1
}

run_scenario() { # dir scenario
    local dir=$1 s=$2 cmd
    case $s in
        query|publish|mixed)
            cmd=("$BIN_DIR/grpc_config" --host "127.0.0.1:$GRPC_PORT" -c "$CONNS" -t "$TIME"
                 --mode "$s" --keys "$KEYS" --label "$s" --report-file "$dir/$s.json") ;;
        fanout)
            cmd=("$BIN_DIR/grpc_fanout" --host "127.0.0.1:$GRPC_PORT" --http-host "127.0.0.1:$PORT"
                 --listeners "$LISTENERS" --rounds "$FANOUT_ROUNDS" --label fanout
                 --report-file "$dir/$s.json") ;;
        *) echo "unknown scenario $s" >&2; return 1 ;;
    esac
    wait_quiet
    local cpu0 rss0 b0 t0 cpu1 rss1 b1 t1 client_cpu
    cpu0=$(proc_cpu "$SERVER_PID"); rss0=$(proc_rss "$SERVER_PID"); read -r b0 t0 < <(machine_cpu)
    /usr/bin/time -f '%U %S %M' -o "$dir/$s.time" "${cmd[@]}" >"$dir/$s.log" 2>&1 || echo "$s exited non-zero (see $dir/$s.log)" >&2
    cpu1=$(proc_cpu "$SERVER_PID"); rss1=$(proc_rss "$SERVER_PID"); read -r b1 t1 < <(machine_cpu)
    client_cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$dir/$s.time" 2>/dev/null || echo 0)
    local hz; hz=$(getconf CLK_TCK)
    # Machine CPU seconds used by anything but this server and this client.
    local other
    other=$(awk -v b=$((b1 - b0)) -v s=$((cpu1 - cpu0)) -v c="$client_cpu" -v hz="$hz" \
        'BEGIN { o = b / hz - s / hz - c; printf "%.1f", (o < 0 ? 0 : o) }')
    echo "$s server_cpu_s=$(awk -v s=$((cpu1 - cpu0)) -v hz="$hz" 'BEGIN { printf "%.2f", s / hz }') client_cpu_s=$client_cpu other_cpu_s=$other rss_kib_before=$rss0 rss_kib_after=$rss1" >>"$dir/usage.txt"
    # The server's own view, where it has one (Tacos: Prometheus /metrics, e.g. the
    # fsync and request-duration histograms; cumulative since the server started).
    curl -s -m 2 -o "$dir/$s.metrics" "http://127.0.0.1:$PORT/metrics" || rm -f "$dir/$s.metrics"
    grep -E '^\| ' "$dir/$s.log" | tail -1
}

for round in $(seq "$ROUNDS"); do
    read -r -a servers <<<"$SERVERS"
    if [ $((round % 2)) -eq 0 ]; then servers=($(printf '%s\n' "${servers[@]}" | tac)); fi
    for server in "${servers[@]}"; do
        dir="$OUT/$server-$round"
        mkdir -p "$dir"
        echo "round $round: $server"
        "start_$server" "$dir" || { echo "could not start $server" >&2; exit 1; }
        echo "server pid $SERVER_PID" >"$dir/usage.txt"
        for s in $SCENARIOS; do run_scenario "$dir" "$s"; done
        cleanup
        sleep 1
    done
done

python3 - "$OUT" "$CLEAN_MAX_OTHER" <<'EOF' | tee "$OUT/results.md"
import json, os, re, statistics, sys
out, clean_max = sys.argv[1], float(sys.argv[2])
runs = {}
for d in sorted(os.listdir(out)):
    m = re.fullmatch(r"(\w+)-(\d+)", d)
    if not m or not os.path.isdir(os.path.join(out, d)):
        continue
    server, rnd = m.group(1), int(m.group(2))
    usage = {}
    for line in open(os.path.join(out, d, "usage.txt")):
        parts = line.split()
        if parts and "=" in line:
            usage[parts[0]] = dict(p.split("=") for p in parts[1:])
    for f in os.listdir(os.path.join(out, d)):
        if f.endswith(".json"):
            s = f[:-5]
            r = json.load(open(os.path.join(out, d, f)))
            r["usage"] = usage.get(s, {})
            runs.setdefault(s, []).append((server, rnd, r))

def med(xs):
    return statistics.median(xs) if xs else float("nan")

def busy(r):
    return float(r["usage"].get("other_cpu_s", "0")) > clean_max

def mark(r):
    return "*" if busy(r) else ""

def pick(rows, server):
    """The runs of `server` that go into the medians: the clean ones, else all."""
    all_runs = [r for sv, _, r in rows if sv == server]
    clean = [r for r in all_runs if not busy(r)]
    return clean or all_runs

def used(rows):
    return ", ".join(f"{sv} {len(pick(rows, sv))} of {sum(1 for s, _, _ in rows if s == sv)}"
                     for sv in ("tacos", "rnacos"))

print(f"Runs marked * had more than {clean_max} CPU s used by other processes on the machine; "
      "they are left out of the medians when the server has clean runs.")

for s in ("query", "publish", "mixed"):
    if s not in runs:
        continue
    print(f"\n### grpc_config {s}\n")
    print("| server | round | req/s | failures | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | server CPU s | client CPU s | other CPU s | RSS after KiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for server, rnd, r in sorted(runs[s], key=lambda x: (x[0] != "tacos", x[1])):
        l, u = r["latency"], r["usage"]
        print(f"| {server} | {rnd}{mark(r)} | {r['throughput']:.0f} | {r['errors']} | {l['p50_ms']:.2f} | {l['p90_ms']:.2f} | {l['p99_ms']:.2f} | {l['p99_9_ms']:.2f} | {l['max_ms']:.2f} | {u.get('server_cpu_s','?')} | {u.get('client_cpu_s','?')} | {u.get('other_cpu_s','?')} | {u.get('rss_kib_after','?')} |")
    print(f"\nmedians of the runs used ({used(runs[s])}):\n")
    print("| median | tacos | rnacos | tacos / rnacos |\n|---|---:|---:|---:|")
    for name, get in [("req/s", lambda r: r["throughput"]), ("p50 ms", lambda r: r["latency"]["p50_ms"]),
                      ("p99 ms", lambda r: r["latency"]["p99_ms"]), ("p99.9 ms", lambda r: r["latency"]["p99_9_ms"]),
                      ("max ms", lambda r: r["latency"]["max_ms"]),
                      ("server CPU µs / request", lambda r: float(r["usage"].get("server_cpu_s", "nan")) * 1e6 / max(r["requests"], 1))]:
        t = med([get(r) for r in pick(runs[s], "tacos")])
        b = med([get(r) for r in pick(runs[s], "rnacos")])
        print(f"| {name} | {t:.2f} | {b:.2f} | {t / b if b else float('nan'):.2f} |")

if "fanout" in runs:
    print("\n### grpc_fanout (ms from the HTTP publish's answer; over the rounds of each run)\n")
    print("| server | round | listeners | missed | setup s | publish p50 | first p50 | median p50 | median p99 | median max | last p50 | last p99 | last max | server CPU s | other CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for server, rnd, r in sorted(runs["fanout"], key=lambda x: (x[0] != "tacos", x[1])):
        u = r["usage"]
        print(f"| {server} | {rnd}{mark(r)} | {r['listeners_set_up']} | {r['missed']} | {r['setup_time_ms']/1000:.1f} | {r['publish']['p50_ms']:.2f} | {r['first_listener']['p50_ms']:.2f} | {r['median_listener']['p50_ms']:.2f} | {r['median_listener']['p99_ms']:.2f} | {r['median_listener']['max_ms']:.2f} | {r['last_listener']['p50_ms']:.2f} | {r['last_listener']['p99_ms']:.2f} | {r['last_listener']['max_ms']:.2f} | {u.get('server_cpu_s','?')} | {u.get('other_cpu_s','?')} |")
    print(f"\nmedians of the runs used ({used(runs['fanout'])}):\n")
    print("| median over runs | tacos | rnacos | tacos / rnacos |\n|---|---:|---:|---:|")
    # From t0 (before the publish was sent) every latency is positive: ratios make sense.
    # From t1 (the publish's answer) they can be negative: differences instead.
    for name, get in [("publish (HTTP) p50 ms", lambda r: r["publish"]["p50_ms"]),
                      ("median listener from t0, p50 ms", lambda r: r["median_listener_from_t0"]["p50_ms"]),
                      ("median listener from t0, p99 ms", lambda r: r["median_listener_from_t0"]["p99_ms"]),
                      ("last listener from t0, p50 ms", lambda r: r["last_listener_from_t0"]["p50_ms"]),
                      ("last listener from t0, p99 ms", lambda r: r["last_listener_from_t0"]["p99_ms"]),
                      ("last listener from t0, max ms", lambda r: r["last_listener_from_t0"]["max_ms"])]:
        t = med([get(r) for r in pick(runs["fanout"], "tacos")])
        b = med([get(r) for r in pick(runs["fanout"], "rnacos")])
        print(f"| {name} | {t:.2f} | {b:.2f} | {t / b if b else float('nan'):.2f} |")
    print("\n| median over runs (from the publish's answer) | tacos | rnacos | tacos − rnacos |\n|---|---:|---:|---:|")
    for name, get in [("median listener p50 ms", lambda r: r["median_listener"]["p50_ms"]),
                      ("median listener p99 ms", lambda r: r["median_listener"]["p99_ms"]),
                      ("last listener p50 ms", lambda r: r["last_listener"]["p50_ms"]),
                      ("last listener p99 ms", lambda r: r["last_listener"]["p99_ms"]),
                      ("last listener max ms", lambda r: r["last_listener"]["max_ms"]),
                      ("missed notifications", lambda r: r["missed"])]:
        t = med([get(r) for r in pick(runs["fanout"], "tacos")])
        b = med([get(r) for r in pick(runs["fanout"], "rnacos")])
        print(f"| {name} | {t:.2f} | {b:.2f} | {t - b:+.2f} |")
EOF
echo "details: $OUT"
