#!/usr/bin/env bash
# Run a local three-node tacos cluster for manual testing and fault drills.
#
# Usage: ./test_cluster.sh <command> [N]
#
#   start [N]    build target/release/tacos if it is missing or older than the
#                sources, then start every node (or only node N) that is not
#                already running, wait until the cluster is healthy with three
#                voters, and print the status table
#   start --learners L
#                as start, with L learners (read replicas, nodes 4..3+L,
#                started with --join and --learner); L is recorded in
#                cluster_example/learners and kept by later commands (a
#                larger L adds learners; to have fewer, clean first)
#   stop [N]     SIGTERM every node (or node N), SIGKILL after 15 s
#   kill [N]     SIGKILL every node (or node N), e.g. to drill a leader crash
#   restart [N]  stop, then start (every node, or only node N)
#   status       one row per node: pid, HTTP port, Raft state, term, leader,
#                last log index, committed, applied
#   clean        stop every node, then delete cluster_example/
#
# Node N (1..3, and 4.. for learners) listens for HTTP on BASE+N-1, for Nacos gRPC on BASE+N-1+1000
# (where the official SDKs look for it) and for cluster traffic on
# BASE+N-1+2001, where BASE is $TACOS_BASE_PORT (default 8848): HTTP
# 8848/8849/8850, gRPC 9848/9849/9850 and cluster 10849/10850/10851 (the
# default cluster port, HTTP+1001, would collide with the next node's gRPC). The addresses end up in the Raft
# membership, so BASE is recorded in cluster_example/base_port on the first
# start and reused; to change it, clean first. Node 1 initializes the cluster
# on first start; nodes 2 and 3 join it. Everything lives under
# cluster_example/node<N>/: data/ (the Raft data dir), tacos.log (plain
# text, appended across restarts) and tacos.pid. Signals only ever go to the
# PIDs in those pid files, and only after /proc/<pid>/cmdline shows it is
# still this node's tacos. Other TACOS_* variables (e.g. TACOS_CLUSTER_TOKEN)
# are passed through to every node; TACOS_JOIN, TACOS_INIT and
# TACOS_ADVERTISE are not.
#
# TLS=1 (on start) runs a TLS cluster: a CA and one certificate per node
# (for localhost and 127.0.0.1, server and client use) are made with openssl
# into cluster_example/tls/ (ca.crt, node<N>.crt, node<N>.key), and every node
# serves them on its client ports (--cert-file, HTTPS and gRPC over TLS) and
# on its cluster port (--peer-cert-file, mutual TLS between the nodes, with
# --peer-trusted-ca-file and --trusted-ca-file ca.crt). The mode is recorded
# by cluster_example/tls/ and kept by later commands (TLS=1 is then not
# needed again); to go back to plaintext, clean first. Clients trust the CA:
#   curl --cacert cluster_example/tls/ca.crt https://127.0.0.1:8848/health
#
# Admin routes need a login: node 1 generates the first admin's password
# (user nacos) at the first start into cluster_example/node1/data/
# initial-admin-password, which status reads; or set TACOS_ADMIN_PASSWORD
# before the first start (and keep it set if you change it later).
#
# Examples:
#   ./test_cluster.sh start
#   curl -XPOST 127.0.0.1:8849/nacos/v1/cs/configs -d 'dataId=a&group=G&content=x'
#   curl '127.0.0.1:8850/nacos/v1/cs/configs?dataId=a&group=G'
#   ./test_cluster.sh kill 1 && sleep 5 && ./test_cluster.sh status
#   ./test_cluster.sh restart 1
#   ./test_cluster.sh clean
#   TLS=1 ./test_cluster.sh start
#   curl --cacert cluster_example/tls/ca.crt 'https://127.0.0.1:8850/nacos/v1/cs/configs?dataId=a&group=G'
set -euo pipefail
cd "$(dirname "$0")"

BIN=target/release/tacos
ROOT="$PWD/cluster_example"
BASE_FILE="$ROOT/base_port"
BASE_PORT=${TACOS_BASE_PORT:-8848}
LEARNERS_FILE="$ROOT/learners"
TLS_DIR="$ROOT/tls"
MAX_LEARNERS=8
NODES=(1 2 3)
START_TIMEOUT=60 # seconds for the cluster to become healthy
STOP_TIMEOUT=15  # seconds between SIGTERM and SIGKILL

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2
  exit 2
}

die() {
  echo "error: $*" >&2
  exit 1
}

