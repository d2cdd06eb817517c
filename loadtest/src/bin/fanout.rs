//! `fanout`: how long one publish takes to reach every listener, when thousands of
//! them (HTTP long polls and gRPC streams) are held on one node or spread over a
//! cluster, and what each listener costs the server in memory.
//!
//! 1. Raises its own `RLIMIT_NOFILE` to fit every listener socket.
//! 2. Publishes a first content of one dataId over HTTP on `--publish-host` and waits
//!    until every host reads it back.
//! 3. Reads each server's RSS (the process listening on each `--hosts` port, or the
//!    `--pid`s given).
//! 4. Opens the listeners, `--connect-concurrency` at a time, spread round-robin over
//!    `--hosts` (and over loopback source addresses when one would run out of ports):
//!    `--http-listeners` long polls (one TCP connection each, HTTP/1.1 written by
//!    hand: [`loadtest::fanout::long_poll`]) and `--grpc-listeners` Nacos gRPC
//!    connections (one channel and bi-stream each, as the SDKs open them:
//!    `ServerCheckRequest`, `ConnectionSetupRequest` on the stream,
//!    `ConfigBatchListenRequest` with the md5 of the first content). After
//!    `--settle`, RSS again: (listening - before) / listeners is the RSS per listener.
//! 5. `--rounds` times, `--interval` apart: t0, publish a new content over HTTP, t1 =
//!    when it answered; every listener is stamped when its notification (a long-poll
//!    reply naming the key, a `ConfigChangeNotifyRequest`, acked at once) comes off its
//!    socket. A listener not told within `--notify-timeout` after t1 is **missed**.
//! 6. Prints a summary row; `--report-file` writes everything as JSON (read by `qa`).
//!    Exits 1 when a listener was missed, could not be set up or a publish failed.
//!
//! `--tls` (`--cacert FILE`) speaks TLS to every port: the publishes and long polls
//! over HTTPS, the gRPC listeners over TLS (rustls on ring). `--hosts` are then best
//! given as IP addresses, which the nodes' certificates must name (`IP:127.0.0.1`).
//!
//! The tool runs on one thread by default (`--workers`), so on a 2-core machine it
//! leaves the server a core; its stamps then include its own queueing while thousands
//! of notifications arrive at once, which makes the tail an upper bound.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use loadtest::fanout::long_poll::{self, Shared, Stats};
use loadtest::fanout::{sys, Kind, Notified, Round};
use loadtest::grpc::{self, Client, ListenContext, Options, Pushed};
use loadtest::latency::{ms, parse_duration, round3, Summary};
use loadtest::nacos;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinHandle;

/// Publish-to-notify latency of one publish to many listeners (HTTP long polls and
/// gRPC streams), and the server memory per listener.
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// HTTP addresses of the nodes the listeners spread over (round-robin)
    #[arg(long, value_delimiter = ',', default_value = "127.0.0.1:8848")]
    hosts: Vec<String>,
    /// gRPC addresses, one per --hosts entry [default: each HTTP port + 1000]
    #[arg(long, value_delimiter = ',')]
    grpc_hosts: Vec<String>,
    /// Where the publishes go (HTTP address) [default: the first of --hosts]
    #[arg(long)]
    publish_host: Option<String>,
    /// Long-poll listeners (one TCP connection each)
    #[arg(long, default_value_t = 1000)]
    http_listeners: usize,
    /// gRPC listeners (one connection and stream each)
    #[arg(long, default_value_t = 1000)]
    grpc_listeners: usize,
    /// Publishes, each one round
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Pause before each publish
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    interval: Duration,
    /// A listener not notified this long after the publish answered is missed
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    notify_timeout: Duration,
    /// Long-Pulling-Timeout of each long poll
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    poll_timeout: Duration,
    /// Pause after every listener is set up, before RSS is read and the first publish
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    settle: Duration,
    /// Listeners being set up at the same time
    #[arg(long, default_value_t = 256)]
    connect_concurrency: usize,
    /// Timeout of connecting and of each setup request and publish
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    timeout: Duration,
    /// Loopback source addresses to connect from (127.0.0.1, .2, ...) [default: as
    /// many as the ephemeral port range needs; 1 address = the kernel's choice]
    #[arg(long)]
    source_ips: Option<usize>,
    /// Server PIDs whose RSS to report (repeatable or comma-separated; in --hosts
    /// order to get a per-node figure) [default: the process listening on each host's
    /// port]
    #[arg(long, value_delimiter = ',')]
    pid: Vec<u32>,
    /// Runtime threads: 1 = one thread for everything
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// The dataId every listener watches
    #[arg(long, default_value = "fanout")]
    data_id: String,
    #[arg(long, default_value = loadtest::GROUP)]
    group: String,
    /// Name in the summary row and the report
    #[arg(long)]
    label: Option<String>,
    /// Write a JSON report here
    #[arg(long)]
    report_file: Option<PathBuf>,
    #[command(flatten)]
    tls: loadtest::tls::TlsArgs,
}

