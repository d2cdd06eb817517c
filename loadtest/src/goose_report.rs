//! Reads goose's JSON report (`--report-file x.json`): throughput, failures and the
//! latency percentiles a release report wants (goose's console tables have no p90).
//!
//! The report holds every request's latency histogram
//! (`raw_metrics.requests.*.raw_data.times_us`, µs bucket -> count) and the aggregated
//! request row (`raw_request_metrics[name = "Aggregated"]`), covering the run after
//! goose's metric reset once all users were launched.

use serde_json::Value;
use thiserror::Error;

/// Why a report could not be read.
#[derive(Debug, Error)]
pub enum ReportError {
    #[error("reading {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: {what}")]
    Shape { path: String, what: String },
}

/// One run's numbers, latencies in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub name: String,
    pub requests: u64,
    pub failures: u64,
    pub rps: f64,
    pub avg: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: f64,
}

/// Reads the report at `path`; only requests whose name passes `include` count in the
/// percentiles (all of them in [`read`]).
pub fn read_filtered(
    path: &str,
    include: impl Fn(&str) -> bool,
) -> Result<RunSummary, ReportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.to_string(),
        source,
    })?;
    let report: Value = serde_json::from_str(&text).map_err(|source| ReportError::Json {
        path: path.to_string(),
        source,
    })?;
    summarize(&report, include).map_err(|what| ReportError::Shape {
        path: path.to_string(),
        what,
    })
}

/// Reads the report at `path`.
pub fn read(path: &str) -> Result<RunSummary, ReportError> {
    read_filtered(path, |_| true)
}

/// Summarizes a parsed report; `include` picks the request kinds (by the key of
/// `raw_metrics.requests`, e.g. `POST /nacos/v1/cs/configs`) whose latencies count.
/// Throughput and counts come from the matching rows of `raw_request_metrics`.
pub fn summarize(report: &Value, include: impl Fn(&str) -> bool) -> Result<RunSummary, String> {
    let name = report["test"].as_str().unwrap_or("goose").to_string();
    let rows = report["raw_request_metrics"]
        .as_array()
        .ok_or("no raw_request_metrics")?;
    let (mut requests, mut failures, mut rps) = (0u64, 0u64, 0.0f64);
    let mut matched = false;
    for row in rows {
        let row_name = row["name"].as_str().unwrap_or_default();
        let method = row["method"].as_str().unwrap_or_default();
        if row_name == "Aggregated" {
            continue;
        }
        let key = format!("{method} {row_name}");
        if !(include(&key) || include(row_name)) {
            continue;
        }
        matched = true;
        requests += row["number_of_requests"].as_u64().unwrap_or(0);
        failures += row["number_of_failures"].as_u64().unwrap_or(0);
        rps += row["requests_per_second"].as_f64().unwrap_or(0.0);
    }
    if !matched {
        // Older reports, or a filter matching nothing: fall back to the aggregate.
        if let Some(aggregated) = rows.iter().find(|r| r["name"] == "Aggregated") {
            requests = aggregated["number_of_requests"].as_u64().unwrap_or(0);
            failures = aggregated["number_of_failures"].as_u64().unwrap_or(0);
            rps = aggregated["requests_per_second"].as_f64().unwrap_or(0.0);
        }
    }

    let mut histogram: Vec<(u64, u64)> = Vec::new();
    let mut total_us = 0u64;
    let mut max_us = 0u64;
    let kinds = report["raw_metrics"]["requests"]
        .as_object()
        .ok_or("no raw_metrics.requests")?;
    for (kind_name, kind) in kinds {
        if !include(kind_name) {
            continue;
        }
        let raw = &kind["raw_data"];
        total_us += raw["total_time_us"].as_u64().unwrap_or(0);
        max_us = max_us.max(raw["maximum_time_us"].as_u64().unwrap_or(0));
        if let Some(buckets) = raw["times_us"].as_object() {
            for (bucket, count) in buckets {
                let bucket = bucket
                    .parse::<u64>()
                    .map_err(|e| format!("histogram bucket {bucket:?}: {e}"))?;
                histogram.push((bucket, count.as_u64().unwrap_or(0)));
            }
        }
    }
    histogram.sort_unstable();
    let count: u64 = histogram.iter().map(|(_, n)| n).sum();
    let ms = |us: u64| us as f64 / 1000.0;
    let p = |q: f64| percentile(&histogram, count, q).map(ms);
    Ok(RunSummary {
        name,
        requests,
        failures,
        rps,
        avg: (count > 0).then(|| total_us as f64 / count as f64 / 1000.0),
        p50: p(0.50),
        p90: p(0.90),
        p99: p(0.99),
        p999: p(0.999),
        max: ms(max_us),
    })
}

