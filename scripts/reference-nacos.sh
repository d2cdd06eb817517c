#!/usr/bin/env bash
# Starts and stops Java Nacos standalone (embedded Derby) as the reference
# server the differential scenarios are recorded against
# (tests/reference/README.md, docs/compat-diff.md).
#
#   scripts/reference-nacos.sh start GEN PORT   # GEN: 2 or 3
#   scripts/reference-nacos.sh stop GEN PORT
#
# `start` returns once the server answers on http://127.0.0.1:PORT/nacos,
# with the `nacos` user's password set to $REFERENCE_NACOS_PASSWORD
# (default: the tests' admin password). gRPC listens on PORT+1000 as Nacos
# has it; Nacos 3's console on PORT+1. Auth is as Nacos 3 ships it: the
# client API open, the admin and console APIs behind login (Nacos 2 has a
# single switch: it is off, as in its default configuration). Nacos 3 keeps
# its 2.x admin and console APIs on (`nacos.core.api.compatibility.*`), as
# Tacos does, so the v1/v2 scripts compare with both generations.
# $REFERENCE_NACOS_PROPERTIES adds `key=value` words to its
# application.properties. `stop` stops the server and removes its data;
# `properties` prints the application.properties `start` writes.
#
# The server: Java Nacos does not publish its server modules to Maven
# Central (com.alibaba.nacos:nacos-bootstrap, nacos-console, nacos-server
# and nacos-config after 0.8.0 are not there; only the client, api and
# common are), so the script runs an official server jar you give it:
# $REFERENCE_NACOS2_JAR / $REFERENCE_NACOS3_JAR, the `target/nacos-server.jar`
# of a release (nacos-server-X.Y.Z.zip) or of a build of the release tag.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|properties GEN PORT   (GEN: 2 or 3)" >&2
  exit 2
}
[ $# -eq 3 ] || usage
action=$1 gen=$2 port=$3
case "$gen" in 2 | 3) ;; *) usage ;; esac
case "$port" in '' | *[!0-9]*) usage ;; esac

password=${REFERENCE_NACOS_PASSWORD:-test-admin-password}
home="${TMPDIR:-/tmp}/tacos-reference-nacos$gen-$port"
base="http://127.0.0.1:$port/nacos"

# The server's conf/application.properties (`properties GEN PORT` prints it;
# qa's Java Nacos baseline writes the same file from it).
properties() {
# A secret for the token plugin (base64 of 32 bytes) and a server identity,
# both required once any auth switch is on.
secret=$(printf 'tacos-reference-token-secret-key' | base64)
if [ "$gen" = 3 ]; then
  cat <<EOF
nacos.server.main.port=$port
nacos.server.contextPath=/nacos
nacos.console.port=$((port + 1))
nacos.console.contextPath=
nacos.console.remote.server.context-path=/nacos
nacos.deployment.type=merged
server.error.include-message=ALWAYS
nacos.core.auth.system.type=nacos
nacos.core.auth.enabled=false
nacos.core.auth.admin.enabled=true
nacos.core.auth.console.enabled=true
nacos.core.auth.server.identity.key=tacos-reference
nacos.core.auth.server.identity.value=tacos-reference
nacos.core.auth.plugin.nacos.token.expire.seconds=18000
nacos.core.auth.plugin.nacos.token.secret.key=$secret
nacos.istio.mcp.server.enabled=false
nacos.k8s.sync.enabled=false
nacos.ai.mcp.registry.enabled=false
nacos.core.api.compatibility.client.enabled=true
nacos.core.api.compatibility.admin.enabled=true
nacos.core.api.compatibility.console.enabled=true
EOF
else
  cat <<EOF
server.port=$port
server.servlet.contextPath=/nacos
server.error.include-message=ALWAYS
nacos.core.auth.system.type=nacos
nacos.core.auth.enabled=false
nacos.core.auth.server.identity.key=tacos-reference
nacos.core.auth.server.identity.value=tacos-reference
nacos.core.auth.plugin.nacos.token.expire.seconds=18000
nacos.core.auth.plugin.nacos.token.secret.key=$secret
nacos.istio.mcp.server.enabled=false
EOF
fi
}

