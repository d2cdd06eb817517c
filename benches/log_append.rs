//! Durable appends through the log store with 1, 16 and 128 concurrent
//! writers, beside the cost of a single fsync on the same disk.
//!
//! Each writer appends one entry at a time and waits until it is durable, as
//! a client waiting for its write would. Index allocation and the append call
//! are serialized (as Raft's leader does); the wait is not, so writers that
//! arrive during an fsync share the next one (group commit).
//!
//! Run: `cargo bench --bench log_append` (set `TACOS_BENCH_DIR` to measure
//! another disk than the system temp dir).

use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tacos_core::command as pb;
use tacos_core::types::{Entry, LogId};
use tacos_core::{md5_hex, Command, Op};
use tacos_store::{LogOptions, LogStore, StdFs};

fn temp_dir() -> tempfile::TempDir {
    match std::env::var_os("TACOS_BENCH_DIR") {
        Some(dir) => tempfile::tempdir_in(dir).expect("bench dir"),
        None => tempfile::tempdir().expect("temp dir"),
    }
}

/// A typical publish: a ~200 byte YAML config.
fn publish(index: u64) -> Command {
    let content = format!(
        "server.port: 8080\nfeature.flag: {index}\n{}",
        "x".repeat(160)
    );
    Command::of(Op::PublishConfig(pb::PublishConfig {
        key: Some(pb::ConfigKey {
            namespace: String::new(),
            group: "DEFAULT_GROUP".into(),
            data_id: format!("app-{}.yaml", index % 100),
        }),
        md5: md5_hex(&content),
        content,
        history_limit: 100,
        ..Default::default()
    }))
}

fn entry(index: u64) -> Entry {
    Entry {
        log_id: LogId::new(openraft::CommittedLeaderId::new(1, 1), index),
        payload: openraft::EntryPayload::Normal(publish(index).into()),
    }
}

/// Appends `total` entries from `writers` threads; returns the elapsed time.
fn run(store: &LogStore, next: &Arc<Mutex<u64>>, writers: usize, total: usize) -> Duration {
    let per_writer = total / writers;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..writers {
            scope.spawn(|| {
                for _ in 0..per_writer {
                    let (tx, rx) = mpsc::channel();
                    {
                        let mut next = next.lock().expect("index lock");
                        store
                            .append(
                                vec![entry(*next)],
                                Box::new(move |r| {
                                    let _ = tx.send(r);
                                }),
                            )
                            .expect("append");
                        *next += 1;
                    }
                    rx.recv().expect("callback").expect("durable");
                }
            });
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("durable_append");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));

    let dir = temp_dir();
    let mut file = std::fs::File::create(dir.path().join("fsync-probe")).expect("probe file");
    let payload = vec![7u8; 230];
    group.throughput(Throughput::Elements(1));
    group.bench_function("single_write_and_fsync", |b| {
        b.iter(|| {
            file.write_all(&payload).expect("write");
            file.sync_data().expect("fsync");
        })
    });

    for writers in [1usize, 16, 128] {
        let dir = temp_dir();
        let (store, _) =
            LogStore::open(Arc::new(StdFs), dir.path(), LogOptions::default()).expect("open");
        let next = Arc::new(Mutex::new(0u64));
        let total = (writers * 32).max(256);
        group.throughput(Throughput::Elements(total as u64));
        group.bench_with_input(BenchmarkId::new("writers", writers), &writers, |b, &w| {
            b.iter_custom(|iters| (0..iters).map(|_| run(&store, &next, w, total)).sum())
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
