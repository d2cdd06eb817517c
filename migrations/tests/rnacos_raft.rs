//! r-nacos 0.5–0.8 data dirs: migrate (a copy of) the r-nacos 0.8.8 fixture, start the
//! real `tacos` on the result and check it against the fixture's `expected.json` over
//! HTTP, migrated BCrypt passwords included; and the ways such a migration refuses (wrong
//! kind of dir, a dir in use, a cut log), each writing nothing.
//!
//! Needs the `tacos` binary (see `common::server`).

mod common;

use std::fs;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use common::server::*;
use common::{copy_fixture, copy_fixture08, expected08, snapshot};
use serde_json::Value;
use tacos_app::auth::password::{self, HashForm};
use tacos_migrate::rnacos_raft::{self, ReadError};
use tacos_migrate::{detect, DetectError, DirKind, Input, ReadOptions};

/// Every expected user: the fixture's users and r-nacos's built-in admin.
fn expected_users(expected: &Value) -> Vec<Value> {
    let list = |k: &str| expected[k].as_array().cloned().unwrap_or_default();
    list("users")
        .into_iter()
        .chain(list("builtin_users"))
        .collect()
}

/// The migrated users' stored hashes, from a backup of the running server.
fn stored_hashes(server: &Server) -> std::collections::BTreeMap<String, String> {
    let reply = server.get("/tacos/v1/admin/backup", &[]);
    assert_eq!(reply.status(), 200, "backup");
    let bytes = reply.bytes().expect("backup bytes");
    let (_, state) = tacos::ops::decode_snapshot(&bytes).expect("decode backup");
    state
        .users()
        .map(|u| (u.username.clone(), u.password_hash.clone()))
        .collect()
}

/// Where each record of a log file starts and ends (from byte 4096 to the zero length).
fn record_spans(log: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 4096;
    loop {
        let (mut len, mut shift, mut i) = (0usize, 0, at);
        loop {
            let b = log[i];
            len |= usize::from(b & 0x7f) << shift;
            shift += 7;
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
        }
        if len == 0 {
            return spans;
        }
        spans.push((at, i + len));
        at = i + len;
    }
}

