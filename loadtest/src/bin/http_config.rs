//! `http_config`: config query / publish load over the Nacos HTTP API v1, from a light
//! client.
//!
//! The goose scenarios (`http_config_set`, `http_config_query`) cost about as much CPU
//! per request as the server they load; on a 2-core machine a read run then measures
//! goose as much as the server. This tool sends the same requests with hyper's bare
//! HTTP/1.1 connection (no pool, no per-request metrics machinery) on one thread by
//! default, so a capacity search measures the server:
//!
//! - `--mode query`: `GET /nacos/v1/cs/configs?dataId=..&group=..&tenant=` of a random
//!   one of `--keys` dataIds, published once first (16 at a time) and read back until
//!   each holds its seed (at most 30 s: Java Nacos serves a publish a moment after it
//!   answered it); a query fails unless it is a 200 whose body is exactly the seed.
//! - `--mode publish`: `POST /nacos/v1/cs/configs` of a unique content to a random key;
//!   fails unless a 200 whose body is `true`.
//!
//! `-c` keep-alive connections, one request in flight on each, for `-t` (optionally
//! paced to `--rate` requests/s per connection, first slots spread over one interval as
//! goose's hatching spreads its users). A connection that fails is opened again for the
//! next request. `--reconnect` opens a new connection for every request instead (its
//! latency then includes the TCP, and with `--tls` the TLS, handshake): the rate of new
//! connections a server sustains.
//!
//! `--tls` (or an `https://` host) speaks HTTPS (rustls on ring), trusting the system's
//! CAs and `--cacert FILE`. Every latency counts, failed requests included. Prints one Markdown row
//! like `grpc_config` and, with `--report-file`, writes the same JSON report (the `qa`
//! tool reads it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use loadtest::latency::{ms, parse_duration, round3, Failures, Summary};
use loadtest::nacos;
use loadtest::rate::RateLimiter;
use loadtest::tls;
use serde_json::json;
use tokio::net::TcpStream;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Query,
    Publish,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Query => "query",
            Mode::Publish => "publish",
        }
    }
}

/// Config query / publish load over the Nacos HTTP API v1, from a light client (hyper,
/// one thread by default).
#[derive(Debug, Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// The server's HTTP address (`http://HOST:PORT`, `https://HOST:PORT` or
    /// `HOST:PORT`).
    #[arg(long, default_value = loadtest::DEFAULT_HOST)]
    host: String,
    #[command(flatten)]
    tls: loadtest::tls::TlsArgs,
    /// A new connection for every request (closed after its answer), to measure
    /// connection setup (with --tls: the handshake).
    #[arg(long)]
    reconnect: bool,
    /// Keep-alive connections, one request in flight on each.
    #[arg(short = 'c', long, default_value_t = 64)]
    connections: usize,
    /// How long the load runs after every connection is open (20s, 500ms, 2m, ...).
    #[arg(short = 't', long, default_value = "20s", value_parser = parse_duration)]
    time: Duration,
    /// What each request does.
    #[arg(long, value_enum, default_value_t = Mode::Query)]
    mode: Mode,
    /// Number of dataIds the requests spread over (uniformly at random).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    keys: u64,
    /// The dataIds are `<prefix><0..keys>`.
    #[arg(long, default_value = "loadtest-h-")]
    key_prefix: String,
    #[arg(long, default_value = loadtest::GROUP)]
    group: String,
    /// Namespace (`tenant`); "" is the public one.
    #[arg(long, default_value = "")]
    tenant: String,
    /// Requests/s per connection at most; 0 = unlimited (closed loop).
    #[arg(long, alias = "rate-per-user", default_value_t = 0.0)]
    rate: f64,
    /// Pad each content to at least this many bytes.
    #[arg(long, default_value_t = 0)]
    content_bytes: usize,
    /// Threads that drive the connections (1: a current-thread runtime, so the tool
    /// takes at most one core).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    threads: u64,
    /// Timeout of each request (and of connecting).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    timeout: Duration,
    /// Name in the summary row and the report (default: `http_config <mode> c=<N>`).
    #[arg(long)]
    label: Option<String>,
    /// Write a JSON report here.
    #[arg(long)]
    report_file: Option<PathBuf>,
}

