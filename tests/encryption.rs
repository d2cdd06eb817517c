//! Encryption at rest on the real binary (`--encryption-key-file`):
//!
//! * after secrets are written (configs, updates in history, a gray), no
//!   file of the data dir and no backup holds them in plain text;
//! * a restart with the key serves them; without the key, or with another
//!   key, the node refuses to start and says why;
//! * `tacos rekey` moves the dir to a new key: the old one is then refused,
//!   the new one loads the snapshot and log written before;
//! * a backup is encrypted, `tacos backup` needs the key to verify it, and
//!   `tacos restore` opens it with the key into a new encrypted dir;
//! * a plain data dir started with a key keeps its data, and once snapshots
//!   and a purge have run, nothing plain is left.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{assert_true, data_dir, free_port, run_to_exit, temp_dir, Exited, NacosApi, Server};

const GROUP: &str = "DEFAULT_GROUP";
/// Written into every secret, and searched for in the files.
const MARK: &str = "S3CRET-MARK";

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// Writes a key file with 64 hex digits of `byte`.
fn key_file(dir: &Path, name: &str, byte: u8) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{}\n", format!("{byte:02x}").repeat(32))).unwrap();
    path
}

fn tacos(log_dir: &Path, args: &[&str]) -> Exited {
    run_to_exit(log_dir, args, &[("TACOS_PASSWORD", common::ADMIN_PASSWORD)])
}

/// Files under `dir` (recursively) whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .expect("read")
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

fn snapshot_count(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("snapshots"))
        .map(|d| {
            d.filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "snap"))
            })
            .count()
        })
        .unwrap_or(0)
}

/// Publishes `rounds` versions of `count` secret configs and a beta.
async fn write_secrets(api: &NacosApi, prefix: &str, count: usize, rounds: usize) {
    for round in 0..rounds {
        for i in 0..count {
            let content = format!("password={MARK}-{prefix}-{i}-{round}\n");
            assert_true(
                api.publish(&format!("{prefix}-{i}.properties"), GROUP, "", &content)
                    .await,
                "publish",
            )
            .await;
        }
    }
    let response = api
        .client()
        .post(api.url("/nacos/v1/cs/configs"))
        .header("betaIps", "10.0.0.9")
        .form(&[
            ("dataId", format!("{prefix}-0.properties")),
            ("group", GROUP.to_string()),
            ("content", format!("password={MARK}-{prefix}-beta\n")),
        ])
        .send()
        .await
        .expect("publish beta");
    assert_true(response, "publish beta").await;
}

async fn read(api: &NacosApi, data_id: &str) -> String {
    let (status, body, _) = api.get(data_id, GROUP, "").await;
    assert_eq!(status, 200, "GET {data_id}: {body}");
    body
}

