//! The dashboard's history: a small in-memory ring of samples per node.
//!
//! Every second a task reads what [`crate::metrics`] already records
//! (counters and histograms, from the Prometheus recorder), the Raft
//! indexes, the watch hub's listener counts and the process' RSS and CPU,
//! and turns them into one [`Sample`]: rates per second and p99 latencies
//! over the interval since the previous sample (from the histogram buckets'
//! growth, interpolated within the bucket as Prometheus'
//! `histogram_quantile` does), gauges as they are. Two rings keep them:
//! one sample a second for the last 5 minutes ([`FINE`], 300 samples) and
//! one every 5 s for the last hour ([`COARSE`], 720 samples). A sample is
//! 200 bytes, plus the follower lags on the leader (a small map), so both
//! rings hold at most ~400 KB; nothing is written to disk and a restart
//! starts empty.
//!
//! `GET /tacos/v1/admin/samples` serves this node's rings; the console's
//! dashboard (`GET /tacos/api/console/dashboard`) gathers them from every
//! member.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix::Addr;
use serde::{Deserialize, Serialize};

use tacos_app::watch::{CountListeners, WatchHub};
use tacos_raft::{Node, NodeId};

/// One sample a second, for 5 minutes.
pub const FINE: Ring = Ring {
    every: Duration::from_secs(1),
    keep: 300,
};
/// One sample every 5 s, for an hour.
pub const COARSE: Ring = Ring {
    every: Duration::from_secs(5),
    keep: 720,
};

/// How often a ring samples and how many samples it keeps.
#[derive(Debug, Clone, Copy)]
pub struct Ring {
    pub every: Duration,
    pub keep: usize,
}

/// What the node did over one interval, and its state at the end of it.
/// Rates are per second; latencies are p99 in milliseconds (`None` when
/// nothing was timed in the interval).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// When it was taken (ms since the epoch).
    pub time: u64,
    pub publishes_per_s: f64,
    pub reads_per_s: f64,
    /// Totals since the process started (`tacos_config_publishes_total`,
    /// `tacos_config_reads_total`).
    pub publishes_total: u64,
    pub reads_total: u64,
    pub http_p99_ms: Option<f64>,
    pub grpc_p99_ms: Option<f64>,
    /// From sending a gRPC change notification to its ack.
    pub push_p99_ms: Option<f64>,
    /// From apply to a held long poll's answer.
    pub notify_p99_ms: Option<f64>,
    pub fsync_p99_ms: Option<f64>,
    pub long_polls: u64,
    pub grpc_listeners: u64,
    pub last_log: u64,
    pub committed: u64,
    pub applied: u64,
    /// On the leader: entries each follower is behind the last log entry.
    pub follower_lag: BTreeMap<NodeId, u64>,
    pub rss_bytes: u64,
    /// CPU used over the interval, in percent of one core.
    pub cpu_percent: f64,
}

/// The cumulative values a sample is the difference of.
#[derive(Debug, Clone, Default)]
struct Totals {
    at: Option<std::time::Instant>,
    publishes: f64,
    reads: f64,
    http: Histogram,
    grpc: Histogram,
    push: Histogram,
    notify: Histogram,
    fsync: Histogram,
    cpu_seconds: f64,
}

/// A histogram's cumulative bucket counts, summed over its label sets:
/// upper bound → count of observations at or below it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Histogram(Vec<(f64, f64)>);

impl Histogram {
    /// The 99th percentile of what was observed between `before` and
    /// `self`, in the unit of the buckets; `None` if nothing was.
    fn p99_since(&self, before: &Histogram) -> Option<f64> {
        let earlier: HashMap<u64, f64> =
            before.0.iter().map(|(le, n)| (le.to_bits(), *n)).collect();
        let grown: Vec<(f64, f64)> = self
            .0
            .iter()
            .map(|(le, n)| {
                (
                    *le,
                    (n - earlier.get(&le.to_bits()).copied().unwrap_or(0.0)).max(0.0),
                )
            })
            .collect();
        let total = grown.last().map(|(_, n)| *n)?;
        if total <= 0.0 {
            return None;
        }
        let target = total * 0.99;
        let (mut lower, mut below) = (0.0, 0.0);
        for (le, n) in grown {
            if n >= target {
                if le.is_infinite() {
                    // Past the last finite bucket: its bound is all we know.
                    return Some(lower);
                }
                let within = n - below;
                let share = if within > 0.0 {
                    (target - below) / within
                } else {
                    1.0
                };
                return Some(lower + (le - lower) * share);
            }
            (lower, below) = (le, n);
        }
        Some(lower)
    }
}