/// `HOST:PORT` of `--host`, and whether it names HTTPS.
fn authority(host: &str) -> Result<(String, bool), String> {
    let (rest, https) = match host.strip_prefix("https://") {
        Some(rest) => (rest, true),
        None => (host.strip_prefix("http://").unwrap_or(host), false),
    };
    let authority = rest.trim_end_matches('/');
    if authority.is_empty() || authority.contains('/') || !authority.contains(':') {
        return Err(format!("{host}: expected http://HOST:PORT"));
    }
    Ok((authority.to_string(), https))
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

/// The content `--mode query` seeds under `data_id` (as `http_config_query` does).
fn seed_content(data_id: &str, bytes: usize) -> String {
    pad(format!("loadtest seed {data_id}"), bytes)
}

/// Why a request failed (the label groups them in the report).
#[derive(Debug)]
enum Failure {
    Connect(String),
    Transport(String),
    Timeout,
    Status(u16),
    Body(&'static str),
}

impl Failure {
    fn label(&self) -> String {
        match self {
            Failure::Connect(_) => "connect".into(),
            Failure::Transport(_) => "transport".into(),
            Failure::Timeout => "timeout".into(),
            Failure::Status(code) => format!("status {code}"),
            Failure::Body(what) => (*what).into(),
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Connect(e) => format!("connecting: {e}"),
            Failure::Transport(e) => format!("request: {e}"),
            Failure::Timeout => "no answer within the timeout".into(),
            Failure::Status(code) => format!("answered {code}"),
            Failure::Body(what) => (*what).into(),
        }
    }
}

/// One keep-alive HTTP/1.1 connection.
struct Connection {
    authority: String,
    sender: Option<SendRequest<Full<Bytes>>>,
}

impl Connection {
    async fn open(authority: &str) -> Result<SendRequest<Full<Bytes>>, Failure> {
        let stream = TcpStream::connect(authority)
            .await
            .map_err(|e| Failure::Connect(e.to_string()))?;
        stream
            .set_nodelay(true)
            .map_err(|e| Failure::Connect(e.to_string()))?;
        let stream = tls::wrap(stream, tls::host_of(authority), tls::http1())
            .await
            .map_err(|e| Failure::Connect(e.to_string()))?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| Failure::Connect(e.to_string()))?;
        tokio::spawn(async move {
            // Ends when the sender is dropped or the server closes; a broken connection
            // shows as the next request's error.
            let _ = connection.await;
        });
        Ok(sender)
    }

    /// Sends `request` (opening the connection first if it is not open) and returns the
    /// status and body. A failed connection is dropped, so the next call opens another.
    async fn send(&mut self, request: Request<Full<Bytes>>) -> Result<(u16, Bytes), Failure> {
        let sender = match &mut self.sender {
            Some(sender) if !sender.is_closed() => sender,
            _ => self.sender.insert(Self::open(&self.authority).await?),
        };
        let result = async {
            sender
                .ready()
                .await
                .map_err(|e| Failure::Transport(e.to_string()))?;
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| Failure::Transport(e.to_string()))?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| Failure::Transport(e.to_string()))?
                .to_bytes();
            Ok((status, body))
        }
        .await;
        if result.is_err() {
            self.sender = None;
        }
        result
    }
}

/// What one connection measured.
#[derive(Default)]
struct Tally {
    latencies: Vec<f64>,
    failures: Failures,
}

impl Tally {
    fn record(&mut self, latency: f64, result: Result<(), Failure>) {
        self.latencies.push(latency);
        if let Err(e) = result {
            self.failures.add(e.label(), || e.describe());
        }
    }
}

/// What every connection shares.
struct Plan {
    mode: Mode,
    /// A new connection per request.
    reconnect: bool,
    authority: String,
    /// Per key: the query path and the content it must read back (query), or the
    /// dataId (publish).
    paths: Vec<String>,
    expected: Vec<Bytes>,
    data_ids: Vec<String>,
    group: String,
    tenant: String,
    content_bytes: usize,
    run_id: u128,
    timeout: Duration,
}

