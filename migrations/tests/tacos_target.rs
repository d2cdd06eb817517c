//! End to end: migrate (a copy of) the r-nacos 0.4.3 fixture into a Tacos data dir, start
//! the real `tacos` server on it and read everything back over HTTP; and the ways a
//! migration refuses to write (non-empty target, bad source, dry run).
//!
//! These tests run the `tacos` server binary of this workspace, found beside this test
//! binary (`<target dir>/<profile>/tacos`), else under `$CARGO_TARGET_DIR/debug` or
//! `<workspace>/target/debug`. `cargo test --workspace` (what CI runs) builds it before
//! running any test; with `cargo test -p tacos-migrate` alone run `cargo build --bin tacos`
//! first. A missing binary fails the test with a message saying so.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{copy_fixture, expected, md5_hex, snapshot, ConfigKeyPb, ConfigPb};
use serde_json::Value;
use tacos_migrate::convert::NoProgress;
use tacos_migrate::rnacos::{ReadError, ReadOptions};
use tacos_migrate::write::{Target, WriteError};
use tacos_migrate::{Input, MigrateError, Options};

use common::server::*;

// ---- tests ---------------------------------------------------------------------------

#[test]
fn migrated_fixture_serves_every_config_history_namespace_and_user() {
    let (tmp, source) = copy_fixture();
    let target = tmp.path().join("tacos_data");
    let (ports, report) = migrate_fixture_copy(
        &source,
        &target,
        &[
            "configs:      30",
            "history rows: 42",
            "users:        3",
            "namespaces:   2",
            "Namespaces created for unregistered tenants: none",
            "Skipped: nothing",
            "md5 check: 30 of 30 configs match",
            "\"alice\"  roles: 1 (developer) -> read-write on every namespace",
            "\"bob\"  roles: 2 (visitor) -> read on every namespace",
            "\"admin\"  roles: 0 (manager) -> admin",
        ],
    );
    for secret in ["alice-pass-1", "bob-pass-2"] {
        assert!(!report.contains(secret), "password shown:\n{report}");
    }
    // A restored dir, no leftovers beside it.
    let beside: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let mut beside_sorted = beside.clone();
    beside_sorted.sort();
    assert_eq!(beside_sorted, ["nacos_db", "tacos_data"], "{beside:?}");
    let inspected = tacos::ops::inspect::inspect(&target, None).expect("inspect the migrated dir");
    assert_eq!(inspected.summary.configs, 30);
    assert_eq!(inspected.summary.history_rows, 42);

    let server = Server::start(&target, ports);
    let exp = expected();

    // Every config, with its content and md5; its history, newest first.
    for c in exp["configs"].as_array().expect("configs") {
        let (tenant, group, data_id) = (s(c, "tenant"), s(c, "group"), s(c, "dataId"));
        assert_config(&server, tenant, group, data_id, s(c, "content"));
        let want: Vec<&str> = c["history_md5s"]
            .as_array()
            .expect("history_md5s")
            .iter()
            .map(|v| v.as_str().expect("md5"))
            .collect();
        assert_eq!(
            history_md5s(&server, tenant, group, data_id),
            want,
            "history of {tenant}/{group}/{data_id}"
        );
    }
    // "public" is the public namespace too.
    let first = &exp["configs"][0];
    assert_eq!(s(first, "tenant"), "");
    assert_config(
        &server,
        "public",
        s(first, "group"),
        s(first, "dataId"),
        s(first, "content"),
    );

    // The deleted config stays deleted, and so does its history.
    for d in exp["deleted"].as_array().expect("deleted") {
        let query = [
            ("dataId", s(d, "dataId")),
            ("group", s(d, "group")),
            ("tenant", s(d, "tenant")),
        ];
        assert_eq!(server.get("/nacos/v1/cs/configs", &query).status(), 404);
        assert!(history_md5s(&server, s(d, "tenant"), s(d, "group"), s(d, "dataId")).is_empty());
    }
    // The namespace list config is not a config.
    for c in exp["internal_configs"]
        .as_array()
        .expect("internal_configs")
    {
        let query = [
            ("dataId", s(c, "dataId")),
            ("group", s(c, "group")),
            ("tenant", s(c, "tenant")),
        ];
        assert_ne!(server.get("/nacos/v1/cs/configs", &query).status(), 200);
    }

    // Namespaces, as the console lists them (login needed: the first admin).
    let reply = server
        .http
        .get(server.url("/nacos/v1/console/namespaces"))
        .basic_auth("nacos", Some(ADMIN_PASSWORD))
        .send()
        .expect("namespaces");
    assert_eq!(reply.status(), 200, "log:\n{}", server.log_text());
    let listed: Value = reply.json().expect("namespaces JSON");
    let listed: Vec<(String, String, u64)> = listed["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|n| {
            (
                s(n, "namespace").to_string(),
                s(n, "namespaceShowName").to_string(),
                n["configCount"].as_u64().expect("configCount"),
            )
        })
        .collect();
    for ns in exp["namespaces"].as_array().expect("namespaces") {
        let want = (s(ns, "id").to_string(), s(ns, "name").to_string(), 10);
        assert!(listed.contains(&want), "{want:?} not in {listed:?}");
    }
    assert!(listed.iter().any(|(id, _, n)| id.is_empty() && *n == 10));

    // Users log in with their r-nacos passwords; roles became rights.
    let (status, body) = server.login("alice", "alice-pass-1");
    assert_eq!(status, 200, "{body}");
    let alice: Value = serde_json::from_str(&body).expect("login JSON");
    assert!(!s(&alice, "accessToken").is_empty());
    assert_eq!(alice["globalAdmin"], false);
    let (status, body) = server.login("bob", "bob-pass-2");
    assert_eq!(status, 200, "{body}");
    let bob: Value = serde_json::from_str(&body).expect("login JSON");
    assert!(!s(&bob, "accessToken").is_empty());
    assert_eq!(bob["globalAdmin"], false);
    let (status, body) = server.login("admin", "admin");
    assert_eq!(status, 200, "{body}");
    let admin: Value = serde_json::from_str(&body).expect("login JSON");
    assert_eq!(admin["globalAdmin"], true);
    assert_eq!(server.login("alice", "alice-pass-2").0, 403);
    assert_eq!(server.login("bob", "alice-pass-1").0, 403);
}

