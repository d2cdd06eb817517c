//! `grpc_fanout`: how long a config change takes to reach many gRPC listeners.
//!
//! 1. Publishes a first content of one dataId over the Nacos HTTP API
//!    (`POST /nacos/v1/cs/configs`, reply `true`).
//! 2. Opens `--listeners` connections, `--connect-concurrency` at a time. Each is its
//!    own channel (HTTP/2 connection): `ServerCheckRequest`, the stream with
//!    `ConnectionSetupRequest`, `ConfigQueryRequest` of the key (for its md5), then
//!    `ConfigBatchListenRequest{listen: true}` of the key with that md5, on the same
//!    channel as the stream.
//! 3. Each round: t0, publish a new content over HTTP, t1 = when the publish answered;
//!    every listener's `ConfigChangeNotifyRequest` is stamped as it comes off its stream
//!    and acked at once. The round ends when every listener was notified or
//!    `--round-timeout` after t1. Latencies are from t1 (a notification that arrives
//!    before the HTTP answer counts negative): the first, the median and the last
//!    listener of the round.
//!
//! Prints each round and a one-row Markdown summary (p50/p99/max over the rounds of
//! the last and of the median listener); `--report-file` writes it all as JSON. Exits
//! non-zero when a listener missed a notification, a listener could not be set up or a
//! publish failed.
//!
//! 1000 listeners on a loopback run hold about 2000 sockets (both ends): see `ulimit -n`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use loadtest::grpc::{self, Client, Error, ListenContext, Options, Pushed};
use loadtest::latency::{ms, parse_duration, percentile, round3, Summary};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Push fan-out latency over the Nacos 2.x gRPC API.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The server's gRPC address (Nacos: HTTP port + 1000).
    #[arg(long, default_value = "127.0.0.1:9848")]
    host: String,
    /// The server's HTTP address, for publishing through `/nacos/v1/cs/configs`.
    #[arg(long, default_value = "127.0.0.1:8848")]
    http_host: String,
    /// Listening connections.
    #[arg(long, default_value_t = 1000)]
    listeners: usize,
    /// Publishes (each one round).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// The dataId every listener listens to.
    #[arg(long, default_value = "grpc-fanout")]
    data_id: String,
    #[arg(long, default_value = loadtest::GROUP)]
    group: String,
    /// Listeners being set up at the same time.
    #[arg(long, default_value_t = 50)]
    connect_concurrency: usize,
    /// How long a round waits for its notifications after the publish answered.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    round_timeout: Duration,
    /// Pause before each round.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    interval: Duration,
    /// Timeout of connecting and of each request (gRPC and HTTP).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// Name in the summary row and the report (default: `grpc_fanout n=<listeners>`).
    #[arg(long)]
    label: Option<String>,
    /// Write a JSON report here.
    #[arg(long)]
    report_file: Option<PathBuf>,
}

/// One round's outcome; latencies in ms from the publish's answer (t1).
#[derive(Debug, Clone, PartialEq)]
struct Round {
    publish_ms: f64,
    publish_ok: bool,
    notified: usize,
    missed: Vec<usize>,
    duplicates: u64,
    first_ms: Option<f64>,
    median_ms: Option<f64>,
    last_ms: Option<f64>,
    /// The median and the last listener, from t0 (before the publish was sent).
    median_from_t0_ms: Option<f64>,
    last_from_t0_ms: Option<f64>,
}

