//! Operator tools below the binary: counting, backup encoding, inspect on
//! logs written by the real log store, restore results the node can open,
//! and the subcommands' settings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use clap::Parser;

// The tests parse whole command lines: the settings hold the subcommands.
use crate::settings::Settings;
use futures::executor::block_on;

use super::views::Summary;
use super::*;
use tacos_core::command as pb;
use tacos_core::types::LogId;
use tacos_core::types::{Entry, Membership, NodeInfo};
use tacos_core::{md5_hex, Command as Cmd, Op};
use tacos_state::State;
use tacos_store::log::{LOCK_FILE, LOG_DIR};
use tacos_store::{LogOptions, LogStore, SnapshotFiles, StdFs};

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
}

fn publish(ns: &str, data_id: &str, content: &str) -> Cmd {
    Cmd::of(Op::PublishConfig(pb::PublishConfig {
        key: Some(pb::ConfigKey {
            namespace: ns.into(),
            group: "DEFAULT_GROUP".into(),
            data_id: data_id.into(),
        }),
        content: content.into(),
        md5: md5_hex(content),
        history_limit: 10,
        ..Default::default()
    }))
}

fn remove(ns: &str, data_id: &str) -> Cmd {
    Cmd::of(Op::RemoveConfig(pb::RemoveConfig {
        key: Some(pb::ConfigKey {
            namespace: ns.into(),
            group: "DEFAULT_GROUP".into(),
            data_id: data_id.into(),
        }),
        origin: None,
        history_limit: 10,
    }))
}

fn create_namespace(id: &str) -> Cmd {
    Cmd::of(Op::CreateNamespace(pb::CreateNamespace {
        id: id.into(),
        name: format!("{id} name"),
        desc: String::new(),
        time_ms: 1,
    }))
}

fn beta(data_id: &str) -> Cmd {
    Cmd::of(Op::PublishBeta(pb::PublishBeta {
        key: Some(pb::ConfigKey {
            namespace: String::new(),
            group: "DEFAULT_GROUP".into(),
            data_id: data_id.into(),
        }),
        content: "beta".into(),
        md5: md5_hex("beta"),
        beta_ips: vec!["10.0.0.9".into()],
        ..Default::default()
    }))
}

fn one_voter() -> Membership {
    Membership::new(
        vec![BTreeSet::from([1])],
        BTreeMap::from([(
            1,
            NodeInfo {
                cluster_addr: "127.0.0.1:9849".into(),
                http_addr: "127.0.0.1:8848".into(),
            },
        )]),
    )
}

/// Entry 0 sets the membership; the others carry `commands`, one each.
fn entries(term: u64, commands: Vec<Cmd>) -> Vec<Entry> {
    let mut entries = vec![Entry {
        log_id: log_id(term, 0),
        payload: openraft::EntryPayload::Membership(one_voter()),
    }];
    for (i, command) in commands.into_iter().enumerate() {
        entries.push(Entry {
            log_id: log_id(term, i as u64 + 1),
            payload: openraft::EntryPayload::Normal(command.into()),
        });
    }
    entries
}

fn some_commands() -> Vec<Cmd> {
    let mut commands = vec![create_namespace("dev"), create_namespace("prod")];
    for i in 0..20 {
        commands.push(publish("", &format!("a-{i}"), &format!("v{i}")));
        commands.push(publish("dev", &format!("b-{i}"), &format!("w{i}")));
    }
    commands.push(publish("", "a-3", "updated"));
    commands.push(remove("dev", "b-4"));
    commands.push(beta("a-5"));
    commands
}

/// The state after applying `entries` as the state machine does.
fn applied(entries: &[Entry]) -> State {
    let mut state = State::default();
    for entry in entries {
        inspect::apply(&mut state, entry);
    }
    state
}

fn append_durably(store: &LogStore, entries: Vec<Entry>) {
    let (tx, rx) = mpsc::channel();
    store
        .append(entries, Box::new(move |r| tx.send(r).expect("test waits")))
        .unwrap();
    rx.recv_timeout(Duration::from_secs(10))
        .expect("callback runs")
        .unwrap();
}

