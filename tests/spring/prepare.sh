#!/usr/bin/env bash
# Builds the Spring Cloud Alibaba app that tests/sdk_spring.rs drives:
# tests/spring/target/tacos-spring-app.jar (an executable Spring Boot jar).
# Idempotent: does nothing when the jar is newer than the pom and every
# source file. Maven downloads go to ~/.m2 (cached per machine).
# Needs JDK 17+ and Maven (scripts/test.sh installs Debian's when missing).
set -euo pipefail
cd "$(dirname "$0")"

JAR=target/tacos-spring-app.jar

if [ -f "$JAR" ] && [ -z "$(find pom.xml src -newer "$JAR" -print -quit)" ]; then
  exit 0
fi

command -v mvn >/dev/null || { echo "tests/spring/prepare.sh: mvn (Maven 3.8+) is not installed (scripts/test.sh installs it)" >&2; exit 1; }
command -v java >/dev/null || { echo "tests/spring/prepare.sh: java (JDK 17+) is not installed (scripts/test.sh installs it)" >&2; exit 1; }

echo "== building tests/spring (Spring Boot app with spring-cloud-starter-alibaba-nacos-config)"
mvn -q -B -Dstyle.color=never package -DskipTests
test -f "$JAR"
touch "$JAR"