/// Sums up a round from each listener's first notification (`None`: none came).
fn round_of(
    arrivals: &[Option<Instant>],
    t0: Instant,
    t1: Instant,
    publish_ok: bool,
    duplicates: u64,
) -> Round {
    let signed_ms = |at: Instant, from: Instant| {
        if at >= from {
            ms(at - from)
        } else {
            -ms(from - at)
        }
    };
    let mut latencies: Vec<f64> = arrivals
        .iter()
        .flatten()
        .map(|&at| signed_ms(at, t1))
        .collect();
    latencies.sort_unstable_by(|a, b| a.total_cmp(b));
    let last_at = arrivals.iter().flatten().max().copied();
    Round {
        publish_ms: ms(t1 - t0),
        publish_ok,
        notified: latencies.len(),
        missed: arrivals
            .iter()
            .enumerate()
            .filter(|(_, a)| a.is_none())
            .map(|(i, _)| i)
            .collect(),
        duplicates,
        first_ms: latencies.first().copied(),
        median_ms: percentile(&latencies, 0.5),
        last_ms: latencies.last().copied(),
        median_from_t0_ms: percentile(&latencies, 0.5).map(|m| m + ms(t1 - t0)),
        last_from_t0_ms: last_at.map(|at| signed_ms(at, t0)),
    }
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, |v| round3(v).into())
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.listeners == 0 || args.rounds == 0 {
        eprintln!("--listeners and --rounds must be at least 1");
        return ExitCode::from(2);
    }
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| format!("grpc_fanout n={}", args.listeners));
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let http = match reqwest::Client::builder().timeout(args.timeout).build() {
        Ok(http) => http,
        Err(e) => {
            eprintln!("HTTP client: {e}");
            return ExitCode::FAILURE;
        }
    };
    let url = format!(
        "{}{}",
        grpc::endpoint_url(&args.http_host),
        loadtest::CONFIGS_PATH
    );
    let content = |round: usize| format!("grpc fanout run={run_id} round={round}");

    // 1. The key's first content.
    if let Err(e) =
        loadtest::publish_once(&http, &url, &args.data_id, &args.group, &content(0)).await
    {
        eprintln!("publishing the first content failed: {e}");
        return ExitCode::FAILURE;
    }

    // 2. The listeners.
    let (push_tx, mut pushes) = mpsc::unbounded_channel::<Pushed>();
    let options = Options {
        timeout: args.timeout,
        ..Options::default()
    };
    let key = Arc::new((args.data_id.clone(), args.group.clone(), content(0)));
    let connect_started = Instant::now();
    let results = grpc::connect_many(
        &args.host,
        args.listeners,
        args.connect_concurrency,
        &options,
        Some(push_tx),
        move |mut client: Client| {
            let key = key.clone();
            async move {
                let (data_id, group, expected) = &*key;
                let reply = client.query(data_id, group, "").await?;
                if reply.str("content") != expected {
                    return Err(Error::Check(
                        "query before listening: not the content just published".into(),
                    ));
                }
                let md5 = reply.str("md5").to_string();
                let changed = client
                    .listen(&[ListenContext {
                        data_id: data_id.clone(),
                        group: group.clone(),
                        tenant: String::new(),
                        md5,
                    }])
                    .await?;
                if !changed.is_empty() {
                    return Err(Error::Check(format!(
                        "listening with the md5 just read, the server reports a change: {changed:?}"
                    )));
                }
                Ok(client)
            }
        },
    )
    .await;
    let connect_time = connect_started.elapsed();
    let mut clients: Vec<Option<Client>> = Vec::with_capacity(args.listeners);
    let mut setup_errors: BTreeMap<String, u64> = BTreeMap::new();
    for result in results {
        match result {
            Ok(client) => clients.push(Some(client)),
            Err(e) => {
                if setup_errors.is_empty() {
                    eprintln!("setting up a listener failed: {e}");
                }
                *setup_errors.entry(e.label()).or_default() += 1;
                clients.push(None);
            }
        }
    }
    let listening = clients.iter().flatten().count();
    let listen_retries: u64 = clients.iter().flatten().map(|c| c.listen_retries).sum();
    eprintln!(
        "{listening} of {} listeners set up in {:.1?} ({}; {listen_retries} listen request(s) re-sent after errorCode 301)",
        args.listeners, connect_time, args.host
    );
    if listening == 0 {
        eprintln!("no listener: nothing to measure");
        return ExitCode::FAILURE;
    }

    // 3. Rounds.
    let mut rounds = Vec::with_capacity(args.rounds);
    let mut late = 0u64;
    let mut other_pushes: BTreeMap<String, u64> = BTreeMap::new();
    let mut publish_errors = Vec::new();
    for round in 1..=args.rounds {
        tokio::time::sleep(args.interval).await;
        // Whatever came in between rounds is late (or a re-sent notification).
        while let Ok(p) = pushes.try_recv() {
            if p.kind == "ConfigChangeNotifyRequest" {
                late += 1;
            } else {
                *other_pushes.entry(p.kind).or_default() += 1;
            }
        }
        let t0 = Instant::now();
        let published =
            loadtest::publish_once(&http, &url, &args.data_id, &args.group, &content(round)).await;
        let t1 = Instant::now();
        if let Err(e) = &published {
            eprintln!("round {round}: {e}");
            publish_errors.push(e.clone());
        }
        let mut arrivals: Vec<Option<Instant>> = vec![None; args.listeners];
        let mut waiting = listening;
        let mut duplicates = 0u64;
        let deadline = t1 + args.round_timeout;
        while waiting > 0 {
            let p = match tokio::time::timeout_at(deadline.into(), pushes.recv()).await {
                Ok(Some(p)) => p,
                Ok(None) | Err(_) => break,
            };
            if p.kind != "ConfigChangeNotifyRequest" {
                *other_pushes.entry(p.kind).or_default() += 1;
                continue;
            }
            if p.data_id != args.data_id || p.group != args.group {
                *other_pushes
                    .entry(format!("notification of {}/{}", p.group, p.data_id))
                    .or_default() += 1;
                continue;
            }
            match &mut arrivals[p.tag] {
                slot @ None => {
                    *slot = Some(p.at);
                    waiting -= 1;
                }
                Some(_) => duplicates += 1,
            }
        }
        // Listeners that failed to set up are not expected.
        let expected: Vec<Option<Instant>> = arrivals
            .iter()
            .zip(&clients)
            .filter(|(_, c)| c.is_some())
            .map(|(a, _)| *a)
            .collect();
        let tags: Vec<usize> = clients
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_some())
            .map(|(i, _)| i)
            .collect();
        let mut r = round_of(&expected, t0, t1, published.is_ok(), duplicates);
        r.missed = r.missed.iter().map(|&i| tags[i]).collect();
        eprintln!(
            "round {round}: publish {:.2} ms; notified {}/{listening}; after the publish answered: first {} ms, median {} ms, last {} ms{}",
            r.publish_ms,
            r.notified,
            fmt(r.first_ms),
            fmt(r.median_ms),
            fmt(r.last_ms),
            if r.duplicates > 0 {
                format!("; {} duplicate(s)", r.duplicates)
            } else {
                String::new()
            }
        );
        rounds.push(r);
    }
    // A last look for stragglers.
    tokio::time::sleep(Duration::from_millis(200)).await;
    while let Ok(p) = pushes.try_recv() {
        if p.kind == "ConfigChangeNotifyRequest" {
            late += 1;
        } else {
            *other_pushes.entry(p.kind).or_default() += 1;
        }
    }

    // 4. Results.
    let live: Vec<&Client> = clients.iter().flatten().collect();
    let streams_closed = live.iter().filter(|c| !c.stream_open()).count();
    let notifications: u64 = live
        .iter()
        .map(|c| c.stats.notifications.load(Ordering::Relaxed))
        .sum();
    let detections: u64 = live
        .iter()
        .map(|c| c.stats.detections.load(Ordering::Relaxed))
        .sum();
    let ack_failures: u64 = live
        .iter()
        .map(|c| c.stats.send_failures.load(Ordering::Relaxed))
        .sum();
    if let Some(reason) = live
        .iter()
        .find(|c| !c.stream_open())
        .and_then(|c| c.stats.close_reason.lock().ok().and_then(|r| r.clone()))
    {
        eprintln!("{streams_closed} stream(s) ended during the run, e.g.: {reason}");
    }
    let missed: usize = rounds.iter().map(|r| r.missed.len()).sum();
    let mut missed_listeners: Vec<usize> = rounds.iter().flat_map(|r| r.missed.clone()).collect();
    missed_listeners.sort_unstable();
    missed_listeners.dedup();
    let duplicates: u64 = rounds.iter().map(|r| r.duplicates).sum();
    let summary_of = |f: fn(&Round) -> Option<f64>| {
        let mut v: Vec<f64> = rounds.iter().filter_map(f).collect();
        Summary::of(&mut v)
    };
    let last = summary_of(|r| r.last_ms);
    let median = summary_of(|r| r.median_ms);
    let first = summary_of(|r| r.first_ms);
    let last_t0 = summary_of(|r| r.last_from_t0_ms);
    let median_t0 = summary_of(|r| r.median_from_t0_ms);
    let publish = summary_of(|r| Some(r.publish_ms));

    if missed > 0 {
        eprintln!(
            "MISSED: {missed} notification(s) over {} listener(s), e.g. listeners {:?}",
            missed_listeners.len(),
            &missed_listeners[..missed_listeners.len().min(20)]
        );
    }
    if late > 0 || duplicates > 0 || !other_pushes.is_empty() {
        eprintln!(
            "late notifications: {late}; duplicates: {duplicates}; other pushes: {other_pushes:?}"
        );
    }
    println!(
        "| report | listeners | rounds | missed | publish p50 ms | first p50 ms | median p50 ms | median p99 ms | median max ms | last p50 ms | last p99 ms | last max ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {label} | {listening} | {} | {missed} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
        rounds.len(),
        publish.p50,
        first.p50,
        median.p50,
        median.p99,
        median.max,
        last.p50,
        last.p99,
        last.max
    );

    let failed = missed > 0 || listening < args.listeners || !publish_errors.is_empty();
    if let Some(path) = &args.report_file {
        let report = json!({
            "tool": "grpc_fanout",
            "label": label,
            "host": args.host,
            "http_host": args.http_host,
            "data_id": args.data_id,
            "listeners": args.listeners,
            "listeners_set_up": listening,
            "setup_errors": setup_errors,
            "setup_time_ms": round3(ms(connect_time)),
            "listen_retries_after_301": listen_retries,
            "rounds": rounds.len(),
            "round_timeout_s": args.round_timeout.as_secs_f64(),
            "missed": missed,
            "missed_listeners": missed_listeners,
            "duplicates": duplicates,
            "late": late,
            "other_pushes": other_pushes,
            "publish_errors": publish_errors,
            "notifications_received": notifications,
            "client_detections": detections,
            "ack_failures": ack_failures,
            "streams_closed": streams_closed,
            "latency_from": "the HTTP publish's answer (t1); *_from_t0: from before it was sent (t0)",
            "publish": publish.to_json(),
            "first_listener": first.to_json(),
            "median_listener": median.to_json(),
            "last_listener": last.to_json(),
            "median_listener_from_t0": median_t0.to_json(),
            "last_listener_from_t0": last_t0.to_json(),
            "per_round": rounds.iter().map(|r| json!({
                "publish_ms": round3(r.publish_ms),
                "publish_ok": r.publish_ok,
                "notified": r.notified,
                "missed": r.missed.len(),
                "duplicates": r.duplicates,
                "first_ms": opt(r.first_ms),
                "median_ms": opt(r.median_ms),
                "last_ms": opt(r.last_ms),
                "median_from_t0_ms": opt(r.median_from_t0_ms),
                "last_from_t0_ms": opt(r.last_from_t0_ms),
            })).collect::<Vec<_>>(),
        });
        if let Err(e) = loadtest::latency::write_report(path, &report) {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    drop(clients);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let a = Args::try_parse_from(["grpc_fanout"]).unwrap();
        assert_eq!(a.listeners, 1000);
        assert_eq!(a.rounds, 20);
        assert_eq!(a.http_host, "127.0.0.1:8848");
        assert_eq!(a.round_timeout, Duration::from_secs(10));
        let a = Args::try_parse_from(["grpc_fanout", "--listeners", "5", "--round-timeout", "2s"])
            .unwrap();
        assert_eq!(a.listeners, 5);
        assert_eq!(a.round_timeout, Duration::from_secs(2));
    }

    #[test]
    fn rounds_measure_from_the_publish_answer() {
        let t0 = Instant::now();
        let t1 = t0 + Duration::from_millis(10);
        let at = |ms: u64| Some(t0 + Duration::from_millis(ms));
        // One listener was notified before the HTTP answer, one never.
        let r = round_of(&[at(12), at(8), None, at(30), at(14)], t0, t1, true, 2);
        assert_eq!(r.publish_ms, 10.0);
        assert_eq!(r.notified, 4);
        assert_eq!(r.missed, vec![2]);
        assert_eq!(r.duplicates, 2);
        assert_eq!(r.first_ms, Some(-2.0));
        assert_eq!(r.median_ms, Some(2.0));
        assert_eq!(r.last_ms, Some(20.0));
        assert_eq!(r.last_from_t0_ms, Some(30.0));
        assert_eq!(r.median_from_t0_ms, Some(12.0));
        let none = round_of(&[None], t0, t1, false, 0);
        assert_eq!(none.last_ms, None);
        assert_eq!(none.missed, vec![0]);
    }
}
