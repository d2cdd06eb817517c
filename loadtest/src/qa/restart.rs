//! The restart scenario (issue 20): how long a server holding many configs with history
//! takes to serve all of it again after a restart, and its memory before and after. A
//! rolling upgrade or a recovery waits on exactly this: Tacos rebuilds its memory from
//! snapshot and log on start, r-nacos reloads its own store, Java Nacos dumps its Derby
//! tables into its cache, and both the time and the RSS they settle at differ.
//!
//! On a fresh server (one node or a cluster; the load goes to node 1) it
//! 1. fills `--restart-configs` configs with `--restart-versions` publishes each (HTTP,
//!    [`FILL_CONNECTIONS`] keep-alive connections, closed loop). Each config belongs to
//!    one connection, which publishes its versions in order, so the last content of
//!    every config is known; a publish counts only when it answers `true`, the others
//!    are counted as failures;
//! 2. publishes a marker, the last write before the stop, waits until every node reads
//!    it back, and 2 s later takes the RSS after the fill;
//! 3. stops every node (SIGTERM, [`STOP_GRACE`] before SIGKILL) and starts them again on
//!    the same data dirs and ports;
//! 4. polls every node until the marker reads back with its content: both servers
//!    apply writes in order, so everything before it is served too. That is the restart
//!    time, from the first node's start. A sample of configs is then read back (their
//!    last acknowledged content) to show that nothing was lost;
//! 5. takes the RSS 2 s and `--restart-settle` after all state was served.
//!
//! It runs here, not in a load binary, because the fill, the marker, the stop and the
//! restart make one measurement. The fill also has to be exact (every config exactly
//! N versions), which needs a client that picks the keys; goose's random keys cannot.
//!
//! Bounds per run, besides the server's start: the fill is stopped (the run failed)
//! after 60 s + publishes / [`FILL_MIN_RATE`] ([`FILL_MIN_RATE_JAVA_NACOS`] for Java
//! Nacos), the marker must reach every node within
//! 60 s, the stop takes at most [`STOP_GRACE`], all state must be served within
//! [`SERVED_LIMIT`]; then 2 s, or `--restart-settle` when longer.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::http;
use super::procs::{self, Sampler, Usage};
use super::scenario::{Outcome, Params, RestartOutcome};
use super::servers::{Cluster, Flavor};
use super::QaError;
use crate::latency::{ms, Summary};

/// Connections (concurrent publishes) of the fill, as `loadtest/memory_fill.sh`'s users.
pub const FILL_CONNECTIONS: usize = 64;
/// The slowest fill that still counts: publishes/s (the limit is 60 s + publishes at
/// this rate; r-nacos filled at about 2,900/s on the 2-core dev machine).
pub const FILL_MIN_RATE: f64 = 500.0;
/// The same for Java Nacos, whose publishes commit to Derby one by one: about 300/s on
/// the 2-core dev machine while it was shared.
pub const FILL_MIN_RATE_JAVA_NACOS: f64 = 100.0;
/// How long the nodes get to exit on SIGTERM before they are killed.
pub const STOP_GRACE: Duration = Duration::from_secs(30);
/// How long after the start all state must be served.
pub const SERVED_LIMIT: Duration = Duration::from_secs(300);
/// How long the marker may take to reach every node before the stop.
const REPLICATED_LIMIT: Duration = Duration::from_secs(60);
/// RSS is read this long after the fill and after all state was served, as
/// `memory_fill.sh` does (a moment for the server's own clean-up).
const SETTLE: Duration = Duration::from_secs(2);
/// Configs read back after the restart.
const SAMPLED_CONFIGS: usize = 200;
/// Failures quoted in the run's error or progress line.
const QUOTED_ERRORS: usize = 3;
const POLL: Duration = Duration::from_millis(50);
const MARKER: &str = "qa-restart-marker";

/// The dataId of config `k`.
pub fn data_id(k: usize) -> String {
    format!("qa-restart-{k}")
}

/// Version `v` (0-based) of config `k` in the fill `nonce`: unique, so every publish
/// changes the config, and about as long as the goose scenarios' contents.
pub fn content(nonce: u128, k: usize, v: usize) -> String {
    format!("qa restart {nonce} config {k} version {v}")
}

