//! Prometheus metrics (`GET /metrics`), through the `metrics` facade and its
//! Prometheus exporter.
//!
//! Counters and histograms are recorded where things happen (HTTP and gRPC
//! requests, fsyncs, listener wake-ups, pushes). Gauges that describe the
//! node's state (Raft indexes, config and listener counts, file sizes,
//! process RSS and CPU) are read when the endpoint is scraped, so they cost
//! nothing in between.
//!
//! | series | kind | labels |
//! |---|---|---|
//! | `tacos_http_requests_total` | counter | `method` (standard names, else `OTHER`), `route` (the matched pattern), `status` |
//! | `tacos_http_request_duration_seconds` | histogram | `method`, `route` |
//! | `tacos_grpc_requests_total` | counter | `type` (request class), `result` (ok, error) |
//! | `tacos_grpc_request_duration_seconds` | histogram | `type` |
//! | `tacos_grpc_push_ack_seconds` | histogram | time from sending a push (change notification, fuzzy watch sync or change notice) to its ack |
//! | `tacos_grpc_unlistened_pushes_total` | counter | notifications queued to config connections that have not listened yet |
//! | `tacos_watch_notify_seconds` | histogram | time from apply to a held long poll's answer |
//! | `tacos_log_fsync_seconds` | histogram | one `fdatasync` of the Raft log |
//! | `tacos_logins_total` | counter | `outcome` (ok, wrong_credentials, disabled, rate_limited, locked, directory_unavailable, error) |
//! | `tacos_config_publishes_total` | counter | publishes accepted by this node's config service (configs and grays) |
//! | `tacos_config_reads_total` | counter | config reads answered to clients (HTTP v1/v2, gRPC) |
//! | `tacos_configs` | gauge | |
//! | `tacos_grays` | gauge | `kind` (beta, tag): gray versions held ([gray.md](../docs/gray.md)) |
//! | `tacos_gray_reads_total` | counter | `kind`: reads a gray version answered (HTTP and gRPC) |
//! | `tacos_listeners` | gauge | `kind` (long_poll, grpc_connection, grpc_key; fuzzy_watch: connection-pattern pairs of Nacos 3's fuzzy watch, fuzzy_pattern: distinct patterns) |
//! | `tacos_raft_term`, `tacos_raft_leader`, `tacos_raft_is_leader`, `tacos_raft_last_log_index`, `tacos_raft_committed_index`, `tacos_raft_applied_index`, `tacos_raft_snapshot_index` | gauge | |
//! | `tacos_raft_follower_lag` | gauge | `node` (on the leader: entries behind the last log) |
//! | `tacos_log_bytes`, `tacos_snapshot_bytes` | gauge | bytes on disk |
//! | `tacos_process_resident_memory_bytes`, `tacos_process_cpu_seconds_total` | gauge | |

use std::collections::HashMap;
use std::path::Path;
use std::sync::{LazyLock, OnceLock, PoisonError, RwLock};

use actix_web::http::Method;
use metrics::{Counter, Histogram};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use tacos_app::watch::ListenerCounts;
use tacos_raft::Node;

/// Latency buckets, in seconds: 50 µs to 10 s.
const BUCKETS: &[f64] = &[
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 5.0, 10.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the process-wide recorder (once; later calls reuse it).
pub fn install() -> anyhow::Result<()> {
    if HANDLE.get().is_some() {
        return Ok(());
    }
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS)?
        .install_recorder()?;
    let _ = HANDLE.set(handle);
    Ok(())
}

/// The handles of one route's HTTP series, by method and status.
type HttpSeries = HashMap<(&'static str, &'static str, u16), (Counter, Histogram)>;

static HTTP_SERIES: LazyLock<RwLock<HttpSeries>> = LazyLock::new(RwLock::default);

/// Counts one HTTP request and records its duration. The `counter!` and
/// `histogram!` macros build, hash and look up their label set in the
/// recorder on every call: about 10,000 instructions, 15% of a config read
/// (callgrind). The handles are kept per (route, method, status) instead,
/// which is bounded by the declared routes, [`method_label`]'s names and
/// the statuses answered.
pub fn http_request(route: &'static str, method: &Method, status: u16, seconds: f64) {
    let key = (route, method_label(method), status);
    let known = HTTP_SERIES
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .cloned();
    let (requests, duration) = known.unwrap_or_else(|| {
        let (route, method, status) = key;
        let series = (
            metrics::counter!("tacos_http_requests_total",
                "method" => method, "route" => route, "status" => status.to_string()),
            metrics::histogram!("tacos_http_request_duration_seconds",
                "method" => method, "route" => route),
        );
        HTTP_SERIES
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, series.clone());
        series
    });
    requests.increment(1);
    duration.record(seconds);
}

/// The `method` label: the standard methods by name, any other (a client
/// may send any token as a method) as `OTHER`, so clients cannot make new
/// series without bound.
fn method_label(method: &Method) -> &'static str {
    const STANDARD: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
    ];
    STANDARD
        .into_iter()
        .find(|name| *name == method.as_str())
        .unwrap_or("OTHER")
}