/// Encodes an r-nacos `UserDo` (test-side).
#[derive(Clone, PartialEq, prost::Message)]
struct UserPb {
    #[prost(string, tag = "1")]
    username: String,
    #[prost(string, tag = "2")]
    password: String,
    #[prost(int64, tag = "4")]
    gmt_create: i64,
    #[prost(int64, tag = "5")]
    gmt_modified: i64,
    #[prost(bool, tag = "6")]
    enable: bool,
    #[prost(string, repeated, tag = "7")]
    roles: Vec<String>,
}

/// Adds to a fixture copy: a config (with 2 history rows) in tenant `ghost`, which is not
/// a registered namespace; `carol` with an unknown role; disabled `dave` (developer).
fn add_ghost_tenant_and_odd_users(dir: &Path) {
    let db = sled::open(dir).expect("open the copy with sled");
    let key = prost::Message::encode_to_vec(&ConfigKeyPb {
        tenant: "ghost".into(),
        group: "DEFAULT_GROUP".into(),
        data_id: "ghost.properties".into(),
    });
    let value = |content: &str, t: i64, id: i64| {
        prost::Message::encode_to_vec(&ConfigPb {
            tenant: "ghost".into(),
            group: "DEFAULT_GROUP".into(),
            data_id: "ghost.properties".into(),
            content: content.into(),
            last_time: t,
            id,
        })
    };
    let t = 1_796_000_000_000;
    db.open_tree("config")
        .unwrap()
        .insert(&key, value("boo=2", t + 1, 0))
        .unwrap();
    let mut history = b"config_history_".to_vec();
    history.extend(&key);
    let tree = db.open_tree(history).unwrap();
    tree.insert(9_001u64.to_be_bytes(), value("boo=1", t, 9_001))
        .unwrap();
    tree.insert(9_002u64.to_be_bytes(), value("boo=2", t + 1, 9_002))
        .unwrap();
    let users = db.open_tree("t_user").unwrap();
    for (name, roles, enable) in [("carol", "9", true), ("dave", "1", false)] {
        let user = UserPb {
            username: name.into(),
            password: format!("{name}-pass-9"),
            gmt_create: 1_796_000_000,
            gmt_modified: 1_796_000_000,
            enable,
            roles: vec![roles.into()],
        };
        users
            .insert(name, prost::Message::encode_to_vec(&user))
            .unwrap();
    }
    drop((tree, users));
    common::close_sled(db, dir);
}

