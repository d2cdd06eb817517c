//! Latency samples and their percentiles, and the failures beside them, for the load
//! tools that are not goose (`grpc_*`, `http_config`; goose keeps its own histograms).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

/// The value at or below which at least `q` (0..=1) of the ascending `sorted` samples
/// fall (nearest rank, as `summarize` reads goose's histograms).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

/// The usual percentiles of a set of samples (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub avg: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Summary {
    /// Sorts `samples` and summarizes them; all zero when there are none.
    pub fn of(samples: &mut [f64]) -> Summary {
        samples.sort_unstable_by(|a, b| a.total_cmp(b));
        let p = |q| percentile(samples, q).unwrap_or(0.0);
        let count = samples.len();
        Summary {
            count,
            avg: if count == 0 {
                0.0
            } else {
                samples.iter().sum::<f64>() / count as f64
            },
            min: samples.first().copied().unwrap_or(0.0),
            p50: p(0.50),
            p90: p(0.90),
            p99: p(0.99),
            p999: p(0.999),
            max: samples.last().copied().unwrap_or(0.0),
        }
    }

    /// As a JSON object with keys `count`, `avg_ms`, `min_ms`, `p50_ms`, ... `max_ms`.
    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count,
            "avg_ms": round3(self.avg),
            "min_ms": round3(self.min),
            "p50_ms": round3(self.p50),
            "p90_ms": round3(self.p90),
            "p99_ms": round3(self.p99),
            "p99_9_ms": round3(self.p999),
            "max_ms": round3(self.max),
        })
    }

    /// Prints the one-row Markdown table the tools end with: `| report | requests |
    /// failures | req/s | avg | p50 | p90 | p99 | p99.9 | max |`.
    pub fn print_row(&self, label: &str, failed: u64, throughput: f64) {
        println!(
            "| report | requests | failures | req/s | avg ms | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        println!(
            "| {label} | {} | {failed} | {throughput:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            self.count, self.avg, self.p50, self.p90, self.p99, self.p999, self.max
        );
    }
}

/// Failed requests, counted by kind, with the first one's description.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Failures {
    pub count: u64,
    pub by_kind: BTreeMap<String, u64>,
    pub first: Option<String>,
}

impl Failures {
    /// Counts one failure of `kind`; `describe` is asked only for the first.
    pub fn add(&mut self, kind: String, describe: impl FnOnce() -> String) {
        self.count += 1;
        *self.by_kind.entry(kind).or_default() += 1;
        if self.first.is_none() {
            self.first = Some(describe());
        }
    }

    /// Adds `other`'s counts (its first failure counts if there is none yet).
    pub fn merge(&mut self, other: &Failures) {
        self.count += other.count;
        for (kind, n) in &other.by_kind {
            *self.by_kind.entry(kind.clone()).or_default() += n;
        }
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }

    /// Prints the first failure and the count of each kind to stderr (nothing when
    /// there were none).
    pub fn print(&self) {
        if let Some(first) = &self.first {
            eprintln!("first failure: {first}");
            for (kind, n) in &self.by_kind {
                eprintln!("  {n} × {kind}");
            }
        }
    }
}

/// Writes a tool's JSON report (pretty, one trailing newline) to `path`; the error says
/// which file.
pub fn write_report(path: &Path, report: &Value) -> Result<(), String> {
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Rounds to 3 decimals (µs resolution for milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Parses a duration like goose's `-t`: `20s`, `500ms`, `2m`, `1h`, `1m30s`, or plain
/// seconds (`20`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty duration".into());
    }
    if let Ok(secs) = text.parse::<f64>() {
        return seconds(secs, text);
    }
    let mut total = 0.0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: a number without a unit at the end"))?;
        if digits == 0 {
            return Err(format!("{text:?}: expected a number"));
        }
        let value: f64 = rest[..digits]
            .parse()
            .map_err(|_| format!("{text:?}: bad number {:?}", &rest[..digits]))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => return Err(format!("{text:?}: unknown unit {other:?} (ms, s, m, h)")),
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    seconds(total, text)
}

fn seconds(secs: f64, text: &str) -> Result<Duration, String> {
    if secs.is_finite() && secs >= 0.0 {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!("{text:?}: not a duration"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_count_by_kind_and_keep_the_first() {
        let mut a = Failures::default();
        a.add("timeout".into(), || "no answer".into());
        a.add("timeout".into(), || {
            unreachable!("only the first is described")
        });
        let mut b = Failures::default();
        b.add("status 503".into(), || "answered 503".into());
        let mut all = Failures::default();
        all.merge(&Failures::default());
        all.merge(&b);
        all.merge(&a);
        assert_eq!(all.count, 3);
        assert_eq!(all.by_kind["timeout"], 2);
        assert_eq!(all.by_kind["status 503"], 1);
        assert_eq!(all.first.as_deref(), Some("answered 503"));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let s = Summary::of(&mut v);
        assert_eq!(s.count, 100);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.p50, 50.0);
        assert_eq!(s.p90, 90.0);
        assert_eq!(s.p99, 99.0);
        assert_eq!(s.p999, 100.0);
        assert_eq!(s.max, 100.0);
        assert_eq!(s.avg, 50.5);
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[3.0], 0.0), Some(3.0));
        let empty = Summary::of(&mut []);
        assert_eq!(empty.count, 0);
        assert_eq!(empty.max, 0.0);
        let j = s.to_json();
        assert_eq!(j["p99_9_ms"], 100.0);
        assert_eq!(j["count"], 100);
    }

    #[test]
    fn negative_samples_sort_first() {
        let mut v = vec![2.0, -1.5, 0.25];
        let s = Summary::of(&mut v);
        assert_eq!(s.min, -1.5);
        assert_eq!(s.p50, 0.25);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-1").is_err());
    }
}
