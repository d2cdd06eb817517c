//! The Java Nacos MySQL reader against a real MariaDB holding the shared fixture
//! (`dump.sql`, Nacos 2.4.3, and `dump-3x.sql`, 3.0.3): every row as `expected.json`
//! describes it, the database unchanged, and (MariaDB's general log) nothing but reads
//! sent, every table read inside one read-only consistent-snapshot transaction.

mod common;

use std::collections::BTreeMap;

use common::mariadb::{nacos_expected, MariaDb, READER_USER};
use serde_json::Value;
use sha2::{Digest, Sha256};
use tacos_migrate::nacos_mysql::{self, GraySource, ReadOptions, Schema, Tables};

fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

fn sha256(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

/// `YYYY-MM-DD HH:MM:SS` (UTC, as the fixture's clock) → ms since the epoch.
fn utc_ms(datetime: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| -> i64 { datetime[r].parse().expect(datetime) };
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (hh, mm, ss) = (n(11..13), n(14..16), n(17..19));
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000
}

/// The public namespace folds `'public'` into `''` (3.x copies).
fn ns(tenant: &str) -> &str {
    if tenant == "public" {
        ""
    } else {
        tenant
    }
}

/// Checks `tables` against expected.json; `dump` names the dump it was loaded from.
fn assert_tables(tables: &Tables, dump: &str) {
    let exp = nacos_expected();
    let counts = &exp["table_counts"][dump];
    let count = |t: &str| counts[t].as_u64().unwrap_or_else(|| panic!("{t}")) as usize;
    assert_eq!(tables.configs.len(), count("config_info"));
    assert_eq!(tables.history.len(), count("his_config_info"));
    assert_eq!(tables.tags.len(), count("config_tags_relation"));
    assert_eq!(tables.tenants.len(), count("tenant_info"));
    assert_eq!(tables.users.len(), count("users"));
    assert_eq!(tables.roles.len(), count("roles"));
    assert_eq!(tables.permissions.len(), count("permissions"));
    let gray_rows = match tables.schema {
        Schema::V2 => count("config_info_beta") + count("config_info_tag"),
        Schema::V3 => count("config_info_gray"),
    };
    assert_eq!(tables.grays.len(), gray_rows);
    assert!(tables.skipped.is_empty(), "{:?}", tables.skipped);
    assert!(tables.time_zone.contains("+00:00"), "{}", tables.time_zone);
    assert!(tables.server_version.contains("MariaDB"));
    // Only the capacity quota has rows of what is not read.
    let not_read: Vec<(&str, u64)> = tables
        .not_read
        .iter()
        .map(|n| (n.table.as_str(), n.rows))
        .collect();
    assert_eq!(not_read, [("tenant_capacity", 1)]);

    // Every live config, as stored (3.x: also its copy under 'public').
    for c in exp["configs"].as_array().expect("configs") {
        let key = (s(c, "namespace"), s(c, "group"), s(c, "dataId"));
        let rows: Vec<_> = tables
            .configs
            .iter()
            .filter(|r| (ns(&r.tenant), r.group.as_str(), r.data_id.as_str()) == key)
            .collect();
        let copies = if tables.schema == Schema::V3 && key.0.is_empty() {
            2
        } else {
            1
        };
        assert_eq!(rows.len(), copies, "{key:?}");
        for row in rows {
            assert_eq!(sha256(&row.content), s(c, "content_sha256"), "{key:?}");
            assert_eq!(row.md5.as_deref(), Some(s(c, "md5")), "{key:?}");
            assert_eq!(row.config_type.as_deref(), c["type"].as_str(), "{key:?}");
            assert_eq!(row.app_name.as_deref(), c["appName"].as_str(), "{key:?}");
            assert_eq!(row.desc.as_deref(), c["desc"].as_str(), "{key:?}");
            assert!(row.encrypted_data_key.is_empty());
            if row.tenant == key.0 {
                assert_eq!(row.src_user.as_deref(), Some(s(c, "src_user")), "{key:?}");
                assert_eq!(row.src_ip.as_deref(), Some(s(c, "src_ip")), "{key:?}");
                assert_eq!(row.gmt_create_ms, utc_ms(s(c, "gmt_create")), "{key:?}");
                assert_eq!(row.gmt_modified_ms, utc_ms(s(c, "gmt_modified")), "{key:?}");
                // Tags: by config id, as Nacos joins them.
                let mut tags: Vec<&str> = tables
                    .tags
                    .iter()
                    .filter(|t| t.config_id == row.id)
                    .map(|t| t.tag_name.as_str())
                    .collect();
                tags.sort_unstable();
                let want: Vec<&str> = c["tags"]
                    .as_array()
                    .expect("tags")
                    .iter()
                    .map(|t| t.as_str().expect("tag"))
                    .collect();
                assert_eq!(tags, want, "{key:?}");
            } else {
                assert_eq!(row.src_user.as_deref(), Some("nacos_namespace_migrate"));
            }
        }
    }

    // History: per key newest first, formal rows only (3.x also has gray rows).
    let mut history: BTreeMap<(&str, &str, &str), Vec<&nacos_mysql::HistoryRow>> = BTreeMap::new();
    for row in &tables.history {
        if row.publish_type.as_deref().unwrap_or("formal") != "formal" {
            continue;
        }
        history
            .entry((ns(&row.tenant), &row.group, &row.data_id))
            .or_default()
            .push(row);
    }
    let mut checked = 0;
    for c in exp["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .chain(exp["deleted"].as_array().expect("deleted"))
    {
        let key = (s(c, "namespace"), s(c, "group"), s(c, "dataId"));
        let want = c["history"].as_array().expect("history");
        let got: Vec<&&nacos_mysql::HistoryRow> = history
            .get(&key)
            .map(|rows| rows.iter().rev().collect())
            .unwrap_or_default();
        assert_eq!(got.len(), want.len(), "history of {key:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.nid, w["nid"].as_u64().expect("nid"), "{key:?}");
            assert_eq!(g.op_type.as_deref(), Some(s(w, "op")), "{key:?}");
            assert_eq!(g.md5.as_deref(), Some(s(w, "md5")), "{key:?}");
            assert_eq!(sha256(&g.content), s(w, "content_sha256"), "{key:?}");
            assert_eq!(g.app_name.as_deref(), w["app_name"].as_str(), "{key:?}");
            assert_eq!(g.src_user.as_deref(), Some(s(w, "src_user")), "{key:?}");
            assert_eq!(g.src_ip.as_deref(), Some(s(w, "src_ip")), "{key:?}");
            assert_eq!(g.gmt_modified_ms, utc_ms(s(w, "gmt_modified")), "{key:?}");
            checked += 1;
        }
    }
    let summary = &exp["summary"];
    assert_eq!(
        checked as u64,
        summary["history_rows_live"].as_u64().expect("live")
            + summary["history_rows_deleted"].as_u64().expect("deleted")
    );
    if tables.schema == Schema::V3 {
        let gray_rows = tables
            .history
            .iter()
            .filter(|r| r.publish_type.as_deref() == Some("gray"))
            .count();
        assert_eq!(gray_rows, 3);
    } else {
        assert!(tables.history.iter().all(|r| r.publish_type.is_none()));
    }

    // Grays: the betas' IPs and the tag, by the table's own terms.
    for b in exp["betas"].as_array().expect("betas") {
        let key = (s(b, "namespace"), s(b, "group"), s(b, "dataId"));
        let rows: Vec<_> = tables
            .grays
            .iter()
            .filter(|g| (ns(&g.tenant), g.group.as_str(), g.data_id.as_str()) == key)
            .collect();
        assert!(!rows.is_empty(), "beta of {key:?}");
        let ips: Vec<&str> = b["betaIps"]
            .as_array()
            .expect("ips")
            .iter()
            .map(|v| v.as_str().expect("ip"))
            .collect();
        for g in rows {
            assert_eq!(sha256(&g.content), s(b, "content_sha256"), "{key:?}");
            assert_eq!(g.md5.as_deref(), Some(s(b, "md5")));
            assert_eq!(g.app_name.as_deref(), Some(s(b, "appName")));
            match &g.source {
                GraySource::Beta { beta_ips } => {
                    assert_eq!(beta_ips.as_deref(), Some(ips.join(",").as_str()));
                    assert_eq!(g.src_user.as_deref(), Some(s(b, "src_user")));
                    assert_eq!(g.gmt_modified_ms, utc_ms(s(b, "gmt_modified")));
                }
                GraySource::Gray {
                    gray_name,
                    gray_rule,
                } => {
                    assert_eq!(gray_name, "beta");
                    let rule: Value = serde_json::from_str(gray_rule).expect("rule json");
                    assert_eq!(rule["type"], "beta");
                    assert_eq!(rule["expr"], ips.join(","));
                }
                other => panic!("{key:?}: {other:?}"),
            }
        }
    }
    for t in exp["tag_configs"].as_array().expect("tags") {
        let key = (s(t, "namespace"), s(t, "group"), s(t, "dataId"));
        let g = tables
            .grays
            .iter()
            .find(|g| (ns(&g.tenant), g.group.as_str(), g.data_id.as_str()) == key)
            .unwrap_or_else(|| panic!("tag gray of {key:?}"));
        assert_eq!(sha256(&g.content), s(t, "content_sha256"));
        match &g.source {
            GraySource::Tag { tag_id } => assert_eq!(tag_id, s(t, "tag")),
            GraySource::Gray {
                gray_name,
                gray_rule,
            } => {
                assert_eq!(gray_name, s(t, "gray_name_in_dump_3x"));
                let rule: Value = serde_json::from_str(gray_rule).expect("rule json");
                assert_eq!(rule["type"], "tag");
                assert_eq!(rule["expr"], s(t, "tag"));
            }
            other => panic!("{key:?}: {other:?}"),
        }
    }

    // Namespaces: the registered ones (public has no row).
    for n in exp["namespaces"].as_array().expect("namespaces") {
        let id = s(n, "id");
        let row = tables.tenants.iter().find(|t| t.tenant_id == id);
        if !n["has_tenant_info_row"].as_bool().expect("has row") {
            assert!(row.is_none(), "{id}");
            continue;
        }
        let row = row.unwrap_or_else(|| panic!("tenant {id}"));
        assert_eq!(row.tenant_name.as_deref(), Some(s(n, "name")));
        assert_eq!(row.tenant_desc.as_deref(), n["desc"].as_str());
        assert_eq!(row.kp, "1");
        assert_eq!(
            row.gmt_create_ms,
            n["gmt_create_ms"].as_i64().expect("gmt_create_ms")
        );
    }

    // Users (BCrypt hashes as stored), roles and permissions.
    for u in exp["users"].as_array().expect("users") {
        let name = s(u, "username");
        let row = tables
            .users
            .iter()
            .find(|r| r.username == name)
            .unwrap_or_else(|| panic!("user {name}"));
        assert_eq!(row.password, s(u, "password_hash"));
        assert_eq!(row.enabled, u["enabled"].as_bool().expect("enabled"));
        let roles: Vec<&str> = tables
            .roles
            .iter()
            .filter(|r| r.username == name)
            .map(|r| r.role.as_str())
            .collect();
        let want: Vec<&str> = u["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .map(|r| r.as_str().expect("role"))
            .collect();
        assert_eq!(roles, want, "{name}");
        assert!(!format!("{row:?}").contains(&row.password));
    }
    let mut perms: Vec<(&str, &str, &str)> = tables
        .permissions
        .iter()
        .map(|p| (p.role.as_str(), p.resource.as_str(), p.action.as_str()))
        .collect();
    perms.sort_unstable();
    let mut want: Vec<(&str, &str, &str)> = exp["permissions"]
        .as_array()
        .expect("permissions")
        .iter()
        .map(|p| (s(p, "role"), s(p, "resource"), s(p, "action")))
        .collect();
    want.sort_unstable();
    assert_eq!(perms, want);
}

/// `CHECKSUM TABLE` of every table: the read must leave them as they were.
fn checksums(db: &MariaDb, database: &str) -> String {
    let tables = db.query(database, "SHOW TABLES");
    let list: Vec<String> = tables.lines().map(|t| format!("`{t}`")).collect();
    assert!(list.len() >= 10, "{tables}");
    db.query(database, &format!("CHECKSUM TABLE {}", list.join(", ")))
}

/// What the reader's account sent (MariaDB's general log): (command, statement).
fn statements_sent(db: &MariaDb) -> Vec<(String, String)> {
    db.query(
        "mysql",
        &format!(
            "SELECT command_type, REPLACE(CONVERT(argument USING utf8mb4), '\\t', ' ') \
             FROM mysql.general_log WHERE user_host LIKE '{READER_USER}[%'"
        ),
    )
    .lines()
    .map(|line| {
        let (command, argument) = line.split_once('\t').unwrap_or((line, ""));
        (command.to_string(), argument.to_string())
    })
    .collect()
}

/// The reader only reads, and reads every table inside one read-only transaction with a
/// consistent snapshot.
fn assert_read_only_snapshot(sent: &[(String, String)]) {
    let statements: Vec<String> = sent
        .iter()
        .filter(|(command, _)| matches!(command.as_str(), "Query" | "Prepare" | "Execute"))
        .map(|(_, statement)| statement.trim().to_uppercase())
        .collect();
    for statement in &statements {
        assert!(
            ["SELECT ", "SET ", "SHOW ", "START TRANSACTION", "ROLLBACK"]
                .iter()
                .any(|ok| statement.starts_with(ok)),
            "the reader sent {statement:?}"
        );
    }
    let at = |wanted: &str| {
        statements
            .iter()
            .position(|s| s == wanted)
            .unwrap_or_else(|| panic!("{wanted:?} not sent: {statements:#?}"))
    };
    let read_only = at("SET TRANSACTION READ ONLY");
    let start = at("START TRANSACTION WITH CONSISTENT SNAPSHOT");
    let end = at("ROLLBACK");
    assert!(read_only < start && start < end, "{statements:#?}");
    let tables: Vec<usize> = statements
        .iter()
        .enumerate()
        .filter(|(_, s)| s.contains(" FROM `") || s.contains("INFORMATION_SCHEMA"))
        .map(|(i, _)| i)
        .collect();
    assert!(tables.len() >= 10, "{statements:#?}");
    assert!(
        tables.iter().all(|&i| start < i && i < end),
        "a table read outside the transaction: {statements:#?}"
    );
}

#[test]
fn reads_both_fixture_dumps_as_they_are() {
    let db = MariaDb::start();
    for (database, dump, schema) in [
        ("nacos24", "dump.sql", Schema::V2),
        ("nacos30", "dump-3x.sql", Schema::V3),
    ] {
        db.load_fixture(database, dump);
        let before = checksums(&db, database);
        db.sql(
            None,
            "TRUNCATE TABLE mysql.general_log; SET GLOBAL log_output = 'TABLE'; \
             SET GLOBAL general_log = 1",
        );
        let tables =
            nacos_mysql::read(&db.url(database), &ReadOptions::default()).expect("read the dump");
        db.sql(None, "SET GLOBAL general_log = 0");
        assert_read_only_snapshot(&statements_sent(&db));
        assert_eq!(tables.schema, schema, "{dump}");
        assert_eq!(tables.database, database);
        assert_tables(&tables, dump);
        assert_eq!(checksums(&db, database), before, "{dump} changed");
    }
}
