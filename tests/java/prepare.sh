#!/usr/bin/env bash
# Builds the Java driver of tests/sdk_java.rs (tests/java/pom.xml): one
# module per Nacos Java client generation (nacos2/, nacos3/), each leaving
# target/classes and target/classpath.txt. Idempotent: does nothing when
# both are newer than every pom and source. Maven downloads go to ~/.m2.
set -euo pipefail
cd "$(dirname "$0")"

fresh() {
    local module=$1
    local stamp="$module/target/classpath.txt"
    [[ -s $stamp && -f $module/target/classes/tacos/sdk/Driver.class ]] || return 1
    # Any pom, source or resource newer than the last build?
    [[ -z $(find pom.xml "$module/pom.xml" src "$module/src" -newer "$stamp" -type f 2>/dev/null | head -1) ]]
}

if fresh nacos2 && fresh nacos3; then
    exit 0
fi
command -v mvn >/dev/null || { echo "prepare.sh: mvn (Maven 3.8+) is not installed" >&2; exit 1; }
command -v java >/dev/null || { echo "prepare.sh: java (JDK 17) is not installed" >&2; exit 1; }
echo "building the Java SDK driver (tests/java) ..." >&2
# (-q still prints bare color resets; strip them.)
mvn -q -B -Dstyle.color=never package 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
# The classpath file is written before the jar; touch it last so the check
# above compares against the end of this build.
touch nacos2/target/classpath.txt nacos3/target/classpath.txt
