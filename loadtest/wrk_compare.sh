#!/usr/bin/env bash
# HTTP read and publish speed and memory, Tacos beside r-nacos and beside nginx answering a
# constant (what this machine's HTTP stack can do at all), with wrk: a light load generator
# (one process, a few threads), so on a 2-core machine more of the CPU goes to the server
# than with goose.
#
# Each round starts every server fresh on 127.0.0.1 (fresh data dirs) and, per server:
# RSS idle; publishes for TIME to 100 keys (unique content per request; r-nacos and Tacos
# only); RSS; reads one seeded key for TIME; RSS. Rounds alternate the servers, so drift on
# a noisy machine hits all of them. Server CPU seconds per run are read from /proc. The
# script stops only the processes it started and removes only its own dirs.
#
# Usage (from the repo root, after `cargo build --release --bin tacos`, with wrk and nginx
# from Debian — `apt-get install wrk nginx-light` — and r-nacos from `cargo install rnacos`):
#   RNACOS_BIN=DIR/bin/rnacos loadtest/wrk_compare.sh
# Settings (environment): ROUNDS=3 TIME=10s CONNECTIONS=64 THREADS=2 PORT=19848
#   SERVERS="tacos rnacos nginx" OUT=/tmp/wrk-compare-<time> TACOS_BIN=target/release/tacos
#   RNACOS_BIN=rnacos NGINX_BIN=nginx
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TACOS_BIN=${TACOS_BIN:-$ROOT/target/release/tacos}
RNACOS_BIN=${RNACOS_BIN:-rnacos}
NGINX_BIN=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
ROUNDS=${ROUNDS:-3}
TIME=${TIME:-10s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-19848}
SERVERS=${SERVERS:-tacos rnacos nginx}
OUT=${OUT:-/tmp/wrk-compare-$(date +%Y%m%d-%H%M%S)}
CLK_TCK=$(getconf CLK_TCK)

command -v wrk >/dev/null || { echo "wrk not found (apt-get install wrk)" >&2; exit 2; }
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/wrk-compare-XXXXXX)
PID=
stop() {
    [ -n "$PID" ] || return 0
    kill "$PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$PID" 2>/dev/null || true
    PID=
}
trap 'stop; rm -rf "$WORK"' EXIT

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
cpu_s() { sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$CLK_TCK" '{printf "%.2f", ($12 + $13) / hz}'; }

# The publish script: a POST of unique content to one of 100 keys per request.
cat >"$WORK/publish.lua" <<'EOF'
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
request = function()
    n = n + 1
    local body = "dataId=wrk-" .. (n % 100) .. "&group=WRK&content=value-" .. n .. "-" .. math.random(1000000000)
    return wrk.format(nil, "/nacos/v1/cs/configs", nil, body)
end
EOF

start() { # start SERVER DIR
    local server=$1 dir=$2
    mkdir -p "$dir"
    case "$server" in
    tacos)
        RUST_LOG=warn TACOS_ADMIN_PASSWORD=wrk-compare-admin "$TACOS_BIN" --data-dir "$dir/data" \
            --http-port "$PORT" >"$dir/log" 2>&1 &
        PID=$!
        ;;
    rnacos)
        (cd "$dir" && exec env RNACOS_HTTP_PORT=$PORT RNACOS_GRPC_PORT=$((PORT + 1000)) \
            RNACOS_HTTP_CONSOLE_PORT=$((PORT + 2000)) RNACOS_SDK_HOST=127.0.0.1 \
            RNACOS_CONSOLE_HOST=127.0.0.1 RNACOS_DATA_DIR="$dir/data" \
            RNACOS_CONFIG_DB_DIR="$dir/data" "$RNACOS_BIN") >"$dir/log" 2>&1 &
        PID=$!
        ;;
    nginx)
        cat >"$dir/nginx.conf" <<EOF
daemon off;
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir;
    uwsgi_temp_path $dir; scgi_temp_path $dir;
    server { listen 127.0.0.1:$PORT; location / { return 200 "value-1\n"; } }
}
EOF
        "$NGINX_BIN" -c "$dir/nginx.conf" -p "$dir" >"$dir/log" 2>&1 &
        PID=$!
        ;;
    esac
    for _ in $(seq 300); do
        # 200 (nginx) or 404 (no such config yet): the server is up.
        case "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=none&group=WRK")" in
        200 | 404) return 0 ;;
        esac
        sleep 0.1
    done
    echo "$server did not start; log in $dir/log" >&2
    exit 1
}

# wrk_run NAME ARGS...: one wrk run; prints "req/s p50 p99" (ms) and keeps the output.
wrk_run() {
    local name=$1
    shift
    wrk -t "$THREADS" -c "$CONNECTIONS" -d "$TIME" --latency "$@" >"$OUT/$name.txt" 2>&1
    awk '/Requests\/sec/ {rps = $2}
         /^ +50%/ {p50 = $2} /^ +99%/ {p99 = $2}
         /Non-2xx/ {bad = $NF}
         END {printf "%s %s %s %s", rps, p50, p99, (bad == "" ? 0 : bad)}' "$OUT/$name.txt"
}

echo "| round | server | idle MiB | publish req/s | publish p50 / p99 | MiB after | read req/s | read p50 / p99 | MiB after | server CPU s (publish / read) | non-2xx |" | tee "$OUT/summary.md"
echo "|---|---|---:|---:|---|---:|---:|---|---:|---|---:|" | tee -a "$OUT/summary.md"
for round in $(seq "$ROUNDS"); do
    for server in $SERVERS; do
        dir="$WORK/r$round-$server"
        start "$server" "$dir"
        sleep 2
        idle=$(rss_mib "$PID")
        pub="– – – 0" pub_rss="–" pub_cpu="–"
        if [ "$server" != nginx ]; then
            c0=$(cpu_s "$PID")
            pub=$(wrk_run "r$round-$server-publish" -s "$WORK/publish.lua" "http://127.0.0.1:$PORT")
            pub_cpu=$(awk -v a="$c0" -v b="$(cpu_s "$PID")" 'BEGIN {printf "%.1f", b - a}')
            pub_rss=$(rss_mib "$PID")
            # Seed the key the read run asks for, and wait until it is served (a run of
            # 404s would measure nothing).
            for _ in $(seq 100); do
                curl -sf -o /dev/null -X POST "http://127.0.0.1:$PORT/nacos/v1/cs/configs" \
                    -d "dataId=wrk-read&group=WRK&content=value-1" || true
                [ "$(curl -sf "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=wrk-read&group=WRK")" = value-1 ] && break
                sleep 0.1
            done
        fi
        c0=$(cpu_s "$PID")
        read_=$(wrk_run "r$round-$server-read" "http://127.0.0.1:$PORT/nacos/v1/cs/configs?dataId=wrk-read&group=WRK")
        read_cpu=$(awk -v a="$c0" -v b="$(cpu_s "$PID")" 'BEGIN {printf "%.1f", b - a}')
        read_rss=$(rss_mib "$PID")
        # nginx' master is PID; its workers hold the connections: RSS and CPU of the
        # master alone would say nothing, so nginx shows only its rate.
        [ "$server" = nginx ] && idle="–" read_rss="–" read_cpu="–"
        set -- $pub
        p_rps=$1 p_lat="$2 / $3" p_bad=$4
        set -- $read_
        echo "| $round | $server | $idle | $p_rps | $p_lat | $pub_rss | $1 | $2 / $3 | $read_rss | $pub_cpu / $read_cpu | $((p_bad + $4)) |" |
            tee -a "$OUT/summary.md"
        stop
    done
done
echo "results in $OUT"
