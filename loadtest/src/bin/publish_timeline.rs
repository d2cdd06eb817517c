//! `publish_timeline`: publish latency over time at a fixed offered load, to find stalls
//! (issue 20, goal 2: "show a latency-over-time plot around a snapshot").
//!
//! `--connections` workers publish (`POST /nacos/v1/cs/configs`, a unique content to
//! one of `--keys` dataIds) on a fixed schedule that adds up to `--rate` publishes/s.
//! Each request's latency counts from when it was *due*, so a stall also charges the
//! requests queued behind it (no coordinated omission); a worker that falls behind sends
//! its next request at once until it catches up. With `--snapshot-marks` the tool polls
//! the server's `/metrics` (Tacos: `tacos_raft_snapshot_index`) and marks when a new
//! snapshot was seen. Any Nacos-compatible server works without the marks (r-nacos, Java
//! Nacos).
//!
//! Writes to `--out`: `<label>.csv` (per bucket: requests, failures, p50/p99/max by due
//! time; then the snapshot marks), `<label>.svg` (the plot) and `<label>.json` (the
//! whole run's percentiles, incl. p99.9, and the buckets slower than 2x the run's p99),
//! and prints one summary line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use loadtest::latency::{ms, parse_duration, round3, Summary};
use loadtest::timeline::{self, Sample, Timeline};
use serde_json::json;