#[test]
fn migrated_08_fixture_serves_every_config_history_namespace_and_user() {
    let expected = expected08();
    let (tmp, source) = copy_fixture08();
    let target = tmp.path().join("tacos_data");
    let (ports, report) = migrate_fixture_copy(
        &source,
        &target,
        &[
            "Source: r-nacos 0.5-0.8 data dir",
            "configs:      30",
            "history rows: 42",
            "users:        4",
            "namespaces:   2",
            "Skipped: nothing",
            "md5 check: 30 of 30 configs match",
            "\"alice\"  roles: 1 (developer) -> read-write on every namespace  enabled  [BCrypt hash kept]",
            "\"bob\"  roles: 2 (visitor) -> read on every namespace  enabled  [BCrypt hash kept]",
            "\"ops\"  roles: 0 (manager) -> admin",
            "not config data, not carried: Blank x1, CacheReq x28",
        ],
    );
    for user in expected_users(&expected) {
        let password = user["password"].as_str().expect("password");
        assert!(!report.contains(&format!("{password}\n")), "password shown");
        let hash = user["password_hash"].as_str().expect("hash");
        assert!(!report.contains(hash), "hash shown:\n{report}");
    }

    // Open API auth on, so that roles decide who may publish.
    let mut server = Server::start_with(&target, ports, &["--open-api-auth"]);
    server.basic = Some(("nacos".into(), ADMIN_PASSWORD.into()));

    // Configs: content (and its md5), type, description.
    let configs = expected["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 30);
    for c in configs {
        let (tenant, group, data_id) = (s(c, "tenant"), s(c, "group"), s(c, "dataId"));
        let content = s(c, "content");
        assert_eq!(md5_of(content), s(c, "content_md5"));
        assert_config(&server, tenant, group, data_id, content);
        let reply = server.get(
            "/nacos/v1/cs/configs",
            &[
                ("dataId", data_id),
                ("group", group),
                ("tenant", tenant),
                ("show", "all"),
            ],
        );
        assert_eq!(reply.status(), 200);
        let all: Value = reply.json().expect("show=all JSON");
        // r-nacos shows no type when none was given; Tacos (like Nacos) says text.
        let want_type = c["type"].as_str().unwrap_or("text");
        assert_eq!(all["type"], want_type, "type of {tenant}/{group}/{data_id}");
        let want_desc = c["desc"].as_str().unwrap_or("");
        assert_eq!(
            all["desc"].as_str().unwrap_or(""),
            want_desc,
            "desc of {tenant}/{group}/{data_id}"
        );

        // History: md5s and op users newest first, with r-nacos's ids.
        let rows = assert_rnacos_history(&server, c);
        let ids: Vec<String> = rows.iter().map(|r| s(r, "id").to_string()).collect();
        let want_ids: Vec<String> = c["rnacos_history_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|v| v.to_string())
            .collect();
        assert_eq!(ids, want_ids, "history ids of {tenant}/{group}/{data_id}");
    }

    // Deleted keys are absent; namespaces keep their names.
    assert_deleted_absent(&server, &expected);
    assert_namespaces_named(&server, &expected);

    // Users: the BCrypt hashes are carried as r-nacos kept them.
    let users = expected_users(&expected);
    assert_eq!(users.len(), 4);
    let hashes = stored_hashes(&server);
    for u in &users {
        let name = s(u, "username");
        assert_eq!(hashes[name], s(u, "password_hash"), "hash of {name}");
        assert_eq!(password::form(&hashes[name]), HashForm::Bcrypt);
    }

    // A wrong password changes nothing.
    let (status, _) = server.login("bob", "not-bobs-password");
    assert_eq!(status, 403);
    let bob = users.iter().find(|u| u["username"] == "bob").expect("bob");
    assert_eq!(stored_hashes(&server)["bob"], s(bob, "password_hash"));

    // Each user logs in with their r-nacos password; the hash becomes argon2id (the
    // same password still works) and the other users' are not touched.
    for u in &users {
        let (name, pass) = (s(u, "username"), s(u, "password"));
        let (status, body) = server.login(name, pass);
        assert_eq!(status, 200, "login of {name}: {body}");
        let hashes = stored_hashes(&server);
        assert_eq!(
            password::form(&hashes[name]),
            HashForm::Argon2,
            "hash of {name} after login"
        );
        assert!(password::verify(pass, &hashes[name]));
        let (status, body) = server.login(name, pass);
        assert_eq!(status, 200, "second login of {name}: {body}");
        assert_eq!(
            stored_hashes(&server)[name],
            hashes[name],
            "re-hashed twice"
        );
    }
    let (status, _) = server.login("alice", "alice-pass-2");
    assert_eq!(status, 403);

    // Roles carried: a visitor may read but not publish, a developer may publish.
    let publish = |user: &str, pass: &str| {
        server
            .http
            .post(server.url("/nacos/v1/cs/configs"))
            .basic_auth(user, Some(pass))
            .form(&[
                ("dataId", "new.txt"),
                ("group", "DEFAULT_GROUP"),
                ("content", "x"),
            ])
            .send()
            .expect("publish")
            .status()
    };
    assert_eq!(publish("bob", "bob-pass-2"), 403);
    assert_eq!(publish("alice", "alice-pass-1"), 200);
}

fn md5_of(s: &str) -> String {
    common::md5_hex(s)
}

#[test]
fn the_kind_of_dir_is_detected_and_a_wrong_one_refused() {
    let (_tmp08, raft_dir) = copy_fixture08();
    let (_tmp04, sled_dir) = copy_fixture();
    assert_eq!(
        detect(&raft_dir, None).unwrap(),
        Input::RnacosRaft(raft_dir.clone())
    );
    assert_eq!(
        detect(&sled_dir, None).unwrap(),
        Input::RnacosSled(sled_dir.clone())
    );
    let err = detect(&raft_dir, Some(DirKind::Rnacos04)).unwrap_err();
    assert!(matches!(err, DetectError::WrongKind { .. }), "{err:?}");
    let err = detect(&sled_dir, Some(DirKind::Rnacos)).unwrap_err();
    assert!(matches!(err, DetectError::WrongKind { .. }), "{err:?}");

    // Over the CLI: a clear error naming what was found; nothing written.
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("tacos_data");
    let to = target.display().to_string();
    let from = raft_dir.display().to_string();
    let out = migrate(&["--from", &from, "--from-kind", "rnacos04", "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not an r-nacos 0.4 data dir")
            && stderr.contains("r-nacos 0.5-0.8 data dir")
            && stderr.contains("index")
            && stderr.contains("--from-kind rnacos"),
        "{stderr}"
    );
    let from = sled_dir.display().to_string();
    let out = migrate(&["--from", &from, "--from-kind", "rnacos", "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not an r-nacos 0.5-0.8 data dir") && stderr.contains("conf, db"),
        "{stderr}"
    );
    let empty = tmp.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let from = empty.display().to_string();
    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("neither an r-nacos 0.4 data dir") && stderr.contains("holds: nothing"),
        "{stderr}"
    );
    assert!(!target.exists(), "a target was written");
}

#[test]
fn a_dir_a_running_rnacos_holds_is_refused() {
    let (tmp, source) = copy_fixture08();
    // As r-nacos does (fs2's exclusive flock on db_lock).
    let lock = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(source.join("db_lock"))
        .expect("open db_lock");
    lock.lock().expect("lock db_lock");
    let before = snapshot(&source);

    let err = rnacos_raft::read(&source, &ReadOptions::default()).unwrap_err();
    assert!(matches!(err, ReadError::InUse { .. }), "{err:?}");

    let target = tmp.path().join("tacos_data");
    let (from, to) = (source.display().to_string(), target.display().to_string());
    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("is in use"), "{stderr}");
    assert!(!target.exists(), "a target was written");
    assert_eq!(before, snapshot(&source), "the source was modified");

    // Once r-nacos is gone the same dir migrates.
    drop(lock);
    let source = rnacos_raft::read(&source, &ReadOptions::default()).expect("read");
    assert_eq!(source.configs.len(), 30);
}

