//! The Markdown report (`<out>/<label>.md`) and its SVG plots.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::budgets::{check, Measured, Verdict};
use super::fsync::Fsyncs;
use super::knee::Saturation;
use super::plot::{self, CurveSeries, MatrixPoint};
use super::run::{rate_text, slug, OperatingPoint, Phase, QaResults, RunRecord};
use super::scenario::Scenario;
use super::servers::Flavor;
use super::QaError;

/// The median of `v` (mean of the middle two for an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The A/B runs of one server for one scenario and topology, summarized.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    pub runs: usize,
    pub failed_runs: usize,
    pub throughput: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// NaN where the tool reports none.
    pub p999: f64,
    pub max: f64,
    pub requests: u64,
    pub failures: u64,
    pub rss_mib: f64,
    /// RSS of the fresh server before the load tool seeded anything.
    pub rss_idle_mib: f64,
    pub server_cores: f64,
    pub cpu_per_request_us: f64,
    pub client_cores: f64,
    pub other_cores_max: f64,
    pub throughput_range: (f64, f64),
    pub p99_range: (f64, f64),
    /// Listen: p50 and p99 from before the publish was sent.
    pub from_send: (f64, f64),
    /// Fan-out: server RSS per listener, KiB.
    pub rss_per_listener_kib: f64,
    /// Restart (NaN for the other scenarios): seconds to stop, until every node
    /// answered again, until all state was served again, RSS then and
    /// `--restart-settle` after (`rss_mib` is the RSS after the fill).
    pub stop_s: f64,
    pub restart_answer_s: f64,
    pub restart_s: f64,
    pub rss_restart_mib: f64,
    pub rss_restart_settled_mib: f64,
}

impl Aggregate {
    pub fn error_rate(&self) -> f64 {
        super::scenario::error_rate(self.requests, self.failures)
    }

    /// (max - min) / median of the throughput over the runs, as a fraction.
    pub fn throughput_spread(&self) -> f64 {
        if self.throughput > 0.0 {
            (self.throughput_range.1 - self.throughput_range.0) / self.throughput
        } else {
            f64::NAN
        }
    }
}

/// Summarizes runs (medians over the successful ones).
pub fn aggregate(records: &[&RunRecord]) -> Option<Aggregate> {
    let ok: Vec<&&RunRecord> = records.iter().filter(|r| r.ok()).collect();
    if ok.is_empty() {
        return None;
    }
    let outcome = |f: fn(&super::scenario::Outcome) -> f64| -> Vec<f64> {
        ok.iter()
            .filter_map(|r| r.outcome.as_ref().map(f))
            .collect()
    };
    let usage = |f: fn(&super::procs::Usage) -> f64| -> Vec<f64> {
        ok.iter().filter_map(|r| r.usage.as_ref().map(f)).collect()
    };
    let range = |v: Vec<f64>| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            })
    };
    Some(Aggregate {
        runs: records.len(),
        failed_runs: records.len() - ok.len(),
        throughput: median(outcome(|o| o.throughput)),
        p50: median(outcome(|o| o.p50)),
        p90: median(outcome(|o| o.p90)),
        p99: median(outcome(|o| o.p99)),
        p999: median(outcome(|o| o.p999)),
        max: median(outcome(|o| o.max)),
        requests: ok
            .iter()
            .filter_map(|r| r.outcome.as_ref())
            .map(|o| o.requests)
            .sum(),
        failures: ok
            .iter()
            .filter_map(|r| r.outcome.as_ref())
            .map(|o| o.failures)
            .sum(),
        rss_mib: median(usage(|u| u.rss_end_mib)),
        rss_idle_mib: median(usage(|u| u.rss_idle_mib)),
        server_cores: median(usage(|u| u.server_cores)),
        cpu_per_request_us: median(ok.iter().filter_map(|r| r.cpu_per_request_us()).collect()),
        client_cores: median(usage(|u| u.client_cores)),
        other_cores_max: usage(|u| u.other_cores).into_iter().fold(0.0, f64::max),
        throughput_range: range(outcome(|o| o.throughput)),
        p99_range: range(outcome(|o| o.p99)),
        from_send: (
            median(outcome(|o| o.from_send.map_or(f64::NAN, |f| f.0))),
            median(outcome(|o| o.from_send.map_or(f64::NAN, |f| f.1))),
        ),
        rss_per_listener_kib: median(outcome(|o| o.rss_per_listener_kib.unwrap_or(f64::NAN))),
        stop_s: median(outcome(|o| o.restart.map_or(f64::NAN, |x| x.stop_s))),
        restart_answer_s: median(outcome(|o| o.restart.map_or(f64::NAN, |x| x.answer_s))),
        restart_s: median(outcome(|o| o.restart.map_or(f64::NAN, |x| x.served_s))),
        rss_restart_mib: median(outcome(|o| o.restart.map_or(f64::NAN, |x| x.rss_mib))),
        rss_restart_settled_mib: median(outcome(|o| {
            o.restart.map_or(f64::NAN, |x| x.rss_settled_mib)
        })),
    })
}

fn ab_runs(
    results: &QaResults,
    nodes: usize,
    scenario: Scenario,
    baseline: bool,
) -> Vec<&RunRecord> {
    results
        .runs
        .iter()
        .filter(|r| {
            matches!(r.phase, Phase::Ab { .. })
                && r.nodes == nodes
                && r.scenario == scenario
                && r.is_baseline == baseline
        })
        .collect()
}

/// Per topology and scenario: both aggregates and the verdicts.
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub nodes: usize,
    pub scenario: Scenario,
    pub point: OperatingPoint,
    pub server: Option<Aggregate>,
    pub baseline: Option<Aggregate>,
    pub verdicts: Vec<Verdict>,
    /// The budgets' note for this scenario.
    pub note: Option<String>,
}