#[test]
fn unregistered_tenant_gets_a_namespace_and_bad_users_stop_or_are_skipped() {
    let (tmp, source) = copy_fixture();
    add_ghost_tenant_and_odd_users(&source);
    let target = tmp.path().join("tacos_data");
    let ports = Ports::new();

    // carol's role is unknown: without --skip-bad nothing is written.
    let (from, to) = (source.display().to_string(), target.display().to_string());
    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("user \"carol\"") && stderr.contains("unknown r-nacos role \"9\""),
        "{stderr}"
    );
    assert!(!target.exists(), "written despite the error");

    let report = migrate_ok(&source, &target, ports, &["--skip-bad"]);
    for want in [
        "configs:      31",
        "history rows: 44",
        "users:        4",
        "namespaces:   3",
        "\"ghost\"  name \"ghost\"  [created: not a registered namespace in r-nacos]",
        "Namespaces created for unregistered tenants (r-nacos had configs there but no \
         namespace entry; each is named after its id): \"ghost\"",
        "Skipped (1):\n  user \"carol\": unknown r-nacos role \"9\"",
        "\"dave\"  roles: 1 (developer) -> read-write on every namespace  disabled",
        "md5 check: 31 of 31 configs match",
    ] {
        assert!(report.contains(want), "missing {want:?} in:\n{report}");
    }

    // With open-API auth on, so that the migrated rights are what decides.
    let mut server = Server::start_with(&target, ports, &["--open-api-auth"]);
    let query = [
        ("dataId", "ghost.properties"),
        ("group", "DEFAULT_GROUP"),
        ("tenant", "ghost"),
    ];
    assert_eq!(server.get("/nacos/v1/cs/configs", &query).status(), 403);
    server.basic = Some(("bob".into(), "bob-pass-2".into()));
    assert_config(
        &server,
        "ghost",
        "DEFAULT_GROUP",
        "ghost.properties",
        "boo=2",
    );
    assert_eq!(
        history_md5s(&server, "ghost", "DEFAULT_GROUP", "ghost.properties"),
        [md5_hex("boo=2"), md5_hex("boo=1")]
    );
    let reply = server
        .http
        .get(server.url("/nacos/v1/console/namespaces"))
        .basic_auth("nacos", Some(ADMIN_PASSWORD))
        .send()
        .expect("namespaces");
    assert_eq!(reply.status(), 200);
    let listed: Value = reply.json().expect("JSON");
    assert!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["namespace"] == "ghost" && n["configCount"] == 1),
        "{listed}"
    );
    // A visitor reads but may not write; a developer may.
    let publish = |user: &str, password: &str, content: &str| {
        server
            .http
            .post(server.url("/nacos/v1/cs/configs"))
            .basic_auth(user, Some(password))
            .form(&[
                ("dataId", "new.txt"),
                ("group", "DEFAULT_GROUP"),
                ("tenant", "ghost"),
                ("content", content),
            ])
            .send()
            .expect("publish")
            .status()
            .as_u16()
    };
    assert_eq!(publish("bob", "bob-pass-2", "from bob"), 403);
    assert_eq!(publish("alice", "alice-pass-1", "from alice"), 200);
    assert_config(&server, "ghost", "DEFAULT_GROUP", "new.txt", "from alice");

    // Disabled stays disabled; the skipped user does not exist.
    assert_eq!(server.login("dave", "dave-pass-9").0, 403);
    assert_eq!(server.login("carol", "carol-pass-9").0, 403);
    assert_eq!(server.login("alice", "alice-pass-1").0, 200);
}