#[test]
fn a_cut_log_is_refused_or_with_skip_bad_reported() {
    let (tmp, source) = copy_fixture08();
    let log_path = source.join("log_1");
    let log = fs::read(&log_path).unwrap();
    let spans = record_spans(&log);
    assert_eq!(spans.len(), 85);
    let (start, end) = spans[84];
    // Cut the file in the middle of the last record.
    let cut_at = start + (end - start) / 2;
    fs::OpenOptions::new()
        .write(true)
        .open(&log_path)
        .unwrap()
        .set_len(cut_at as u64)
        .unwrap();
    let before = snapshot(&source);

    let target = tmp.path().join("tacos_data");
    let (from, to) = (source.display().to_string(), target.display().to_string());
    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the log ends at index 84 but r-nacos had applied up to index 85")
            && stderr.contains(&format!("record 85 at offset {start} is cut")),
        "{stderr}"
    );
    assert!(!target.exists(), "a target was written");

    // --skip-bad migrates what is there and lists the cut record.
    let ports = Ports::new();
    let report = migrate_ok(&source, &target, ports, &["--skip-bad"]);
    assert!(
        report.contains(&format!(
            "log_1 record 85 at offset {start}: cut short ({} byte(s) missing)",
            end - cut_at
        )),
        "{report}"
    );
    assert!(report.contains("configs:      30"), "{report}");
    assert_eq!(before, snapshot(&source), "the source was modified");
}

#[test]
fn bytes_after_the_last_record_are_reported_not_taken() {
    let (_tmp, source) = copy_fixture08();
    let log_path = source.join("log_1");
    let spans = record_spans(&fs::read(&log_path).unwrap());
    let end = spans[spans.len() - 1].1;
    // Leftovers of an older record after the zero length that ends the log.
    let mut file = fs::OpenOptions::new().write(true).open(&log_path).unwrap();
    file.seek(SeekFrom::Start(end as u64 + 1)).unwrap();
    file.write_all(b"\x2a\x08\x55 leftover bytes").unwrap();
    drop(file);
    let read = rnacos_raft::read(&source, &ReadOptions::default()).expect("read");
    assert_eq!(read.configs.len(), 30);
    assert_eq!(read.history_rows(), 42);
    let note = read
        .notes
        .iter()
        .find(|n| n.contains("log_1: the records end at offset"))
        .unwrap_or_else(|| panic!("no note in {:?}", read.notes));
    assert!(
        note.contains(&format!("offset {end}")) && note.contains("not taken"),
        "{note}"
    );
    assert!(read.skipped.is_empty(), "{:?}", read.skipped);
}