# TLS is on if asked (TLS=1) or if the cluster was made with it.
tls_on() { [ "${TLS:-0}" = 1 ] || [ -f "$TLS_DIR/ca.crt" ]; }
scheme() { if tls_on; then echo https; else echo http; fi; }

# curl to a node: over TLS trusting the cluster's CA when TLS is on.
node_curl() {
  if tls_on; then
    curl --cacert "$TLS_DIR/ca.crt" "$@"
  else
    curl "$@"
  fi
}

http_port() { echo $((BASE_PORT + $1 - 1)); }
grpc_port() { echo $((BASE_PORT + $1 - 1 + 1000)); }
cluster_port() { echo $((BASE_PORT + $1 - 1 + 2001)); }
node_dir() { echo "$ROOT/node$1"; }
pid_file() { echo "$ROOT/node$1/tacos.pid"; }
log_file() { echo "$ROOT/node$1/tacos.log"; }

# The nodes a command applies to: all of them, or the one given (validated
# in main).
select_nodes() {
  if [ -z "${1:-}" ]; then
    echo "${NODES[@]}"
  else
    echo "$1"
  fi
}

# True if PID is alive and is node N's tacos (zombies have an empty cmdline).
is_node_process() {
  local n=$1 pid=$2 cmdline
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmdline" == *tacos* && "$cmdline" == *"--data-dir $(node_dir "$n")/data "* ]]
}

# Print node N's PID if it is running; otherwise drop a stale pid file.
running_pid() {
  local n=$1 file pid
  file=$(pid_file "$n")
  [ -f "$file" ] || return 1
  pid=$(cat "$file" 2>/dev/null || true)
  if is_node_process "$n" "$pid"; then
    echo "$pid"
  else
    rm -f "$file"
    return 1
  fi
}

# --- status ----------------------------------------------------------------

# The admin password: $TACOS_ADMIN_PASSWORD, else the one node 1 generated
# at the first start (cluster_example/node1/data/initial-admin-password).
admin_password() {
  if [ -n "${TACOS_ADMIN_PASSWORD:-}" ]; then
    echo "$TACOS_ADMIN_PASSWORD"
  elif [ -r "$ROOT/node1/data/initial-admin-password" ]; then
    cat "$ROOT/node1/data/initial-admin-password"
  fi
}

# This node's Raft view (JSON), or nothing if it does not answer. The admin
# route needs a login; the password goes to curl on stdin, not argv.
raft_json() {
  local password
  password=$(admin_password)
  printf 'user = "%s:%s"\n' "${TACOS_ADMIN_USERNAME:-nacos}" "$password" |
    node_curl -sf --max-time 2 -K - "$(scheme)://127.0.0.1:$(http_port "$1")/tacos/v1/admin/raft" 2>/dev/null || true
}