/// Every file under `dir` but LOCK, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().unwrap() != LOCK_FILE {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// A data dir written by the real log store: `all` entries, committed up
/// to `committed`, a snapshot at `snapshot_at` and the log purged up to
/// `purge_to`.
fn write_data_dir(
    dir: &Path,
    all: &[Entry],
    committed: u64,
    snapshot_at: Option<u64>,
    purge_to: Option<u64>,
) {
    let (store, _) = LogStore::open(
        Arc::new(StdFs),
        dir,
        LogOptions {
            segment_size: 4096,
            kek: None,
        },
    )
    .unwrap();
    block_on(store.save_vote(tacos_core::types::Vote::new(1, 1))).unwrap();
    for entry in all {
        append_durably(&store, vec![entry.clone()]);
        if entry.log_id.index <= committed {
            store.save_committed(Some(entry.log_id)).unwrap();
        }
    }
    if let Some(at) = snapshot_at {
        let state = applied(&all[..=at as usize]);
        let backup = crate::backup::encode(&state, None);
        let (meta, _) = decode_snapshot(&backup.bytes).unwrap();
        let files = SnapshotFiles::open(Arc::new(StdFs), dir).unwrap();
        files.save(&meta, &backup.bytes).unwrap();
    }
    if let Some(to) = purge_to {
        block_on(store.purge(all[to as usize].log_id)).unwrap();
    }
    block_on(store.flush()).unwrap();
}

#[test]
fn summary_counts_every_table() {
    let state = applied(&entries(1, some_commands()));
    let summary = Summary::of(&state);
    assert_eq!(summary.configs, 39);
    assert_eq!(summary.configs, state.config_count());
    assert_eq!(summary.grays, 1);
    // 40 inserts, one update, one delete.
    assert_eq!(summary.history_rows, 42);
    assert_eq!(summary.digest, state.digest());
    let namespaces: Vec<(&str, usize)> = summary
        .namespaces
        .iter()
        .map(|n| (n.id.as_str(), n.configs))
        .collect();
    assert_eq!(namespaces, [("public", 20), ("dev", 19), ("prod", 0)]);
    assert!(summary
        .namespaces_line()
        .contains("dev \"dev name\" (19 configs)"));
}

#[test]
fn a_backup_decodes_to_the_same_state() {
    let state = applied(&entries(2, some_commands()));
    let backup = crate::backup::encode(&state, None);
    assert_eq!(backup.digest, state.digest());
    assert_eq!(backup.applied, state.last_applied);
    let (meta, back) = decode_snapshot(&backup.bytes).unwrap();
    assert_eq!(meta.last_log_id, state.last_applied);
    assert_eq!(meta.last_membership, state.membership);
    assert_eq!(back.digest(), state.digest());
    let mut flipped = backup.bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x10;
    assert!(decode_snapshot(&flipped).is_err());
}

#[test]
fn inspect_rebuilds_snapshot_plus_committed_log_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let all = entries(1, some_commands());
    let last = all.len() as u64 - 1;
    let committed = last - 3;
    write_data_dir(dir.path(), &all, committed, Some(20), Some(15));
    let before = files(dir.path());

    let report = inspect::inspect(dir.path(), None).unwrap();
    let expected = applied(&all[..=committed as usize]);
    assert_eq!(report.summary, Summary::of(&expected));
    assert_eq!(report.applied.map(|a| a.index), Some(committed));
    assert_eq!(report.committed.map(|c| c.index), Some(committed));
    assert_eq!(report.uncommitted_entries, 3);
    assert_eq!(report.purged.map(|p| p.index), Some(15));
    assert_eq!(
        report
            .snapshot
            .as_ref()
            .unwrap()
            .last_log_id
            .map(|l| l.index),
        Some(20)
    );
    assert_eq!(
        (report.entries.first, report.entries.last),
        (Some(16), Some(last))
    );
    assert!(report.segments.count > 1, "{:?}", report.segments);
    assert_eq!(report.vote.map(|v| (v.term, v.node)), Some((1, 1)));
    assert_eq!(report.membership.voters.len(), 1);
    assert_eq!(report.membership.voters[0].cluster_addr, "127.0.0.1:9849");
    assert!(report.torn_tail.is_none());
    let text = report.text();
    for label in ["segments", "committed", "snapshot", "membership", "digest"] {
        assert!(text.contains(label), "{text}");
    }
    assert_eq!(files(dir.path()), before, "inspect changed a file");

    // The node's own recovery agrees.
    let (store, recovery) =
        LogStore::open(Arc::new(StdFs), dir.path(), LogOptions::default()).unwrap();
    assert_eq!(recovery.committed.map(|c| c.index), Some(committed));
    drop(store);
}