#[test]
fn non_empty_target_is_refused_without_force_and_moved_aside_with_it() {
    let (tmp, source) = copy_fixture();
    let target = tmp.path().join("tacos_data");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("precious.txt"), "keep me").unwrap();
    let before = snapshot(&target);
    let (from, to) = (source.display().to_string(), target.display().to_string());

    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not empty") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(before, snapshot(&target), "the target was changed");
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 2, "leftovers");

    // The library says the same, typed.
    let options = Options {
        from: Input::RnacosSled(source.clone()),
        read: ReadOptions::default(),
        target: Some(Target::new(&target)),
        dry_run: false,
    };
    let err = tacos_migrate::run(&options, &mut NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Write(WriteError::TargetNotEmpty { ref path }) if *path == target),
        "{err}"
    );

    let report = migrate_ok(&source, &target, Ports::new(), &["--force"]);
    assert!(
        report.contains("md5 check: 30 of 30 configs match"),
        "{report}"
    );
    let aside: Vec<PathBuf> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("tacos_data.before-restore-")
        })
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        fs::read_to_string(aside[0].join("precious.txt")).unwrap(),
        "keep me"
    );
    assert!(
        report.contains(&format!(
            "The previous contents of {} are in {}",
            target.display(),
            aside[0].display()
        )),
        "{report}"
    );
    assert!(!target.join("precious.txt").exists());
    let inspected = tacos::ops::inspect::inspect(&target, None).expect("a tacos data dir");
    assert_eq!(inspected.summary.configs, 30);
}