impl Plan {
    fn request(
        &self,
        key: usize,
        connection: usize,
        seq: u64,
    ) -> Result<Request<Full<Bytes>>, hyper::http::Error> {
        let mut builder = Request::builder().header(HOST, self.authority.as_str());
        if self.reconnect {
            builder = builder.header(hyper::header::CONNECTION, "close");
        }
        match self.mode {
            Mode::Query => builder
                .method(Method::GET)
                .uri(self.paths[key].as_str())
                .body(Full::new(Bytes::new())),
            Mode::Publish => {
                let content = pad(
                    format!("loadtest run={} conn={connection} seq={seq}", self.run_id),
                    self.content_bytes,
                );
                let form = nacos::publish_form(
                    &self.data_ids[key],
                    &self.group,
                    &content,
                    &self.tenant,
                    None,
                );
                builder
                    .method(Method::POST)
                    .uri(loadtest::CONFIGS_PATH)
                    .header(CONTENT_TYPE, nacos::FORM_CONTENT_TYPE)
                    .body(Full::new(Bytes::from(form)))
            }
        }
    }

    fn check(&self, key: usize, status: u16, body: &[u8]) -> Result<(), Failure> {
        if status != 200 {
            return Err(Failure::Status(status));
        }
        match self.mode {
            Mode::Query if body != self.expected[key].as_ref() => {
                Err(Failure::Body("query: content differs from the seed"))
            }
            Mode::Publish if body.trim_ascii() != b"true" => {
                Err(Failure::Body("publish: the answer is not `true`"))
            }
            _ => Ok(()),
        }
    }
}