#[test]
fn inspect_reports_a_torn_tail_and_refuses_damage_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let all = entries(1, some_commands());
    write_data_dir(dir.path(), &all, all.len() as u64 - 1, None, None);
    let mut segs: Vec<PathBuf> = std::fs::read_dir(dir.path().join(LOG_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segs.sort();
    let last = segs.last().unwrap().clone();
    let good = std::fs::read(&last).unwrap();
    let mut torn = good.clone();
    torn.extend_from_slice(&[40, 0, 0, 0, 1, 2, 3]);
    std::fs::write(&last, &torn).unwrap();

    let report = inspect::inspect(dir.path(), None).unwrap();
    let tail = report.torn_tail.expect("a torn tail");
    assert_eq!(
        (tail.file, tail.offset, tail.bytes),
        (last.clone(), good.len() as u64, 7)
    );
    assert_eq!(std::fs::read(&last).unwrap(), torn, "inspect cut the tail");

    // A flipped byte in the first segment is damage, named with its offset.
    let first = &segs[0];
    let mut bytes = std::fs::read(first).unwrap();
    bytes[40] ^= 0x01;
    std::fs::write(first, &bytes).unwrap();
    let error = format!("{:#}", inspect::inspect(dir.path(), None).unwrap_err());
    assert!(
        error.contains(&first.display().to_string()) && error.contains("at offset"),
        "{error}"
    );
}

#[test]
fn inspect_refuses_other_dirs_and_a_dir_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let error = inspect::inspect(dir.path(), None).unwrap_err().to_string();
    assert!(error.contains("not a tacos data dir"), "{error}");
    assert!(!dir.path().join(LOCK_FILE).exists(), "a LOCK was created");
    let error = inspect::inspect(&dir.path().join("missing"), None).unwrap_err();
    assert!(format!("{error:#}").contains("cannot read"), "{error:#}");

    let (store, _) = LogStore::open(Arc::new(StdFs), dir.path(), LogOptions::default()).unwrap();
    let error = inspect::inspect(dir.path(), None).unwrap_err().to_string();
    assert!(error.contains("while a tacos process uses it"), "{error}");
    drop(store);
    inspect::inspect(dir.path(), None).unwrap();
}

fn restore_settings(data_dir: &Path, extra: &[&str]) -> Settings {
    let mut args = vec![
        "tacos".to_string(),
        "--data-dir".into(),
        data_dir.display().to_string(),
        "--node-id".into(),
        "3".into(),
        "--http-port".into(),
        "9100".into(),
        "--cluster-port".into(),
        "9300".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    Settings::parse_from(args)
}

#[test]
fn restore_writes_a_dir_the_store_opens_as_one_voter_from_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let state = applied(&entries(4, some_commands()));
    let file = tmp.path().join("backup.snap");
    std::fs::write(&file, crate::backup::encode(&state, None).bytes).unwrap();
    let target = tmp.path().join("restored");
    let settings = restore_settings(&target, &[]);
    let args = restore::RestoreArgs {
        from: file.clone(),
        force: false,
    };
    restore::run(&args, &settings).unwrap();

    let last = state.last_applied.unwrap();
    let (store, recovery) =
        LogStore::open(Arc::new(StdFs), &target, LogOptions::default()).unwrap();
    assert_eq!(store.log_state(), (Some(last), Some(last)));
    assert_eq!(recovery.committed, Some(last));
    assert_eq!(store.vote(), Some(tacos_core::types::Vote::new(4, 3)));
    drop(store);
    let (meta, bytes) = SnapshotFiles::open(Arc::new(StdFs), &target)
        .unwrap()
        .latest()
        .unwrap()
        .unwrap();
    assert_eq!(meta.last_log_id, Some(last));
    let membership = meta.last_membership.membership();
    assert_eq!(membership.voter_ids().collect::<Vec<_>>(), [3]);
    assert_eq!(membership.learner_ids().count(), 0);
    assert_eq!(
        membership.get_node(&3),
        Some(&NodeInfo {
            cluster_addr: "127.0.0.1:9300".into(),
            http_addr: "127.0.0.1:9100".into(),
        })
    );
    let (_, back) = decode_snapshot(&bytes).unwrap();
    assert_eq!(back.digest(), state.digest());
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".restore-")),
        "the staging dir was left behind"
    );
}