health_ok() {
  [ "$(node_curl -s -o /dev/null -w '%{http_code}' --max-time 2 \
    "$(scheme)://127.0.0.1:$(http_port "$1")/health" 2>/dev/null || true)" = 200 ]
}

# Fields of a Raft view, tab-separated; "-" for null or missing.
raft_fields() {
  python3 -c '
import json, sys
try:
    d = json.load(sys.stdin)
except ValueError:
    sys.exit(1)
f = lambda k: "-" if d.get(k) is None else str(d[k])
print("\t".join(f(k) for k in ("state", "term", "leader", "lastLogIndex", "committed", "applied")))
'
}

cmd_status() {
  local fmt="%-4s  %-8s  %-5s  %-9s  %-5s  %-6s  %-8s  %-9s  %s\n"
  local n pid json state term leader last committed applied
  # shellcheck disable=SC2059 # the format is a constant above
  printf "$fmt" node pid http state term leader last_log committed applied
  for n in "${NODES[@]}"; do
    pid=$(running_pid "$n") || pid=-
    json=$(raft_json "$n")
    if [ -n "$json" ] && IFS=$'\t' read -r state term leader last committed applied \
      < <(raft_fields <<<"$json"); then
      :
    else
      state=down term=- leader=- last=- committed=- applied=-
    fi
    # shellcheck disable=SC2059
    printf "$fmt" "$n" "$pid" "$(http_port "$n")" "$state" "$term" "$leader" \
      "$last" "$committed" "$applied"
  done
}

# --- start -----------------------------------------------------------------

# The CA and node N's certificate (localhost, 127.0.0.1; server and client
# use, as the cluster port needs both), made once with openssl.
make_certs() {
  local n=$1 key csr ext
  command -v openssl >/dev/null 2>&1 || die "TLS=1 needs openssl"
  mkdir -p "$TLS_DIR"
  if [ ! -f "$TLS_DIR/ca.crt" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$TLS_DIR/ca.key" -out "$TLS_DIR/ca.crt.tmp" -days 365 \
      -subj "/CN=tacos test_cluster CA" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null ||
      die "openssl could not make the CA"
    chmod 600 "$TLS_DIR/ca.key"
    mv "$TLS_DIR/ca.crt.tmp" "$TLS_DIR/ca.crt"
  fi
  [ -f "$TLS_DIR/node$n.crt" ] && return 0
  key="$TLS_DIR/node$n.key"
  csr="$TLS_DIR/node$n.csr"
  ext="$TLS_DIR/node$n.ext"
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    "extendedKeyUsage=serverAuth,clientAuth" "keyUsage=critical,digitalSignature" \
    "basicConstraints=CA:FALSE" >"$ext"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$key" -out "$csr" -subj "/CN=tacos node $n" 2>/dev/null &&
    openssl x509 -req -in "$csr" -CA "$TLS_DIR/ca.crt" -CAkey "$TLS_DIR/ca.key" \
      -CAcreateserial -days 90 -extfile "$ext" -out "$TLS_DIR/node$n.crt.tmp" 2>/dev/null ||
    die "openssl could not make node $n's certificate"
  chmod 600 "$key"
  mv "$TLS_DIR/node$n.crt.tmp" "$TLS_DIR/node$n.crt"
  rm -f "$csr" "$ext"
}

# Node N's TLS flags (client ports and cluster port).
tls_args() {
  local n=$1
  echo --cert-file "$TLS_DIR/node$n.crt" --key-file "$TLS_DIR/node$n.key" \
    --trusted-ca-file "$TLS_DIR/ca.crt" \
    --peer-cert-file "$TLS_DIR/node$n.crt" --peer-key-file "$TLS_DIR/node$n.key" \
    --peer-trusted-ca-file "$TLS_DIR/ca.crt"
}

# What to type to talk to the cluster.
print_usage_hint() {
  local ca="" s
  s=$(scheme)
  tls_on && ca="--cacert $TLS_DIR/ca.crt "
  echo
  echo "try:"
  echo "  curl ${ca}-XPOST '$s://127.0.0.1:$(http_port 2)/nacos/v1/cs/configs' -d 'dataId=a&group=G&content=x'"
  echo "  curl ${ca}'$s://127.0.0.1:$(http_port 3)/nacos/v1/cs/configs?dataId=a&group=G'"
  if tls_on; then
    echo "  (gRPC clients: TLS to 127.0.0.1:$(grpc_port 1), trusting $TLS_DIR/ca.crt)"
  fi
}

build_if_stale() {
  local newer
  if [ -x "$BIN" ]; then
    newer=$(find src proto build.rs Cargo.toml Cargo.lock -newer "$BIN" -print -quit 2>/dev/null)
    [ -z "$newer" ] && return 0
    echo "== $BIN is older than $newer; rebuilding"
  else
    echo "== $BIN is missing; building"
  fi
  cargo build --release --bin tacos
}

# Is something listening on PORT (any address)?
port_taken() {
  local port=$1
  if command -v ss >/dev/null 2>&1; then
    [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
  fi
}

# Who listens on PORT, if ss can tell (it needs privileges for others' sockets).
port_owner() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'users:(.*)' | head -n 1 || true
}

check_ports() {
  local n port owner busy=0
  for n in "$@"; do
    for port in "$(http_port "$n")" "$(grpc_port "$n")" "$(cluster_port "$n")"; do
      if port_taken "$port"; then
        owner=$(port_owner "$port")
        echo "port $port (node $n) is already in use${owner:+ by $owner}" >&2
        busy=1
      fi
    done
  done
  [ "$busy" = 0 ] || die "free the port(s) above, or (on a fresh cluster_example/) set TACOS_BASE_PORT; nothing started"
}

# The cluster address a new node joins through: the first other running node
# (node 1 when starting everything). Ignored once the data dir is in a cluster.
join_addr() {
  local n=$1 m
  for m in "${NODES[@]}"; do
    if [ "$m" != "$n" ] && running_pid "$m" >/dev/null; then
      echo "127.0.0.1:$(cluster_port "$m")"
      return
    fi
  done
  echo "127.0.0.1:$(cluster_port 1)"
}

start_node() {
  local n=$1 dir log
  dir=$(node_dir "$n")
  log=$(log_file "$n")
  mkdir -p "$dir/data"
  local args=(--node-id "$n" --data-dir "$dir/data" --bind 127.0.0.1
    --http-port "$(http_port "$n")" --grpc-port "$(grpc_port "$n")"
    --cluster-port "$(cluster_port "$n")")
  [ "$n" = 1 ] || args+=(--join "$(join_addr "$n")")
  [ "$n" -le 3 ] || args+=(--learner)
  if tls_on; then
    make_certs "$n"
    # shellcheck disable=SC2207 # the paths have no spaces (checked in main)
    args+=($(tls_args "$n"))
  fi
  echo "=== $(date '+%F %T') starting node $n: tacos ${args[*]}" >>"$log"
  # The inner shell writes its own PID (exec keeps it for tacos), so the pid
  # file is right whether or not setsid had to fork.
  # shellcheck disable=SC2016 # $$, $0 and $@ are for the inner shell
  RUST_LOG=${RUST_LOG:-info,openraft=warn} NO_COLOR=1 \
    setsid nohup env -u TACOS_JOIN -u TACOS_INIT -u TACOS_ADVERTISE \
    bash -c 'echo $$ >"$0"; exec "$@"' "$(pid_file "$n")" "$PWD/$BIN" "${args[@]}" \
    </dev/null >>"$log" 2>&1 &
  local i
  for i in $(seq 50); do
    [ -s "$(pid_file "$n")" ] && break
    sleep 0.1
  done
  echo "started node $n (pid $(cat "$(pid_file "$n")" 2>/dev/null || echo '?'), http $(http_port "$n"), grpc $(grpc_port "$n"), cluster $(cluster_port "$n"))"
}

show_logs() {
  local n
  for n in "${NODES[@]}"; do
    [ -f "$(log_file "$n")" ] || continue
    echo "--- $(log_file "$n") (last 20 lines)" >&2
    tail -n 20 "$(log_file "$n")" >&2
  done
}

# "<leader id> <voter count>" from the leader's own Raft view, or nothing.
leader_voters() {
  local n json leader
  for n in "${NODES[@]}"; do
    json=$(raft_json "$n")
    [ -n "$json" ] || continue
    leader=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("leader") or "")' <<<"$json")
    [[ "$leader" =~ ^[1-3]$ ]] || continue
    json=$(raft_json "$leader")
    [ -n "$json" ] || return 0
    python3 -c '
import json, sys
d = json.load(sys.stdin)
if d.get("state") == "Leader":
    print(d["nodeId"], len(d["members"]["voters"]))
' <<<"$json"
    return 0
  done
}

# Wait until the nodes just started are still alive, every running node
# reports healthy, and the leader counts three voters.
wait_healthy() {
  local started=("$@") deadline n ok lv
  deadline=$((SECONDS + START_TIMEOUT))
  while :; do
    for n in "${started[@]}"; do
      if ! running_pid "$n" >/dev/null; then
        show_logs
        die "node $n exited during startup (see $(log_file "$n"))"
      fi
    done
    ok=1
    for n in "${NODES[@]}"; do
      running_pid "$n" >/dev/null || continue
      health_ok "$n" || ok=0
    done
    if [ "$ok" = 1 ]; then
      lv=$(leader_voters)
      [ "${lv#* }" = 3 ] && return 0
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      cmd_status >&2 || true
      show_logs
      die "cluster not healthy with 3 voters after ${START_TIMEOUT}s (started nodes are left running for inspection; ./test_cluster.sh stop)"
    fi
    sleep 0.5
  done
}

cmd_start() {
  local n pid todo=()
  for n in $(select_nodes "${1:-}"); do
    if pid=$(running_pid "$n"); then
      echo "node $n is already running (pid $pid)"
    else
      todo+=("$n")
    fi
  done
  if [ ${#todo[@]} -gt 0 ]; then
    check_ports "${todo[@]}"
    build_if_stale
    mkdir -p "$ROOT"
    [ -f "$BASE_FILE" ] || echo "$BASE_PORT" >"$BASE_FILE"
    echo "$((${#NODES[@]} - 3))" >"$LEARNERS_FILE"
    for n in "${todo[@]}"; do
      start_node "$n"
    done
    echo "waiting up to ${START_TIMEOUT}s for a healthy cluster with 3 voters..."
    wait_healthy "${todo[@]}"
  fi
  cmd_status
  print_usage_hint
}

# --- stop / kill -----------------------------------------------------------

cmd_stop() {
  local n pid pids=() nodes=() deadline
  for n in $(select_nodes "${1:-}"); do
    if pid=$(running_pid "$n"); then
      echo "stopping node $n (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
      nodes+=("$n")
    else
      echo "node $n is not running"
    fi
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  deadline=$((SECONDS + STOP_TIMEOUT))
  local i alive
  while :; do
    alive=0
    for i in "${!pids[@]}"; do
      is_node_process "${nodes[$i]}" "${pids[$i]}" && alive=1
    done
    [ "$alive" = 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      for i in "${!pids[@]}"; do
        if is_node_process "${nodes[$i]}" "${pids[$i]}"; then
          echo "node ${nodes[$i]} (pid ${pids[$i]}) still running after ${STOP_TIMEOUT}s; sending SIGKILL"
          kill -KILL "${pids[$i]}" 2>/dev/null || true
        fi
      done
      sleep 0.5
      break
    fi
    sleep 0.2
  done
  for n in "${nodes[@]}"; do
    rm -f "$(pid_file "$n")"
  done
}

cmd_kill() {
  local n pid
  for n in $(select_nodes "${1:-}"); do
    if pid=$(running_pid "$n"); then
      echo "killing node $n (pid $pid) with SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 25); do
        is_node_process "$n" "$pid" || break
        sleep 0.2
      done
      rm -f "$(pid_file "$n")"
    else
      echo "node $n is not running"
    fi
  done
}

cmd_clean() {
  cmd_stop
  echo "removing $ROOT"
  rm -rf "$ROOT"
}

# The ports of an existing cluster_example/ are fixed: reuse its BASE, and
# refuse a different TACOS_BASE_PORT.
load_base_port() {
  local stored
  [ -f "$BASE_FILE" ] || return 0
  stored=$(cat "$BASE_FILE")
  if [ -n "${TACOS_BASE_PORT:-}" ] && [ "$TACOS_BASE_PORT" != "$stored" ]; then
    die "cluster_example/ was created with TACOS_BASE_PORT=$stored; use that, or run '$0 clean' first"
  fi
  BASE_PORT=$stored
}

# --- main ------------------------------------------------------------------

[ $# -ge 1 ] || usage
command -v python3 >/dev/null 2>&1 || die "python3 is required"
command -v curl >/dev/null 2>&1 || die "curl is required"
cmd=$1
shift
learners=0
[ -f "$LEARNERS_FILE" ] && learners=$(cat "$LEARNERS_FILE")
if [ "$cmd" = start ] && [ "${1:-}" = --learners ]; then
  [ $# -eq 2 ] || usage
  [[ "$2" =~ ^[0-9]+$ ]] && [ "$2" -le "$MAX_LEARNERS" ] ||
    die "--learners takes a count from 0 to $MAX_LEARNERS (got '$2')"
  [ "$2" -ge "$learners" ] ||
    die "cluster_example/ has $learners learners; to have fewer, run '$0 clean' first"
  learners=$2
  set --
fi
for ((k = 1; k <= learners; k++)); do NODES+=($((3 + k))); done
[ $# -le 1 ] || usage
if [ $# -eq 1 ] && ! [[ "$1" =~ ^[0-9]+$ && "$1" -ge 1 && "$1" -le ${#NODES[@]} ]]; then
  echo "error: node must be 1 to ${#NODES[@]} (got '$1')" >&2
  usage
fi
if ! [[ "$BASE_PORT" =~ ^[0-9]+$ ]] || [ "$BASE_PORT" -lt 1 ] || [ "$BASE_PORT" -gt 64532 ]; then
  die "TACOS_BASE_PORT must be a port number from 1 to 64532 (got '$BASE_PORT')"
fi
case "$cmd" in
  start | restart | status) load_base_port ;;
esac
if tls_on && [[ "$ROOT" == *[[:space:]]* ]]; then
  die "TLS=1 needs a checkout path without spaces (got $ROOT)"
fi
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  kill) cmd_kill "$@" ;;
  restart)
    cmd_stop "$@"
    cmd_start "$@"
    ;;
  status) cmd_status ;;
  clean) cmd_clean ;;
  *) usage ;;
esac