/// Reads the counters and histograms the dashboard needs from the
/// recorder's Prometheus text.
fn read_recorded(text: &str) -> Totals {
    let mut totals = Totals::default();
    let mut buckets: HashMap<&str, BTreeMap<u64, (f64, f64)>> = HashMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (series, ""),
        };
        match name {
            "tacos_config_publishes_total" => totals.publishes += value,
            "tacos_config_reads_total" => totals.reads += value,
            _ => {
                let Some(histogram) = name.strip_suffix("_bucket") else {
                    continue;
                };
                let Some(le) = label(labels, "le") else {
                    continue;
                };
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    match le.parse::<f64>() {
                        Ok(le) => le,
                        Err(_) => continue,
                    }
                };
                // Summed over the other labels (routes, request types).
                buckets
                    .entry(histogram)
                    .or_default()
                    .entry(le.to_bits())
                    .or_insert((le, 0.0))
                    .1 += value;
            }
        }
    }
    let mut take = |name: &str| {
        let mut pairs: Vec<(f64, f64)> = buckets
            .remove(name)
            .unwrap_or_default()
            .into_values()
            .collect();
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        Histogram(pairs)
    };
    totals.http = take("tacos_http_request_duration_seconds");
    totals.grpc = take("tacos_grpc_request_duration_seconds");
    totals.push = take("tacos_grpc_push_ack_seconds");
    totals.notify = take("tacos_watch_notify_seconds");
    totals.fsync = take("tacos_log_fsync_seconds");
    totals
}

/// The value of `name` in a Prometheus label set (`a="1",le="0.5"`).
/// The values the recorder writes here (numbers, route patterns, request
/// types) hold no commas or quotes.
fn label<'a>(labels: &'a str, name: &str) -> Option<&'a str> {
    labels.split(',').find_map(|part| {
        part.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix("=\""))
            .map(|value| value.trim_end_matches('"'))
    })
}

/// The state of the node at sampling time (gauges).
#[derive(Debug, Clone, Default)]
struct Gauges {
    long_polls: u64,
    grpc_listeners: u64,
    last_log: u64,
    committed: u64,
    applied: u64,
    follower_lag: BTreeMap<NodeId, u64>,
    rss_bytes: u64,
}

fn sample(time: u64, before: &Totals, now: &Totals, gauges: &Gauges) -> Sample {
    let seconds = match (before.at, now.at) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let rate = |a: f64, b: f64| {
        if seconds > 0.0 {
            ((b - a) / seconds).max(0.0)
        } else {
            0.0
        }
    };
    let ms = |h: &Histogram, earlier: &Histogram| h.p99_since(earlier).map(|s| s * 1000.0);
    Sample {
        time,
        publishes_per_s: rate(before.publishes, now.publishes),
        reads_per_s: rate(before.reads, now.reads),
        publishes_total: now.publishes as u64,
        reads_total: now.reads as u64,
        http_p99_ms: ms(&now.http, &before.http),
        grpc_p99_ms: ms(&now.grpc, &before.grpc),
        push_p99_ms: ms(&now.push, &before.push),
        notify_p99_ms: ms(&now.notify, &before.notify),
        fsync_p99_ms: ms(&now.fsync, &before.fsync),
        long_polls: gauges.long_polls,
        grpc_listeners: gauges.grpc_listeners,
        last_log: gauges.last_log,
        committed: gauges.committed,
        applied: gauges.applied,
        follower_lag: gauges.follower_lag.clone(),
        rss_bytes: gauges.rss_bytes,
        cpu_percent: rate(before.cpu_seconds, now.cpu_seconds) * 100.0,
    }
}

#[derive(Default)]
struct Rings {
    fine: VecDeque<Sample>,
    coarse: VecDeque<Sample>,
    /// The totals the last fine and coarse samples were taken at.
    fine_from: Option<Totals>,
    coarse_from: Option<Totals>,
    ticks: u64,
}

/// This node's sample rings.
#[derive(Default)]
pub struct Samples {
    rings: Mutex<Rings>,
}

/// What `GET /tacos/v1/admin/samples` answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSamples {
    pub node: NodeId,
    /// One a second, oldest first.
    pub fine: Vec<Sample>,
    /// One every 5 s, oldest first.
    pub coarse: Vec<Sample>,
}

impl Samples {
    /// Takes one sample from `now` (called every [`FINE`] interval).
    fn record(&self, now: Totals, gauges: &Gauges, time: u64) {
        let mut rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        rings.ticks += 1;
        if let Some(before) = &rings.fine_from {
            let s = sample(time, before, &now, gauges);
            push(&mut rings.fine, s, FINE.keep);
        }
        let coarse_due = rings.coarse_from.is_none()
            || rings
                .ticks
                .is_multiple_of((COARSE.every.as_secs() / FINE.every.as_secs()).max(1));
        if coarse_due {
            if let Some(before) = &rings.coarse_from {
                let s = sample(time, before, &now, gauges);
                push(&mut rings.coarse, s, COARSE.keep);
            }
            rings.coarse_from = Some(now.clone());
        }
        rings.fine_from = Some(now);
    }

    pub fn snapshot(&self, node: NodeId) -> NodeSamples {
        let rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        NodeSamples {
            node,
            fine: rings.fine.iter().cloned().collect(),
            coarse: rings.coarse.iter().cloned().collect(),
        }
    }
}

fn push(ring: &mut VecDeque<Sample>, sample: Sample, keep: usize) {
    if ring.len() == keep {
        ring.pop_front();
    }
    ring.push_back(sample);
}

