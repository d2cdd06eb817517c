//! The `fanout` tool against a real Tacos node: a few long-poll and gRPC listeners,
//! connected from two loopback source addresses, two publishes; every listener must be
//! told of each, and the report must name the server's RSS. And 10,000 listeners, each
//! told exactly once per change. No timing is asserted.
//!
//! Needs the `tacos` binary (`cargo build --bin tacos`; `cargo test --workspace` builds
//! it), found as in qa_smoke.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use loadtest::qa::servers::{Cluster, Flavor, ServerSpec};

fn tacos_binary() -> PathBuf {
    let beside = Path::new(env!("CARGO_BIN_EXE_fanout")).with_file_name("tacos");
    if beside.is_file() {
        return beside;
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("loadtest sits in the workspace");
    let debug = workspace.join("target/debug/tacos");
    assert!(
        debug.is_file(),
        "the tacos binary is missing (looked for {} and {}): build it with \
         `cargo build --bin tacos`",
        beside.display(),
        debug.display()
    );
    debug
}

/// Runs `fanout` with `args` against a fresh node (ports from `base_port`) and answers
/// its report and the server's PID; fails the test if the tool fails or hangs past
/// `limit`.
fn run_fanout(
    dir: &Path,
    base_port: u16,
    args: &[&str],
    limit: Duration,
) -> (serde_json::Value, u32) {
    let spec = ServerSpec::new("tacos", Flavor::Tacos, &tacos_binary()).expect("tacos --version");
    let cluster = Cluster::start(
        &spec,
        1,
        &dir.join("server"),
        base_port,
        Duration::from_secs(60),
    )
    .expect("tacos starts");
    let host = format!("127.0.0.1:{}", cluster.nodes[0].ports.http);
    let report = dir.join("fanout.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fanout"))
        .args(["--hosts", &host])
        .args(args)
        .arg("--report-file")
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fanout");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fanout") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fanout did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = child.wait_with_output().expect("fanout output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "fanout failed ({status}):\n{stderr}");
    let pid = cluster.pids()[0];
    drop(cluster);
    let text = std::fs::read_to_string(&report).expect("the report");
    (serde_json::from_str(&text).expect("JSON"), pid)
}

/// Issue 37: a change reaches 10,000 listeners (5,000 long polls, 5,000 gRPC streams)
/// on one node, each exactly once: none missed, none told twice, none told of an old
/// content, over three changes. Behaviour only; `fanout_cost.sh` and `qa` measure.
#[test]
fn ten_thousand_listeners_are_each_told_once_per_change() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (v, _) = run_fanout(
        dir.path(),
        37100,
        &[
            "--http-listeners",
            "5000",
            "--grpc-listeners",
            "5000",
            "--rounds",
            "3",
            "--interval",
            "1s",
            "--settle",
            "500ms",
            "--notify-timeout",
            "60s",
            "--timeout",
            "60s",
        ],
        Duration::from_secs(600),
    );
    let text = v.to_string();
    assert_eq!(v["listeners_set_up"], 10_000, "{text}");
    assert_eq!(v["expected_notifications"], 30_000, "{text}");
    assert_eq!(v["missed"], 0, "{text}");
    assert_eq!(v["duplicates"], 0, "{text}");
    assert_eq!(v["stale"], 0, "{text}");
    for round in v["per_round"].as_array().expect("rounds") {
        assert_eq!(round["publish_ok"], true, "{text}");
        assert_eq!(round["notified"], 10_000, "{text}");
        assert_eq!(round["duplicates"], 0, "{text}");
    }
    assert_eq!(v["grpc"]["ack_failures"], 0, "{text}");
}

#[test]
fn every_listener_is_told() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (v, pid) = run_fanout(
        dir.path(),
        37000,
        &[
            "--http-listeners",
            "12",
            "--grpc-listeners",
            "12",
            "--rounds",
            "2",
            "--interval",
            "300ms",
            "--settle",
            "300ms",
            "--notify-timeout",
            "20s",
            "--source-ips",
            "2",
        ],
        Duration::from_secs(120),
    );
    let text = v.to_string();
    assert_eq!(v["listeners_set_up"], 24, "{text}");
    assert_eq!(v["source_addresses"], 2, "{text}");
    assert_eq!(v["missed"], 0, "{text}");
    assert_eq!(v["expected_notifications"], 48, "{text}");
    for round in v["per_round"].as_array().expect("rounds") {
        assert_eq!(round["notified"], 24, "{text}");
        assert_eq!(round["publish_ok"], true, "{text}");
    }
    // Both kinds were told: the long polls' replies and the gRPC pushes, each acked.
    assert!(v["http"]["notifications"].as_u64().unwrap() >= 24, "{text}");
    assert!(v["grpc"]["notifications"].as_u64().unwrap() >= 24, "{text}");
    assert_eq!(v["grpc"]["ack_failures"], 0, "{text}");
    // The server was found behind its port and its RSS read.
    let server = &v["servers"][0];
    assert_eq!(server["pid"], pid, "{text}");
    assert!(server["rss_listening_kib"].as_u64().unwrap() > 0, "{text}");
    assert!(v["rss_per_listener_kib"].is_number(), "{text}");
}
