//! `grpc_config`: config query / publish load over the Nacos 2.x gRPC API.
//!
//! Opens `-c` connections (each its own channel, i.e. its own HTTP/2 connection, with
//! `ServerCheckRequest` and the stream set up with `ConnectionSetupRequest`, as the
//! official clients do), then every connection runs a closed loop of unary requests
//! for `-t`: one request in flight per connection, the next sent when the previous
//! answered (optionally paced to `--rate` requests/s per connection).
//!
//! - `--mode query`: `ConfigQueryRequest` of a random one of `--keys` dataIds. The keys
//!   are published once first and read back until they hold the seed (at most 30 s:
//!   Java Nacos serves a publish a moment after it answered it); a query counts as
//!   failed unless it is a successful `ConfigQueryResponse` whose content is exactly
//!   the seed.
//! - `--mode publish`: `ConfigPublishRequest` of a unique content to a random key; fails
//!   unless a successful `ConfigPublishResponse`.
//! - `--mode mixed`: `--publish-percent` % publishes, the rest queries (a query then only
//!   has to succeed: its key may have been republished).
//!
//! `--tls` (or an `https://` host) speaks TLS to the gRPC port (rustls on ring),
//! trusting the system's CAs and `--cacert FILE`.
//!
//! Every latency counts, failed requests included (as goose does). Prints one Markdown
//! row like `summarize` (`| name | requests | failures | req/s | avg | p50 | p90 | p99 |
//! p99.9 | max |`) and, with `--report-file`, writes a JSON report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use loadtest::grpc::{self, Error, Options};
use loadtest::latency::{ms, parse_duration, round3, Failures, Summary};
use loadtest::rate::RateLimiter;
use serde_json::json;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Query,
    Publish,
    Mixed,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Query => "query",
            Mode::Publish => "publish",
            Mode::Mixed => "mixed",
        }
    }
}

/// Config query / publish load over the Nacos 2.x gRPC API.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The server's gRPC address (Nacos: HTTP port + 1000).
    #[arg(long, default_value = "127.0.0.1:9848")]
    host: String,
    #[command(flatten)]
    tls: loadtest::tls::TlsArgs,
    /// Connections (each its own channel and stream, one request in flight).
    #[arg(short = 'c', long, default_value_t = 64)]
    connections: usize,
    /// How long the load runs after every connection is set up (20s, 500ms, 2m, ...).
    #[arg(short = 't', long, default_value = "20s", value_parser = parse_duration)]
    time: Duration,
    /// What each request does.
    #[arg(long, value_enum, default_value_t = Mode::Query)]
    mode: Mode,
    /// Number of dataIds the requests spread over (uniformly at random).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// The dataIds are `<prefix><0..keys>`.
    #[arg(long, default_value = "grpc-loadtest-")]
    key_prefix: String,
    #[arg(long, default_value = loadtest::GROUP)]
    group: String,
    /// Namespace (`tenant`); "" is the public one.
    #[arg(long, default_value = "")]
    tenant: String,
    /// Requests/s per connection at most; 0 = unlimited (closed loop). Paced by
    /// `loadtest::rate::RateLimiter`, like the HTTP scenarios' `--rate-per-user`.
    #[arg(long, alias = "rate-per-user", default_value_t = 0.0)]
    rate: f64,
    /// Share of publishes in `--mode mixed`, in percent.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(0..=100))]
    publish_percent: u32,
    /// Pad each content to at least this many bytes.
    #[arg(long, default_value_t = 0)]
    content_bytes: usize,
    /// Timeout of each request (and of connecting).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// Connections being opened at the same time.
    #[arg(long, default_value_t = 50)]
    connect_concurrency: usize,
    /// Name in the summary row and the report (default: `grpc_config <mode> c=<N>`).
    #[arg(long)]
    label: Option<String>,
    /// Write a JSON report here.
    #[arg(long)]
    report_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Query,
    Publish,
}

/// What one connection measured.
#[derive(Default)]
struct Tally {
    /// (op, latency ms) of every request.
    samples: Vec<(Op, f64)>,
    failures: Failures,
}

impl Tally {
    fn record(&mut self, op: Op, latency: f64, result: Result<(), Error>) {
        self.samples.push((op, latency));
        if let Err(e) = result {
            self.failures.add(e.label(), || e.to_string());
        }
    }
}

fn pad(mut content: String, bytes: usize) -> String {
    if content.len() < bytes {
        content.push(' ');
        while content.len() < bytes {
            content.push('.');
        }
    }
    content
}