stop() {
  if [ -f "$home/pid" ]; then
    pid=$(cat "$home/pid")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$home"
}

if [ "$action" = properties ]; then
  properties
  exit 0
fi
if [ "$action" = stop ]; then
  stop
  exit 0
fi
[ "$action" = start ] || usage

jar_var="REFERENCE_NACOS${gen}_JAR"
jar=${!jar_var:-}
if [ -z "$jar" ] || ! [ -f "$jar" ]; then
  echo "no Java Nacos $gen.x server jar: set $jar_var to the target/nacos-server.jar of a" >&2
  echo "Nacos $gen.x release (its server modules are not on Maven Central)" >&2
  exit 1
fi
java=${REFERENCE_NACOS_JAVA:-java}

stop
mkdir -p "$home/conf" "$home/logs"
properties >"$home/conf/application.properties"

# Extra properties (a scenario's `# reference: ... with k=v` words).
for property in ${REFERENCE_NACOS_PROPERTIES:-}; do
  echo "$property" >>"$home/conf/application.properties"
done

# The JVM flags of Nacos' own startup.sh in standalone mode (heap 512 MiB,
# the JDK's default GC); REFERENCE_NACOS_JVM replaces the heap flags.
# shellcheck disable=SC2086
(
  cd "$home"
  exec "$java" ${REFERENCE_NACOS_JVM:--Xms512m -Xmx512m -Xmn256m} \
    -XX:-OmitStackTraceInFastThrow -Dnacos.standalone=true -Dnacos.home="$home" -Dnacos.logs.path="$home/logs" \
    -Dnacos.member.list= -jar "$jar" \
    --spring.config.additional-location="file:$home/conf/" \
    >"$home/logs/stdout.log" 2>&1
) &
echo $! >"$home/pid"

ready=""
for _ in $(seq 1 600); do
  if ! kill -0 "$(cat "$home/pid")" 2>/dev/null; then
    echo "Java Nacos $gen.x exited while starting; its log:" >&2
    tail -40 "$home/logs/stdout.log" >&2
    exit 1
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/cs/configs?dataId=reference.ready&group=DEFAULT_GROUP" || true)
  # 404 (or 200): it answers; 403 with auth on.
  if [ "$code" = 404 ] || [ "$code" = 200 ] || [ "$code" = 403 ]; then
    ready=1
    break
  fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "Java Nacos $gen.x did not answer on $base within 300 s; its log:" >&2
  tail -40 "$home/logs/stdout.log" >&2
  stop
  exit 1
fi

# The admin's password: Nacos 2.4+ and 3 have no admin until one is set.
if [ "$gen" = 3 ]; then
  answer=$(curl -s -w ' (HTTP %{http_code})' -X POST "$base/v3/auth/user/admin" \
    --data-urlencode "password=$password" || true)
else
  answer=$(curl -s -w ' (HTTP %{http_code})' -X POST "$base/v1/auth/users/admin" \
    --data-urlencode "password=$password" || true)
fi
case "$answer" in
  *"(HTTP 200)") ;;
  *) echo "setting the admin password of Java Nacos $gen.x failed: $answer" >&2; stop; exit 1 ;;
esac

# Nacos reloads its user cache every few seconds: wait until the admin can
# log in.
for _ in $(seq 1 60); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$base/v1/auth/login" \
    --data-urlencode "username=nacos" --data-urlencode "password=$password" || true)
  [ "$code" = 200 ] && break
  sleep 0.5
done
[ "$code" = 200 ] || { echo "the admin cannot log in to Java Nacos $gen.x (HTTP $code)" >&2; stop; exit 1; }
echo "Java Nacos $gen.x on $base (gRPC $((port + 1000))), data in $home"