/// Samples this node every second until the process ends.
pub fn spawn(samples: Arc<Samples>, node: Arc<Node>, hub: Addr<WatchHub>) {
    actix_web::rt::spawn(async move {
        let mut tick = tokio::time::interval(FINE.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let mut totals = read_recorded(&crate::metrics::recorded());
            totals.at = Some(std::time::Instant::now());
            let mut gauges = Gauges::default();
            if let Ok(l) = hub.send(CountListeners).await {
                gauges.long_polls = l.long_polls as u64;
                gauges.grpc_listeners = l.grpc_connections as u64;
            }
            let raft = node.metrics();
            let last = raft.last_log_index.unwrap_or(0);
            gauges.last_log = last;
            gauges.committed = node.committed().map_or(0, |l| l.index);
            gauges.applied = raft.last_applied.map_or(0, |l| l.index);
            if let Some(replication) = &raft.replication {
                gauges.follower_lag = replication
                    .iter()
                    .filter(|(id, _)| **id != node.id)
                    .map(|(id, m)| (*id, last.saturating_sub(m.map_or(0, |m| m.index))))
                    .collect();
            }
            if let Some((rss, cpu)) = crate::metrics::process_usage() {
                gauges.rss_bytes = rss;
                totals.cpu_seconds = cpu;
            }
            let time = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64);
            samples.record(totals, &gauges, time);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# TYPE tacos_config_publishes_total counter
tacos_config_publishes_total 7
tacos_config_reads_total 40
tacos_http_request_duration_seconds_bucket{method="GET",route="/a",le="0.001"} 10
tacos_http_request_duration_seconds_bucket{method="GET",route="/a",le="0.01"} 20
tacos_http_request_duration_seconds_bucket{method="GET",route="/a",le="+Inf"} 20
tacos_http_request_duration_seconds_bucket{method="POST",route="/b",le="0.001"} 0
tacos_http_request_duration_seconds_bucket{method="POST",route="/b",le="0.01"} 80
tacos_http_request_duration_seconds_bucket{method="POST",route="/b",le="+Inf"} 80
tacos_http_request_duration_seconds_sum{method="GET",route="/a"} 0.1
tacos_log_fsync_seconds_bucket{le="0.5"} 3
tacos_log_fsync_seconds_bucket{le="+Inf"} 4
"#;

    #[test]
    fn the_recorder_text_is_read_and_summed_over_labels() {
        let t = read_recorded(TEXT);
        assert_eq!((t.publishes, t.reads), (7.0, 40.0));
        assert_eq!(
            t.http,
            Histogram(vec![(0.001, 10.0), (0.01, 100.0), (f64::INFINITY, 100.0)])
        );
        assert_eq!(t.fsync.0.len(), 2);
        assert!(t.grpc.0.is_empty());
        assert_eq!(label(r#"a="x",le="0.5""#, "le"), Some("0.5"));
        assert_eq!(label(r#"xle="1",le="2""#, "le"), Some("2"));
    }

    #[test]
    fn p99_is_interpolated_within_the_bucket_over_the_interval() {
        let before = Histogram(vec![(0.001, 10.0), (0.01, 10.0), (f64::INFINITY, 10.0)]);
        let after = Histogram(vec![(0.001, 10.0), (0.01, 110.0), (f64::INFINITY, 110.0)]);
        // 100 new observations, all in (1 ms, 10 ms]: p99 is 99% of the way.
        let p99 = after.p99_since(&before).unwrap();
        assert!((p99 - (0.001 + 0.009 * 0.99)).abs() < 1e-9, "{p99}");
        assert_eq!(after.p99_since(&after), None, "nothing new, no p99");
        // Past the last finite bucket: that bucket's bound.
        let slow = Histogram(vec![(0.5, 0.0), (f64::INFINITY, 5.0)]);
        assert_eq!(slow.p99_since(&Histogram::default()), Some(0.5));
    }

    #[test]
    fn the_rings_hold_rates_and_stay_bounded() {
        let samples = Samples::default();
        let start = std::time::Instant::now();
        let gauges = Gauges {
            committed: 5,
            applied: 4,
            ..Gauges::default()
        };
        for i in 0..(FINE.keep as u64 + 20) {
            let totals = Totals {
                at: Some(start + Duration::from_secs(i)),
                publishes: (i * 3) as f64,
                cpu_seconds: i as f64 * 0.5,
                ..Totals::default()
            };
            samples.record(totals, &gauges, i * 1000);
        }
        let snap = samples.snapshot(1);
        assert_eq!(snap.fine.len(), FINE.keep);
        let last = snap.fine.last().unwrap();
        assert_eq!(last.publishes_per_s, 3.0);
        assert_eq!(last.cpu_percent, 50.0);
        assert_eq!((last.committed, last.applied), (5, 4));
        assert_eq!(last.publishes_total, (FINE.keep as u64 + 19) * 3);
        // One coarse sample per 5 fine ones, each over 5 s.
        assert_eq!(snap.coarse.len(), 64);
        assert_eq!(snap.coarse.last().unwrap().publishes_per_s, 3.0);
        assert!(
            std::mem::size_of::<Sample>() <= 200,
            "{}",
            std::mem::size_of::<Sample>()
        );
    }
}