/// Publish latency over time at a fixed offered load (see the module doc).
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The server's HTTP address (host:port).
    #[arg(long, default_value = "127.0.0.1:8848")]
    host: String,
    /// Concurrent workers (each keeps its own keep-alive connection).
    #[arg(short = 'c', long, default_value_t = 32)]
    connections: usize,
    /// Publishes per second offered, over all workers.
    #[arg(long, default_value_t = 2000.0)]
    rate: f64,
    /// How long the load runs (30s, 2m, ...).
    #[arg(short = 't', long, default_value = "60s", value_parser = parse_duration)]
    time: Duration,
    /// Number of dataIds the publishes spread over.
    #[arg(long, default_value_t = 100)]
    keys: usize,
    /// Pad each content to at least this many bytes.
    #[arg(long, default_value_t = 0)]
    content_bytes: usize,
    /// Width of one bucket of the timeline.
    #[arg(long, default_value = "250ms", value_parser = parse_duration)]
    bucket: Duration,
    /// Poll the server's `/metrics` for `tacos_raft_snapshot_index` and mark new snapshots.
    #[arg(long)]
    snapshot_marks: bool,
    /// Timeout of each request.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// Name of the run (file names and the plot's title).
    #[arg(long, default_value = "publish-timeline")]
    label: String,
    /// Directory for the CSV, SVG and JSON files (created if missing).
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> ExitCode {
    let args = Args::parse();
    if !(args.rate.is_finite() && args.rate > 0.0) || args.connections == 0 || args.keys == 0 {
        eprintln!("--rate, --connections and --keys must be positive");
        return ExitCode::from(2);
    }
    match run(&args).await {
        Ok(clean) if clean => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("publish_timeline: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the load and writes the files; whether every publish succeeded.
async fn run(args: &Args) -> Result<bool, String> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("creating {}: {e}", args.out.display()))?;
    let client = reqwest::Client::builder()
        .timeout(args.timeout)
        .pool_max_idle_per_host(args.connections)
        .no_proxy()
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let url = format!("http://{}/nacos/v1/cs/configs", args.host);
    let start = Instant::now();
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let snapshots = args.snapshot_marks.then(|| {
        tokio::spawn(watch_snapshots(
            client.clone(),
            format!("http://{}/metrics", args.host),
            start,
            stop.clone(),
        ))
    });
    let counter = Arc::new(AtomicU64::new(0));
    // Each worker's schedule: every `connections / rate` seconds, staggered so the
    // workers' slots interleave evenly.
    let interval = Duration::from_secs_f64(args.connections as f64 / args.rate);
    let workers: Vec<_> = (0..args.connections)
        .map(|w| {
            let first = interval.mul_f64(w as f64 / args.connections as f64);
            tokio::spawn(worker(
                client.clone(),
                url.clone(),
                start,
                first,
                interval,
                start + args.time,
                args.keys,
                args.content_bytes,
                counter.clone(),
            ))
        })
        .collect();
    let mut samples = Vec::new();
    for w in workers {
        samples.extend(w.await.map_err(|e| format!("worker: {e}"))?);
    }
    stop.store(true, Ordering::Relaxed);
    let marks = match snapshots {
        Some(task) => task.await.map_err(|e| format!("snapshot poll: {e}"))?,
        None => Vec::new(),
    };
    let elapsed = start.elapsed().as_secs_f64();
    let failed = samples.iter().filter(|s| !s.ok).count();
    let mut all: Vec<f64> = samples.iter().map(|s| s.latency_ms).collect();
    let run = Summary::of(&mut all);
    let timeline = Timeline::of(&samples, args.bucket.as_secs_f64(), marks);
    let stalls: Vec<_> = timeline
        .stalls(&run, 2.0)
        .into_iter()
        .map(|b| json!({"start_s": round3(b.start_s), "requests": b.requests, "max_ms": round3(b.max_ms), "p99_ms": round3(b.p99_ms)}))
        .collect();
    let base = args.out.join(&args.label);
    let write = |ext: &str, text: String| {
        let path = base.with_extension(ext);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write("csv", timeline.csv())?;
    let report = json!({
        "label": args.label,
        // To line the buckets up with a server log's timestamps.
        "started_unix_ms": started_unix_ms,
        "offered_per_s": args.rate,
        "connections": args.connections,
        "seconds": round3(elapsed),
        "requests": samples.len(),
        "failed": failed,
        "throughput_per_s": round3(samples.len() as f64 / args.time.as_secs_f64()),
        "latency_from_due": run.to_json(),
        "p999_over_p99": if run.p99 > 0.0 { round3(run.p999 / run.p99) } else { 0.0 },
        "snapshots_seen_s": timeline.snapshots.iter().map(|s| round3(*s)).collect::<Vec<_>>(),
        "stall_buckets": stalls,
    });
    write("json", format!("{report:#}\n"))?;
    let title = format!(
        "{}: {} publishes/s offered, {} workers",
        args.label, args.rate, args.connections
    );
    timeline::plot(&base.with_extension("svg"), &title, &timeline)?;
    println!(
        "{}: {} publishes ({} failed) in {:.1} s; from due: p50 {:.2} p99 {:.2} p99.9 {:.2} max {:.2} ms; \
         p99.9/p99 {:.2}; {} snapshots seen; {} buckets over 2x p99",
        args.label,
        samples.len(),
        failed,
        elapsed,
        run.p50,
        run.p99,
        run.p999,
        run.max,
        if run.p99 > 0.0 { run.p999 / run.p99 } else { 0.0 },
        timeline.snapshots.len(),
        report["stall_buckets"].as_array().map_or(0, Vec::len),
    );
    Ok(failed == 0)
}

/// One worker: publishes every `interval` from `start + first` until `end`; each
/// sample's latency counts from when the request was due.
#[allow(clippy::too_many_arguments)]
async fn worker(
    client: reqwest::Client,
    url: String,
    start: Instant,
    first: Duration,
    interval: Duration,
    end: Instant,
    keys: usize,
    content_bytes: usize,
    counter: Arc<AtomicU64>,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut due = start + first;
    while due < end {
        tokio::time::sleep_until(due.into()).await;
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let data_id = format!("timeline-{}", n as usize % keys);
        let mut content = format!("v{n}");
        if content.len() < content_bytes {
            content.push_str(&"x".repeat(content_bytes - content.len()));
        }
        let ok = loadtest::publish_once(&client, &url, &data_id, loadtest::GROUP, &content)
            .await
            .is_ok();
        samples.push(Sample {
            due_s: due.duration_since(start).as_secs_f64(),
            latency_ms: ms(due.elapsed()),
            ok,
        });
        due += interval;
    }
    samples
}

/// Polls `/metrics` every 100 ms until `stop`; the times (since `start`) at which
/// `tacos_raft_snapshot_index` rose.
async fn watch_snapshots(
    client: reqwest::Client,
    url: String,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> Vec<f64> {
    let mut marks = Vec::new();
    let mut last: Option<f64> = None;
    while !stop.load(Ordering::Relaxed) {
        if let Ok(r) = client.get(&url).send().await {
            if let Ok(text) = r.text().await {
                let index = text
                    .lines()
                    .find_map(|l| l.strip_prefix("tacos_raft_snapshot_index "))
                    .and_then(|v| v.trim().parse::<f64>().ok());
                if let Some(index) = index {
                    if last.is_some_and(|l| index > l) {
                        marks.push(start.elapsed().as_secs_f64());
                    }
                    last = Some(index);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    marks
}