/// A server process whose RSS is tracked.
#[derive(Debug, Clone)]
struct Server {
    pid: u32,
    /// The host it serves, when known (then `listeners` is its share).
    host: Option<String>,
    listeners: usize,
    before_kib: Option<u64>,
    listening_kib: Option<u64>,
    after_kib: Option<u64>,
}

impl Server {
    fn per_listener_kib(&self) -> Option<f64> {
        let (b, l) = (self.before_kib?, self.listening_kib?);
        (self.listeners > 0).then(|| (l as f64 - b as f64) / self.listeners as f64)
    }
}

fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))
}

/// The gRPC address of an HTTP address: port + 1000, as the Nacos SDKs assume.
fn grpc_of(http: &str) -> Result<String, String> {
    let (host, port) = http
        .rsplit_once(':')
        .ok_or_else(|| format!("{http}: expected host:port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{http}: bad port {port:?}"))?;
    let grpc = port
        .checked_add(1000)
        .ok_or_else(|| format!("{http}: port + 1000 is out of range"))?;
    Ok(format!("{host}:{grpc}"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = args.tls.install() {
        eprintln!("fanout: {e}");
        return ExitCode::from(2);
    }
    let runtime = if args.workers <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.workers)
            .enable_all()
            .build()
    };
    match runtime {
        Ok(rt) => match rt.block_on(run(args)) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("fanout: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("fanout: starting the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What setting up one listener left.
enum Listener {
    Http(JoinHandle<()>),
    Grpc(Box<Client>),
}

async fn run(args: Args) -> Result<ExitCode, String> {
    let total = args.http_listeners + args.grpc_listeners;
    if total == 0 || args.rounds == 0 || args.hosts.is_empty() {
        return Err("needs at least one listener, one round and one host".into());
    }
    if u32::try_from(total).is_err() {
        return Err("too many listeners".into());
    }
    let hosts = args.hosts.clone();
    let grpc_hosts: Vec<String> = if args.grpc_hosts.is_empty() {
        hosts.iter().map(|h| grpc_of(h)).collect::<Result<_, _>>()?
    } else if args.grpc_hosts.len() == hosts.len() {
        args.grpc_hosts.clone()
    } else {
        return Err("--grpc-hosts needs one address per --hosts entry".into());
    };
    let http_addrs: Vec<SocketAddr> = hosts.iter().map(|h| resolve(h)).collect::<Result<_, _>>()?;
    let publish_host = args
        .publish_host
        .clone()
        .unwrap_or_else(|| hosts[0].clone());
    let label = args.label.clone().unwrap_or_else(|| {
        format!(
            "fanout http={} grpc={} nodes={}",
            args.http_listeners,
            args.grpc_listeners,
            hosts.len()
        )
    });

    // 1. File descriptors: a socket per listener, and some to spare.
    let (soft, hard) = sys::raise_nofile(total as u64 + 256)?;
    // 2. Source addresses: connections per destination (address:port) decide.
    let per_destination = args
        .http_listeners
        .div_ceil(hosts.len())
        .max(args.grpc_listeners.div_ceil(hosts.len())) as u64;
    let loopback_only = http_addrs.iter().all(|a| a.ip().is_loopback());
    let sources = sys::source_addresses(per_destination, args.source_ips);
    if sources.iter().flatten().next().is_some() && !loopback_only {
        return Err(
            "several source addresses are loopback addresses: every host must be on 127.0.0.0/8"
                .into(),
        );
    }
    eprintln!(
        "fanout: {} long polls + {} gRPC listeners over {} host(s); RLIMIT_NOFILE {soft} (hard {hard}); {} source address(es)",
        args.http_listeners,
        args.grpc_listeners,
        hosts.len(),
        sources.len()
    );

    // 3. The first content, read back everywhere.
    let http = loadtest::tls::reqwest_builder(reqwest::Client::builder())
        .timeout(args.timeout)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let publish_url = format!(
        "{}{}",
        grpc::endpoint_url(&publish_host),
        loadtest::CONFIGS_PATH
    );
    let run_id = loadtest::run_id();
    let content = |round: usize| format!("fanout run={run_id} round={round}");
    loadtest::publish_once(&http, &publish_url, &args.data_id, &args.group, &content(0))
        .await
        .map_err(|e| format!("publishing the first content: {e}"))?;
    for host in &hosts {
        read_back(
            &http,
            host,
            &args.data_id,
            &args.group,
            &content(0),
            args.timeout,
        )
        .await?;
    }

    // 4. Servers and their RSS before any listener.
    let per_host = |h: usize| -> usize { (0..total).filter(|tag| tag % hosts.len() == h).count() };
    let mut servers: Vec<Server> = if args.pid.is_empty() {
        hosts
            .iter()
            .zip(&http_addrs)
            .enumerate()
            .filter_map(|(i, (h, a))| {
                let pid = sys::pid_listening_on(a.port());
                if pid.is_none() {
                    eprintln!("no process found listening on {h}: no RSS for it (give --pid)");
                }
                pid.map(|pid| (i, h, pid))
            })
            .map(|(i, h, pid)| Server {
                pid,
                host: Some(h.clone()),
                listeners: per_host(i),
                before_kib: None,
                listening_kib: None,
                after_kib: None,
            })
            .collect()
    } else {
        let by_host = args.pid.len() == hosts.len();
        args.pid
            .iter()
            .enumerate()
            .map(|(i, &pid)| Server {
                pid,
                host: by_host.then(|| hosts[i].clone()),
                listeners: if by_host { per_host(i) } else { total },
                before_kib: None,
                listening_kib: None,
                after_kib: None,
            })
            .collect()
    };
    for s in &mut servers {
        s.before_kib = sys::rss_kib(s.pid);
    }

    // 5. The listeners.
    let shared = Arc::new(Shared {
        data_id: args.data_id.clone(),
        group: args.group.clone(),
        tenant: String::new(),
        md5: Mutex::new(nacos::md5_hex(&content(0))),
        poll_timeout_ms: args.poll_timeout.as_millis() as u64,
        stats: Stats::default(),
    });
    let (events_tx, mut events) = mpsc::unbounded_channel::<Notified>();
    let (push_tx, mut pushes) = mpsc::unbounded_channel::<Pushed>();
    let other_pushes: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    {
        // gRPC pushes of the key become notifications; anything else is counted.
        let events = events_tx.clone();
        let others = other_pushes.clone();
        let (data_id, group) = (args.data_id.clone(), args.group.clone());
        tokio::spawn(async move {
            while let Some(p) = pushes.recv().await {
                if p.kind == "ConfigChangeNotifyRequest" && p.data_id == data_id && p.group == group
                {
                    let _ = events.send(Notified {
                        tag: p.tag as u32,
                        at: p.at,
                    });
                } else {
                    *others
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(p.kind)
                        .or_default() += 1;
                }
            }
        });
    }
    let kinds: Vec<Kind> = (0..total)
        .map(|tag| {
            if tag < args.http_listeners {
                Kind::Http
            } else {
                Kind::Grpc
            }
        })
        .collect();
    let semaphore = Arc::new(Semaphore::new(args.connect_concurrency.max(1)));
    let mut setup = tokio::task::JoinSet::new();
    let setup_started = Instant::now();
    for (tag, &kind) in kinds.iter().enumerate() {
        let host = tag % hosts.len();
        let source = sources[(tag / hosts.len()) % sources.len()];
        let semaphore = semaphore.clone();
        let timeout = args.timeout;
        let md5 = shared.current_md5();
        let tag_u32 = tag as u32;
        match kind {
            Kind::Http => {
                let target = long_poll::Target {
                    tag: tag_u32,
                    addr: http_addrs[host],
                    source,
                };
                let shared = shared.clone();
                let events = events_tx.clone();
                setup.spawn(async move {
                    let _permit = semaphore.acquire_owned().await;
                    let connected =
                        tokio::time::timeout(timeout, long_poll::connect(&target)).await;
                    let result = match connected {
                        Err(_) => Err("connect: timeout".to_string()),
                        Ok(Err(e)) => Err(format!("connect: {}", e.kind())),
                        Ok(Ok(stream)) => Ok(Listener::Http(tokio::spawn(long_poll::run(
                            target, stream, md5, shared, events,
                        )))),
                    };
                    (tag, result)
                });
            }
            Kind::Grpc => {
                let grpc_host = grpc_hosts[host].clone();
                let options = Options {
                    tag,
                    timeout,
                    source,
                    ..Options::default()
                };
                let pushes = push_tx.clone();
                let (data_id, group) = (args.data_id.clone(), args.group.clone());
                setup.spawn(async move {
                    let _permit = semaphore.acquire_owned().await;
                    let result = async {
                        let mut client = Client::connect(&grpc_host, &options, Some(pushes))
                            .await
                            .map_err(|e| e.label())?;
                        let changed = client
                            .listen(&[ListenContext {
                                data_id,
                                group,
                                tenant: String::new(),
                                md5,
                            }])
                            .await
                            .map_err(|e| e.label())?;
                        if !changed.is_empty() {
                            return Err(
                                "listening with the md5 just published, the server reports a change"
                                    .to_string(),
                            );
                        }
                        Ok(Listener::Grpc(Box::new(client)))
                    }
                    .await;
                    (tag, result)
                });
            }
        }
    }
    drop(push_tx);
    let mut listeners: Vec<Listener> = Vec::with_capacity(total);
    // Which tags are listening (None: its setup failed).
    let mut expected: Vec<Option<Kind>> = vec![None; total];
    let mut setup_errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut done = 0usize;
    let mut next_report = Instant::now() + Duration::from_secs(5);
    while let Some(joined) = setup.join_next().await {
        done += 1;
        match joined {
            Ok((tag, Ok(l))) => {
                expected[tag] = Some(kinds[tag]);
                listeners.push(l);
            }
            Ok((_, Err(e))) => {
                if setup_errors.is_empty() {
                    eprintln!("setting up a listener failed: {e}");
                }
                *setup_errors.entry(e).or_default() += 1;
            }
            Err(e) => *setup_errors.entry(format!("setup task: {e}")).or_default() += 1,
        }
        if Instant::now() >= next_report {
            eprintln!("  {done} of {total} listeners set up ...");
            next_report = Instant::now() + Duration::from_secs(5);
        }
    }
    let setup_time = setup_started.elapsed();
    let failed_setups: u64 = setup_errors.values().sum();
    eprintln!(
        "{} of {total} listeners set up in {setup_time:.1?}",
        total - failed_setups as usize
    );
    tokio::time::sleep(args.settle).await;
    for s in &mut servers {
        s.listening_kib = sys::rss_kib(s.pid);
    }

    // 6. Rounds.
    let mut rounds: Vec<Round> = Vec::with_capacity(args.rounds);
    let mut late = 0u64;
    let mut publish_errors = Vec::new();
    for round in 1..=args.rounds {
        tokio::time::sleep(args.interval).await;
        while events.try_recv().is_ok() {
            late += 1;
        }
        let text = content(round);
        *shared.md5.lock().unwrap_or_else(|e| e.into_inner()) = nacos::md5_hex(&text);
        let mut r = Round::new(expected.clone(), Instant::now());
        let published =
            loadtest::publish_once(&http, &publish_url, &args.data_id, &args.group, &text).await;
        r.t1 = Instant::now();
        r.publish_ok = published.is_ok();
        if let Err(e) = published {
            eprintln!("round {round}: {e}");
            publish_errors.push(e);
        }
        let deadline = r.t1 + args.notify_timeout;
        while !r.done() {
            match tokio::time::timeout_at(deadline.into(), events.recv()).await {
                Ok(Some(n)) => {
                    r.record(n);
                }
                Ok(None) | Err(_) => break,
            }
        }
        let mut lat = r.latencies(false, None);
        let s = Summary::of(&mut lat);
        eprintln!(
            "round {round}: publish {:.2} ms; notified {}/{}; after the publish answered: p50 {:.2} ms, p99 {:.2} ms, last {:.2} ms{}",
            ms(r.t1 - r.t0),
            r.notified(),
            r.expected(),
            s.p50,
            s.p99,
            s.max,
            if r.duplicates + r.stale > 0 {
                format!("; {} duplicate(s), {} stale", r.duplicates, r.stale)
            } else {
                String::new()
            }
        );
        rounds.push(r);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    while events.try_recv().is_ok() {
        late += 1;
    }
    for s in &mut servers {
        s.after_kib = sys::rss_kib(s.pid);
    }

    // 7. Results.
    let grpc_stats = grpc_totals(&listeners);
    let all = |from_send: bool, kind: Option<Kind>| {
        let mut v: Vec<f64> = rounds
            .iter()
            .flat_map(|r| r.latencies(from_send, kind))
            .collect();
        Summary::of(&mut v)
    };
    let over_rounds = |f: &dyn Fn(&Round) -> Option<f64>| {
        let mut v: Vec<f64> = rounds.iter().filter_map(f).collect();
        Summary::of(&mut v)
    };
    let latency = all(false, None);
    let from_send = all(true, None);
    let last = over_rounds(&|r| r.last(false));
    let last_from_send = over_rounds(&|r| r.last(true));
    let rate = over_rounds(&|r| r.rate());
    let missed: usize = rounds.iter().map(|r| r.missed().len()).sum();
    let missed_http: usize = rounds.iter().map(|r| r.missed_of(Kind::Http)).sum();
    let missed_grpc: usize = rounds.iter().map(|r| r.missed_of(Kind::Grpc)).sum();
    let expected_notifications: usize = rounds.iter().map(|r| r.expected()).sum();
    let mut missed_listeners: Vec<u32> = rounds.iter().flat_map(|r| r.missed()).collect();
    missed_listeners.sort_unstable();
    missed_listeners.dedup();
    let listening = expected.iter().flatten().count();
    let rss_delta_kib: Option<f64> = servers
        .iter()
        .map(|s| Some(s.listening_kib? as f64 - s.before_kib? as f64))
        .sum();
    // All servers' growth over all listeners (with one server per host, the same as
    // each node's own figure when the listeners are spread evenly).
    let rss_per_listener = rss_delta_kib
        .filter(|_| !servers.is_empty())
        .map(|d| d / listening.max(1) as f64);
    if missed > 0 {
        eprintln!(
            "MISSED: {missed} notification(s) ({missed_http} long polls, {missed_grpc} gRPC) over {} listener(s), e.g. {:?}",
            missed_listeners.len(),
            &missed_listeners[..missed_listeners.len().min(20)]
        );
    }
    let others = other_pushes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let duplicates: u64 = rounds.iter().map(|r| r.duplicates).sum();
    let stale: u64 = rounds.iter().map(|r| r.stale).sum();
    println!(
        "| report | listeners (HTTP + gRPC) | nodes | rounds | missed | p50 ms | p99 ms | max ms | p99 ms from send | last p50 ms | server RSS KiB / listener |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {label} | {listening} ({} + {}) | {} | {} | {missed} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
        expected.iter().filter(|k| **k == Some(Kind::Http)).count(),
        expected.iter().filter(|k| **k == Some(Kind::Grpc)).count(),
        hosts.len(),
        rounds.len(),
        latency.p50,
        latency.p99,
        latency.max,
        from_send.p99,
        last.p50,
        rss_per_listener.map_or("-".into(), |v| format!("{v:.1}"))
    );
    let failed = missed > 0 || failed_setups > 0 || !publish_errors.is_empty();
    if let Some(path) = &args.report_file {
        let hs = &shared.stats;
        let servers_json: Vec<Value> = servers
            .iter()
            .map(|s| {
                json!({
                    "pid": s.pid,
                    "host": s.host,
                    "listeners": s.listeners,
                    "rss_before_kib": s.before_kib,
                    "rss_listening_kib": s.listening_kib,
                    "rss_after_kib": s.after_kib,
                    "rss_per_listener_kib": s.per_listener_kib().map(round3),
                })
            })
            .collect();
        let per_round: Vec<Value> = rounds
            .iter()
            .map(|r| {
                json!({
                    "publish_ms": round3(ms(r.t1 - r.t0)),
                    "publish_ok": r.publish_ok,
                    "notified": r.notified(),
                    "missed": r.missed().len(),
                    "duplicates": r.duplicates,
                    "stale": r.stale,
                    "last_ms": r.last(false).map(round3),
                    "last_from_send_ms": r.last(true).map(round3),
                    "notifications_per_s": r.rate().map(round3),
                })
            })
            .collect();
        let report = json!({
            "tool": "fanout",
            "label": label,
            "hosts": hosts,
            "grpc_hosts": grpc_hosts,
            "publish_host": publish_host,
            "data_id": args.data_id,
            "listeners": total,
            "http_listeners": args.http_listeners,
            "grpc_listeners": args.grpc_listeners,
            "listeners_set_up": listening,
            "setup_errors": setup_errors,
            "setup_time_ms": round3(ms(setup_time)),
            "source_addresses": sources.len(),
            "nofile_limit": soft,
            "workers": args.workers,
            "rounds": rounds.len(),
            "notify_timeout_s": args.notify_timeout.as_secs_f64(),
            "expected_notifications": expected_notifications,
            "missed": missed,
            "missed_http": missed_http,
            "missed_grpc": missed_grpc,
            "missed_listeners": missed_listeners,
            "duplicates": duplicates,
            "stale": stale,
            "late": late,
            "publish_failures": publish_errors.len(),
            "publish_errors": publish_errors,
        });
        let measured = json!({
            "latency_from": "the HTTP publish's answer (t1, negative when a listener was told first); *_from_send: from before it was sent (t0)",
            "latency": latency.to_json(),
            "latency_from_send": from_send.to_json(),
            "http_latency": all(false, Some(Kind::Http)).to_json(),
            "grpc_latency": all(false, Some(Kind::Grpc)).to_json(),
            "last_listener": last.to_json(),
            "last_listener_from_send": last_from_send.to_json(),
            "notifications_per_s": round3(rate.p50),
            "rss_per_listener_kib": rss_per_listener.map(round3),
            "servers": servers_json,
            "http": {
                "polls": hs.polls.load(Ordering::Relaxed),
                "notifications": hs.notifications.load(Ordering::Relaxed),
                "empty_replies": hs.empty.load(Ordering::Relaxed),
                "error_replies": hs.errors.load(Ordering::Relaxed),
                "reconnects": hs.reconnects.load(Ordering::Relaxed),
            },
            "grpc": grpc_stats,
            "other_pushes": others,
            "per_round": per_round,
        });
        let mut report = report;
        if let (Some(r), Value::Object(m)) = (report.as_object_mut(), measured) {
            r.extend(m);
        }
        loadtest::latency::write_report(path, &report)?;
    }
    for l in listeners {
        if let Listener::Http(h) = l {
            h.abort();
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Polls `GET /nacos/v1/cs/configs` on `host` until it returns `content`.
async fn read_back(
    http: &reqwest::Client,
    host: &str,
    data_id: &str,
    group: &str,
    content: &str,
    timeout: Duration,
) -> Result<(), String> {
    let url = format!(
        "{}{}",
        grpc::endpoint_url(host),
        nacos::query_path(data_id, group, "", None)
    );
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(r) = http.get(&url).send().await {
            if r.status().is_success() && r.text().await.unwrap_or_default() == content {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{host} never read the first content back"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the gRPC listeners' stream readers saw, summed.
fn grpc_totals(listeners: &[Listener]) -> Value {
    let clients: Vec<&Client> = listeners
        .iter()
        .filter_map(|l| match l {
            Listener::Grpc(c) => Some(&**c),
            Listener::Http(_) => None,
        })
        .collect();
    let sum = |f: fn(&Client) -> &AtomicU64| -> u64 {
        clients.iter().map(|c| f(c).load(Ordering::Relaxed)).sum()
    };
    let closed = clients.iter().filter(|c| !c.stream_open()).count();
    let reason = clients
        .iter()
        .find(|c| !c.stream_open())
        .and_then(|c| c.stats.close_reason.lock().ok().and_then(|r| r.clone()));
    json!({
        "notifications": sum(|c| &c.stats.notifications),
        "client_detections": sum(|c| &c.stats.detections),
        "connect_resets": sum(|c| &c.stats.resets),
        "ack_failures": sum(|c| &c.stats.send_failures),
        "listen_retries_after_301": clients.iter().map(|c| c.listen_retries).sum::<u64>(),
        "streams_closed": closed,
        "a_close_reason": reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options() {
        let a = Args::try_parse_from(["fanout"]).unwrap();
        assert_eq!(a.hosts, vec!["127.0.0.1:8848".to_string()]);
        assert_eq!(a.http_listeners, 1000);
        assert_eq!(a.workers, 1);
        let a = Args::try_parse_from([
            "fanout",
            "--hosts",
            "127.0.0.1:8848,127.0.0.1:8849",
            "--pid",
            "10,11",
            "--notify-timeout",
            "5s",
        ])
        .unwrap();
        assert_eq!(a.hosts.len(), 2);
        assert_eq!(a.pid, vec![10, 11]);
        assert_eq!(a.notify_timeout, Duration::from_secs(5));
    }

    #[test]
    fn grpc_port_is_http_plus_1000() {
        assert_eq!(grpc_of("127.0.0.1:8848").unwrap(), "127.0.0.1:9848");
        assert!(grpc_of("127.0.0.1").is_err());
        assert!(grpc_of("127.0.0.1:65000").is_err());
    }
}