/// Starts tacos on `tmp`'s data dir expecting it to refuse; returns stderr.
fn refused_start(tmp: &Path, extra: &[&str]) -> String {
    let dir = tmp.join("data");
    let (http, cluster, grpc) = (
        free_port().to_string(),
        free_port().to_string(),
        free_port().to_string(),
    );
    let mut args = vec![
        "--data-dir",
        path_str(&dir),
        "--http-port",
        &http,
        "--cluster-port",
        &cluster,
        "--grpc-port",
        &grpc,
    ];
    args.extend_from_slice(extra);
    let out = run_to_exit(tmp, &args, &[]);
    assert!(!out.status.success(), "started: {out:?}");
    format!("{}{}", out.stdout, out.stderr)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_encrypted_dir_holds_no_plaintext_and_opens_only_with_its_key() {
    let tmp = temp_dir();
    let keys = temp_dir();
    let first = key_file(keys.path(), "first.key", 0x11);
    let second = key_file(keys.path(), "second.key", 0x22);
    let args = [
        "--encryption-key-file",
        path_str(&first),
        "--snapshot-log-bytes",
        "4096",
    ];
    let mut server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    write_secrets(&api, "enc", 20, 3).await;
    // Size-based snapshots are checked once a second.
    let deadline = Instant::now() + Duration::from_secs(15);
    while snapshot_count(server.data_dir()) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(snapshot_count(server.data_dir()) > 0, "no snapshot written");
    // One write after the snapshot: the restart needs the log too.
    write_secrets(&api, "tail", 1, 1).await;

    // The backup the node serves is encrypted, and `tacos backup` verifies
    // it with the key only.
    let backup = api
        .client()
        .get(api.url("/tacos/v1/admin/backup"))
        .send()
        .await
        .expect("GET backup")
        .bytes()
        .await
        .unwrap();
    assert!(backup.starts_with(b"TACOSEAL"));
    assert!(!backup.windows(MARK.len()).any(|w| w == MARK.as_bytes()));
    let out_file = tmp.path().join("node.backup");
    let node = format!("127.0.0.1:{}", server.port());
    let out = tacos(
        tmp.path(),
        &["backup", "--node", &node, "--out", path_str(&out_file)],
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(out.stderr.contains("--encryption-key-file"), "{out:?}");
    let out = tacos(
        tmp.path(),
        &[
            "backup",
            "--node",
            &node,
            "--out",
            path_str(&out_file),
            "--encryption-key-file",
            path_str(&first),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(server.stop().await.success());

    let dir = data_dir(&tmp);
    assert_eq!(files_containing(&dir, MARK), Vec::<PathBuf>::new());
    assert!(!std::fs::read(&out_file)
        .unwrap()
        .windows(MARK.len())
        .any(|w| w == MARK.as_bytes()));

    // Without the key, or with another one: a clear refusal.
    let error = refused_start(tmp.path(), &[]);
    assert!(error.contains("no key was given"), "{error}");
    let error = refused_start(tmp.path(), &["--encryption-key-file", path_str(&second)]);
    assert!(error.contains("encrypted with the key of id"), "{error}");

    // Rekey to the second key: the first is refused afterwards, the second
    // loads the snapshot and the log written under the first.
    let out = tacos(
        tmp.path(),
        &[
            "rekey",
            "--data-dir",
            path_str(&dir),
            "--encryption-key-file",
            path_str(&first),
            "--new-key-file",
            path_str(&second),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let error = refused_start(tmp.path(), &["--encryption-key-file", path_str(&first)]);
    assert!(error.contains("encrypted with the key of id"), "{error}");
    let out = tacos(
        tmp.path(),
        &[
            "inspect",
            path_str(&dir),
            "--json",
            "--encryption-key-file",
            path_str(&second),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["encryption"]["plainEntries"], 0, "{report}");
    assert_eq!(report["encryption"]["snapshotSealed"], true, "{report}");

    let server = Server::start_with_args(
        &tmp,
        &[
            "--encryption-key-file",
            path_str(&second),
            "--snapshot-log-bytes",
            "4096",
        ],
    )
    .await;
    let api = server.api();
    assert_eq!(
        read(&api, "enc-7.properties").await,
        format!("password={MARK}-enc-7-2\n")
    );
    assert_eq!(
        read(&api, "tail-0.properties").await,
        format!("password={MARK}-tail-0-0\n")
    );
    let history = api.history("enc-3.properties", GROUP, "", 1, 10).await;
    assert_eq!(history.page_items.len(), 3, "one insert, two updates");
    drop(server);

    // Restore the backup (made under the first key) into a new dir.
    let target = temp_dir();
    let restored = data_dir(&target);
    let out = tacos(
        target.path(),
        &[
            "restore",
            "--from",
            path_str(&out_file),
            "--data-dir",
            path_str(&restored),
        ],
    );
    assert!(!out.status.success(), "restored without the key: {out:?}");
    assert!(!restored.exists());
    let out = tacos(
        target.path(),
        &[
            "restore",
            "--from",
            path_str(&out_file),
            "--data-dir",
            path_str(&restored),
            "--encryption-key-file",
            path_str(&first),
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(files_containing(&restored, MARK), Vec::<PathBuf>::new());
    let server =
        Server::start_with_args(&target, &["--encryption-key-file", path_str(&first)]).await;
    let api = server.api();
    assert_eq!(
        read(&api, "enc-19.properties").await,
        format!("password={MARK}-enc-19-2\n")
    );
    // The gray (beta) came through the backup too.
    let beta = api
        .client()
        .get(api.url("/nacos/v1/cs/configs"))
        .query(&[
            ("dataId", "enc-0.properties"),
            ("group", GROUP),
            ("beta", "true"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(beta.status(), 200);
    let beta: serde_json::Value = beta.json().await.unwrap();
    assert_eq!(
        beta["data"]["content"],
        format!("password={MARK}-enc-beta\n"),
        "{beta}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_dir_switched_to_encrypted_keeps_its_data_and_then_holds_no_plaintext() {
    let tmp = temp_dir();
    let keys = temp_dir();
    let key = key_file(keys.path(), "key", 0x33);
    let mut server = Server::start(&tmp).await;
    write_secrets(&server.api(), "plain", 5, 1).await;
    assert!(server.stop().await.success());
    assert!(!files_containing(&data_dir(&tmp), MARK).is_empty());

    let args = [
        "--encryption-key-file",
        path_str(&key),
        "--snapshot-log-bytes",
        "4096",
    ];
    let server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    assert_eq!(
        read(&api, "plain-3.properties").await,
        format!("password={MARK}-plain-3-0\n")
    );
    // Enough writes for two snapshots and a purge past the plain entries
    // (openraft keeps the newest 200 entries after a snapshot).
    let filler = "x".repeat(200);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut round = 0;
    loop {
        for i in 0..50 {
            let content = format!("filler={filler}-{round}-{i}");
            assert_true(
                api.publish(&format!("filler-{i}"), GROUP, "", &content)
                    .await,
                "publish",
            )
            .await;
        }
        round += 1;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        if files_containing(&data_dir(&tmp), MARK).is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "plain data left after {round} rounds: {:?}",
            files_containing(&data_dir(&tmp), MARK)
        );
    }
    // Still there, now only encrypted.
    assert_eq!(
        read(&api, "plain-4.properties").await,
        format!("password={MARK}-plain-4-0\n")
    );
}
