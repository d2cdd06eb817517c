//! Config publishes through the whole write path of one node (proposer,
//! openraft, durable log with fsync, apply) with 1, 8 and 64 concurrent
//! writers, printed as writes/s. No HTTP: for that, see `loadtest/`.
//!
//! Run: `cargo bench --bench raft_write`

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tacos_core::command as pb;
use tacos_core::{md5_hex, Command, Op};

const RUN: Duration = Duration::from_secs(3);

fn publish(writer: usize, n: u64) -> Command {
    let content = format!("server.port: 8080\nwriter: {writer}\nn: {n}\n");
    Command::of(Op::PublishConfig(pb::PublishConfig {
        key: Some(pb::ConfigKey {
            namespace: String::new(),
            group: "DEFAULT_GROUP".into(),
            data_id: format!("app-{}.yaml", n % 100),
        }),
        md5: md5_hex(&content),
        content,
        history_limit: 100,
        ..Default::default()
    }))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().to_string_lossy().to_string();
    let settings = tacos::settings::Settings::parse_from(["tacos", "--data-dir", &data_dir]);
    let node = Arc::new(
        tacos_raft::Node::start(settings.node_options().expect("settings"), Arc::new(|_| {}))
            .await
            .expect("node starts"),
    );
    println!("raft_write: durable config publishes through one node ({RUN:?} per row)");
    for writers in [1usize, 8, 64] {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for w in 0..writers {
            let node = node.clone();
            tasks.push(tokio::spawn(async move {
                let mut n = 0u64;
                while start.elapsed() < RUN {
                    node.write(publish(w, n)).await.expect("write");
                    n += 1;
                }
                n
            }));
        }
        let mut total = 0;
        for task in tasks {
            total += task.await.expect("writer");
        }
        let rate = total as f64 / start.elapsed().as_secs_f64();
        println!("  writers {writers:>3}: {rate:>8.0} writes/s");
    }
    node.shutdown().await;
}