/// One connection's closed loop until `deadline`.
async fn drive(
    plan: std::sync::Arc<Plan>,
    index: usize,
    mut connection: Connection,
    mut limiter: Option<RateLimiter>,
    deadline: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut seq = 0u64;
    let keys = plan.data_ids.len();
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
        seq += 1;
        let sent = Instant::now();
        let result = match plan.request(key, index, seq) {
            Ok(request) => {
                match tokio::time::timeout(plan.timeout, connection.send(request)).await {
                    Ok(Ok((status, body))) => plan.check(key, status, &body),
                    Ok(Err(e)) => Err(e),
                    Err(_) => {
                        connection.sender = None;
                        Err(Failure::Timeout)
                    }
                }
            }
            Err(e) => Err(Failure::Transport(format!("building the request: {e}"))),
        };
        tally.record(ms(sent.elapsed()), result);
        if plan.reconnect {
            connection.sender = None;
        }
    }
    tally
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.connections == 0 {
        eprintln!("--connections must be at least 1");
        return ExitCode::from(2);
    }
    if !(args.rate >= 0.0 && args.rate.is_finite()) {
        eprintln!("--rate must be 0 (unlimited) or a positive number");
        return ExitCode::from(2);
    }
    let authority = match authority(&args.host) {
        Ok((a, https)) => {
            let mut tls_args = args.tls.clone();
            tls_args.tls |= https;
            if let Err(e) = tls_args.install() {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
            a
        }
        Err(e) => {
            eprintln!("--host {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = if args.threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads as usize)
            .enable_all()
            .build()
    };
    match runtime {
        Ok(runtime) => runtime.block_on(run(args, authority)),
        Err(e) => {
            eprintln!("starting the runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, authority: String) -> ExitCode {
    let run_id = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| format!("http_config {} c={}", args.mode.name(), args.connections));
    let data_ids: Vec<String> = (0..args.keys)
        .map(|i| format!("{}{i}", args.key_prefix))
        .collect();

    // 1. Seed the keys (query) through the same publish as the goose scenarios.
    let mut seed_failures = 0usize;
    let (mut paths, mut expected) = (Vec::new(), Vec::new());
    if args.mode == Mode::Query {
        let started = Instant::now();
        let items: Vec<(String, String)> = data_ids
            .iter()
            .map(|id| (id.clone(), seed_content(id, args.content_bytes)))
            .collect();
        let base = match reqwest::Url::parse(&format!("{}://{authority}/", tls::scheme())) {
            Ok(url) => url,
            Err(e) => {
                eprintln!("--host: {e}");
                return ExitCode::from(2);
            }
        };
        let failed = loadtest::seed(&base, &items, &args.tenant, None).await;
        seed_failures = failed.len();
        for e in failed.iter().take(3) {
            eprintln!("seeding: {e}");
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
        for (id, content) in &items {
            paths.push(nacos::query_path(id, &args.group, &args.tenant, None));
            expected.push(Bytes::from(content.clone()));
        }
    }
    let plan = std::sync::Arc::new(Plan {
        mode: args.mode,
        reconnect: args.reconnect,
        authority: authority.clone(),
        paths,
        expected,
        data_ids,
        group: args.group.clone(),
        tenant: args.tenant.clone(),
        content_bytes: args.content_bytes,
        run_id,
        timeout: args.timeout,
    });

    // A request the arguments make unsendable (say, a host that is no header value) is
    // refused here rather than failing every request.
    if let Err(e) = plan.request(0, 0, 0) {
        eprintln!("--host/--group/--tenant make no valid request: {e}");
        return ExitCode::from(2);
    }

    // 2. Connections, opened before the clock starts.
    let connect_started = Instant::now();
    let mut connections = Vec::with_capacity(args.connections);
    let mut connect_errors: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..args.connections {
        let sender = tokio::time::timeout(args.timeout, Connection::open(&authority)).await;
        let sender = match sender {
            Ok(Ok(sender)) => Some(sender),
            Ok(Err(e)) => {
                if connect_errors.is_empty() {
                    eprintln!("{}", e.describe());
                }
                *connect_errors.entry(e.label()).or_default() += 1;
                None
            }
            Err(_) => {
                *connect_errors.entry("timeout".into()).or_default() += 1;
                None
            }
        };
        connections.push(Connection {
            authority: authority.clone(),
            sender,
        });
    }
    let connect_time = connect_started.elapsed();
    let open = connections.iter().filter(|c| c.sender.is_some()).count();
    eprintln!(
        "{open} of {} connections open in {connect_time:.1?} ({authority})",
        args.connections
    );
    if open == 0 {
        eprintln!("no connection could be opened: nothing to measure");
        return ExitCode::FAILURE;
    }

    // 3. The load: every connection starts at the same instant; paced ones take their
    // first slot spread over one interval.
    let start = Instant::now();
    let deadline = start + args.time;
    let mut tasks = tokio::task::JoinSet::new();
    let n = connections.len();
    for (index, connection) in connections.into_iter().enumerate() {
        let limiter = if args.rate > 0.0 {
            RateLimiter::with_phase(args.rate, index as f64 / n as f64).ok()
        } else {
            None
        };
        tasks.spawn(drive(plan.clone(), index, connection, limiter, deadline));
    }
    let mut tallies = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(tally) => tallies.push(tally),
            Err(e) => eprintln!("a connection's task failed: {e}"),
        }
    }
    let elapsed = start.elapsed();

    // 4. Results.
    let mut all = Vec::new();
    let mut failures = Failures::default();
    for tally in &tallies {
        all.extend_from_slice(&tally.latencies);
        failures.merge(&tally.failures);
    }
    failures.print();
    let requests = all.len() as u64;
    let summary = Summary::of(&mut all);
    let throughput = requests as f64 / elapsed.as_secs_f64();
    summary.print_row(&label, failures.count, throughput);

    if let Some(path) = &args.report_file {
        let report = json!({
            "tool": "http_config",
            "label": label,
            "host": args.host,
            "mode": args.mode.name(),
            "tls": tls::enabled(),
            "reconnect": args.reconnect,
            "connections": args.connections,
            "connections_set_up": open,
            "connect_errors": connect_errors,
            "connect_time_ms": round3(ms(connect_time)),
            "threads": args.threads,
            "keys": args.keys,
            "rate_per_connection": args.rate,
            "seed_failures": seed_failures,
            "duration_s": round3(elapsed.as_secs_f64()),
            "requests": requests,
            "errors": failures.count,
            "error_kinds": failures.by_kind,
            "throughput": round3(throughput),
            "latency": summary.to_json(),
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
        let a = Args::try_parse_from(["http_config"]).unwrap();
        assert_eq!(a.host, "http://127.0.0.1:8848");
        assert_eq!(a.connections, 64);
        assert_eq!(a.mode, Mode::Query);
        assert_eq!(a.threads, 1);
        assert_eq!(a.rate, 0.0);
        let a = Args::try_parse_from([
            "http_config",
            "-c",
            "8",
            "-t",
            "500ms",
            "--mode",
            "publish",
            "--rate-per-user",
            "100",
            "--threads",
            "2",
        ])
        .unwrap();
        assert_eq!(a.connections, 8);
        assert_eq!(a.time, Duration::from_millis(500));
        assert_eq!(a.mode, Mode::Publish);
        assert_eq!(a.rate, 100.0);
        assert_eq!(a.threads, 2);
        assert!(Args::try_parse_from(["http_config", "--keys", "0"]).is_err());
        assert!(Args::try_parse_from(["http_config", "--threads", "0"]).is_err());
    }

    #[test]
    fn hosts() {
        assert_eq!(
            authority("http://127.0.0.1:8848").unwrap(),
            ("127.0.0.1:8848".to_string(), false)
        );
        assert_eq!(
            authority("http://127.0.0.1:8848/").unwrap(),
            ("127.0.0.1:8848".to_string(), false)
        );
        assert_eq!(
            authority("127.0.0.1:9").unwrap(),
            ("127.0.0.1:9".to_string(), false)
        );
        assert_eq!(
            authority("https://localhost:8848").unwrap(),
            ("localhost:8848".to_string(), true)
        );
        assert!(authority("http://127.0.0.1").is_err());
        assert!(authority("http://127.0.0.1:8848/nacos").is_err());
    }

    fn plan(mode: Mode) -> Plan {
        Plan {
            mode,
            reconnect: false,
            authority: "127.0.0.1:8848".into(),
            paths: vec![nacos::query_path("k0", "G", "", None)],
            expected: vec![Bytes::from(seed_content("k0", 0))],
            data_ids: vec!["k0".into()],
            group: "G".into(),
            tenant: String::new(),
            content_bytes: 40,
            run_id: 7,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn requests_and_checks() {
        let q = plan(Mode::Query);
        let r = q.request(0, 0, 1).unwrap();
        assert_eq!(r.method(), Method::GET);
        assert_eq!(
            r.uri().to_string(),
            "/nacos/v1/cs/configs?dataId=k0&group=G&tenant="
        );
        assert_eq!(r.headers()[HOST], "127.0.0.1:8848");
        assert!(q.check(0, 200, b"loadtest seed k0").is_ok());
        assert!(q.check(0, 200, b"loadtest seed k1").is_err());
        assert!(matches!(q.check(0, 404, b""), Err(Failure::Status(404))));

        let p = plan(Mode::Publish);
        let r = p.request(0, 3, 9).unwrap();
        assert_eq!(r.method(), Method::POST);
        assert_eq!(r.uri().to_string(), "/nacos/v1/cs/configs");
        assert_eq!(r.headers()[CONTENT_TYPE], nacos::FORM_CONTENT_TYPE);
        assert!(p.check(0, 200, b"true\n").is_ok());
        assert!(p.check(0, 200, b"false").is_err());
        assert!(p.check(0, 500, b"true").is_err());
    }

    #[test]
    fn tally() {
        let mut t = Tally::default();
        t.record(1.0, Ok(()));
        t.record(2.0, Err(Failure::Timeout));
        t.record(3.0, Err(Failure::Status(503)));
        assert_eq!(t.latencies.len(), 3);
        assert_eq!(t.failures.count, 2);
        assert_eq!(t.failures.by_kind["timeout"], 1);
        assert_eq!(t.failures.by_kind["status 503"], 1);
        assert_eq!(
            t.failures.first.as_deref(),
            Some("no answer within the timeout")
        );
    }
}