/// Sets the scrape-time gauges and renders everything in the Prometheus
/// text format. Empty when no recorder was installed.
pub fn render(node: &Node, listeners: Option<ListenerCounts>, data_dir: &Path) -> String {
    let Some(handle) = HANDLE.get() else {
        return String::new();
    };
    let state = node.state();
    metrics::gauge!("tacos_configs").set(state.config_count() as f64);
    let (mut beta, mut tag) = (0usize, 0usize);
    for gray in state.all_grays().flat_map(|(_, grays)| grays) {
        match gray.rule {
            tacos_state::GrayRule::Beta { .. } => beta += 1,
            tacos_state::GrayRule::Tag { .. } => tag += 1,
        }
    }
    metrics::gauge!("tacos_grays", "kind" => "beta").set(beta as f64);
    metrics::gauge!("tacos_grays", "kind" => "tag").set(tag as f64);
    if let Some(l) = listeners {
        metrics::gauge!("tacos_listeners", "kind" => "long_poll").set(l.long_polls as f64);
        metrics::gauge!("tacos_listeners", "kind" => "grpc_connection")
            .set(l.grpc_connections as f64);
        metrics::gauge!("tacos_listeners", "kind" => "grpc_key").set(l.grpc_keys as f64);
        metrics::gauge!("tacos_listeners", "kind" => "fuzzy_watch").set(l.fuzzy_watches as f64);
        metrics::gauge!("tacos_listeners", "kind" => "fuzzy_pattern").set(l.fuzzy_patterns as f64);
    }
    let raft = node.metrics();
    let index = |l: Option<tacos_core::types::LogId>| l.map_or(0.0, |l| l.index as f64);
    metrics::gauge!("tacos_raft_term").set(raft.current_term as f64);
    metrics::gauge!("tacos_raft_leader").set(raft.current_leader.unwrap_or(0) as f64);
    metrics::gauge!("tacos_raft_is_leader").set(f64::from(u8::from(node.is_leader())));
    metrics::gauge!("tacos_raft_last_log_index").set(raft.last_log_index.unwrap_or(0) as f64);
    metrics::gauge!("tacos_raft_committed_index").set(index(node.committed()));
    metrics::gauge!("tacos_raft_applied_index").set(index(raft.last_applied));
    metrics::gauge!("tacos_raft_snapshot_index").set(index(raft.snapshot));
    if let Some(replication) = &raft.replication {
        let last = raft.last_log_index.unwrap_or(0);
        for (id, matched) in replication {
            let lag = last.saturating_sub(matched.map_or(0, |m| m.index));
            metrics::gauge!("tacos_raft_follower_lag", "node" => id.to_string()).set(lag as f64);
        }
    }
    if let Some(lag) = node.learner_lag() {
        // -1: not measured yet.
        let entries = lag.entries.map_or(-1.0, |e| e as f64);
        metrics::gauge!("tacos_learner_lag_entries").set(entries);
        let age = lag.age.map_or(-1.0, |a| a.as_secs_f64());
        metrics::gauge!("tacos_learner_lag_check_age_seconds").set(age);
    }
    metrics::gauge!("tacos_log_bytes").set(dir_bytes(&data_dir.join("log")) as f64);
    metrics::gauge!("tacos_snapshot_bytes").set(dir_bytes(&data_dir.join("snapshots")) as f64);
    if let Some((rss, cpu)) = process_usage() {
        metrics::gauge!("tacos_process_resident_memory_bytes").set(rss as f64);
        metrics::gauge!("tacos_process_cpu_seconds_total").set(cpu);
    }
    handle.render()
}

/// The counters and histograms recorded so far, in the Prometheus text
/// format, without setting the scrape-time gauges (the dashboard's
/// sampler reads them, [`crate::samples`]). Empty without a recorder.
pub fn recorded() -> String {
    HANDLE
        .get()
        .map(PrometheusHandle::render)
        .unwrap_or_default()
}

/// Total size of the files in `dir` (0 if unreadable).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Resident memory (bytes) and CPU time (seconds) of this process, from
/// `/proc` (Linux; `None` elsewhere).
pub fn process_usage() -> Option<(u64, f64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): utime and stime
    // are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    Some((rss_kib * 1024, ticks / hz))
}

#[cfg(test)]
mod tests {
    #[test]
    fn process_usage_reads_proc() {
        let (rss, cpu) = super::process_usage().expect("/proc is readable on Linux");
        assert!(rss > 1024 * 1024, "rss {rss}");
        assert!(cpu >= 0.0);
    }

    #[test]
    fn method_labels_are_the_standard_names_or_other() {
        use actix_web::http::Method;
        assert_eq!(super::method_label(&Method::GET), "GET");
        assert_eq!(super::method_label(&Method::DELETE), "DELETE");
        let made_up = Method::from_bytes(b"FROB1").expect("a token is a method");
        assert_eq!(super::method_label(&made_up), "OTHER");
    }
}