#[test]
fn reading_the_fixture_copy_changes_nothing_and_gives_rnacos_state() {
    let expected = expected08();
    let (_tmp, source) = copy_fixture08();
    let before = snapshot(&source);
    let read = rnacos_raft::read(&source, &ReadOptions::default()).expect("read");
    assert_eq!(before, snapshot(&source), "reading changed the dir");
    assert_eq!(read.configs.len(), 30);
    assert_eq!(read.history_rows(), 42);
    let ns: Vec<(&str, &str)> = read
        .namespaces
        .iter()
        .map(|n| (n.id.as_str(), n.name.as_str()))
        .collect();
    assert_eq!(ns, [("dev", "Development"), ("team.alpha", "Team Alpha")]);
    for c in expected["configs"].as_array().unwrap() {
        let config = read
            .configs
            .iter()
            .find(|x| {
                x.tenant == s(c, "tenant")
                    && x.group == s(c, "group")
                    && x.data_id == s(c, "dataId")
            })
            .unwrap_or_else(|| panic!("missing {c}"));
        assert_eq!(config.config_type.as_deref(), c["type"].as_str());
        let rows = &read.history[&config.key()];
        let times: Vec<i64> = rows.iter().rev().map(|r| r.last_time_ms).collect();
        let want: Vec<i64> = c["rnacos_history_modified_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert_eq!(times, want, "{c}");
    }
    assert!(!Path::new(&source.join("nacos_db")).exists());
}

#[test]
fn a_generated_dir_with_several_log_files_and_a_snapshot_reads_whole() {
    use common::gen08;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("generated");
    let spec = gen08::Spec {
        configs: 50,
        history: 6,
        records_per_file: 70,
        // Mid-way through the third version.
        snapshot_after: Some(120),
    };
    let written = gen08::write(&dir, &spec);
    assert!(written.log_files >= 4, "{written:?}");
    let read = rnacos_raft::read(&dir, &ReadOptions::default()).expect("read");
    assert!(
        read.notes.iter().any(|n| n.starts_with("read snapshot_1")),
        "{:?}",
        read.notes
    );
    assert_eq!(read.configs.len(), 50);
    assert_eq!(read.history_rows(), 300);
    for config in &read.configs {
        let i: usize = config.data_id["config-".len()..config.data_id.len() - ".yaml".len()]
            .parse()
            .unwrap();
        let (tenant, group, _) = gen08::key_of(i);
        assert_eq!(
            (config.tenant.as_str(), config.group.as_str()),
            (tenant, group.as_str())
        );
        assert_eq!(config.content, gen08::content_of(i, 5));
        assert_eq!(config.config_type.as_deref(), Some("yaml"));
        assert_eq!(config.desc.as_deref(), Some(format!("config {i}").as_str()));
        let rows = &read.history[&config.key()];
        let contents: Vec<String> = rows.iter().map(|r| r.content.clone()).collect();
        let want: Vec<String> = (0..6).map(|rev| gen08::content_of(i, rev)).collect();
        assert_eq!(contents, want, "{}", config.data_id);
        assert!(rows.windows(2).all(|w| w[0].id < w[1].id));
        assert_eq!(rows[1].op_user.as_deref(), Some("dev"));
    }
    let names: Vec<&str> = read.users.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names, ["admin", "dev", "viewer"]);

    // The visitor limited to `dev` gets read there only.
    let outcome = tacos_migrate::run(
        &tacos_migrate::Options {
            from: Input::RnacosRaft(dir.clone()),
            read: ReadOptions::default(),
            target: None,
            dry_run: true,
        },
        &mut tacos_migrate::convert::NoProgress,
    )
    .expect("dry run");
    let viewer = outcome
        .report
        .users
        .iter()
        .find(|u| u.username == "viewer")
        .expect("viewer");
    assert_eq!(viewer.namespaces, Some(vec!["dev".to_string()]));
    assert!(viewer.bcrypt);
}

#[test]
fn records_after_last_applied_are_applied_for_a_single_member_and_said() {
    let (_tmp, source) = copy_fixture08();
    // r-nacos stopped before applying 81..=85 (its `index` says 80).
    let index_path = source.join("index");
    let mut index = fs::read(&index_path).unwrap();
    index[..8].copy_from_slice(&80u64.to_be_bytes());
    fs::write(&index_path, index).unwrap();
    let read = rnacos_raft::read(&source, &ReadOptions::default()).expect("read");
    assert_eq!(read.configs.len(), 30);
    assert_eq!(read.history_rows(), 42);
    assert!(
        read.notes.iter().any(|n| n
            .contains("5 log record(s) after last_applied_log 80 (index 81..=85) were applied")),
        "{:?}",
        read.notes
    );
}
