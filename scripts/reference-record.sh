#!/usr/bin/env bash
# Records the scenario scripts (tests/scenarios/*.txt) against Java Nacos:
# each script that speaks generation GEN (its `# reference:` line) is
# played against a fresh Java Nacos (scripts/reference-nacos.sh) and the
# script with Nacos' answers is written to tests/reference/nacos-VERSION/.
# tests/differential.rs then compares Tacos' answers with them.
#
#   scripts/reference-record.sh GEN [SCRIPT...]   # GEN: 2 or 3
#
# Needs $REFERENCE_NACOS2_JAR / $REFERENCE_NACOS3_JAR (see
# scripts/reference-nacos.sh). REFERENCE_PORT (default 18848) is the port.
set -euo pipefail
cd "$(dirname "$0")/.."

[ $# -ge 1 ] || { echo "usage: $0 GEN [SCRIPT...]   (GEN: 2 or 3)" >&2; exit 2; }
gen=$1
shift
case "$gen" in 2 | 3) ;; *) echo "GEN is 2 or 3" >&2; exit 2 ;; esac
jar_var="REFERENCE_NACOS${gen}_JAR"
jar=${!jar_var:-}
[ -f "$jar" ] || { echo "set $jar_var (scripts/reference-nacos.sh)" >&2; exit 1; }
version=$(unzip -p "$jar" META-INF/MANIFEST.MF | sed -n 's/^Implementation-Version: *//p' | tr -d '\r')
[ -n "$version" ] || { echo "$jar names no Implementation-Version" >&2; exit 1; }
case "$version" in "$gen".*) ;; *) echo "$jar is Nacos $version, not $gen.x" >&2; exit 1 ;; esac
port=${REFERENCE_PORT:-18848}
out="tests/reference/nacos-$version"
mkdir -p "$out"

if [ $# -gt 0 ]; then
  scripts=("$@")
else
  scripts=()
  for f in tests/scenarios/*.txt; do
    line=$(sed -n 's/^# reference: *//p' "$f" | head -1)
    gens=${line%% with *}
    case " $gens " in *" nacos-$gen "*) scripts+=("$(basename "$f" .txt)") ;; esac
  done
fi

export REFERENCE_NACOS_PASSWORD=${REFERENCE_NACOS_PASSWORD:-test-admin-password}
cargo test --quiet --test scenarios --no-run
failed=()
for name in "${scripts[@]}"; do
  line=$(sed -n 's/^# reference: *//p' "tests/scenarios/$name.txt" | head -1)
  # Tacos' defaults in Nacos' words first (a script's own words come after
  # them and win): Tacos runs without Nacos' parameter filter unless started
  # with --param-check, where Nacos 2.3+ and 3 ship it on.
  properties="nacos.core.param.check.enabled=false"
  case "$line" in *" with "*) properties="$properties ${line#* with }" ;; esac
  echo "== $name against Java Nacos $version ${properties:+(with $properties)}"
  REFERENCE_NACOS_PROPERTIES="$properties" scripts/reference-nacos.sh start "$gen" "$port" >/dev/null
  if ! REFERENCE_NACOS_PROPERTIES="$properties" REFERENCE_NACOS_URL="http://127.0.0.1:$port" REFERENCE_OUT="$out" \
    cargo test --quiet --test scenarios -- --exact "$name" >"$out/.$name.log" 2>&1; then
    failed+=("$name")
    tail -5 "$out/.$name.log" >&2
  else
    rm -f "$out/.$name.log"
  fi
  scripts/reference-nacos.sh stop "$gen" "$port"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "could not record: ${failed[*]} (logs in $out/.NAME.log)" >&2
  exit 1
fi
echo "recorded ${#scripts[@]} scripts into $out"