/// Aggregates and judges every (topology, scenario) of the run.
pub fn evaluate(results: &QaResults) -> Vec<ScenarioResult> {
    let mut out = Vec::new();
    for point in &results.points {
        let server = aggregate(&ab_runs(results, point.nodes, point.scenario, false));
        let baseline = aggregate(&ab_runs(results, point.nodes, point.scenario, true));
        let mut budget = results.budgets.resolve(point.scenario.name(), point.nodes);
        if !point.scenario.saturates() {
            // No matrix, no capacity.
            budget.min_capacity_ratio = None;
        }
        let restart = point.scenario == Scenario::Restart;
        if restart {
            // Its latency is the closed-loop fill's: queueing behind 64 connections,
            // not a goal.
            budget.max_p99_ratio = None;
            budget.max_p99_ms = None;
            budget.max_p50_ms = None;
            budget.max_p999_over_p99 = None;
        }
        let listen = point.scenario.notifies();
        let measured = |a: &Aggregate, sat: Option<&Saturation>| Measured {
            throughput: a.throughput,
            p50_ms: a.p50,
            p99_ms: a.p99,
            p999_ms: a.p999,
            // The listen latency from the publish's answer can be negative (a server
            // may notify before it answers): ratios use it from before the send.
            p99_ratio_basis_ms: listen.then_some(a.from_send.1),
            error_rate: a.error_rate(),
            rss_mib: a.rss_mib,
            rss_idle_mib: a.rss_idle_mib,
            rss_per_listener_kib: (point.scenario == Scenario::Fanout)
                .then_some(a.rss_per_listener_kib),
            restart_s: restart.then_some(a.restart_s),
            rss_restart_mib: restart.then_some(a.rss_restart_mib),
            cpu_per_request_us: a.cpu_per_request_us,
            capacity: sat.map(|s| s.capacity),
            closed_loop_ratio: sat.and_then(|s| s.closed_loop_ratio),
            baseline: None,
        };
        let verdicts = match &server {
            Some(s) => {
                let mut m = measured(s, point.saturation.as_ref());
                m.baseline = baseline
                    .as_ref()
                    .map(|b| Box::new(measured(b, point.baseline_saturation.as_ref())));
                check(&budget, &m)
            }
            None => vec![Verdict {
                budget: "runs".into(),
                limit: "at least one successful run".into(),
                value: "none".into(),
                pass: Some(false),
            }],
        };
        out.push(ScenarioResult {
            nodes: point.nodes,
            scenario: point.scenario,
            point: point.clone(),
            server,
            baseline,
            verdicts,
            note: budget.note.clone(),
        });
    }
    out
}

fn f2(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}")
    } else {
        "–".into()
    }
}

fn f0(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.0}");
        // Thousands separators for readability.
        let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else {
        "–".into()
    }
}

/// `a / b`, or "–" unless both are positive (a ratio of a latency that can be negative,
/// as the listen scenario's, means nothing).
fn ratio(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "–".into()
    }
}

fn nodes_text(n: usize) -> String {
    if n == 1 {
        "1 node".into()
    } else {
        format!("{n} nodes")
    }
}

/// What the report produced.
#[derive(Debug, Clone)]
pub struct Written {
    pub markdown: PathBuf,
    pub plots: Vec<PathBuf>,
    pub failed_budgets: usize,
    pub passed_budgets: usize,
}

/// Writes `<out_dir>/<label>.md` and its SVGs.
pub fn write(results: &QaResults, out_dir: &Path) -> Result<Written, QaError> {
    std::fs::create_dir_all(out_dir)
        .map_err(|e| QaError::io(format!("creating {}", out_dir.display()), e))?;
    let evaluated = evaluate(results);
    let label = slug(&results.label);
    let mut plots = Vec::new();
    let mut images: Vec<(usize, Option<Scenario>, String, String)> = Vec::new();
    let topologies: Vec<usize> = results.options.nodes.clone();
    for &nodes in &topologies {
        for point in results.points.iter().filter(|p| p.nodes == nodes) {
            if !point.scenario.saturates() {
                continue;
            }
            let series = saturation_series(results, nodes, point.scenario);
            if series.iter().all(|s| s.points.is_empty()) {
                continue;
            }
            let name = format!("{label}-{nodes}n-{}-saturation.svg", point.scenario.name());
            let path = out_dir.join(&name);
            plot::saturation(
                &path,
                &format!(
                    "{}, {}: p99 against throughput (users x rate matrix)",
                    point.scenario.name(),
                    nodes_text(nodes)
                ),
                &series,
                (point.rate > 0.0).then_some(point.users as f64 * point.rate),
            )?;
            plots.push(path);
            images.push((nodes, Some(point.scenario), name, "saturation".into()));
        }
        let rows: Vec<&ScenarioResult> = evaluated.iter().filter(|r| r.nodes == nodes).collect();
        if rows.is_empty() {
            continue;
        }
        let categories: Vec<String> = rows.iter().map(|r| r.scenario.name().to_string()).collect();
        let mut series = vec![(
            format!("{} p99", results.server.label),
            rows.iter()
                .map(|r| r.server.as_ref().map(|a| a.p99))
                .collect(),
        )];
        series.insert(
            0,
            (
                format!("{} p50", results.server.label),
                rows.iter()
                    .map(|r| r.server.as_ref().map(|a| a.p50))
                    .collect(),
            ),
        );
        if let Some(b) = &results.baseline {
            series.push((
                format!("{} p50", b.label),
                rows.iter()
                    .map(|r| r.baseline.as_ref().map(|a| a.p50))
                    .collect(),
            ));
            series.push((
                format!("{} p99", b.label),
                rows.iter()
                    .map(|r| r.baseline.as_ref().map(|a| a.p99))
                    .collect(),
            ));
        }
        let name = format!("{label}-{nodes}n-latency.svg");
        let path = out_dir.join(&name);
        plot::bars(
            &path,
            &format!("Latency at the operating point, {}", nodes_text(nodes)),
            "milliseconds",
            &categories,
            &series,
            None,
            true,
        )?;
        plots.push(path);
        images.push((nodes, None, name, "latency".into()));
        if let Some(b) = &results.baseline {
            let pick = |f: fn(&Aggregate) -> f64| -> Vec<Option<f64>> {
                rows.iter()
                    .map(|r| match (&r.server, &r.baseline) {
                        (Some(s), Some(x)) if f(x) > 0.0 => Some(f(s) / f(x)),
                        _ => None,
                    })
                    .collect()
            };
            let series = vec![
                ("throughput".to_string(), pick(|a| a.throughput)),
                ("p99".to_string(), pick(|a| a.p99)),
                (
                    "CPU per request".to_string(),
                    pick(|a| a.cpu_per_request_us),
                ),
                ("RSS".to_string(), pick(|a| a.rss_mib)),
            ];
            let name = format!("{label}-{nodes}n-ratios.svg");
            let path = out_dir.join(&name);
            plot::bars(
                &path,
                &format!(
                    "{} / {}, {}",
                    results.server.label,
                    b.label,
                    nodes_text(nodes)
                ),
                "ratio (1 = same)",
                &categories,
                &series,
                Some(1.0),
                false,
            )?;
            plots.push(path);
            images.push((nodes, None, name, "ratios".into()));
        }
    }
    let markdown = render(results, &evaluated, &images);
    let path = out_dir.join(format!("{label}.md"));
    std::fs::write(&path, markdown)
        .map_err(|e| QaError::io(format!("writing {}", path.display()), e))?;
    let failed = count_verdicts(&evaluated, Some(false));
    let passed = count_verdicts(&evaluated, Some(true));
    Ok(Written {
        markdown: path,
        plots,
        failed_budgets: failed,
        passed_budgets: passed,
    })
}