/// The smallest bucket at or below which at least `q` of the `count` samples fall.
pub fn percentile(histogram: &[(u64, u64)], count: u64, q: f64) -> Option<u64> {
    if count == 0 {
        return None;
    }
    let rank = ((q * count as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(bucket, n) in histogram {
        seen += n;
        if seen >= rank {
            return Some(bucket);
        }
    }
    histogram.last().map(|&(bucket, _)| bucket)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percentiles_walk_the_histogram() {
        let h = [(100, 50), (200, 40), (900, 9), (5000, 1)];
        assert_eq!(percentile(&h, 100, 0.50), Some(100));
        assert_eq!(percentile(&h, 100, 0.51), Some(200));
        assert_eq!(percentile(&h, 100, 0.90), Some(200));
        assert_eq!(percentile(&h, 100, 0.99), Some(900));
        assert_eq!(percentile(&h, 100, 0.999), Some(5000));
        assert_eq!(percentile(&[], 0, 0.5), None);
    }

    fn report() -> Value {
        json!({
            "test": "ConfigSet",
            "raw_request_metrics": [
                {"method": "POST", "name": "/nacos/v1/cs/configs", "number_of_requests": 90,
                 "number_of_failures": 1, "requests_per_second": 9.0},
                {"method": "GET", "name": "fetch", "number_of_requests": 10,
                 "number_of_failures": 0, "requests_per_second": 1.0},
                {"method": "", "name": "Aggregated", "number_of_requests": 100,
                 "number_of_failures": 1, "requests_per_second": 10.0}
            ],
            "raw_metrics": {"requests": {
                "POST /nacos/v1/cs/configs": {"raw_data": {
                    "total_time_us": 90000, "maximum_time_us": 3000,
                    "times_us": {"1000": 80, "2000": 9, "3000": 1}}},
                "GET fetch": {"raw_data": {
                    "total_time_us": 1000, "maximum_time_us": 100,
                    "times_us": {"100": 10}}}
            }}
        })
    }

    #[test]
    fn summarizes_all_requests() {
        let s = summarize(&report(), |_| true).unwrap();
        assert_eq!(s.name, "ConfigSet");
        assert_eq!(s.requests, 100);
        assert_eq!(s.failures, 1);
        assert_eq!(s.rps, 10.0);
        assert_eq!(s.p50, Some(1.0));
        assert_eq!(s.p90, Some(1.0));
        assert_eq!(s.p99, Some(2.0));
        assert_eq!(s.max, 3.0);
    }

    #[test]
    fn filters_request_kinds() {
        let s = summarize(&report(), |k| k.starts_with("POST")).unwrap();
        assert_eq!(s.requests, 90);
        assert_eq!(s.rps, 9.0);
        assert_eq!(s.p50, Some(1.0));
        assert_eq!(s.p99, Some(3.0));
        assert_eq!(s.avg, Some(1.0));
    }

    #[test]
    fn rejects_other_json() {
        assert!(summarize(&json!({"x": 1}), |_| true).is_err());
    }
}
