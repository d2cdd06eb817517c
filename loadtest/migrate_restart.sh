#!/usr/bin/env bash
# Moving in at scale, side by side: a synthetic r-nacos 0.8 data dir (CONFIGS x HISTORY
# versions, migrations/examples/gen_rnacos08.rs) is migrated with tacos-migrate (wall
# time and peak RSS from /usr/bin/time -v), then, ROUNDS times alternating, r-nacos is
# started on a copy of that dir and Tacos on a copy of the migrated one, and each is
# timed from its start until it serves the last config's newest version (r-nacos
# answers with older versions while it replays its log, so the content is checked).
# Everything on 127.0.0.1; the copies are removed at the end.
#
# Usage (after `cargo build --release -p tacos -p tacos-migrate --example gen_rnacos08`
# and `cargo install rnacos`):
#   RNACOS_BIN=/path/to/rnacos loadtest/migrate_restart.sh
# Settings: CONFIGS=100000 HISTORY=10 ROUNDS=2 PORT=28848 (gRPC PORT+1000)
#   BIN_DIR=target/release RNACOS_BIN=rnacos OUT=/tmp/migrate-restart-<time>
# Results: $OUT/results.md.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIGS=${CONFIGS:-100000}
HISTORY=${HISTORY:-10}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-28848}
BIN_DIR=${BIN_DIR:-$ROOT/target/release}
RNACOS_BIN=${RNACOS_BIN:-rnacos}
OUT=${OUT:-/tmp/migrate-restart-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
for bin in "$BIN_DIR/tacos" "$BIN_DIR/tacos-migrate" "$BIN_DIR/examples/gen_rnacos08"; do
  [ -x "$bin" ] || { echo "migrate_restart: no $bin (see Usage)" >&2; exit 2; }
done
command -v "$RNACOS_BIN" > /dev/null || { echo "migrate_restart: no $RNACOS_BIN" >&2; exit 2; }

SERVER=
cleanup() {
  [ -n "$SERVER" ] && { kill "$SERVER" 2> /dev/null || true; wait "$SERVER" 2> /dev/null || true; }
  rm -rf "$OUT/source" "$OUT/migrated" "$OUT/run"
}
trap cleanup EXIT INT TERM

# The last config's key and newest content (tests/common/gen08.rs: key_of, content_of).
last=$((CONFIGS - 1))
case $((last % 3)) in 0) tenant= ;; 1) tenant=dev ;; *) tenant=team.alpha ;; esac
query="dataId=config-$last.yaml&group=GROUP_$((last % 7))&tenant=$tenant"
newest="# revision $((HISTORY - 1))"

"$BIN_DIR/examples/gen_rnacos08" "$OUT/source" "$CONFIGS" "$HISTORY" > "$OUT/gen.log"
/usr/bin/time -v "$BIN_DIR/tacos-migrate" --from "$OUT/source" --to "$OUT/migrated" \
  > "$OUT/migrate.log" 2> "$OUT/migrate.time"
field() { awk -F': ' -v k="$1" '$0 ~ k { print $2 }' "$OUT/migrate.time"; }
{
  echo "# Moving in: $CONFIGS configs x $HISTORY versions ($(date -u +%F))"
  echo
  echo "tacos-migrate: $(field 'Elapsed') wall, $(field 'User time') s user, $(field 'System time') s system," \
    "peak RSS $(( $(field 'Maximum resident') / 1024 )) MiB"
  echo
  echo "| round | server | started until the newest version is served (s) | RSS then (MiB) | RSS 10 s later (MiB) |"
  echo "|---:|---|---:|---:|---:|"
} > "$OUT/results.md"

# serve ROUND KIND: starts KIND on a fresh copy, times it until it serves the newest
# version of the last config, samples its RSS, stops it.
serve() {
  local round=$1 kind=$2 started body served rss rss10
  rm -rf "$OUT/run"
  if [ "$kind" = tacos ]; then cp -r "$OUT/migrated" "$OUT/run"; else cp -r "$OUT/source" "$OUT/run"; fi
  sync
  started=$(date +%s.%N)
  if [ "$kind" = tacos ]; then
    TACOS_ADMIN_PASSWORD=migrate-restart-admin RUST_LOG=warn "$BIN_DIR/tacos" --data-dir "$OUT/run" \
      --bind 127.0.0.1 --node-id 1 --http-port "$PORT" --grpc-port $((PORT + 1000)) \
      --cluster-port $((PORT + 100)) > "$OUT/$kind-$round.log" 2>&1 &
  else
    RNACOS_HTTP_PORT=$PORT RNACOS_GRPC_PORT=$((PORT + 1000)) RNACOS_HTTP_CONSOLE_PORT=$((PORT + 200)) \
      RNACOS_SDK_HOST=127.0.0.1 RNACOS_CONSOLE_HOST=127.0.0.1 RNACOS_DATA_DIR="$OUT/run" \
      RNACOS_CONFIG_DB_DIR="$OUT/run" RNACOS_RAFT_NODE_ID=1 RNACOS_RAFT_NODE_ADDR="127.0.0.1:$((PORT + 1000))" \
      RNACOS_RAFT_AUTO_INIT=true RUST_LOG=warn "$RNACOS_BIN" > "$OUT/$kind-$round.log" 2>&1 &
  fi
  SERVER=$!
  local deadline=$((SECONDS + 600))
  until body=$(curl -s -m 2 "http://127.0.0.1:$PORT/nacos/v1/cs/configs?$query") && [[ $body == *"$newest"* ]]; do
    kill -0 "$SERVER" 2> /dev/null || { echo "migrate_restart: $kind exited ($OUT/$kind-$round.log)" >&2; exit 1; }
    [ $SECONDS -lt $deadline ] || { echo "migrate_restart: $kind did not serve in 600 s" >&2; exit 1; }
    sleep 0.1
  done
  served=$(date +%s.%N)
  rss=$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$SERVER/status")
  sleep 10
  rss10=$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$SERVER/status")
  kill "$SERVER"; wait "$SERVER" 2> /dev/null || true; SERVER=
  printf '| %s | %s | %.1f | %s | %s |\n' "$round" "$kind" "$(echo "$served - $started" | bc)" "$rss" "$rss10" \
    >> "$OUT/results.md"
}
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then order="rnacos tacos"; else order="tacos rnacos"; fi
  for kind in $order; do serve "$round" "$kind"; done
done
cat "$OUT/results.md"