#[test]
fn restore_refuses_a_bad_backup_and_a_non_empty_dir_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let state = applied(&entries(1, some_commands()));
    let bytes = crate::backup::encode(&state, None).bytes;
    let good = tmp.path().join("good.snap");
    std::fs::write(&good, &bytes).unwrap();
    let mut flipped = bytes.clone();
    let at = flipped.len() - 20;
    flipped[at] ^= 0x01;
    let bad = tmp.path().join("bad.snap");
    std::fs::write(&bad, &flipped).unwrap();

    let target = tmp.path().join("data");
    let settings = restore_settings(&target, &[]);
    let run = |from: &Path, force: bool| {
        restore::run(
            &restore::RestoreArgs {
                from: from.to_path_buf(),
                force,
            },
            &settings,
        )
    };
    let error = format!("{:#}", run(&bad, false).unwrap_err());
    assert!(error.contains("not a usable tacos backup"), "{error}");
    assert!(!target.exists(), "a bad backup created the data dir");

    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "mine").unwrap();
    let error = run(&good, false).unwrap_err().to_string();
    assert!(
        error.contains("is not empty") && error.contains("--force"),
        "{error}"
    );
    let error = run(&bad, true).unwrap_err().to_string();
    assert!(error.contains("not a usable tacos backup"), "{error}");
    assert_eq!(files(&target).len(), 1, "the target was touched");

    run(&good, true).unwrap();
    let aside: Vec<PathBuf> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("data.before-restore-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::read_to_string(aside[0].join("keep.txt")).unwrap(),
        "mine"
    );
    let report = inspect::inspect(&target, None).unwrap();
    assert_eq!(report.summary.digest, state.digest());

    // An empty dir needs no --force.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    restore::run(
        &restore::RestoreArgs {
            from: good.clone(),
            force: false,
        },
        &restore_settings(&empty, &[]),
    )
    .unwrap();
}

#[test]
fn subcommands_take_the_settings_before_or_after_their_name() {
    let settings = Settings::try_parse_from(["tacos"]).unwrap();
    assert!(settings.command.is_none());
    let settings = Settings::try_parse_from([
        "tacos",
        "restore",
        "--from",
        "b.snap",
        "--data-dir",
        "d",
        "--node-id",
        "2",
    ])
    .unwrap();
    assert_eq!(settings.data_dir, Path::new("d"));
    assert_eq!(settings.node_id, 2);
    assert!(matches!(
        settings.command,
        Some(Command::Restore(restore::RestoreArgs { ref from, force: false })) if from == Path::new("b.snap")
    ));
    let settings =
        Settings::try_parse_from(["tacos", "--http-port", "9000", "inspect", "--json"]).unwrap();
    assert_eq!(settings.http_port, 9000);
    assert!(matches!(
        settings.command,
        Some(Command::Inspect(inspect::InspectArgs {
            dir: None,
            json: true
        }))
    ));
    assert!(Settings::try_parse_from(["tacos", "backup", "--out", "f"]).is_err());
    assert_eq!(
        backup::backup_url("10.0.0.1:8848", true),
        "http://10.0.0.1:8848/tacos/v1/admin/backup?consistency=linearizable"
    );
    assert_eq!(
        backup::backup_url("http://h:1/", false),
        "http://h:1/tacos/v1/admin/backup"
    );
}

#[test]
fn the_config_file_applies_to_subcommands() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tacos.toml");
    std::fs::write(&path, "data-dir = \"/from/file\"\nnode-id = 5\n").unwrap();
    let path = path.display().to_string();
    for args in [
        vec!["tacos", "--config", &path, "restore", "--from", "b"],
        vec!["tacos", "restore", "--from", "b", "--config", &path],
    ] {
        let settings = crate::settings::file::load_from(args.clone()).unwrap();
        assert_eq!(settings.data_dir, Path::new("/from/file"), "{args:?}");
        assert_eq!(settings.node_id, 5, "{args:?}");
        assert!(matches!(settings.command, Some(Command::Restore(_))));
    }
    let settings = crate::settings::file::load_from([
        "tacos",
        "restore",
        "--from",
        "b",
        "--config",
        &path,
        "--node-id",
        "7",
    ])
    .unwrap();
    assert_eq!(settings.node_id, 7, "a flag beats the file");
}

// ---- `tacos backup` over HTTPS ---------------------------------------------