#[test]
fn bad_source_fails_typed_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("not_sled");
    fs::create_dir(&source).unwrap();
    fs::write(source.join("db.txt"), "just some text").unwrap();
    let target = tmp.path().join("tacos_data");

    let options = Options {
        from: Input::RnacosSled(source.clone()),
        read: ReadOptions::default(),
        target: Some(Target::new(&target)),
        dry_run: false,
    };
    let err = tacos_migrate::run(&options, &mut NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Read(ReadError::NotSled { .. })),
        "{err:?}"
    );

    let (from, to) = (source.display().to_string(), target.display().to_string());
    // Auto-detection names what it found; a kind given explicitly gets the reader's word.
    let out = migrate(&["--from", &from, "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("not_sled"), "{stderr}");
    assert!(
        stderr.contains("neither an r-nacos 0.4 data dir") && stderr.contains("holds: db.txt"),
        "{stderr}"
    );
    let out = migrate(&["--from", &from, "--from-kind", "rnacos04", "--to", &to]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no `conf` file"), "{stderr}");
    assert!(!target.exists());
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "leftovers: {left:?}");

    // The target must not overlap the source.
    let (tmp2, fixture) = copy_fixture();
    let inside = fixture.join("tacos");
    let options = Options {
        from: Input::RnacosSled(fixture.clone()),
        read: ReadOptions::default(),
        target: Some(Target::new(&inside)),
        dry_run: false,
    };
    let err = tacos_migrate::run(&options, &mut NoProgress).unwrap_err();
    assert!(
        matches!(err, MigrateError::Write(WriteError::Overlap { .. })),
        "{err}"
    );
    assert!(!inside.exists());
    drop(tmp2);
}

#[test]
fn dry_run_writes_nothing_and_says_what_would_happen() {
    let (tmp, source) = copy_fixture();
    let target = tmp.path().join("tacos_data");
    let (from, to) = (source.display().to_string(), target.display().to_string());
    let out = migrate(&["--from", &from, "--to", &to, "--dry-run"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    for want in [
        "Dry run: nothing was written.",
        "Would move:",
        "configs:      30",
        "plain passwords would be hashed",
        "md5 check: 30 of 30 configs match",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    assert!(!target.exists());

    // A non-empty target: the dry run says the real run needs --force, and leaves it.
    fs::create_dir(&target).unwrap();
    fs::write(target.join("x"), "x").unwrap();
    let before = snapshot(&target);
    let out = migrate(&["--from", &from, "--to", &to, "--dry-run"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("it is not empty: the real run refuses it without --force"),
        "{stdout}"
    );
    assert_eq!(before, snapshot(&target));
    assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 2);
}

/// Adds to a fixture copy: the registered namespace `ops.core` (in r-nacos' namespace
/// list) with a config, and a config in the unregistered tenant `team:a`. Nacos'
/// `ParamUtils` accepts `.` and `:` in a tenant, and so does Tacos.
fn add_dotted_and_coloned_tenants(dir: &Path) {
    let db = sled::open(dir).expect("open the copy with sled");
    let configs = db.open_tree("config").unwrap();
    let key = |tenant: &str, group: &str, data_id: &str| {
        prost::Message::encode_to_vec(&ConfigKeyPb {
            tenant: tenant.into(),
            group: group.into(),
            data_id: data_id.into(),
        })
    };
    let value = |tenant: &str, group: &str, data_id: &str, content: &str| {
        prost::Message::encode_to_vec(&ConfigPb {
            tenant: tenant.into(),
            group: group.into(),
            data_id: data_id.into(),
            content: content.into(),
            last_time: 1_796_000_000_000,
            id: 0,
        })
    };
    let list_key = key("__INNER_SYSTEM__", "sys", "namespaces");
    let list: ConfigPb =
        prost::Message::decode(&*configs.get(&list_key).unwrap().expect("a namespace list"))
            .expect("the namespace list decodes");
    let mut namespaces: Vec<Value> = serde_json::from_str(&list.content).expect("JSON list");
    namespaces.push(serde_json::json!({"namespaceId": "ops.core", "namespaceName": "Ops core"}));
    let content = serde_json::to_string(&namespaces).unwrap();
    configs
        .insert(
            &list_key,
            value("__INNER_SYSTEM__", "sys", "namespaces", &content),
        )
        .unwrap();
    for (tenant, data_id, content) in [
        ("ops.core", "db.yaml", "pool: 8"),
        ("team:a", "feature.flags", "beta=on"),
    ] {
        configs
            .insert(
                key(tenant, "DEFAULT_GROUP", data_id),
                value(tenant, "DEFAULT_GROUP", data_id, content),
            )
            .unwrap();
    }
    drop(configs);
    common::close_sled(db, dir);
}

#[test]
fn namespace_ids_with_dots_and_colons_move_without_skip_bad() {
    let (tmp, source) = copy_fixture();
    add_dotted_and_coloned_tenants(&source);
    let target = tmp.path().join("tacos_data");
    let ports = Ports::new();
    let report = migrate_ok(&source, &target, ports, &[]);
    for want in [
        "configs:      32",
        "namespaces:   4",
        "\"ops.core\"  name \"Ops core\"",
        "\"team:a\"  name \"team:a\"  [created: not a registered namespace in r-nacos]",
        "md5 check: 32 of 32 configs match",
    ] {
        assert!(report.contains(want), "missing {want:?} in:\n{report}");
    }
    assert!(report.contains("Skipped: nothing"), "{report}");
    let server = Server::start_with(&target, ports, &[]);
    assert_config(&server, "ops.core", "DEFAULT_GROUP", "db.yaml", "pool: 8");
    assert_config(
        &server,
        "team:a",
        "DEFAULT_GROUP",
        "feature.flags",
        "beta=on",
    );
}