/// The connections of a fill of `configs` configs.
pub fn connections(configs: usize) -> usize {
    configs.clamp(1, FILL_CONNECTIONS)
}

/// The configs connection `c` of `connections` publishes.
pub fn configs_of(c: usize, connections: usize, configs: usize) -> impl Iterator<Item = usize> {
    (c..configs).step_by(connections.max(1))
}

/// The slowest fill of `flavor` that still counts, publishes/s.
pub fn fill_min_rate(flavor: Flavor) -> f64 {
    match flavor {
        Flavor::Nacos => FILL_MIN_RATE_JAVA_NACOS,
        Flavor::Tacos | Flavor::RNacos => FILL_MIN_RATE,
    }
}

/// How long a fill of `publishes` at no less than `min_rate` publishes/s may take.
pub fn fill_limit(publishes: u64, min_rate: f64) -> Duration {
    Duration::from_secs(60) + Duration::from_secs_f64(publishes as f64 / min_rate)
}

/// Up to `n` of `items`, evenly spread, the first and the last included.
pub fn spread<T: Copy>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    if n <= 1 {
        return items.first().copied().into_iter().collect();
    }
    (0..n)
        .map(|i| items[i * (items.len() - 1) / (n - 1)])
        .collect()
}

/// What one fill connection did.
#[derive(Debug, Default)]
struct Part {
    attempted: u64,
    failures: u64,
    latencies_ms: Vec<f64>,
    /// Configs whose last version was acknowledged.
    acked_last: Vec<usize>,
    errors: Vec<String>,
    /// It stopped at the fill's time limit.
    cut_short: bool,
}

/// What the fill did.
#[derive(Debug)]
pub struct Fill {
    pub attempted: u64,
    pub failures: u64,
    pub seconds: f64,
    /// Of every publish, acknowledged or not, ms.
    pub latency: Summary,
    /// Configs whose last version was acknowledged, ascending.
    pub acked_last: Vec<usize>,
    /// The first few failures.
    pub errors: Vec<String>,
    pub cut_short: bool,
}

impl Fill {
    /// Acknowledged publishes per second.
    pub fn rate(&self) -> f64 {
        let acked = self.attempted.saturating_sub(self.failures) as f64;
        if self.seconds > 0.0 {
            acked / self.seconds
        } else {
            f64::NAN
        }
    }
}

/// Publishes `versions` contents of each of `configs` configs to `url` (the configs
/// resource of a node), stopping at `limit`.
pub fn fill(
    url: &str,
    configs: usize,
    versions: usize,
    nonce: u128,
    limit: Duration,
) -> Result<Fill, QaError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| QaError::io("starting the fill's runtime", e))?;
    runtime.block_on(fill_async(url, configs, versions, nonce, limit))
}

