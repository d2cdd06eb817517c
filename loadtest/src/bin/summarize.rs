//! `summarize`: one Markdown table row per goose JSON report (`--report-file x.json`).
//!
//! Goose's console tables give p50/p75/p98/p99 but no p90; the JSON report holds every
//! request's latency histogram (`raw_metrics.requests.*.raw_data.times_us`), so this
//! reads the percentiles a release report wants from it: throughput, failures, p50, p90,
//! p99, p99.9 and max, over all requests of the run (after goose's metric reset once all
//! users were launched). See [`loadtest::goose_report`].
//!
//! Usage: `summarize report.json [more.json ...]`

use std::process::ExitCode;

use loadtest::goose_report;

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
        match goose_report::read(path) {
            Ok(s) => {
                let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
                println!(
                    "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {:.2} |",
                    s.name,
                    s.requests,
                    s.failures,
                    s.rps,
                    f(s.avg),
                    f(s.p50),
                    f(s.p90),
                    f(s.p99),
                    f(s.p999),
                    s.max
                );
            }
            Err(e) => {
                eprintln!("{e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