/// A CA and, signed by it, `server.crt`/`.key` (for localhost and
/// 127.0.0.1) and `client.crt`/`.key`, as PEM files in `dir`; plus
/// `other-ca.crt`, a CA that signed nothing.
fn write_pki(dir: &Path) {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let now = time::OffsetDateTime::now_utc();
    let ca = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(30);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    };
    let (pem, issuer) = ca("backup test CA");
    std::fs::write(dir.join("ca.crt"), pem).unwrap();
    std::fs::write(dir.join("other-ca.crt"), ca("another CA").0).unwrap();
    for (name, usage) in [
        ("server", ExtendedKeyUsagePurpose::ServerAuth),
        ("client", ExtendedKeyUsagePurpose::ClientAuth),
    ] {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.extended_key_usages = vec![usage];
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(30);
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// An HTTPS server made as a node makes its HTTP port (actix on a
/// `tacos_tls::server_config`), client certificates required, that answers
/// the backup route with `backup`. Returns its port; it stops with the test
/// process.
fn https_backup_server(dir: &Path, backup: crate::backup::Backup) -> u16 {
    tacos_tls::install_default_provider();
    let identity = tacos_tls::ReloadingIdentity::load(
        &dir.join("server.crt"),
        &dir.join("server.key"),
        &["http"],
    )
    .unwrap();
    let auth = tacos_tls::ClientAuth::Required(dir.join("ca.crt"));
    let config = tacos_tls::server_config(identity, &auth, &[]).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let backup = Arc::new(backup);
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            actix_web::HttpServer::new(move || {
                let backup = backup.clone();
                actix_web::App::new().route(
                    crate::backup::ROUTE,
                    actix_web::web::get().to(move || {
                        let backup = backup.clone();
                        async move {
                            actix_web::HttpResponse::Ok()
                                .insert_header((
                                    crate::backup::DIGEST_HEADER,
                                    backup.digest.clone(),
                                ))
                                .body(backup.bytes.clone())
                        }
                    }),
                )
            })
            .workers(1)
            .listen_rustls_0_23(listener, config)
            .unwrap()
            .run()
            .await
            .unwrap()
        })
    });
    port
}

fn backup_args(extra: &[&str]) -> backup::BackupArgs {
    let mut args = vec!["tacos", "backup", "--password", "pw"];
    args.extend(extra);
    match Settings::try_parse_from(args).unwrap().command {
        Some(Command::Backup(args)) => args,
        other => panic!("{other:?}"),
    }
}

#[test]
fn backup_over_https_trusts_cacert_and_presents_the_client_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write_pki(dir);
    let state = applied(&entries(1, some_commands()));
    let port = https_backup_server(dir, crate::backup::encode(&state, None));
    let node = format!("https://localhost:{port}");
    let file = |name: &str| dir.join(name).display().to_string();
    let out = dir.join("backup.snap");
    let run = |extra: &[&str]| {
        let mut args = vec!["--node", &node, "--out", out.to_str().unwrap()];
        args.extend(extra);
        backup::run(&backup_args(&args), None).map_err(|e| format!("{e:#}"))
    };

    let (ca, other_ca) = (file("ca.crt"), file("other-ca.crt"));
    let (cert, key) = (file("client.crt"), file("client.key"));
    run(&["--cacert", &ca, "--cert", &cert, "--key", &key]).unwrap();
    let (_, back) = decode_snapshot(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(back.digest(), state.digest());
    std::fs::remove_file(&out).unwrap();

    // Each missing piece is named.
    let error = run(&["--cacert", &ca]).unwrap_err();
    assert!(error.contains("give --cert and --key"), "{error}");
    let error = run(&["--cacert", &other_ca, "--cert", &cert, "--key", &key]).unwrap_err();
    assert!(error.contains("--cacert"), "{error}");
    let error = run(&[
        "--cacert",
        &ca,
        "--cert",
        &cert,
        "--key",
        &file("server.key"),
    ])
    .unwrap_err();
    assert!(
        error.contains("does not belong to the certificate"),
        "{error}"
    );
    let error = run(&["--cacert", &file("missing.crt")]).unwrap_err();
    assert!(error.contains("missing.crt"), "{error}");
    assert!(!out.exists());
}

#[test]
fn backup_tls_flags_need_an_https_node_and_each_other() {
    let args = backup_args(&["--node", "h:1", "--out", "f", "--cacert", "ca.crt"]);
    let error = format!("{:#}", backup::run(&args, None).unwrap_err());
    assert!(error.contains("are for an https:// --node"), "{error}");
    for half in [["--cert", "c.crt"], ["--key", "c.key"]] {
        let mut args = vec!["tacos", "backup", "--node", "h:1", "--out", "f"];
        args.extend(half);
        assert!(Settings::try_parse_from(args).is_err(), "{half:?}");
    }
    assert_eq!(
        backup::backup_url("https://h:1", false),
        "https://h:1/tacos/v1/admin/backup"
    );
}
