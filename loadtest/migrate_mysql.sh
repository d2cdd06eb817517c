#!/usr/bin/env bash
# How long `tacos-migrate --from mysql://...` takes, and its peak memory, on a large Java
# Nacos database (docs/migration.md, "Measured at scale").
#
# Starts a private MariaDB (Debian's `mariadbd`) in a temp dir on a loopback port, loads the
# shared Nacos 2.4.3 fixture (shared/fixtures/nacos-mysql/dump.sql) plus CONFIGS generated
# configs with ROWS `his_config_info` rows each (content shaped like gen_rnacos08's, about
# 100 bytes), then runs each binary in BINS in turn, ROUNDS times, as a full migration into
# a fresh temp dir under `/usr/bin/time`, and prints wall time, CPU and peak RSS. The
# database, its dir and the migrated dirs go when the script ends.
#
# Usage (from the repo root, after `cargo build --release -p tacos-migrate`):
#   loadtest/migrate_mysql.sh
# Settings (environment): CONFIGS=100000 ROWS=10 ROUNDS=2 PORT=23306
#   BINS="target/release/tacos-migrate" (several, space-separated, alternate per round: an A/B)
#   FIXTURE=../shared/fixtures/nacos-mysql/dump.sql  SHOW=1 (print the tool's report too)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONFIGS=${CONFIGS:-100000}
ROWS=${ROWS:-10}
ROUNDS=${ROUNDS:-2}
PORT=${PORT:-23306}
BINS=${BINS:-$ROOT/target/release/tacos-migrate}
FIXTURE=${FIXTURE:-$ROOT/../shared/fixtures/nacos-mysql/dump.sql}

command -v mariadbd > /dev/null || PATH=$PATH:/usr/sbin
for tool in mariadbd mariadb-install-db mariadb; do
  command -v "$tool" > /dev/null || { echo "migrate_mysql: needs $tool (apt install mariadb-server)" >&2; exit 2; }
done
[ -f "$FIXTURE" ] || { echo "migrate_mysql: no fixture at $FIXTURE" >&2; exit 2; }
[ "$CONFIGS" -ge 1 ] && [ "$CONFIGS" -le 10000000 ] || { echo "migrate_mysql: CONFIGS must be 1..10000000" >&2; exit 2; }
[ "$ROWS" -ge 1 ] && [ "$ROWS" -le 1000 ] || { echo "migrate_mysql: ROWS must be 1..1000" >&2; exit 2; }

WORK=$(mktemp -d /tmp/migrate-mysql-XXXXXX)
DB_PID=
cleanup() {
  [ -n "$DB_PID" ] && kill "$DB_PID" 2> /dev/null && wait "$DB_PID" 2> /dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

mariadb-install-db --no-defaults --datadir="$WORK/db" --auth-root-authentication-method=normal \
  --skip-test-db --user="$(id -un)" > "$WORK/install.log" 2>&1
mariadbd --no-defaults --datadir="$WORK/db" --socket="$WORK/db.sock" --pid-file="$WORK/db.pid" \
  --log-error="$WORK/db.err" --port="$PORT" --bind-address=127.0.0.1 --default-time-zone=+00:00 \
  --skip-name-resolve --innodb-buffer-pool-size=512M --innodb-flush-log-at-trx-commit=0 \
  --user="$(id -un)" > /dev/null 2>&1 &
DB_PID=$!
SQL=(mariadb --no-defaults --socket="$WORK/db.sock" -uroot --default-character-set=utf8mb4)
for _ in $(seq 100); do "${SQL[@]}" -e 'select 1' > /dev/null 2>&1 && break; sleep 0.3; done
"${SQL[@]}" -e "CREATE DATABASE nacos; CREATE USER 'r'@'127.0.0.1' IDENTIFIED BY 'r'; GRANT SELECT ON nacos.* TO 'r'@'127.0.0.1';"
"${SQL[@]}" nacos < "$FIXTURE"
last_config=$((CONFIGS - 1))
last_row=$((ROWS - 1))
echo "migrate_mysql: generating $CONFIGS configs x $ROWS history rows"
"${SQL[@]}" nacos << SQL
INSERT INTO config_info (data_id, group_id, content, md5, gmt_create, gmt_modified, src_user, src_ip, tenant_id, type, encrypted_data_key)
SELECT CONCAT('gen-', seq, '.yaml'), CONCAT('GROUP_', seq % 7),
  CONCAT('# revision $last_row\napp:\n  name: gen-', seq, '\n  replicas: ', seq % 5, '\n  feature: flag-$last_row\n'),
  MD5(CONCAT('# revision $last_row\napp:\n  name: gen-', seq, '\n  replicas: ', seq % 5, '\n  feature: flag-$last_row\n')),
  '2024-05-01 00:00:00', '2024-05-01 00:09:00', 'nacos', '127.0.0.1', '', 'yaml', ''
FROM seq_0_to_$last_config;
INSERT INTO his_config_info (id, data_id, group_id, app_name, content, md5, gmt_create, gmt_modified, src_user, src_ip, op_type, tenant_id, encrypted_data_key)
SELECT IF(r.seq = 0, 0, 1), CONCAT('gen-', c.seq, '.yaml'), CONCAT('GROUP_', c.seq % 7), '',
  CONCAT('# revision ', r.seq, '\napp:\n  name: gen-', c.seq, '\n  replicas: ', c.seq % 5, '\n  feature: flag-', r.seq, '\n'),
  MD5(CONCAT('# revision ', r.seq, '\napp:\n  name: gen-', c.seq, '\n  replicas: ', c.seq % 5, '\n  feature: flag-', r.seq, '\n')),
  '2024-05-01 00:00:00', ADDTIME('2024-05-01 00:00:00', SEC_TO_TIME(r.seq * 60)), 'nacos', '127.0.0.1',
  IF(r.seq = 0, 'I', 'U'), '', ''
FROM seq_0_to_$last_row r JOIN seq_0_to_$last_config c ORDER BY r.seq, c.seq;
SQL

URL="mysql://r:r@127.0.0.1:$PORT/nacos"
printf '| round | binary (position in BINS) | wall s | user s | sys s | peak RSS MiB |\n|---:|---|---:|---:|---:|---:|\n'
for ((round = 1; round <= ROUNDS; round++)); do
  n=0
  for bin in $BINS; do
    n=$((n + 1))
    [ -x "$bin" ] || { echo "migrate_mysql: no $bin" >&2; exit 2; }
    rm -rf "$WORK/to"
    sync
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$bin" --from "$URL" --to "$WORK/to" > "$WORK/out" 2>&1 \
      || { echo "migrate_mysql: $bin failed:" >&2; tail -5 "$WORK/out" >&2; exit 1; }
    if [ -n "${SHOW:-}" ]; then cat "$WORK/out"; fi
    read -r wall user sys kib < "$WORK/time"
    printf '| %d | %d: %s | %s | %s | %s | %d |\n' "$round" "$n" "$("$bin" --version 2>/dev/null || basename "$bin")" \
      "$wall" "$user" "$sys" $((kib / 1024))
  done
done
