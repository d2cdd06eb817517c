#!/usr/bin/env bash
# Builds the Spring Cloud Alibaba app that tests/sdk_spring.rs drives:
# tests/spring/target/tacos-spring-app.jar (an executable Spring Boot jar).
# Idempotent: does nothing when the jar is newer than the pom and every
# source file. Maven downloads go to ~/.m2 (cached per machine).
# Needs JDK 17+ and Maven; installs Debian's when missing (as root or sudo).
set -euo pipefail
cd "$(dirname "$0")"

JAR=target/tacos-spring-app.jar

if [ -f "$JAR" ] && [ -z "$(find pom.xml src -newer "$JAR" -print -quit)" ]; then
  exit 0
fi

java_major() {
  "$1" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = //p' | cut -d. -f1
}

if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1 ||
  [ "$(java_major java)" -lt 17 ] 2>/dev/null; then
  if ! [ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ] || ! command -v mvn >/dev/null 2>&1; then
    echo "== installing Debian openjdk-17-jdk-headless and maven for the Spring test"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven
  fi
fi

# Maven runs on JAVA_HOME when set; point it at a JDK 17 if the default is older.
if [ -z "${JAVA_HOME:-}" ] && [ "$(java_major java)" -lt 17 ] 2>/dev/null &&
  [ -d /usr/lib/jvm/java-17-openjdk-amd64 ]; then
  export JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
fi

echo "== building tests/spring (Spring Boot app with spring-cloud-starter-alibaba-nacos-config)"
mvn -q -B -Dstyle.color=never package -DskipTests
test -f "$JAR"
touch "$JAR"