/// How many budget verdicts came out `pass` (`None`: not applicable).
fn count_verdicts(evaluated: &[ScenarioResult], pass: Option<bool>) -> usize {
    evaluated
        .iter()
        .flat_map(|r| &r.verdicts)
        .filter(|v| v.pass == pass)
        .count()
}

fn saturation_series(results: &QaResults, nodes: usize, scenario: Scenario) -> Vec<CurveSeries> {
    let mut out = Vec::new();
    let mut specs = vec![(results.server.label.clone(), false)];
    if let Some(b) = &results.baseline {
        specs.push((b.label.clone(), true));
    }
    for (label, baseline) in specs {
        let points = results
            .runs
            .iter()
            .filter(|r| {
                r.phase == Phase::Saturation
                    && r.nodes == nodes
                    && r.scenario == scenario
                    && r.is_baseline == baseline
            })
            .filter_map(|r| {
                r.outcome.as_ref().map(|o| MatrixPoint {
                    throughput: o.throughput,
                    p99_ms: o.p99,
                    users: r.load.users,
                    rate: r.load.rate,
                })
            })
            .collect();
        out.push(CurveSeries { label, points });
    }
    out
}

/// The Markdown text.
pub fn render(
    results: &QaResults,
    evaluated: &[ScenarioResult],
    images: &[(usize, Option<Scenario>, String, String)],
) -> String {
    let mut md = String::new();
    let server = &results.server;
    let base = results.baseline.as_ref();
    let against = base.map_or(" (no baseline)".to_string(), |b| {
        format!(" against {} {}", b.label, b.version_number())
    });
    let failed = count_verdicts(evaluated, Some(false));
    let passed = count_verdicts(evaluated, Some(true));
    let na = count_verdicts(evaluated, None);
    let failed_runs = results.runs.iter().filter(|r| !r.ok()).count();
    let verdict = if results.incomplete.is_some() {
        "INCOMPLETE"
    } else if failed > 0 {
        "FAIL"
    } else {
        "PASS"
    };
    let _ = writeln!(
        md,
        "# QA report: {} {}{against}\n",
        server.label, results.label
    );
    let _ = writeln!(
        md,
        "Generated {} by `qa` in {:.1} min on {} ({} cores, {:.0} GiB){}.\n",
        results.started.format("%Y-%m-%d %H:%M %Z"),
        results.elapsed.as_secs_f64() / 60.0,
        results.machine.cpu_model,
        results.machine.cores,
        results.machine.memory_gib,
        if results.options.smoke {
            ", smoke mode"
        } else {
            ""
        }
    );
    let _ = writeln!(
        md,
        "**Verdict: {verdict}**: {passed} budgets passed, {failed} failed, {na} not applicable \
         (budgets: `{}`); {failed_runs} of {} runs failed.\n",
        shown_budgets(&results.options.budgets),
        results.runs.len()
    );
    if let Some(why) = &results.incomplete {
        let _ = writeln!(md, "> Incomplete: {why}.\n");
    }
    let _ = writeln!(
        md,
        "Server under test: `{}` (binary `{}`).{}",
        server.version,
        file_name_of(&server.binary),
        base.map_or(String::new(), |b| format!(
            " Baseline: `{}` (binary `{}`).",
            b.version,
            file_name_of(&b.binary)
        ))
    );
    if let Some(b) = base {
        let _ = writeln!(
            md,
            "{} Ratios are {} / {}: above 1 is more throughput, below 1 is lower \
             latency, CPU or memory.",
            durability_text(server.flavor, b.flavor),
            server.label,
            b.label
        );
    }
    let _ = writeln!(
        md,
        "\nEverything ran on 127.0.0.1: every server on fresh data dirs, the load tools \
         of `loadtest/` (`http_config`, a light HTTP client on one thread, for set, \
         set2 and query; `grpc_config`; the goose listen scenario; `fanout`) on the same \
         cores as the servers.\n"
    );

    // Summary.
    let _ = writeln!(md, "## Summary\n");
    if let Some(b) = base {
        let _ = writeln!(
            md,
            "| nodes | scenario | load per run | {s} | {b} | ratio | {s} p99 ms | {b} p99 ms | ratio | capacity ratio | budgets |",
            s = server.label,
            b = b.label
        );
        let _ = writeln!(md, "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    } else {
        let _ = writeln!(
            md,
            "| nodes | scenario | load per run | {s} | {s} p99 ms | budgets |",
            s = server.label
        );
        let _ = writeln!(md, "|---:|---|---|---:|---:|---|");
    }
    for r in evaluated {
        let s = r.server.as_ref();
        let verdict = verdict_text(&r.verdicts);
        let load = load_text(
            &r.point,
            results.options.params.restart_configs,
            results.options.params.restart_versions,
        );
        let unit = r.scenario.unit();
        let tp = |a: Option<&Aggregate>| {
            a.map_or("–".into(), |a| format!("{} {unit}", f0(a.throughput)))
        };
        let p99 = |a: Option<&Aggregate>| a.map_or("–".into(), |a| f2(a.p99));
        if base.is_some() {
            let b = r.baseline.as_ref();
            let capacity = match (&r.point.saturation, &r.point.baseline_saturation) {
                (Some(x), Some(y)) => ratio(x.capacity, y.capacity),
                _ => "–".into(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {load} | {} | {} | {} | {} | {} | {} | {capacity} | {verdict} |",
                r.nodes,
                r.scenario.name(),
                tp(s),
                tp(b),
                ratio(
                    s.map_or(f64::NAN, |a| a.throughput),
                    b.map_or(f64::NAN, |a| a.throughput)
                ),
                p99(s),
                p99(b),
                ratio(s.map_or(f64::NAN, |a| a.p99), b.map_or(f64::NAN, |a| a.p99)),
            );
        } else {
            let _ = writeln!(
                md,
                "| {} | {} | {load} | {} | {} | {verdict} |",
                r.nodes,
                r.scenario.name(),
                tp(s),
                p99(s)
            );
        }
    }
    let _ = writeln!(
        md,
        "\nMedians over the A/B rounds. \"capacity\" is the highest throughput in the \
         saturation matrix; the A/B runs offer {:.0}% of the server under test's capacity \
         (rate-limited users), so at that load both servers usually keep up and latency, \
         CPU and memory tell them apart.\n",
        results.options.load_fraction * 100.0
    );

    for &nodes in &results.options.nodes {
        let rows: Vec<&ScenarioResult> = evaluated.iter().filter(|r| r.nodes == nodes).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(md, "## {}\n", capitalize(&nodes_text(nodes)));
        if nodes > 1 {
            let _ = writeln!(
                md,
                "A {nodes}-node cluster on this one machine. The load goes to node 1 (which \
                 initialized the cluster and leads it); the listen scenario's listeners \
                 sit on node 2 while its writer publishes on node 1, so every \
                 notification crosses the cluster; the fan-out scenario spreads its \
                 listeners over every node. RSS and CPU are summed over all \
                 nodes.{}\n",
                if nodes > super::servers::TACOS_VOTERS {
                    format!(
                        " Tacos runs {} voters and {} learners (read replicas; \
                         commits do not wait for them).",
                        super::servers::TACOS_VOTERS,
                        nodes - super::servers::TACOS_VOTERS
                    )
                } else {
                    String::new()
                }
            );
        }
        // Saturation (none for a run of only listen, fanout or restart).
        if rows.iter().any(|r| r.scenario.saturates()) {
            let _ = writeln!(md, "### Saturation ({})\n", nodes_text(nodes));
            let _ = writeln!(
                md,
                "A matrix of users x per-user rate ({} s per point, one fresh server per \
                 scenario, the points in a row on it). A point is saturated when it served \
                 less than 90% of its offered load, failed over 1%, or its p99 exceeded 3x \
                 the best p99 + 5 ms. Where the closed loop served less than the best \
                 rate-limited point of the same users, the two are measured {} more times, \
                 alternating (the last rows), and the closed-loop budget compares medians.\n",
                results.options.matrix_seconds,
                super::knee::CLOSED_LOOP_REPEATS
            );
        }
        for r in &rows {
            if !r.scenario.saturates() {
                continue;
            }
            let _ = writeln!(
                md,
                "#### {} ({})\n",
                r.scenario.name(),
                r.scenario.describe()
            );
            for (label, baseline, sat) in [
                (server.label.as_str(), false, r.point.saturation.as_ref()),
                (
                    base.map(|b| b.label.as_str()).unwrap_or(""),
                    true,
                    r.point.baseline_saturation.as_ref(),
                ),
            ] {
                if baseline && base.is_none() {
                    continue;
                }
                let Some(sat) = sat else {
                    if !baseline || results.options.baseline_saturation {
                        let _ = writeln!(md, "{label}: no matrix.\n");
                    }
                    continue;
                };
                let runs: Vec<&RunRecord> = results
                    .runs
                    .iter()
                    .filter(|x| {
                        x.phase == Phase::Saturation
                            && x.nodes == nodes
                            && x.scenario == r.scenario
                            && x.is_baseline == baseline
                            && x.ok()
                    })
                    .collect();
                let _ = writeln!(md, "{}\n", saturation_text(label, sat, &runs));
                let _ = writeln!(
                    md,
                    "| {label}: users | rate/user | offered req/s | req/s | p50 ms | p99 ms | failed | server cores | saturated |"
                );
                let _ = writeln!(md, "|---:|---:|---:|---:|---:|---:|---:|---:|---|");
                for (i, x) in runs.iter().enumerate() {
                    let o = x.outcome.clone().unwrap_or_default();
                    let offered = if x.load.rate > 0.0 {
                        f0(x.load.users as f64 * x.load.rate)
                    } else {
                        "closed loop".into()
                    };
                    let _ = writeln!(
                        md,
                        "| {} | {} | {offered} | {} | {} | {} | {} | {} | {} |",
                        x.load.users,
                        if x.load.rate > 0.0 {
                            format!("{}", x.load.rate)
                        } else {
                            "∞".into()
                        },
                        f0(o.throughput),
                        f2(o.p50),
                        f2(o.p99),
                        o.failures,
                        f2(x.usage.map_or(f64::NAN, |u| u.server_cores)),
                        if sat.healthy.get(i).copied().unwrap_or(false) {
                            ""
                        } else {
                            "yes"
                        }
                    );
                }
                let _ = writeln!(md);
            }
            for (n, s, name, _) in images {
                if *n == nodes && *s == Some(r.scenario) {
                    let _ = writeln!(
                        md,
                        "![{} saturation, {}]({name})\n",
                        r.scenario.name(),
                        nodes_text(nodes)
                    );
                }
            }
        }
        // At the operating point.
        let _ = writeln!(md, "### At the operating point ({})\n", nodes_text(nodes));
        let _ = writeln!(
            md,
            "{} round(s) of {} s per server and scenario{}, alternating {} (ABAB...), a \
             fresh server for every run. Medians over the rounds; RSS is at the end of a \
             run.\n",
            results.options.rounds,
            results.options.run_seconds,
            if rows.iter().any(|r| r.scenario == Scenario::Restart) {
                " (restart: one fill and one restart per run, as long as they take)"
            } else {
                ""
            },
            base.map_or(server.label.clone(), |b| format!(
                "{} and {}",
                server.label, b.label
            ))
        );
        for r in &rows {
            let _ = writeln!(md, "#### {}\n", r.scenario.name());
            let _ = writeln!(md, "{}. Load: {}.\n", r.scenario.describe(), r.point.note);
            write_metrics(
                &mut md,
                r,
                &server.label,
                base.map(|b| b.label.as_str()),
                results.options.params.restart_settle_seconds,
            );
            write_fsyncs(&mut md, results, nodes, r.scenario);
            if !r.verdicts.is_empty() {
                let _ = writeln!(md, "| budget | limit | measured | verdict |");
                let _ = writeln!(md, "|---|---|---|---|");
                for v in &r.verdicts {
                    let _ = writeln!(
                        md,
                        "| {} | {} | {} | {} |",
                        v.budget,
                        v.limit,
                        v.value,
                        v.label()
                    );
                }
                let _ = writeln!(md);
            }
            if let Some(note) = &r.note {
                let _ = writeln!(md, "{}\n", note.trim());
            }
        }
        for (n, s, name, kind) in images {
            if *n == nodes && s.is_none() {
                let _ = writeln!(md, "![{kind}, {}]({name})\n", nodes_text(nodes));
            }
        }
    }

    write_noise(&mut md, results, evaluated);
    write_runs(&mut md, results);
    let _ = writeln!(md, "## Reproduce\n");
    let _ = writeln!(md, "```sh\n{}\n```\n", results.options.command_line);
    let _ = writeln!(
        md,
        "Per-run logs and raw reports were in a work dir under the temp dir \
         (removed at the end unless `--keep-work`)."
    );
    md
}

/// A file as a report names it: its file name only (`tacos`, `rnacos`),
/// never the directories of the machine it ran on.
pub fn file_name_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// What a write's acknowledgement means on each side, as one or two sentences.
pub fn durability_text(server: Flavor, baseline: Flavor) -> String {
    let one = |f: Flavor| match f {
        Flavor::Tacos => {
            "Tacos acknowledges a write only after it is fsynced (on a majority, in a cluster)"
        }
        Flavor::RNacos => "r-nacos does not fsync",
        Flavor::Nacos => {
            "Java Nacos (standalone) acknowledges a write once it is committed to its \
             embedded Derby database, which by default syncs its log at commit"
        }
    };
    if server == baseline {
        format!("{}.", one(server))
    } else {
        format!("{}; {}.", one(server), one(baseline))
    }
}

/// The budgets file: repo-relative when it is this workspace's, else its
/// file name.
fn shown_budgets(path: &Path) -> String {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent();
    match workspace.and_then(|w| path.strip_prefix(w).ok()) {
        Some(relative) => relative.display().to_string(),
        None => file_name_of(path),
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn verdict_text(v: &[Verdict]) -> String {
    let failed: Vec<&str> = v
        .iter()
        .filter(|x| x.pass == Some(false))
        .map(|x| x.budget.as_str())
        .collect();
    if failed.is_empty() {
        let passed = v.iter().filter(|x| x.pass == Some(true)).count();
        format!("pass ({passed})")
    } else {
        format!("**FAIL**: {}", failed.join(", "))
    }
}

fn load_text(p: &OperatingPoint, configs: usize, versions: usize) -> String {
    if p.scenario.notifies() {
        format!("{} listeners", p.users)
    } else if p.scenario == Scenario::Restart {
        format!("{} configs x {versions} publishes", f0(configs as f64))
    } else {
        format!("{} users{}", p.users, rate_text(p.rate))
    }
}

fn saturation_text(label: &str, sat: &Saturation, runs: &[&RunRecord]) -> String {
    let mut s = format!(
        "{label}: capacity {} req/s (the most any point served)",
        f0(sat.capacity)
    );
    let point = |r: &RunRecord| -> String {
        let o = r.outcome.clone().unwrap_or_default();
        let offered = if r.load.rate > 0.0 {
            format!(" of {} offered", f0(r.load.users as f64 * r.load.rate))
        } else {
            String::new()
        };
        format!(
            "{} users{}: {} req/s{offered}, p99 {} ms",
            r.load.users,
            rate_text(r.load.rate),
            f0(o.throughput),
            f2(o.p99)
        )
    };
    match sat.knee.and_then(|i| runs.get(i)) {
        Some(k) => {
            let _ = write!(s, "; the highest load served in good health: {}", point(k));
        }
        None => s.push_str("; no point was healthy"),
    }
    let mut saturated: Vec<&RunRecord> = runs
        .iter()
        .enumerate()
        .filter(|(i, _)| !sat.healthy.get(*i).copied().unwrap_or(true))
        .map(|(_, r)| *r)
        .collect();
    saturated.sort_by(|a, b| {
        let offered = |r: &RunRecord| {
            if r.load.rate > 0.0 {
                r.load.users as f64 * r.load.rate
            } else {
                f64::INFINITY
            }
        };
        offered(a)
            .total_cmp(&offered(b))
            .then(a.load.users.cmp(&b.load.users))
    });
    if saturated.is_empty() {
        s.push_str("; no point of the matrix saturated it.");
    } else {
        let list: Vec<String> = saturated.iter().map(|r| point(r)).collect();
        let _ = write!(s, ". Saturated: {}.", list.join("; "));
    }
    s
}

/// A row of the metrics table: name, value, and whether it gets two decimals.
type MetricRow = (String, fn(&Aggregate) -> f64, bool);

/// The rows of the restart scenario's metrics table: the fill, then the restart (the
/// last RSS `settle_s` after all state was served, unless that was not measured).
fn restart_rows(settle_s: u64) -> Vec<MetricRow> {
    let mut rows: Vec<MetricRow> = vec![
        ("fill rate (publishes/s)".into(), |a| a.throughput, false),
        ("fill publish p50 ms".into(), |a| a.p50, true),
        ("fill publish p99 ms".into(), |a| a.p99, true),
        (
            "server RSS before the fill MiB".into(),
            |a| a.rss_idle_mib,
            true,
        ),
        ("server RSS after the fill MiB".into(), |a| a.rss_mib, true),
        (
            "server CPU during the fill (cores)".into(),
            |a| a.server_cores,
            true,
        ),
        (
            "server CPU per publish (µs)".into(),
            |a| a.cpu_per_request_us,
            false,
        ),
        ("fill client CPU (cores)".into(), |a| a.client_cores, true),
        ("stop: SIGTERM until exited (s)".into(), |a| a.stop_s, true),
        (
            "restart: until every node answered (s)".into(),
            |a| a.restart_answer_s,
            true,
        ),
        (
            "restart: until all state was served (s)".into(),
            |a| a.restart_s,
            true,
        ),
        (
            "server RSS 2 s after the restart MiB".into(),
            |a| a.rss_restart_mib,
            true,
        ),
    ];
    if settle_s > 2 {
        rows.push((
            format!("server RSS {settle_s} s after the restart MiB"),
            |a| a.rss_restart_settled_mib,
            true,
        ));
    }
    rows
}

/// Bucket bounds (ms) of the fsync table's columns.
const FSYNC_COLUMNS: [f64; 6] = [0.5, 1.0, 2.5, 10.0, 50.0, f64::INFINITY];

/// The log fsyncs of a publish scenario's A/B runs (Tacos' own histogram, every node,
/// all rounds), per server: how long the disk held the writes whose latency the table
/// above shows.
fn write_fsyncs(md: &mut String, results: &QaResults, nodes: usize, scenario: Scenario) {
    let mut sides: Vec<(String, Fsyncs)> = Vec::new();
    for run in results.runs.iter().filter(|x| {
        matches!(x.phase, Phase::Ab { .. }) && x.nodes == nodes && x.scenario == scenario
    }) {
        let Some(f) = &run.fsync else { continue };
        match sides.iter_mut().find(|(label, _)| *label == run.server) {
            Some((_, total)) => total.add(f),
            None => sides.push((run.server.clone(), f.clone())),
        }
    }
    if sides.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "Log fsyncs during these runs (`tacos_log_fsync_seconds`, every node, all rounds; \
         p99 and p99.9 are the histogram's bucket bounds):\n"
    );
    let _ = writeln!(
        md,
        "| | fsyncs | mean ms | ≤ 0.5 ms | 0.5-1 | 1-2.5 | 2.5-10 | 10-50 | > 50 ms | p99 ≤ ms | p99.9 ≤ ms |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (label, f) in &sides {
        let mut cells = Vec::new();
        let mut below = 0;
        for bound in FSYNC_COLUMNS {
            match f.at_most_ms(bound) {
                Some(n) => {
                    cells.push(format!("{}", n.saturating_sub(below)));
                    below = n;
                }
                None => cells.push("–".into()),
            }
        }
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} | {} | {} |",
            f.count,
            f2(f.mean_ms()),
            cells.join(" | "),
            f2(f.quantile_bound_ms(0.99)),
            f2(f.quantile_bound_ms(0.999)),
        );
    }
    let _ = writeln!(md);
}

fn write_metrics(
    md: &mut String,
    r: &ScenarioResult,
    server: &str,
    base: Option<&str>,
    settle_s: u64,
) {
    let s = r.server.as_ref();
    let b = r.baseline.as_ref();
    match base {
        Some(bl) => {
            let _ = writeln!(md, "| | {server} | {bl} | {server} / {bl} |");
            let _ = writeln!(md, "|---|---:|---:|---:|");
        }
        None => {
            let _ = writeln!(md, "| | {server} |");
            let _ = writeln!(md, "|---|---:|");
        }
    }
    let get = |a: Option<&Aggregate>, f: fn(&Aggregate) -> f64| a.map_or(f64::NAN, f);
    let rows: Vec<MetricRow> = vec![
        (
            format!("throughput ({})", r.scenario.unit()),
            |a| a.throughput,
            false,
        ),
        ("p50 ms".into(), |a| a.p50, true),
        ("p90 ms".into(), |a| a.p90, true),
        ("p99 ms".into(), |a| a.p99, true),
        ("p99.9 ms".into(), |a| a.p999, true),
        ("max ms (median of runs)".into(), |a| a.max, true),
        ("server RSS MiB".into(), |a| a.rss_mib, true),
        (
            "server RSS before the run MiB".into(),
            |a| a.rss_idle_mib,
            true,
        ),
        ("server CPU (cores)".into(), |a| a.server_cores, true),
        (
            "server CPU per request (µs)".into(),
            |a| a.cpu_per_request_us,
            false,
        ),
        ("load tool CPU (cores)".into(), |a| a.client_cores, true),
    ];
    let mut rows = if r.scenario == Scenario::Restart {
        restart_rows(settle_s)
    } else {
        rows
    };
    if r.scenario == Scenario::Fanout {
        rows.insert(
            7,
            (
                "server RSS per listener (KiB)".into(),
                |a| a.rss_per_listener_kib,
                true,
            ),
        );
    }
    if r.scenario.notifies() {
        rows.insert(
            4,
            (
                "p50 ms from before the publish was sent".into(),
                |a| a.from_send.0,
                true,
            ),
        );
        rows.insert(
            5,
            (
                "p99 ms from before the publish was sent".into(),
                |a| a.from_send.1,
                true,
            ),
        );
    }
    for (name, f, two) in rows {
        let fmt = |v: f64| if two { f2(v) } else { f0(v) };
        let (x, y) = (get(s, f), get(b, f));
        if base.is_some() {
            let _ = writeln!(md, "| {name} | {} | {} | {} |", fmt(x), fmt(y), ratio(x, y));
        } else {
            let _ = writeln!(md, "| {name} | {} |", fmt(x));
        }
    }
    let fails = |a: Option<&Aggregate>| {
        a.map_or("–".into(), |a| {
            let what = if r.scenario.notifies() {
                "missed"
            } else {
                "failed"
            };
            format!("{} {what} of {}", a.failures, f0(a.requests as f64))
        })
    };
    let runs = |a: Option<&Aggregate>| {
        a.map_or("–".into(), |a| {
            format!(
                "{} ok{}, {}–{} {}",
                a.runs - a.failed_runs,
                if a.failed_runs > 0 {
                    format!(", {} failed", a.failed_runs)
                } else {
                    String::new()
                },
                f0(a.throughput_range.0),
                f0(a.throughput_range.1),
                r.scenario.unit()
            )
        })
    };
    if base.is_some() {
        let _ = writeln!(md, "| failures | {} | {} | |", fails(s), fails(b));
        let _ = writeln!(
            md,
            "| runs (throughput range) | {} | {} | |",
            runs(s),
            runs(b)
        );
    } else {
        let _ = writeln!(md, "| failures | {} |", fails(s));
        let _ = writeln!(md, "| runs (throughput range) | {} |", runs(s));
    }
    let _ = writeln!(md);
}

fn write_noise(md: &mut String, results: &QaResults, evaluated: &[ScenarioResult]) {
    let m = &results.machine;
    let _ = writeln!(md, "## Noise\n");
    let load = |l: Option<(f64, f64, f64)>| {
        l.map_or("unknown".into(), |l| {
            format!("{:.2} / {:.2} / {:.2}", l.0, l.1, l.2)
        })
    };
    let _ = writeln!(
        md,
        "- Machine: {} ({} cores), {:.1} GiB, Linux {}. Servers and load tools share \
         these cores, so the numbers are for the pair, not a server's ceiling.",
        m.cpu_model, m.cores, m.memory_gib, m.kernel
    );
    let _ = writeln!(
        md,
        "- Load average (1 / 5 / 15 min) before the run: {}; after: {} (it counts this \
         run's own servers and load tools too; the next point is what others used).{}",
        load(results.load_before),
        load(results.load_after),
        match results.options.wait_load {
            Some(t) => format!(
                " The tool waited {:.0} s for the 1-minute load to drop below {t:.2} first.",
                results.waited.as_secs_f64()
            ),
            None => String::new(),
        }
    );
    if results.baseline.is_some() {
        let _ = writeln!(
            md,
            "- Alternation: in every round each scenario ran on the server under test, then \
             on the baseline (ABAB... over {} rounds), each on a fresh server, so slow drift \
             (other work, thermal, page cache) falls on both; the saturation matrices \
             alternate which server goes first per scenario.",
            results.options.rounds
        );
    } else {
        let _ = writeln!(
            md,
            "- No baseline: {} round(s) per scenario, each on a fresh server.",
            results.options.rounds
        );
    }
    if let Some(limit) = results.options.quiet_cores {
        let _ = writeln!(
            md,
            "- Before each run the tool waited until other processes used less than {limit} \
             cores (over half a second; at most {:.0} s per run): {} runs waited, {:.0} s in \
             all; {} started while the machine was still busier than that.",
            results.options.quiet_max.as_secs_f64(),
            results.quiet_waits.0,
            results.quiet_waits.1.as_secs_f64(),
            results.quiet_timeouts
        );
    }
    let others: Vec<f64> = results
        .runs
        .iter()
        .filter_map(|r| r.usage.map(|u| u.other_cores))
        .collect();
    let busy: Vec<&RunRecord> = results
        .runs
        .iter()
        .filter(|r| r.usage.is_some_and(|u| u.other_cores > 0.25))
        .collect();
    let _ = writeln!(
        md,
        "- Other processes on the machine used a median of {} cores during the runs (max {}); \
         {} of {} runs saw more than 0.25 cores of other work (marked `*` under All runs).",
        f2(median(others.clone())),
        f2(others.iter().copied().fold(f64::NAN, f64::max)),
        busy.len(),
        results.runs.len()
    );
    let _ = writeln!(
        md,
        "- Spread between the A/B rounds ((max - min) / median of throughput, and the p99 range):\n"
    );
    let _ = writeln!(
        md,
        "| nodes | scenario | server | throughput spread | p99 range ms |"
    );
    let _ = writeln!(md, "|---:|---|---|---:|---|");
    for r in evaluated {
        for (label, agg) in [
            (results.server.label.as_str(), r.server.as_ref()),
            (
                results.baseline.as_ref().map_or("", |b| b.label.as_str()),
                r.baseline.as_ref(),
            ),
        ] {
            if let Some(a) = agg {
                let _ = writeln!(
                    md,
                    "| {} | {} | {label} | {}% | {}–{} |",
                    r.nodes,
                    r.scenario.name(),
                    f0(a.throughput_spread() * 100.0),
                    f2(a.p99_range.0),
                    f2(a.p99_range.1)
                );
            }
        }
    }
    let _ = writeln!(
        md,
        "\nAt the operating point the users are rate-limited, so throughput follows the \
         offered load and its spread is small by design; latency and CPU carry the noise. \
         A ratio within the spread of either side is a tie.\n"
    );
}

fn write_runs(md: &mut String, results: &QaResults) {
    let _ = writeln!(md, "## All runs\n");
    let _ = writeln!(
        md,
        "| # | phase | nodes | scenario | server | users | rate/user | throughput | p50 ms | p99 ms | failed | server cores | RSS MiB | load tool cores | other cores | note |"
    );
    let _ = writeln!(
        md,
        "|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for (i, r) in results.runs.iter().enumerate() {
        let phase = match r.phase {
            Phase::Saturation => "saturation".to_string(),
            Phase::Ab { round } => format!("A/B {round}"),
        };
        let o = r.outcome.clone().unwrap_or_default();
        let u = r.usage.unwrap_or_default();
        let noisy = if r.usage.is_some_and(|u| u.other_cores > 0.25) {
            "*"
        } else {
            ""
        };
        let note = r
            .error
            .as_deref()
            .map(|e| e.replace('|', "/"))
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "| {}{noisy} | {phase} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {note} |",
            i + 1,
            r.nodes,
            r.scenario.name(),
            r.server,
            r.load.users,
            if r.load.rate > 0.0 { format!("{}", r.load.rate) } else { "∞".into() },
            if r.outcome.is_some() { f0(o.throughput) } else { "–".into() },
            if r.outcome.is_some() { f2(o.p50) } else { "–".into() },
            if r.outcome.is_some() { f2(o.p99) } else { "–".into() },
            if r.outcome.is_some() { o.failures.to_string() } else { "–".into() },
            if r.usage.is_some() { f2(u.server_cores) } else { "–".into() },
            if r.usage.is_some() { f0(u.rss_end_mib) } else { "–".into() },
            if r.usage.is_some() { f2(u.client_cores) } else { "–".into() },
            if r.usage.is_some() { f2(u.other_cores) } else { "–".into() },
        );
    }
    let _ = writeln!(md);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
        assert_eq!(median(vec![f64::NAN, 5.0]), 5.0);
    }

    use crate::qa::budgets::Budgets;
    use crate::qa::machine::Machine;
    use crate::qa::procs::Usage;
    use crate::qa::run::{Options, QaResults};
    use crate::qa::scenario::{Load, Outcome, Params, RestartOutcome};
    use crate::qa::servers::{Flavor, ServerSpec};
    use std::time::Duration;

    fn spec(label: &str, flavor: Flavor) -> ServerSpec {
        ServerSpec {
            label: label.into(),
            flavor,
            binary: PathBuf::from(format!("/x/{label}")),
            version: format!("{label} 0.1.0"),
            env: Vec::new(),
            java: None,
        }
    }

    /// A restart run: the fill at `rate` publishes/s, all state served after
    /// `served_s`, `rss_filled` MiB after the fill and `rss_restart` after the restart.
    fn restart_run(
        seq: usize,
        baseline: bool,
        rate: f64,
        served_s: f64,
        rss_filled: f64,
        rss_restart: f64,
    ) -> RunRecord {
        RunRecord {
            seq,
            phase: Phase::Ab { round: 1 },
            nodes: 1,
            scenario: Scenario::Restart,
            server: if baseline { "r-nacos" } else { "tacos" }.into(),
            is_baseline: baseline,
            load: Load {
                users: 64,
                rate: 0.0,
                seconds: 12,
            },
            outcome: Some(Outcome {
                throughput: rate,
                requests: 2000,
                failures: 0,
                p50: 5.0,
                p90: 9.0,
                p99: 80.0,
                p999: 100.0,
                max: 120.0,
                publishes: None,
                from_send: None,
                rss_per_listener_kib: None,
                restart: Some(RestartOutcome {
                    stop_s: 0.2,
                    killed: false,
                    answer_s: served_s / 2.0,
                    served_s,
                    rss_mib: rss_restart,
                    rss_settled_mib: rss_restart - 1.0,
                }),
            }),
            usage: Some(Usage {
                server_cores: 1.0,
                client_cores: 0.5,
                other_cores: 0.0,
                rss_end_mib: rss_filled,
                rss_peak_mib: rss_filled,
                rss_idle_mib: 20.0,
                seconds: 2.0,
            }),
            error: None,
            panicked: false,
            startup_s: Some(0.5),
            fsync: None,
            dir: PathBuf::from("/tmp/x"),
        }
    }

    fn restart_results(runs: Vec<RunRecord>) -> QaResults {
        let params = Params {
            query_keys: 100,
            listen_keys: 10,
            listen_publish_rate: 20.0,
            fanout_listeners: 10,
            fanout_rounds: 1,
            restart_configs: 1000,
            restart_versions: 2,
            restart_settle_seconds: 30,
        };
        let options = Options {
            server: PathBuf::from("/x/tacos"),
            server_flavor: None,
            baseline: Some(PathBuf::from("/x/rnacos")),
            baseline_flavor: None,
            server_env: Vec::new(),
            baseline_env: Vec::new(),
            nodes: vec![1],
            scenarios: vec![Scenario::Restart],
            users: vec![4],
            rates: vec![0.0],
            matrix_seconds: 1,
            run_seconds: 12,
            rounds: 1,
            load_fraction: 0.8,
            baseline_saturation: true,
            listeners: 1,
            params,
            budgets: PathBuf::from("qa-budgets.toml"),
            out_dir: PathBuf::from("/tmp"),
            label: None,
            work_dir: PathBuf::from("/tmp"),
            base_port: 22000,
            bin_dir: PathBuf::from("/tmp"),
            wait_load: None,
            wait_load_max: Duration::ZERO,
            deadline: Duration::from_secs(60),
            quiet_cores: None,
            quiet_max: Duration::ZERO,
            smoke: false,
            command_line: "qa --scenarios restart".into(),
        };
        let budgets = Budgets::parse(
            "[default]\nmax_p99_ms = 50.0\nmax_rss_ratio = 1.0\n\
             [scenario.restart]\nmax_restart_ratio = 1.0\nmax_restart_rss_ratio = 1.0\n",
            "test",
        )
        .unwrap();
        QaResults {
            label: "0.1.0".into(),
            server: spec("tacos", Flavor::Tacos),
            baseline: Some(spec("r-nacos", Flavor::RNacos)),
            machine: Machine {
                cpu_model: "test".into(),
                cores: 2,
                memory_gib: 4.0,
                kernel: "6".into(),
            },
            load_before: None,
            load_after: None,
            waited: Duration::ZERO,
            started: chrono::Local::now(),
            elapsed: Duration::from_secs(60),
            runs,
            points: vec![OperatingPoint {
                nodes: 1,
                scenario: Scenario::Restart,
                users: 64,
                rate: 0.0,
                saturation: None,
                baseline_saturation: None,
                note: "1000 configs x 2 publishes each".into(),
            }],
            budgets,
            incomplete: None,
            quiet_waits: (0, Duration::ZERO),
            quiet_timeouts: 0,
            options,
        }
    }

    #[test]
    fn restart_is_judged_and_rendered() {
        let results = restart_results(vec![
            restart_run(1, false, 4000.0, 2.0, 100.0, 90.0),
            restart_run(2, true, 2000.0, 5.0, 200.0, 60.0),
            restart_run(3, false, 3000.0, 3.0, 110.0, 95.0),
        ]);
        let evaluated = evaluate(&results);
        assert_eq!(evaluated.len(), 1);
        let r = &evaluated[0];
        let tacos = r.server.as_ref().unwrap();
        assert_eq!(tacos.restart_s, 2.5);
        assert_eq!(tacos.rss_restart_mib, 92.5);
        assert_eq!(tacos.rss_mib, 105.0);
        let verdict = |name: &str| {
            r.verdicts
                .iter()
                .find(|v| v.budget == name)
                .unwrap_or_else(|| panic!("no verdict {name}: {:?}", r.verdicts))
                .clone()
        };
        assert_eq!(verdict("restart time ratio").value, "0.50");
        assert_eq!(verdict("restart time ratio").pass, Some(true));
        assert_eq!(verdict("RSS ratio").value, "0.53");
        assert_eq!(verdict("RSS after restart ratio").value, "1.54");
        assert_eq!(verdict("RSS after restart ratio").pass, Some(false));
        // The fill's closed-loop latency is not judged (80 ms > max_p99_ms).
        assert!(r.verdicts.iter().all(|v| v.budget != "p99"));
        let md = render(&results, &evaluated, &[]);
        assert!(md.contains(
            "| 1 | restart | 1,000 configs x 2 publishes | 3,500 publishes/s | 2,000 publishes/s | 1.75 |"
        ));
        assert!(md.contains("| restart: until all state was served (s) | 2.50 | 5.00 | 0.50 |"));
        assert!(md.contains("| server RSS after the fill MiB | 105.00 | 200.00 | 0.53 |"));
        assert!(md.contains("| server RSS 2 s after the restart MiB | 92.50 | 60.00 | 1.54 |"));
        assert!(md.contains("| server RSS 30 s after the restart MiB | 91.50 | 59.00 | 1.55 |"));
        assert!(md.contains("| RSS after restart ratio | ≤ 1 | 1.54 | **FAIL** |"));
        assert!(!md.contains("| p90 ms |"));
        // No matrix ran: no saturation section.
        assert!(!md.contains("### Saturation"));
        assert!(md.contains("(restart: one fill and one restart per run"));
        assert!(md.contains(
            "Tacos acknowledges a write only after it is fsynced (on a majority, in a \
             cluster); r-nacos does not fsync. Ratios are tacos / r-nacos"
        ));
    }

    #[test]
    fn the_fsyncs_of_a_publish_scenario_are_summed_per_server() {
        let histogram = |fast: u64, slow: u64| {
            Fsyncs::parse(&format!(
                "tacos_log_fsync_seconds_bucket{{le=\"0.0005\"}} {fast}\n\
                 tacos_log_fsync_seconds_bucket{{le=\"0.001\"}} {fast}\n\
                 tacos_log_fsync_seconds_bucket{{le=\"0.0025\"}} {fast}\n\
                 tacos_log_fsync_seconds_bucket{{le=\"0.01\"}} {fast}\n\
                 tacos_log_fsync_seconds_bucket{{le=\"0.05\"}} {}\n\
                 tacos_log_fsync_seconds_bucket{{le=\"+Inf\"}} {}\n\
                 tacos_log_fsync_seconds_sum 1\ntacos_log_fsync_seconds_count {}\n",
                fast + slow,
                fast + slow,
                fast + slow
            ))
        };
        let mut runs = Vec::new();
        for (seq, baseline, fsync) in [
            (1, false, histogram(990, 10)),
            (2, true, None),
            (3, false, histogram(1000, 0)),
        ] {
            let mut run = restart_run(seq, baseline, 1000.0, 1.0, 10.0, 10.0);
            run.scenario = Scenario::Set;
            run.fsync = fsync;
            runs.push(run);
        }
        let results = restart_results(runs);
        let mut md = String::new();
        write_fsyncs(&mut md, &results, 1, Scenario::Set);
        assert!(
            md.contains("| tacos | 2000 | 1.00 | 1990 | 0 | 0 | 0 | 10 | 0 | 0.50 | 50.00 |"),
            "{md}"
        );
        assert!(!md.contains("r-nacos"));
        let mut none = String::new();
        write_fsyncs(&mut none, &results, 3, Scenario::Set);
        assert!(none.is_empty());
    }

    #[test]
    fn durability_per_baseline() {
        let t = durability_text(Flavor::Tacos, Flavor::Nacos);
        assert!(t.starts_with("Tacos acknowledges"), "{t}");
        assert!(t.contains("; Java Nacos (standalone) acknowledges a write once it is committed to its embedded Derby database"), "{t}");
        assert_eq!(
            durability_text(Flavor::Tacos, Flavor::Tacos),
            "Tacos acknowledges a write only after it is fsynced (on a majority, in a cluster)."
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(f0(1234567.4), "1,234,567");
        assert_eq!(f0(999.0), "999");
        assert_eq!(f0(-1234.0), "-1,234");
        assert_eq!(f0(f64::NAN), "–");
        assert_eq!(f2(1.005), "1.00");
        assert_eq!(ratio(3.0, 2.0), "1.50");
        assert_eq!(ratio(3.0, 0.0), "–");
        assert_eq!(ratio(-1.0, 2.0), "–");
    }
}