fn seed_content(data_id: &str, bytes: usize) -> String {
    pad(format!("grpc loadtest seed {data_id}"), bytes)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut tls = args.tls.clone();
    tls.tls |= args.host.starts_with("https://");
    if let Err(e) = tls.install() {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    if args.connections == 0 {
        eprintln!("--connections must be at least 1");
        return ExitCode::from(2);
    }
    if !(args.rate >= 0.0 && args.rate.is_finite()) {
        eprintln!("--rate must be 0 (unlimited) or a positive number");
        return ExitCode::from(2);
    }
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| format!("grpc_config {} c={}", args.mode.name(), args.connections));
    let options = Options {
        timeout: args.timeout,
        tenant: args.tenant.clone(),
        ..Options::default()
    };

    // 1. Connections.
    let connect_started = Instant::now();
    let results = grpc::connect_many(
        &args.host,
        args.connections,
        args.connect_concurrency,
        &options,
        None,
        |c| async { Ok(c) },
    )
    .await;
    let connect_time = connect_started.elapsed();
    let mut clients = Vec::new();
    let mut connect_errors: BTreeMap<String, u64> = BTreeMap::new();
    for result in results {
        match result {
            Ok(client) => clients.push(client),
            Err(e) => {
                if connect_errors.is_empty() {
                    eprintln!("connecting failed: {e}");
                }
                *connect_errors.entry(e.label()).or_default() += 1;
            }
        }
    }
    eprintln!(
        "{} of {} connections set up in {:.1?} ({})",
        clients.len(),
        args.connections,
        connect_time,
        args.host
    );
    if clients.is_empty() {
        eprintln!("no connection could be set up: nothing to measure");
        return ExitCode::FAILURE;
    }

    // 2. Seed the keys (query, mixed) and read them back.
    let data_id = |i: u64| format!("{}{i}", args.key_prefix);
    let mut seed_failures = 0u64;
    if args.mode != Mode::Publish {
        let started = Instant::now();
        let client = &mut clients[0];
        // Publish every key, then read each back until it holds its seed: Java Nacos
        // answers a publish before its read cache has the new content.
        let mut published = Vec::new();
        for i in 0..args.keys {
            let id = data_id(i);
            let seed = seed_content(&id, args.content_bytes);
            match client.publish(&id, &args.group, &args.tenant, &seed).await {
                Ok(_) => published.push((id, seed)),
                Err(e) => {
                    if seed_failures == 0 {
                        eprintln!("seeding {id} failed: {e}");
                    }
                    seed_failures += 1;
                }
            }
        }
        let read_back_until = Instant::now() + loadtest::SEED_READ_BACK_LIMIT;
        for (id, seed) in published {
            loop {
                let last = match client.query(&id, &args.group, &args.tenant).await {
                    Ok(reply) if reply.str("content") == seed => break,
                    Ok(_) => "it reads back a different content".to_string(),
                    Err(e) => e.to_string(),
                };
                if Instant::now() >= read_back_until {
                    if seed_failures == 0 {
                        eprintln!("seeding {id}: {last}");
                    }
                    seed_failures += 1;
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        eprintln!(
            "seeded {} key(s) ({}0 .. {}{}) in {:.1?}{}",
            args.keys,
            args.key_prefix,
            args.key_prefix,
            args.keys - 1,
            started.elapsed(),
            if seed_failures > 0 {
                format!(": {seed_failures} failed, queries of them will fail")
            } else {
                String::new()
            }
        );
    }

    // 3. The load: every connection starts at the same instant.
    let start = Instant::now();
    let deadline = start + args.time;
    let mut tasks = tokio::task::JoinSet::new();
    for (index, mut client) in clients.into_iter().enumerate() {
        let group = args.group.clone();
        let tenant = args.tenant.clone();
        let prefix = args.key_prefix.clone();
        let (mode, keys, rate, publish_percent, content_bytes) = (
            args.mode,
            args.keys,
            args.rate,
            args.publish_percent,
            args.content_bytes,
        );
        tasks.spawn(async move {
            let mut tally = Tally::default();
            let mut seq = 0u64;
            // Validated above: 0 (unlimited) or a positive rate. The first slot is
            // at the common start, then one per interval, with no catching up after a
            // slow answer: at most `rate` per second.
            let mut limiter = RateLimiter::with_phase(rate, 0.0).ok();
            while Instant::now() < deadline {
                if let Some(limiter) = limiter.as_mut() {
                    let delay = limiter.reserve(Instant::now());
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                        if Instant::now() >= deadline {
                            break;
                        }
                    }
                }
                let key = rand::random_range(0..keys);
                let id = format!("{prefix}{key}");
                let op = match mode {
                    Mode::Query => Op::Query,
                    Mode::Publish => Op::Publish,
                    Mode::Mixed if rand::random_range(0..100) < publish_percent => Op::Publish,
                    Mode::Mixed => Op::Query,
                };
                let sent = Instant::now();
                let result = match op {
                    Op::Query => match client.query(&id, &group, &tenant).await {
                        Ok(reply) if mode == Mode::Query => {
                            if reply.str("content") == seed_content(&id, content_bytes) {
                                Ok(())
                            } else {
                                Err(Error::Check("query: content differs from the seed".into()))
                            }
                        }
                        Ok(_) => Ok(()),
                        Err(e) => Err(e),
                    },
                    Op::Publish => {
                        seq += 1;
                        let content = pad(
                            format!("grpc loadtest run={run_id} conn={index} seq={seq}"),
                            content_bytes,
                        );
                        client
                            .publish(&id, &group, &tenant, &content)
                            .await
                            .map(|_| ())
                    }
                };
                tally.record(op, ms(sent.elapsed()), result);
            }
            (tally, client)
        });
    }
    let mut tallies = Vec::new();
    let mut clients = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((tally, client)) => {
                tallies.push(tally);
                clients.push(client);
            }
            Err(e) => eprintln!("a connection's task failed: {e}"),
        }
    }
    let elapsed = start.elapsed();

    // 4. Results.
    let streams_closed = clients.iter().filter(|c| !c.stream_open()).count();
    let detections: u64 = clients
        .iter()
        .map(|c| c.stats.detections.load(Ordering::Relaxed))
        .sum();
    let resets: u64 = clients
        .iter()
        .map(|c| c.stats.resets.load(Ordering::Relaxed))
        .sum();
    if let Some(reason) = clients
        .iter()
        .find(|c| !c.stream_open())
        .and_then(|c| c.stats.close_reason.lock().ok().and_then(|r| r.clone()))
    {
        eprintln!("{streams_closed} stream(s) ended during the run, e.g.: {reason}");
    }
    drop(clients);

    let mut all = Vec::new();
    let mut by_op: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut failures = Failures::default();
    for tally in &tallies {
        for &(op, latency) in &tally.samples {
            all.push(latency);
            let name = if op == Op::Query { "query" } else { "publish" };
            by_op.entry(name).or_default().push(latency);
        }
        failures.merge(&tally.failures);
    }
    failures.print();
    let requests = all.len() as u64;
    let summary = Summary::of(&mut all);
    let throughput = requests as f64 / elapsed.as_secs_f64();
    summary.print_row(&label, failures.count, throughput);

    if let Some(path) = &args.report_file {
        let ops: serde_json::Map<String, serde_json::Value> = by_op
            .into_iter()
            .map(|(name, mut samples)| (name.to_string(), Summary::of(&mut samples).to_json()))
            .collect();
        let report = json!({
            "tool": "grpc_config",
            "label": label,
            "host": args.host,
            "tls": loadtest::tls::enabled(),
            "mode": args.mode.name(),
            "connections": args.connections,
            "connections_set_up": tallies.len(),
            "connect_errors": connect_errors,
            "connect_time_ms": round3(ms(connect_time)),
            "keys": args.keys,
            "rate_per_connection": args.rate,
            "publish_percent": if args.mode == Mode::Mixed { Some(args.publish_percent) } else { None },
            "seed_failures": seed_failures,
            "duration_s": round3(elapsed.as_secs_f64()),
            "requests": requests,
            "errors": failures.count,
            "error_kinds": failures.by_kind,
            "throughput": round3(throughput),
            "latency": summary.to_json(),
            "ops": ops,
            "streams_closed": streams_closed,
            "client_detections": detections,
            "connect_resets": resets,
        });
        if let Err(e) = loadtest::latency::write_report(path, &report) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let a = Args::try_parse_from(["grpc_config"]).unwrap();
        assert_eq!(a.host, "127.0.0.1:9848");
        assert_eq!(a.connections, 64);
        assert_eq!(a.time, Duration::from_secs(20));
        assert_eq!(a.mode, Mode::Query);
        assert_eq!(a.keys, 100);
        assert_eq!(a.rate, 0.0);
        let a = Args::try_parse_from([
            "grpc_config",
            "-c",
            "8",
            "-t",
            "500ms",
            "--mode",
            "mixed",
            "--rate",
            "100",
            "--report-file",
            "x.json",
        ])
        .unwrap();
        assert_eq!(a.connections, 8);
        assert_eq!(a.time, Duration::from_millis(500));
        assert_eq!(a.mode, Mode::Mixed);
        assert_eq!(a.rate, 100.0);
        assert_eq!(a.report_file, Some(PathBuf::from("x.json")));
        assert!(Args::try_parse_from(["grpc_config", "--keys", "0"]).is_err());
        assert!(Args::try_parse_from(["grpc_config", "--mode", "x"]).is_err());
        assert!(Args::try_parse_from(["grpc_config", "--publish-percent", "101"]).is_err());
    }

    #[test]
    fn contents() {
        assert_eq!(seed_content("k", 0), "grpc loadtest seed k");
        assert_eq!(seed_content("k", 40).len(), 40);
        let mut t = Tally::default();
        t.record(Op::Query, 1.0, Ok(()));
        t.record(Op::Query, 2.0, Err(Error::Timeout));
        t.record(Op::Publish, 3.0, Err(Error::Timeout));
        assert_eq!(t.samples.len(), 3);
        assert_eq!(t.failures.count, 2);
        assert_eq!(t.failures.by_kind["timeout"], 2);
    }
}