async fn fill_async(
    url: &str,
    configs: usize,
    versions: usize,
    nonce: u128,
    limit: Duration,
) -> Result<Fill, QaError> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
        .map_err(|e| QaError::Scenario(format!("the fill's HTTP client: {e}")))?;
    let started = Instant::now();
    let deadline = started + limit;
    let done = Arc::new(AtomicU64::new(0));
    let n = connections(configs);
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..n {
        let (client, url, done) = (client.clone(), url.to_string(), done.clone());
        tasks.spawn(async move {
            let mut part = Part::default();
            'fill: for v in 0..versions {
                for k in configs_of(c, n, configs) {
                    if Instant::now() >= deadline {
                        part.cut_short = true;
                        break 'fill;
                    }
                    let sent = Instant::now();
                    let result = crate::publish_once(
                        &client,
                        &url,
                        &data_id(k),
                        crate::GROUP,
                        &content(nonce, k, v),
                    )
                    .await;
                    part.latencies_ms.push(ms(sent.elapsed()));
                    part.attempted += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                    match result {
                        Ok(()) if v + 1 == versions => part.acked_last.push(k),
                        Ok(()) => {}
                        Err(e) => {
                            part.failures += 1;
                            if part.errors.len() < QUOTED_ERRORS {
                                part.errors.push(format!("{}: {e}", data_id(k)));
                            }
                        }
                    }
                }
            }
            part
        });
    }
    let total = configs as u64 * versions as u64;
    let mut parts = Vec::with_capacity(n);
    loop {
        match tokio::time::timeout(Duration::from_secs(15), tasks.join_next()).await {
            Ok(Some(Ok(part))) => parts.push(part),
            Ok(Some(Err(e))) => {
                return Err(QaError::Scenario(format!("a fill connection failed: {e}")))
            }
            Ok(None) => break,
            Err(_) => {
                let so_far = done.load(Ordering::Relaxed);
                eprintln!(
                    "    filled {so_far} of {total} ({:.0} publishes/s)",
                    so_far as f64 / started.elapsed().as_secs_f64()
                );
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let mut latencies: Vec<f64> = Vec::with_capacity(total as usize);
    let (mut attempted, mut failures, mut cut_short) = (0, 0, false);
    let (mut acked_last, mut errors) = (Vec::with_capacity(configs), Vec::new());
    for part in parts {
        attempted += part.attempted;
        failures += part.failures;
        cut_short |= part.cut_short;
        latencies.extend(part.latencies_ms);
        acked_last.extend(part.acked_last);
        errors.extend(part.errors);
    }
    errors.truncate(QUOTED_ERRORS);
    acked_last.sort_unstable();
    Ok(Fill {
        attempted,
        failures,
        seconds,
        latency: Summary::of(&mut latencies),
        acked_last,
        errors,
        cut_short,
    })
}

/// When every node first answered HTTP and when it read `content` back under `data_id`,
/// each as the latest over the nodes, in seconds since `since`.
fn wait_served(
    cluster: &mut Cluster,
    content: &str,
    since: Instant,
    deadline: Instant,
) -> Result<(f64, f64), QaError> {
    let query = crate::nacos::query_path(MARKER, crate::GROUP, "", None);
    let count = cluster.nodes.len();
    let mut answered: Vec<Option<f64>> = vec![None; count];
    let mut served: Vec<Option<f64>> = vec![None; count];
    loop {
        cluster.check_alive()?;
        for i in 0..count {
            if served[i].is_some() {
                continue;
            }
            let port = cluster.nodes[i].ports.http;
            if let Ok(r) = http::get(port, &query, None, Duration::from_secs(2)) {
                let at = since.elapsed().as_secs_f64();
                answered[i].get_or_insert(at);
                if r.status == 200 && r.body == content {
                    served[i] = Some(at);
                }
            }
        }
        let latest = |v: &[Option<f64>]| v.iter().copied().collect::<Option<Vec<f64>>>();
        if let (Some(a), Some(s)) = (latest(&answered), latest(&served)) {
            let max = |v: Vec<f64>| v.into_iter().fold(0.0, f64::max);
            return Ok((max(a), max(s)));
        }
        if Instant::now() > deadline {
            let missing: Vec<String> = served
                .iter()
                .enumerate()
                .filter(|(_, s)| s.is_none())
                .map(|(i, _)| (i + 1).to_string())
                .collect();
            return Err(QaError::Scenario(format!(
                "node(s) {} did not read the last write back within {:.0} s",
                missing.join(", "),
                (deadline - since).as_secs_f64()
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// Reads a sample of the configs whose last publish was acknowledged back (spread over
/// the nodes) and fails unless each holds that content.
fn check_sample(
    cluster: &Cluster,
    fill: &Fill,
    nonce: u128,
    versions: usize,
) -> Result<(), QaError> {
    let sample = spread(&fill.acked_last, SAMPLED_CONFIGS);
    let mut wrong = Vec::new();
    for (j, &k) in sample.iter().enumerate() {
        let node = j % cluster.nodes.len();
        let query = crate::nacos::query_path(&data_id(k), crate::GROUP, "", None);
        let want = content(nonce, k, versions - 1);
        let port = cluster.nodes[node].ports.http;
        match http::get(port, &query, None, Duration::from_secs(5)) {
            Ok(r) if r.status == 200 && r.body == want => {}
            Ok(r) => wrong.push(format!(
                "{} on node {}: {} {:?}",
                data_id(k),
                node + 1,
                r.status,
                r.body.chars().take(80).collect::<String>()
            )),
            Err(e) => wrong.push(format!("{} on node {}: {e}", data_id(k), node + 1)),
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(QaError::Scenario(format!(
            "after the restart {} of {} sampled configs did not read back their last \
             content, e.g. {}",
            wrong.len(),
            sample.len(),
            wrong[0]
        )))
    }
}

fn sleep_until(at: Instant) {
    if let Some(left) = at.checked_duration_since(Instant::now()) {
        std::thread::sleep(left);
    }
}

/// Runs the scenario on `cluster` (fresh, ready); `dir` is the run's dir. Returns the
/// fill's numbers with the restart's (`Outcome::restart`) and the server and fill-client
/// CPU over the fill, with the RSS before it (`rss_idle_mib`) and after it
/// (`rss_end_mib`).
pub fn run(
    cluster: &mut Cluster,
    dir: &Path,
    params: &Params,
) -> Result<(Outcome, Usage), QaError> {
    let (configs, versions) = (params.restart_configs, params.restart_versions);
    if configs == 0 || versions == 0 {
        return Err(QaError::Setup(
            "restart: --restart-configs and --restart-versions must be at least 1".into(),
        ));
    }
    let pids = cluster.pids();
    let rss_idle = procs::idle_rss_mib(&pids);
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let url = format!("{}{}", cluster.url(0), crate::CONFIGS_PATH);
    let publishes = configs as u64 * versions as u64;
    let limit = fill_limit(publishes, fill_min_rate(cluster.spec.flavor));

    // 1. The fill, the servers and this process (the fill client) sampled.
    let sampler = Sampler::start(
        pids.clone(),
        Some(std::process::id()),
        Duration::from_millis(250),
    );
    let filled = fill(&url, configs, versions, nonce, limit);
    let samples = sampler.stop();
    let filled = filled?;
    if filled.cut_short {
        return Err(QaError::Scenario(format!(
            "the fill did not finish within {limit:?} ({} of {publishes} publishes)",
            filled.attempted
        )));
    }
    if filled.failures > 0 {
        eprintln!(
            "    {} of {} publishes of the fill failed, e.g. {}",
            filled.failures,
            filled.attempted,
            filled.errors.join("; ")
        );
    }
    if filled.acked_last.is_empty() {
        return Err(QaError::Scenario(format!(
            "no config's last publish was acknowledged ({} of {} failed), e.g. {}",
            filled.failures,
            filled.attempted,
            filled.errors.join("; ")
        )));
    }
    let window = samples.first().zip(samples.last());
    let mut usage = window
        .and_then(|(a, b)| procs::usage(&samples, a.at, b.at, procs::clk_tck(), rss_idle))
        .unwrap_or(Usage {
            server_cores: f64::NAN,
            client_cores: f64::NAN,
            other_cores: f64::NAN,
            rss_peak_mib: f64::NAN,
            seconds: filled.seconds,
            rss_idle_mib: rss_idle,
            ..Usage::default()
        });

    // 2. The last write before the stop, on every node; the RSS after the fill.
    let marker = format!("qa restart {nonce} marker");
    let body = crate::nacos::publish_form(MARKER, crate::GROUP, &marker, "", None);
    match http::post_form(
        cluster.nodes[0].ports.http,
        crate::CONFIGS_PATH,
        &body,
        Duration::from_secs(10),
    ) {
        Ok(r) if r.status == 200 && r.body.trim() == "true" => {}
        Ok(r) => {
            return Err(QaError::Scenario(format!(
                "publishing the marker: {} {}",
                r.status,
                r.body.trim()
            )))
        }
        Err(e) => return Err(QaError::Scenario(format!("publishing the marker: {e}"))),
    }
    let written = Instant::now();
    wait_served(cluster, &marker, written, written + REPLICATED_LIMIT)?;
    std::thread::sleep(SETTLE);
    // The run is the fill: its end is the RSS of the filled server.
    usage.rss_end_mib = procs::rss_mib(&pids);

    // 3. Stop, start on the same data dirs.
    let (stop, killed) = cluster.stop_gracefully(STOP_GRACE);
    if killed {
        eprintln!(
            "    a node did not exit within {STOP_GRACE:?} of SIGTERM and was killed; see {}",
            dir.display()
        );
    }
    let restarted = Instant::now();
    cluster.respawn()?;

    // 4. All state served: the marker on every node, then a sample of the configs.
    let (answer_s, served_s) = wait_served(cluster, &marker, restarted, restarted + SERVED_LIMIT)?;
    check_sample(cluster, &filled, nonce, versions)?;

    // 5. RSS 2 s and --restart-settle after.
    let served_at = restarted + Duration::from_secs_f64(served_s);
    sleep_until(served_at + SETTLE);
    let pids = cluster.pids();
    let rss_restart = procs::rss_mib(&pids);
    let settle = Duration::from_secs(params.restart_settle_seconds);
    let rss_settled = if settle > SETTLE {
        sleep_until(served_at + settle);
        procs::rss_mib(&pids)
    } else {
        f64::NAN
    };
    let outcome = Outcome {
        throughput: filled.rate(),
        requests: filled.attempted,
        failures: filled.failures,
        p50: filled.latency.p50,
        p90: filled.latency.p90,
        p99: filled.latency.p99,
        p999: filled.latency.p999,
        max: filled.latency.max,
        publishes: None,
        from_send: None,
        rss_per_listener_kib: None,
        restart: Some(RestartOutcome {
            stop_s: stop.as_secs_f64(),
            killed,
            answer_s,
            served_s,
            rss_mib: rss_restart,
            rss_settled_mib: rss_settled,
        }),
    };
    Ok((outcome, usage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_belongs_to_one_connection() {
        for configs in [1, 5, 64, 65, 1000] {
            let n = connections(configs);
            assert!((1..=FILL_CONNECTIONS).contains(&n) && n <= configs);
            let mut seen: Vec<usize> = (0..n).flat_map(|c| configs_of(c, n, configs)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..configs).collect::<Vec<_>>());
        }
        assert_eq!(connections(0), 1);
        assert_eq!(configs_of(0, 1, 0).count(), 0);
    }

    #[test]
    fn contents_are_unique_and_named() {
        assert_eq!(data_id(7), "qa-restart-7");
        assert_ne!(content(1, 2, 3), content(1, 2, 4));
        assert_ne!(content(1, 2, 3), content(1, 3, 3));
        assert_ne!(content(1, 2, 3), content(2, 2, 3));
        assert!(
            crate::nacos::query_path(&data_id(99_999), crate::GROUP, "", None)
                .contains("dataId=qa-restart-99999")
        );
    }

    #[test]
    fn the_fill_limit_grows_with_the_fill() {
        assert_eq!(fill_limit(0, FILL_MIN_RATE), Duration::from_secs(60));
        // 100,000 configs x 10 versions at 500/s: 2,000 s, plus the minute.
        assert_eq!(
            fill_limit(1_000_000, fill_min_rate(Flavor::Tacos)),
            Duration::from_secs(2060)
        );
        // Java Nacos: at 100/s.
        assert_eq!(
            fill_limit(100_000, fill_min_rate(Flavor::Nacos)),
            Duration::from_secs(1060)
        );
    }

    #[test]
    fn samples_are_spread() {
        let items: Vec<usize> = (0..1000).collect();
        let s = spread(&items, 5);
        assert_eq!(s, vec![0, 249, 499, 749, 999]);
        assert_eq!(spread(&items[..3], 5), vec![0, 1, 2]);
        assert_eq!(spread(&items, 1), vec![0]);
        assert!(spread::<usize>(&[], 5).is_empty());
        assert_eq!(spread(&items, SAMPLED_CONFIGS).len(), SAMPLED_CONFIGS);
    }

    #[test]
    fn fill_rate_counts_acknowledged_publishes() {
        let fill = Fill {
            attempted: 1000,
            failures: 100,
            seconds: 2.0,
            latency: Summary::of(&mut []),
            acked_last: Vec::new(),
            errors: Vec::new(),
            cut_short: false,
        };
        assert_eq!(fill.rate(), 450.0);
        assert!(Fill {
            seconds: 0.0,
            ..fill
        }
        .rate()
        .is_nan());
    }
}
