#!/usr/bin/env bash
# The project's test command: formatting, lints, every test in the workspace,
# then the fault tests (a build with failpoints).
# README.md and .ci/run both call this script.
set -euo pipefail
cd "$(dirname "$0")/.."

# Real client SDKs the integration tests drive.
if ! python3 -c "import nacos" 2>/dev/null; then
  echo "== installing nacos-sdk-python (PyPI) for the SDK tests"
  python3 -m pip install --quiet "nacos-sdk-python>=2,<3"
fi

# The 3.x SDK (gRPC, module v2.nacos) shares the 2.x package's name, so it
# lives in a venv of its own; the failover tests (tests/failover.rs) run it.
PY3_SDK=tests/sdk/.venv-py3
if ! "$PY3_SDK/bin/python" -c "import v2.nacos" 2>/dev/null; then
  echo "== installing nacos-sdk-python 3.x (PyPI) in $PY3_SDK for the failover tests"
  python3 -m venv "$PY3_SDK"
  "$PY3_SDK/bin/python" -m pip install --quiet "nacos-sdk-python>=3,<4"
fi

if ! [ -d tests/sdk/node_modules/nacos ]; then
  echo "== installing the npm nacos SDK for the SDK tests"
  (cd tests/sdk && npm install --no-audit --no-fund --silent)
fi

# The console's end-to-end test (tests/console.rs) drives Debian's Chromium
# with npm playwright-core.
if ! [ -x /usr/bin/chromium ]; then
  echo "== installing Debian chromium for the console tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium
fi

# Its screenshots of the Chinese pages need a CJK font.
if ! fc-list :lang=zh | grep -q .; then
  echo "== installing a CJK font (fonts-wqy-zenhei) for the console screenshots"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fonts-wqy-zenhei
fi

# The Java Nacos (MySQL) migration tests (migrations/tests/nacos_mysql_*.rs)
# start a private MariaDB of their own; they need Debian's server and client.
if ! command -v mariadbd >/dev/null 2>&1 && ! [ -x /usr/sbin/mariadbd ]; then
  echo "== installing Debian mariadb-server for the MySQL migration tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mariadb-server mariadb-client
fi

# The LDAP login tests (tests/ldap.rs) start a private slapd with a seeded
# tree and make throwaway TLS certificates with openssl.
if ! [ -x /usr/sbin/slapd ] || ! command -v openssl >/dev/null 2>&1; then
  echo "== installing Debian slapd, ldap-utils and openssl for the LDAP tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq slapd ldap-utils openssl
fi

if ! [ -d tests/console/node_modules/playwright-core ]; then
  echo "== installing npm playwright-core for the console tests"
  (cd tests/console && npm install --no-audit --no-fund --silent)
fi

# The Java and Go SDK drivers: Maven nacos-client 2.x and 3.x (tests/java,
# tests/sdk_java.rs), Spring Cloud Alibaba (tests/spring, tests/sdk_spring.rs)
# and Go nacos-sdk-go (tests/go, tests/sdk_go.rs, tests/failover.rs). Their
# downloads are cached per machine (~/.m2, Go's module cache); each prepare
# script does nothing when its build is newer than its sources.
if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
  echo "== installing Debian openjdk-17-jdk-headless and maven for the Java SDK tests"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven
fi
if ! command -v go >/dev/null 2>&1; then
  echo "go (1.26 or newer, tests/go/go.mod) is required for the Go SDK tests" >&2
  exit 1
fi
echo "== building the Java, Spring and Go SDK drivers (cached when unchanged)"
tests/java/prepare.sh
tests/spring/prepare.sh
tests/go/prepare.sh

echo "== the console's committed bundle matches its source (console-bundle/)"
scripts/build-console.sh --check

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
# The fault harness (tests/faults/) and the failpoints exist only with the
# fault-injection feature.
cargo clippy -p tacos --all-targets --features fault-injection -- -D warnings

echo "== cargo test"
cargo test --workspace --no-fail-fast

echo "== fault tests (short mode: kill, partition, pause the leader; ENOSPC on a follower)"
cargo test -p tacos --features fault-injection --test faults
