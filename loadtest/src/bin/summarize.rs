//! `summarize`: one Markdown table row per goose JSON report (`--report-file x.json`).
//!
//! Goose's console tables give p50/p75/p98/p99 but no p90; the JSON report holds every
//! request's latency histogram (`raw_metrics.requests.*.raw_data.times_us`), so this
//! reads the percentiles a release report wants from it: throughput, failures, p50, p90,
//! p99, p99.9 and max, over all requests of the run (after goose's metric reset once all
//! users were launched).
//!
//! Usage: `summarize report.json [more.json ...]`

use std::process::ExitCode;

use serde_json::Value;

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() || paths.iter().any(|p| p == "-h" || p == "--help") {
        eprintln!("usage: summarize REPORT.json [REPORT.json ...]  (goose --report-file *.json)");
        return ExitCode::from(2);
    }
    println!(
        "| report | requests | failures | req/s | avg ms | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut status = ExitCode::SUCCESS;
    for path in &paths {
        match summarize(path) {
            Ok(row) => println!("{row}"),
            Err(e) => {
                eprintln!("{path}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}

fn summarize(path: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let report: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let name = report["test"].as_str().unwrap_or(path).to_string();

    // Throughput as goose prints it: the "Aggregated" row of the request table.
    let aggregated = report["raw_request_metrics"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == "Aggregated"))
        .ok_or("no Aggregated row in raw_request_metrics")?;
    let requests = aggregated["number_of_requests"].as_u64().unwrap_or(0);
    let failures = aggregated["number_of_failures"].as_u64().unwrap_or(0);
    let rps = aggregated["requests_per_second"].as_f64().unwrap_or(0.0);

    // Merge the latency histograms (µs bucket -> count) of every request kind.
    let mut histogram: Vec<(u64, u64)> = Vec::new();
    let mut total_us = 0u64;
    let mut max_us = 0u64;
    let kinds = report["raw_metrics"]["requests"]
        .as_object()
        .ok_or("no raw_metrics.requests")?;
    for kind in kinds.values() {
        let raw = &kind["raw_data"];
        total_us += raw["total_time_us"].as_u64().unwrap_or(0);
        max_us = max_us.max(raw["maximum_time_us"].as_u64().unwrap_or(0));
        if let Some(buckets) = raw["times_us"].as_object() {
            for (bucket, count) in buckets {
                let bucket = bucket.parse::<u64>().map_err(|e| e.to_string())?;
                histogram.push((bucket, count.as_u64().unwrap_or(0)));
            }
        }
    }
    histogram.sort_unstable();
    let count: u64 = histogram.iter().map(|(_, n)| n).sum();
    let ms = |us: u64| format!("{:.2}", us as f64 / 1000.0);
    let avg = if count == 0 {
        "-".to_string()
    } else {
        format!("{:.2}", total_us as f64 / count as f64 / 1000.0)
    };
    let p = |q: f64| percentile(&histogram, count, q).map_or("-".to_string(), ms);
    Ok(format!(
        "| {name} | {requests} | {failures} | {rps:.0} | {avg} | {} | {} | {} | {} | {} |",
        p(0.50),
        p(0.90),
        p(0.99),
        p(0.999),
        ms(max_us)
    ))
}

/// The smallest bucket at or below which at least `q` of the `count` samples fall.
fn percentile(histogram: &[(u64, u64)], count: u64, q: f64) -> Option<u64> {
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
    use super::percentile;

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
}
