//! Operator tools on the real binary: `GET /tacos/v1/admin/backup`,
//! `tacos backup`, `tacos restore` and `tacos inspect`.
//!
//! * A backup restored into a fresh dir starts as a one-voter cluster (under
//!   another node id) with the same digest, configs, namespaces and history;
//!   it takes writes, and a new node can `--join` it.
//! * `inspect` on a stopped node's dir reports the digest and counts the
//!   running node reported, refuses while the node runs, reports a torn tail
//!   without cutting it, and names file and offset of damage.
//! * `restore` refuses a non-empty dir without `--force` and a corrupt
//!   backup, leaving the target as it was.
//! * `tacos backup --node` writes a file that decodes to the node's digest.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    assert_true, data_dir, free_port, run_to_exit, temp_dir, Exited, NacosApi, Server, POLL,
};
use serde_json::Value;

const GROUP: &str = "DEFAULT_GROUP";
const NAMESPACES: &str = "/nacos/v1/console/namespaces";
const DIGEST: &str = "/tacos/v1/admin/digest";
const BACKUP: &str = "/tacos/v1/admin/backup";

/// Runs `tacos ARGS` to its exit.
fn tacos(log_dir: &Path, args: &[&str]) -> Exited {
    run_to_exit(log_dir, args, &[("TACOS_PASSWORD", common::ADMIN_PASSWORD)])
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// `GET /tacos/v1/admin/digest`.
async fn digest(api: &NacosApi) -> Value {
    let reply = api.get_path(DIGEST).await.expect("GET digest");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()
}

/// Namespaces (`dev`, `prod`), configs in each and the public one, updates
/// (history rows) and a delete.
async fn write_sample(api: &NacosApi) {
    for id in ["dev", "prod"] {
        let form = [
            ("customNamespaceId", id),
            ("namespaceName", id),
            ("namespaceDesc", "ops test"),
        ];
        let response = api
            .client()
            .post(api.url(NAMESPACES))
            .form(&form)
            .send()
            .await
            .expect("POST namespace");
        assert_true(response, "create namespace").await;
    }
    for (tenant, count) in [("", 5), ("dev", 3), ("prod", 2)] {
        for i in 0..count {
            let data_id = format!("app-{i}.yaml");
            let content = format!("tenant: {tenant:?}\nkey: {i}\n");
            assert_true(
                api.publish(&data_id, GROUP, tenant, &content).await,
                "publish",
            )
            .await;
        }
    }
    for round in 0..3 {
        let content = format!("updated: {round}\n");
        assert_true(
            api.publish("app-1.yaml", GROUP, "dev", &content).await,
            "update",
        )
        .await;
    }
    assert_true(api.delete("app-4.yaml", GROUP, "").await, "delete").await;
}

/// Every config (tenant → dataId → content) and the namespace list.
async fn contents(api: &NacosApi) -> (BTreeMap<String, BTreeMap<String, String>>, Value) {
    let mut configs = BTreeMap::new();
    for tenant in ["", "dev", "prod"] {
        let items = api.search_all(tenant, 100).await;
        configs.insert(
            tenant.to_string(),
            items.into_iter().map(|c| (c.data_id, c.content)).collect(),
        );
    }
    let reply = api.get_path(NAMESPACES).await.expect("GET namespaces");
    (configs, reply.json()["data"].clone())
}

/// History rows (id, op, content) of the keys the sample changed most.
async fn histories(api: &NacosApi) -> Vec<Vec<(String, String, String)>> {
    let mut all = Vec::new();
    for (data_id, tenant) in [
        ("app-1.yaml", "dev"),
        ("app-4.yaml", ""),
        ("app-0.yaml", "prod"),
    ] {
        let page = api.history(data_id, GROUP, tenant, 1, 100).await;
        all.push(
            page.page_items
                .into_iter()
                .map(|h| (h.id, h.op_type, h.content))
                .collect(),
        );
    }
    all
}

/// `GET /tacos/v1/admin/backup`: status, headers, bytes.
async fn download_backup(api: &NacosApi) -> (reqwest::header::HeaderMap, Vec<u8>) {
    let response = api
        .client()
        .get(api.url(BACKUP))
        .send()
        .await
        .expect("GET backup");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("backup body").to_vec();
    (headers, bytes)
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    common::header_str(headers, name)
}

/// Every file under `dir` but LOCK, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n != "LOCK") {
                out.insert(path.clone(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

/// `tacos inspect DIR --json`, which must succeed.
fn inspect_json(log_dir: &Path, dir: &Path) -> Value {
    let out = tacos(log_dir, &["inspect", path_str(dir), "--json"]);
    assert!(out.status.success(), "inspect failed: {out:?}");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"))
}

/// The newest log segment of a data dir.
fn last_segment(dir: &Path) -> PathBuf {
    let mut segments: Vec<PathBuf> = std::fs::read_dir(dir.join("log"))
        .expect("log dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "seg"))
        .collect();
    segments.sort();
    segments.pop().expect("a segment")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backup_restores_into_a_one_voter_cluster_with_the_same_state() {
    let source = temp_dir();
    let mut server = Server::start(&source).await;
    let api = server.api();
    write_sample(&api).await;
    let before = digest(&api).await;
    let (configs, namespaces) = contents(&api).await;
    let history = histories(&api).await;
    assert_eq!(configs[""].len(), 4, "{configs:?}");
    assert_eq!(before["configs"], 9);

    let (headers, bytes) = download_backup(&api).await;
    assert_eq!(header(&headers, "content-type"), "application/octet-stream");
    assert_eq!(header(&headers, "x-tacos-digest"), before["digest"]);
    assert_eq!(
        header(&headers, "x-tacos-applied"),
        before["applied"].to_string()
    );
    assert!(server.stop().await.success());

    // Restore under another node id: a node other than 1 initializes no
    // cluster by itself, so serving proves the dir starts from the backup.
    let target = temp_dir();
    let file = target.path().join("backup.snap");
    std::fs::write(&file, &bytes).unwrap();
    let (http_port, cluster_port) = (free_port(), free_port());
    let (http, cluster) = (http_port.to_string(), cluster_port.to_string());
    let restored_dir = data_dir(&target);
    let out = tacos(
        target.path(),
        &[
            "restore",
            "--from",
            path_str(&file),
            "--data-dir",
            path_str(&restored_dir),
            "--node-id",
            "3",
            "--http-port",
            &http,
            "--cluster-port",
            &cluster,
        ],
    );
    assert!(out.status.success(), "restore failed: {out:?}");
    let digest_line = format!("digest       {}", before["digest"].as_str().unwrap());
    assert!(out.stdout.contains(&digest_line), "{}", out.stdout);
    assert!(out.stdout.contains("--join"), "{}", out.stdout);

    let mut restored = Server::spawn(
        &target,
        http_port,
        &["--node-id", "3", "--cluster-port", &cluster],
    );
    restored.wait_healthy().await;
    let api = restored.api();
    let after = digest(&api).await;
    assert_eq!(after["digest"], before["digest"]);
    assert_eq!(after["configs"], before["configs"]);
    assert_eq!(after["nodeId"], 3);
    assert_eq!(contents(&api).await, (configs, namespaces));
    assert_eq!(histories(&api).await, history);
    let members = api
        .get_path("/tacos/v1/admin/cluster/members")
        .await
        .unwrap()
        .json();
    assert_eq!(
        members["voters"],
        serde_json::json!([{
            "id": 3,
            "clusterAddr": format!("127.0.0.1:{cluster_port}"),
            "httpAddr": format!("127.0.0.1:{http_port}"),
        }])
    );
    assert_eq!(members["learners"], serde_json::json!([]));

    // Writes work, and history ids continue after the restored ones.
    assert_true(
        api.publish("after-restore.yaml", GROUP, "prod", "new: true")
            .await,
        "publish after restore",
    )
    .await;
    let (status, body, _) = api.get("after-restore.yaml", GROUP, "prod").await;
    assert_eq!((status.as_u16(), body.as_str()), (200, "new: true"));
    let newest = api.history("after-restore.yaml", GROUP, "prod", 1, 1).await;
    let max_before = history
        .iter()
        .flatten()
        .map(|(id, _, _)| id.parse::<u64>().unwrap())
        .max()
        .unwrap();
    assert!(newest.page_items[0].id_number() > max_before);
    let now = digest(&api).await;

    // Another node joins the restored one with an empty data dir.
    let joiner_dir = temp_dir();
    let join_to = format!("127.0.0.1:{cluster_port}");
    let mut joiner = Server::spawn(
        &joiner_dir,
        free_port(),
        &["--node-id", "5", "--join", &join_to],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let members = api
            .get_path("/tacos/v1/admin/cluster/members")
            .await
            .unwrap()
            .json();
        let voters: Vec<u64> = members["voters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_u64().unwrap())
            .collect();
        if voters == [3, 5] {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 5 never became a voter: {members}"
        );
        tokio::time::sleep(POLL).await;
    }
    // The join itself is audited (a new row), so compare with the restored
    // node's digest as it is now, not as it was before the join.
    loop {
        let (a, b) = (digest(&api).await, digest(&joiner.api()).await);
        if a["digest"] == b["digest"] && a["applied"] == b["applied"] {
            assert_ne!(a["digest"], now["digest"], "the join was not audited");
            break;
        }
        assert!(Instant::now() < deadline, "digests differ: {a} vs {b}");
        tokio::time::sleep(POLL).await;
    }
    assert!(joiner.stop().await.success());
    assert!(restored.stop().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_reports_what_the_running_node_reported_and_refuses_while_it_runs() {
    let tmp = temp_dir();
    // Small snapshots, so the dir holds a snapshot and a log after it.
    let mut server = Server::start_with_args(&tmp, &["--snapshot-log-bytes", "4096"]).await;
    let api = server.api();
    write_sample(&api).await;
    for i in 0..40 {
        let content = format!("padding: {}\n", "p".repeat(100));
        assert_true(
            api.publish(&format!("bulk-{i}"), GROUP, "", &content).await,
            "publish",
        )
        .await;
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_dir(server.data_dir().join("snapshots"))
        .map(|d| d.count())
        .unwrap_or(0)
        == 0
    {
        assert!(Instant::now() < deadline, "no snapshot was written");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_true(
        api.publish("tail.yaml", GROUP, "dev", "after the snapshot")
            .await,
        "publish",
    )
    .await;
    let running = digest(&api).await;

    let out = tacos(tmp.path(), &["inspect", path_str(server.data_dir())]);
    assert!(
        !out.status.success(),
        "inspect ran beside the node: {out:?}"
    );
    assert!(
        out.stderr.contains("while a tacos process uses it"),
        "{}",
        out.stderr
    );

    assert!(server.stop().await.success());
    let report = inspect_json(tmp.path(), server.data_dir());
    assert_eq!(report["digest"], running["digest"], "{report:#}");
    assert_eq!(report["configs"], running["configs"]);
    assert_eq!(report["applied"]["index"], running["applied"]);
    assert_eq!(report["committed"]["index"], running["applied"]);
    assert!(
        report["snapshot"]["lastLogId"]["index"].as_u64() > Some(0),
        "{report:#}"
    );
    assert!(report["segments"]["count"].as_u64() >= Some(1));
    assert!(report["tornTail"].is_null());
    assert_eq!(report["membership"]["voters"][0]["id"], 1);
    assert_eq!(report["vote"]["node"], 1);
    let namespaces: Vec<&str> = report["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(namespaces, ["public", "dev", "prod"]);
    assert!(report["historyRows"].as_u64() >= Some(51));

    // The same in text, with the digest on its own line.
    let out = tacos(tmp.path(), &["inspect", path_str(server.data_dir())]);
    assert!(out.status.success(), "{out:?}");
    for line in [
        format!("digest       {}", running["digest"].as_str().unwrap()),
        format!("configs      {}", running["configs"]),
        "torn tail    none".to_string(),
    ] {
        assert!(
            out.stdout.contains(&line),
            "no {line:?} in:\n{}",
            out.stdout
        );
    }
    // With the data dir from the settings instead of an argument.
    let out = tacos(
        tmp.path(),
        &[
            "--data-dir",
            path_str(server.data_dir()),
            "inspect",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");

    // A dir that is no data dir is refused, and gets no LOCK file.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = tacos(tmp.path(), &["inspect", path_str(&empty)]);
    assert!(!out.status.success());
    assert!(
        out.stderr.contains("not a tacos data dir"),
        "{}",
        out.stderr
    );
    assert!(!empty.join("LOCK").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn inspect_reports_a_torn_tail_without_cutting_it_and_names_damage() {
    let tmp = temp_dir();
    let mut server = Server::start(&tmp).await;
    let api = server.api();
    write_sample(&api).await;
    let running = digest(&api).await;
    assert!(server.stop().await.success());

    let segment = last_segment(server.data_dir());
    let intact = std::fs::read(&segment).unwrap();
    // A record header promising 100 bytes, then only 5 of them.
    let mut torn = intact.clone();
    torn.extend_from_slice(&[100, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5]);
    std::fs::write(&segment, &torn).unwrap();
    let before = files(server.data_dir());

    let report = inspect_json(tmp.path(), server.data_dir());
    assert_eq!(report["tornTail"]["file"], path_str(&segment));
    assert_eq!(report["tornTail"]["offset"], intact.len());
    assert_eq!(report["tornTail"]["bytes"], 13);
    assert_eq!(report["digest"], running["digest"]);
    let out = tacos(tmp.path(), &["inspect", path_str(server.data_dir())]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "torn tail    {}: record cut short",
            segment.display()
        )),
        "{}",
        out.stdout
    );
    assert_eq!(
        files(server.data_dir()),
        before,
        "inspect changed the data dir"
    );

    // A flipped byte in an early record, with intact records after it, is
    // damage: named with file and offset, exit status 1.
    let mut damaged = intact;
    damaged[8 + 10] ^= 0x01;
    std::fs::write(&segment, &damaged).unwrap();
    let out = tacos(tmp.path(), &["inspect", path_str(server.data_dir())]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains(&format!(
            "corrupt data in {} at offset 8",
            segment.display()
        )),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn restore_refuses_a_non_empty_dir_and_a_corrupt_backup_leaving_the_target_alone() {
    let tmp = temp_dir();
    let mut server = Server::start(&tmp).await;
    write_sample(&server.api()).await;
    let (_, bytes) = download_backup(&server.api()).await;
    assert!(server.stop().await.success());
    let good = tmp.path().join("good.snap");
    std::fs::write(&good, &bytes).unwrap();
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x04;
    let bad = tmp.path().join("bad.snap");
    std::fs::write(&bad, &flipped).unwrap();

    // The stopped node's own dir is not empty.
    let node_dir = server.data_dir().to_path_buf();
    let before = files(&node_dir);
    let restore = |from: &Path, dir: &Path, force: bool| {
        let mut args = vec![
            "restore",
            "--from",
            path_str(from),
            "--data-dir",
            path_str(dir),
        ];
        if force {
            args.push("--force");
        }
        tacos(tmp.path(), &args)
    };
    let out = restore(&good, &node_dir, false);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stderr.contains("is not empty") && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    assert_eq!(files(&node_dir), before);

    for dir in [node_dir.clone(), tmp.path().join("fresh")] {
        let out = restore(&bad, &dir, true);
        assert!(!out.status.success(), "{out:?}");
        assert!(
            out.stderr
                .contains(&format!("{} is not a usable tacos backup", bad.display()))
                && out.stderr.contains("nothing was changed"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(files(&node_dir), before);
    assert!(!tmp.path().join("fresh").exists());
    let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("restore"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Not while a node runs on it, even with --force.
    let mut server = Server::start(&tmp).await;
    let out = restore(&good, &node_dir, true);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        out.stderr.contains("while a tacos process uses it"),
        "{}",
        out.stderr
    );
    assert!(server.stop().await.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn tacos_backup_writes_a_file_with_the_nodes_digest() {
    let tmp = temp_dir();
    let mut server = Server::start(&tmp).await;
    let api = server.api();
    write_sample(&api).await;
    let running = digest(&api).await;
    let out_file = tmp.path().join("backups").join("node1.snap");
    std::fs::create_dir(out_file.parent().unwrap()).unwrap();
    let node = format!("127.0.0.1:{}", server.port());
    let out = tacos(
        tmp.path(),
        &[
            "backup",
            "--node",
            &node,
            "--out",
            path_str(&out_file),
            "--password",
            common::ADMIN_PASSWORD,
        ],
    );
    assert!(out.status.success(), "backup failed: {out:?}");
    let digest = running["digest"].as_str().unwrap();
    assert!(
        out.stdout.contains(&format!("digest       {digest}")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("configs      9"), "{}", out.stdout);

    let bytes = std::fs::read(&out_file).unwrap();
    let (meta, state) = tacos::ops::decode_snapshot(&bytes).expect("the file decodes");
    assert_eq!(state.digest(), digest);
    assert_eq!(
        meta.last_log_id.map(|l| l.index),
        running["applied"].as_u64()
    );
    let names: Vec<String> = std::fs::read_dir(out_file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["node1.snap"], "a temp file was left behind");

    // Linearizable, over a URL.
    let url = format!("http://127.0.0.1:{}", server.port());
    let again = tmp.path().join("again.snap");
    let out = tacos(
        tmp.path(),
        &[
            "backup",
            "--node",
            &url,
            "--out",
            path_str(&again),
            "--linearizable",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    assert!(server.stop().await.success());

    // Nobody there: a clear error, no file.
    let gone = tmp.path().join("gone.snap");
    let out = tacos(
        tmp.path(),
        &["backup", "--node", &node, "--out", path_str(&gone)],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        out.stderr.contains("tacos backup: GET http://"),
        "{}",
        out.stderr
    );
    assert!(!gone.exists());
}

/// `tacos routes | head -1`: a reader that goes away before the output is
/// written ends the tool quietly (exit 0, nothing on stderr), not in a panic.
#[test]
fn a_closed_stdout_ends_an_operator_tool_quietly() {
    for args in [&["routes"][..], &["routes", "--json"][..]] {
        let mut child = common::tacos_command()
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawning tacos");
        // Close the reading end before the tool writes (it has to start first).
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waiting for tacos");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
