//! The `fanout` tool against a real Tacos node: a few long-poll and gRPC listeners,
//! connected from two loopback source addresses, two publishes; every listener must be
//! told of each, and the report must name the server's RSS. No timing is asserted.
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

#[test]
fn every_listener_is_told() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let spec = ServerSpec::new("tacos", Flavor::Tacos, &tacos_binary()).expect("tacos --version");
    let cluster = Cluster::start(
        &spec,
        1,
        &dir.path().join("server"),
        37000,
        Duration::from_secs(60),
    )
    .expect("tacos starts");
    let host = format!("127.0.0.1:{}", cluster.nodes[0].ports.http);
    let report = dir.path().join("fanout.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fanout"))
        .args(["--hosts", &host])
        .args(["--http-listeners", "12", "--grpc-listeners", "12"])
        .args(["--rounds", "2", "--interval", "300ms", "--settle", "300ms"])
        .args(["--notify-timeout", "20s", "--source-ips", "2"])
        .arg("--report-file")
        .arg(&report)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fanout");
    // Bounded: kill it if it hangs.
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fanout") {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fanout did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = child.wait_with_output().expect("fanout output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(status.success(), "fanout failed ({status}):\n{stderr}");

    let text = std::fs::read_to_string(&report).expect("the report");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
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
    assert_eq!(server["pid"], cluster.pids()[0], "{text}");
    assert!(server["rss_listening_kib"].as_u64().unwrap() > 0, "{text}");
    assert!(v["rss_per_listener_kib"].is_number(), "{text}");
    drop(cluster);
}
