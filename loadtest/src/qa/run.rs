//! The qa run: for each topology (1 node, 3 nodes), a saturation matrix per scenario,
//! then A/B runs at the operating point, alternating server under test and baseline.
//! (The restart scenario has no operating point: each of its A/B runs is a fill and a
//! restart, see [`super::restart`].)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::budgets::Budgets;
use super::fsync::{self, Fsyncs};
use super::knee::{self, Point, Saturation};
use super::machine::{self, Machine};
use super::procs::{self, Proc, Sampler, Usage};
use super::restart;
use super::scenario::{self, Load, Outcome, Params, Scenario, Target};
use super::servers::{Cluster, Flavor, ServerSpec};
use super::QaError;

/// Everything the run needs to know.
#[derive(Debug, Clone)]
pub struct Options {
    pub server: PathBuf,
    pub server_flavor: Option<Flavor>,
    pub baseline: Option<PathBuf>,
    pub baseline_flavor: Option<Flavor>,
    /// Extra environment for the server's / the baseline's nodes.
    pub server_env: Vec<(String, String)>,
    pub baseline_env: Vec<(String, String)>,
    pub nodes: Vec<usize>,
    pub scenarios: Vec<Scenario>,
    pub users: Vec<usize>,
    pub rates: Vec<f64>,
    pub matrix_seconds: u64,
    pub run_seconds: u64,
    pub rounds: usize,
    pub load_fraction: f64,
    pub baseline_saturation: bool,
    pub listeners: usize,
    pub params: Params,
    pub budgets: PathBuf,
    pub out_dir: PathBuf,
    pub label: Option<String>,
    pub work_dir: PathBuf,
    pub base_port: u16,
    pub bin_dir: PathBuf,
    /// Wait until the 1-minute load average is below this before starting.
    pub wait_load: Option<f64>,
    pub wait_load_max: Duration,
    /// Stop starting new runs after this long (the report then says it is incomplete).
    pub deadline: Duration,
    /// Before each run, wait until everything else on the machine uses less than this
    /// many cores (measured over half a second) ...
    pub quiet_cores: Option<f64>,
    /// ... for at most this long per run.
    pub quiet_max: Duration,
    pub smoke: bool,
    pub command_line: String,
}

/// Which part of the run a measurement belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Saturation,
    Ab { round: usize },
}

/// One scenario run against one server.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Order of the run in the whole qa run (1, 2, ...).
    pub seq: usize,
    pub phase: Phase,
    pub nodes: usize,
    pub scenario: Scenario,
    pub server: String,
    pub is_baseline: bool,
    pub load: Load,
    pub outcome: Option<Outcome>,
    pub usage: Option<Usage>,
    pub error: Option<String>,
    /// The server logged a panic during the run.
    pub panicked: bool,
    /// Seconds until the server was ready (A/B runs start a fresh one each).
    pub startup_s: Option<f64>,
    /// Tacos' log fsyncs during a publish run, all nodes.
    pub fsync: Option<Fsyncs>,
    pub dir: PathBuf,
}

impl RunRecord {
    /// Server CPU per request, µs.
    pub fn cpu_per_request_us(&self) -> Option<f64> {
        let (o, u) = (self.outcome.as_ref()?, self.usage.as_ref()?);
        (o.throughput > 0.0).then(|| u.server_cores * 1e6 / o.throughput)
    }

    pub fn ok(&self) -> bool {
        self.error.is_none() && self.outcome.is_some()
    }
}

/// The load the A/B runs of a scenario use on a topology, and how it was found.
#[derive(Debug, Clone)]
pub struct OperatingPoint {
    pub nodes: usize,
    pub scenario: Scenario,
    pub users: usize,
    pub rate: f64,
    /// The server under test's matrix analysis (None for listen).
    pub saturation: Option<Saturation>,
    /// The baseline's.
    pub baseline_saturation: Option<Saturation>,
    pub note: String,
}

/// Everything measured.
#[derive(Debug, Clone)]
pub struct QaResults {
    pub label: String,
    pub server: ServerSpec,
    pub baseline: Option<ServerSpec>,
    pub machine: Machine,
    pub load_before: Option<(f64, f64, f64)>,
    pub load_after: Option<(f64, f64, f64)>,
    pub waited: Duration,
    pub started: chrono::DateTime<chrono::Local>,
    pub elapsed: Duration,
    pub runs: Vec<RunRecord>,
    pub points: Vec<OperatingPoint>,
    pub budgets: Budgets,
    /// Why the run stopped early, if it did.
    pub incomplete: Option<String>,
    /// Runs that had to wait for the machine to calm down, and how long they waited in all.
    pub quiet_waits: (usize, Duration),
    /// Runs that started although the machine was still busy after `quiet_max`.
    pub quiet_timeouts: usize,
    pub options: Options,
}

struct Runner<'a> {
    opts: &'a Options,
    server: ServerSpec,
    baseline: Option<ServerSpec>,
    runs: Vec<RunRecord>,
    started: Instant,
    incomplete: Option<String>,
    quiet_waits: (usize, Duration),
    quiet_timeouts: usize,
}

/// Runs everything; the servers and load generators it starts are stopped before it
/// returns (also on error).
pub fn run(opts: &Options) -> Result<QaResults, QaError> {
    let budgets = Budgets::load(&opts.budgets)?;
    for binary in opts.scenarios.iter().filter_map(|s| s.binary()) {
        let bin = opts.bin_dir.join(binary);
        if !bin.is_file() {
            return Err(QaError::Setup(format!(
                "scenario binary {} is missing (build with `cargo build --release -p loadtest`)",
                bin.display()
            )));
        }
    }
    let server = ServerSpec::new(
        "tacos",
        opts.server_flavor
            .unwrap_or_else(|| Flavor::guess(&opts.server)),
        &opts.server,
    )?;
    let server = ServerSpec {
        label: with_env(label_for(&server), &opts.server_env),
        env: opts.server_env.clone(),
        ..server
    };
    let baseline = match &opts.baseline {
        Some(path) => {
            let flavor = opts.baseline_flavor.unwrap_or_else(|| Flavor::guess(path));
            let spec = ServerSpec::new("baseline", flavor, path)?;
            let mut label = with_env(label_for(&spec), &opts.baseline_env);
            if label == server.label {
                label = format!("{label} (baseline)");
            }
            Some(ServerSpec {
                label,
                env: opts.baseline_env.clone(),
                ..spec
            })
        }
        None => None,
    };
    std::fs::create_dir_all(&opts.work_dir)
        .map_err(|e| QaError::io(format!("creating {}", opts.work_dir.display()), e))?;

    let machine = Machine::read();
    let mut waited = Duration::ZERO;
    if let Some(threshold) = opts.wait_load {
        eprintln!(
            "waiting until the 1-minute load average is below {threshold:.2} (at most {:?})",
            opts.wait_load_max
        );
        let (_, w) = machine::wait_for_quiet(
            threshold,
            opts.wait_load_max,
            Duration::from_secs(30),
            |load, so_far| {
                eprintln!(
                    "  load {load:.2} after {:.0} s; waiting",
                    so_far.as_secs_f64()
                )
            },
        );
        waited = w;
    }
    let load_before = machine::loadavg();
    eprintln!(
        "load average before: {}",
        load_before.map_or("?".into(), |l| format!("{:.2} {:.2} {:.2}", l.0, l.1, l.2))
    );
    let started_wall = chrono::Local::now();
    let mut runner = Runner {
        opts,
        server,
        baseline,
        runs: Vec::new(),
        started: Instant::now(),
        incomplete: None,
        quiet_waits: (0, Duration::ZERO),
        quiet_timeouts: 0,
    };
    let mut points = Vec::new();
    for &nodes in &opts.nodes {
        points.extend(runner.topology(nodes));
    }
    let load_after = machine::loadavg();
    let label = opts
        .label
        .clone()
        .unwrap_or_else(|| runner.server.version_number());
    Ok(QaResults {
        label,
        server: runner.server.clone(),
        baseline: runner.baseline.clone(),
        machine,
        load_before,
        load_after,
        waited,
        started: started_wall,
        elapsed: runner.started.elapsed(),
        runs: std::mem::take(&mut runner.runs),
        points,
        budgets,
        incomplete: runner.incomplete.take(),
        quiet_waits: runner.quiet_waits,
        quiet_timeouts: runner.quiet_timeouts,
        options: opts.clone(),
    })
}

/// A label with the extra environment it runs with, if any:
/// `tacos [TACOS_AUDIT_LIMIT=1000]`.
fn with_env(label: String, env: &[(String, String)]) -> String {
    if env.is_empty() {
        return label;
    }
    let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{label} [{}]", env.join(" "))
}

/// `tacos`, `r-nacos`, `nacos`: the software's name from `--version`, else the flavor.
fn label_for(spec: &ServerSpec) -> String {
    let first = spec.version.split_whitespace().next().unwrap_or_default();
    match (spec.flavor, first) {
        (Flavor::RNacos, _) => "r-nacos".into(),
        (Flavor::Nacos, _) => "nacos".into(),
        (Flavor::Tacos, name) if !name.is_empty() => name.to_string(),
        _ => "tacos".into(),
    }
}

impl Runner<'_> {
    /// Waits (up to `quiet_max`) until the machine's CPU use, minus `own_pids` (an idle
    /// server between matrix points), is below `quiet_cores`.
    fn settle(&mut self, own_pids: &[u32]) {
        let Some(limit) = self.opts.quiet_cores else {
            return;
        };
        let started = Instant::now();
        let mut waited = false;
        loop {
            let busy = other_cores(own_pids, Duration::from_millis(500));
            if busy.is_none_or(|b| b < limit) {
                break;
            }
            if started.elapsed() >= self.opts.quiet_max {
                self.quiet_timeouts += 1;
                eprintln!(
                    "    the machine is still busy ({:.2} cores used by others); going on",
                    busy.unwrap_or(f64::NAN)
                );
                break;
            }
            if !waited {
                eprintln!(
                    "    waiting for the machine to calm down ({:.2} cores used by others)",
                    busy.unwrap_or(f64::NAN)
                );
                waited = true;
            }
            std::thread::sleep(Duration::from_secs(2));
        }
        if waited {
            self.quiet_waits.0 += 1;
            self.quiet_waits.1 += started.elapsed();
        }
    }

    fn out_of_time(&mut self) -> bool {
        if self.incomplete.is_some() {
            return true;
        }
        if self.started.elapsed() > self.opts.deadline {
            self.incomplete = Some(format!(
                "the deadline ({:?}) passed; later runs were skipped",
                self.opts.deadline
            ));
            eprintln!("deadline passed: skipping the remaining runs");
            return true;
        }
        false
    }

    fn servers_in_order(&self, flip: bool) -> Vec<(ServerSpec, bool)> {
        let mut list = vec![(self.server.clone(), false)];
        if let Some(b) = &self.baseline {
            list.push((b.clone(), true));
        }
        if flip {
            list.reverse();
        }
        list
    }

    fn topology(&mut self, nodes: usize) -> Vec<OperatingPoint> {
        eprintln!("== {nodes} node(s) ==");
        let mut points = Vec::new();
        // 1. Saturation: one fresh server per (server, scenario), the matrix on it.
        let saturating: Vec<Scenario> = self
            .opts
            .scenarios
            .iter()
            .copied()
            .filter(|s| s.saturates())
            .collect();
        for (i, &scenario) in saturating.iter().enumerate() {
            let mut sat_server = None;
            let mut sat_baseline = None;
            for (spec, is_baseline) in self.servers_in_order(i % 2 == 1) {
                if is_baseline && !self.opts.baseline_saturation {
                    continue;
                }
                let matrix = self.matrix(nodes, scenario, &spec, is_baseline);
                let analyzed = knee::analyze(&matrix);
                if is_baseline {
                    sat_baseline = Some((matrix, analyzed));
                } else {
                    sat_server = Some((matrix, analyzed));
                }
            }
            let (users, rate, note) = match &sat_server {
                Some((matrix, sat)) => {
                    match knee::operating_point(matrix, sat, self.opts.load_fraction) {
                        Some((u, r)) => (
                            u,
                            r,
                            format!(
                                "{:.0}% of the capacity ({:.0} req/s), {u} users x {r} req/s",
                                self.opts.load_fraction * 100.0,
                                sat.capacity
                            ),
                        ),
                        None => self.fallback_point("no matrix point measured anything"),
                    }
                }
                None => self.fallback_point("the saturation matrix did not run"),
            };
            points.push(OperatingPoint {
                nodes,
                scenario,
                users,
                rate,
                saturation: sat_server.map(|s| s.1),
                baseline_saturation: sat_baseline.map(|s| s.1),
                note,
            });
        }
        if self.opts.scenarios.contains(&Scenario::Listen) {
            points.push(OperatingPoint {
                nodes,
                scenario: Scenario::Listen,
                users: self.opts.listeners,
                rate: 0.0,
                saturation: None,
                baseline_saturation: None,
                note: format!(
                    "{} listeners ({} keys, 1 key each), writer {} publishes/s",
                    self.opts.listeners,
                    self.opts.params.listen_keys,
                    self.opts.params.listen_publish_rate
                ),
            });
        }
        if self.opts.scenarios.contains(&Scenario::Fanout) {
            let p = &self.opts.params;
            points.push(OperatingPoint {
                nodes,
                scenario: Scenario::Fanout,
                users: p.fanout_listeners,
                rate: 0.0,
                saturation: None,
                baseline_saturation: None,
                note: format!(
                    "{} listeners ({} long polls + {} gRPC streams) over {}, {} publish(es) on node 1",
                    p.fanout_listeners,
                    p.fanout_listeners / 2,
                    p.fanout_listeners - p.fanout_listeners / 2,
                    if nodes > 1 {
                        format!("all {nodes} nodes")
                    } else {
                        "the node".to_string()
                    },
                    p.fanout_rounds
                ),
            });
        }
        if self.opts.scenarios.contains(&Scenario::Restart) {
            let p = &self.opts.params;
            points.push(OperatingPoint {
                nodes,
                scenario: Scenario::Restart,
                users: restart::connections(p.restart_configs),
                rate: 0.0,
                saturation: None,
                baseline_saturation: None,
                note: format!(
                    "{} configs x {} publishes each on node 1 ({} connections, closed loop), \
                     then {} stopped (SIGTERM) and started on the same data dir{}; RSS 2 s \
                     after the fill, 2 s{} after all state was served again",
                    p.restart_configs,
                    p.restart_versions,
                    restart::connections(p.restart_configs),
                    if nodes > 1 { "every node" } else { "the node" },
                    if nodes > 1 { "s" } else { "" },
                    if p.restart_settle_seconds > 2 {
                        format!(" and {} s", p.restart_settle_seconds)
                    } else {
                        String::new()
                    }
                ),
            });
        }
        // 2. A/B: per round and scenario, the server under test then the baseline
        //    (ABAB...), each on a fresh server.
        for round in 1..=self.opts.rounds {
            for &scenario in &self.opts.scenarios {
                let Some(op) = points.iter().find(|p| p.scenario == scenario).cloned() else {
                    continue;
                };
                for (spec, is_baseline) in self.servers_in_order(false) {
                    if self.out_of_time() {
                        return points;
                    }
                    let load = Load {
                        users: op.users,
                        rate: op.rate,
                        seconds: self.opts.run_seconds,
                    };
                    let name = format!(
                        "{nodes}n-ab{round}-{}-{}",
                        scenario.name(),
                        slug(&spec.label)
                    );
                    eprintln!(
                        "[{:>4.0}s] A/B round {round}: {} on {} ({} users{})",
                        self.started.elapsed().as_secs_f64(),
                        scenario.name(),
                        spec.label,
                        load.users,
                        rate_text(load.rate)
                    );
                    self.settle(&[]);
                    let record = self.fresh_run(
                        &name,
                        Phase::Ab { round },
                        nodes,
                        scenario,
                        &spec,
                        is_baseline,
                        load,
                    );
                    self.report_progress(&record);
                    self.runs.push(record);
                }
            }
        }
        points
    }

    fn fallback_point(&self, why: &str) -> (usize, f64, String) {
        let users = self.opts.users.iter().copied().min().unwrap_or(1);
        (users, 0.0, format!("{why}: {users} users, closed loop"))
    }

    /// The users x rate matrix on one fresh server; returns the points.
    fn matrix(
        &mut self,
        nodes: usize,
        scenario: Scenario,
        spec: &ServerSpec,
        is_baseline: bool,
    ) -> Vec<Point> {
        let mut points = Vec::new();
        if self.out_of_time() {
            return points;
        }
        let dir = self.opts.work_dir.join(format!(
            "{nodes}n-sat-{}-{}",
            scenario.name(),
            slug(&spec.label)
        ));
        eprintln!(
            "[{:>4.0}s] saturation: {} on {} ({} node(s))",
            self.started.elapsed().as_secs_f64(),
            scenario.name(),
            spec.label,
            nodes
        );
        let cluster = Cluster::start(
            spec,
            nodes,
            &dir.join("server"),
            self.opts.base_port,
            spec.flavor.start_timeout(nodes),
        );
        let mut cluster = match cluster {
            Ok(c) => c,
            Err(e) => {
                self.runs.push(RunRecord {
                    seq: self.runs.len() + 1,
                    phase: Phase::Saturation,
                    nodes,
                    scenario,
                    server: spec.label.clone(),
                    is_baseline,
                    load: Load {
                        users: 0,
                        rate: 0.0,
                        seconds: 0,
                    },
                    outcome: None,
                    usage: None,
                    error: Some(e.to_string()),
                    panicked: false,
                    startup_s: None,
                    fsync: None,
                    dir: dir.clone(),
                });
                return points;
            }
        };
        let startup = cluster.startup.as_secs_f64();
        let at = MatrixAt {
            dir: &dir,
            nodes,
            scenario,
            is_baseline,
            startup,
        };
        for &users in &self.opts.users {
            for &rate in &self.opts.rates {
                if self.out_of_time() {
                    return points;
                }
                self.matrix_point(&mut cluster, &at, users, rate, "", &mut points);
            }
        }
        // A closed loop that served less than the same users paced is measured again,
        // alternating with that paced point (knee::CLOSED_LOOP_REPEATS).
        for (users, rate) in knee::closed_loop_to_repeat(&points) {
            for repeat in 1..=knee::CLOSED_LOOP_REPEATS {
                for rate in [rate, 0.0] {
                    if self.out_of_time() {
                        return points;
                    }
                    let suffix = format!("-again{repeat}");
                    self.matrix_point(&mut cluster, &at, users, rate, &suffix, &mut points);
                }
            }
        }
        cluster.stop();
        points
    }

    /// Measures one matrix point on the running cluster; a clean run joins `points`.
    fn matrix_point(
        &mut self,
        cluster: &mut Cluster,
        at: &MatrixAt<'_>,
        users: usize,
        rate: f64,
        suffix: &str,
        points: &mut Vec<Point>,
    ) {
        let load = Load {
            users,
            rate,
            seconds: self.opts.matrix_seconds,
        };
        let run_dir = at.dir.join(format!("u{users}-r{rate}{suffix}"));
        self.settle(&cluster.pids());
        let mut record = self.measure(
            cluster,
            &run_dir,
            Phase::Saturation,
            at.nodes,
            at.scenario,
            at.is_baseline,
            load,
        );
        record.startup_s = Some(at.startup);
        // Only clean runs count (the report lists the same ones, in order).
        if let (true, Some(o)) = (record.ok(), &record.outcome) {
            points.push(Point {
                users,
                rate,
                throughput: o.throughput,
                p99_ms: o.p99,
                error_rate: o.error_rate(),
            });
        }
        self.report_progress(&record);
        self.runs.push(record);
    }

    #[allow(clippy::too_many_arguments)]
    fn fresh_run(
        &mut self,
        name: &str,
        phase: Phase,
        nodes: usize,
        scenario: Scenario,
        spec: &ServerSpec,
        is_baseline: bool,
        load: Load,
    ) -> RunRecord {
        let dir = self.opts.work_dir.join(name);
        match Cluster::start(
            spec,
            nodes,
            &dir.join("server"),
            self.opts.base_port,
            spec.flavor.start_timeout(nodes),
        ) {
            Ok(mut cluster) => {
                let mut r = self.measure(
                    &mut cluster,
                    &dir,
                    phase,
                    nodes,
                    scenario,
                    is_baseline,
                    load,
                );
                r.startup_s = Some(cluster.startup.as_secs_f64());
                cluster.stop();
                r
            }
            Err(e) => RunRecord {
                seq: self.runs.len() + 1,
                phase,
                nodes,
                scenario,
                server: spec.label.clone(),
                is_baseline,
                load,
                outcome: None,
                usage: None,
                error: Some(e.to_string()),
                panicked: false,
                startup_s: None,
                fsync: None,
                dir,
            },
        }
    }

    /// One load-generator run against a running server.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        cluster: &mut Cluster,
        dir: &Path,
        phase: Phase,
        nodes: usize,
        scenario: Scenario,
        is_baseline: bool,
        load: Load,
    ) -> RunRecord {
        let mut record = RunRecord {
            seq: self.runs.len() + 1,
            phase,
            nodes,
            scenario,
            server: cluster.spec.label.clone(),
            is_baseline,
            load,
            outcome: None,
            usage: None,
            error: None,
            panicked: false,
            startup_s: None,
            fsync: None,
            dir: dir.to_path_buf(),
        };
        if let Err(e) = std::fs::create_dir_all(dir) {
            record.error = Some(format!("creating {}: {e}", dir.display()));
            return record;
        }
        match scenario.binary() {
            Some(binary) => self.run_tool(binary, cluster, dir, scenario, &load, &mut record),
            None => match restart::run(cluster, dir, &self.opts.params) {
                Ok((outcome, usage)) => {
                    record.outcome = Some(outcome);
                    record.usage = Some(usage);
                }
                Err(e) => record.error = Some(e.to_string()),
            },
        }
        record.panicked = cluster.panicked();
        if record.panicked && record.error.is_none() {
            record.error = Some("the server logged a panic during the run".into());
        }
        if cluster.check_alive().is_err() && record.error.is_none() {
            record.error = Some("a server node exited during the run".into());
        }
        record
    }

    /// Runs the scenario's load tool `binary` against `cluster` and reads what it
    /// measured into `record`.
    fn run_tool(
        &self,
        binary: &str,
        cluster: &mut Cluster,
        dir: &Path,
        scenario: Scenario,
        load: &Load,
        record: &mut RunRecord,
    ) {
        // The load goes to node 1; listeners of a cluster sit on node 2 while the
        // writer publishes on node 1, so notifications cross the cluster.
        let listen_node = if scenario == Scenario::Listen && cluster.nodes.len() > 1 {
            1
        } else {
            0
        };
        let target = Target {
            host: cluster.url(listen_node),
            publish_host: cluster.url(0),
            grpc: format!("127.0.0.1:{}", cluster.nodes[0].ports.grpc),
            all_hosts: cluster
                .nodes
                .iter()
                .map(|n| format!("127.0.0.1:{}", n.ports.http))
                .collect(),
            pids: cluster.pids(),
        };
        let report = dir.join("report.json");
        let notify = dir.join("notify.json");
        let args =
            scenario::command_args(scenario, &target, load, &self.opts.params, &report, &notify);
        let bin = self.opts.bin_dir.join(binary);
        let mut command = Command::new(&bin);
        command.args(&args).current_dir(dir).env("RUST_LOG", "warn");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LOADTEST_") {
                command.env_remove(name);
            }
        }
        // The fresh server's memory before the tool touches it.
        let rss_idle = procs::idle_rss_mib(&cluster.pids());
        let http_ports: Vec<u16> = cluster.nodes.iter().map(|n| n.ports.http).collect();
        let fsyncs_before = (cluster.spec.flavor == Flavor::Tacos && scenario.publishes())
            .then(|| fsync::scrape(&http_ports))
            .flatten();
        let mut client = match Proc::spawn(binary, command, &dir.join("load.log")) {
            Ok(p) => p,
            Err(e) => {
                record.error = Some(e.to_string());
                return;
            }
        };
        let sampler = Sampler::start(
            cluster.pids(),
            Some(client.pid()),
            Duration::from_millis(250),
        );
        // Seeding, ramp-up and the report come on top of -t; fan-out sets up its
        // listeners first (allow 10 ms each) and then runs its rounds.
        let limit = if scenario == Scenario::Fanout {
            let p = &self.opts.params;
            Duration::from_secs(120 + 35 * p.fanout_rounds as u64)
                + Duration::from_millis(10 * p.fanout_listeners as u64)
        } else {
            Duration::from_secs(load.seconds + 90)
        };
        let status = client.wait_timeout(limit);
        let exited = Instant::now();
        let samples = sampler.stop();
        if let Some(before) = &fsyncs_before {
            record.fsync = fsync::scrape(&http_ports).map(|after| after.since(before));
        }
        match status {
            None => {
                client.stop(Duration::from_secs(2));
                record.error = Some(format!(
                    "{} did not finish within {limit:?}; see {}",
                    binary,
                    client.log.display()
                ));
            }
            Some(s) if !s.success() => {
                record.error = Some(format!(
                    "{} exited with {s}; see {}",
                    binary,
                    client.log.display()
                ));
            }
            Some(_) => {}
        }
        // The measured period ends about when the tool starts writing its report;
        // leave out its edges (a second of runs of 3 s and more, 40% of shorter ones).
        let end = exited
            .checked_sub(Duration::from_millis(400))
            .unwrap_or(exited);
        let length = if load.seconds >= 3 {
            Duration::from_secs(load.seconds - 1)
        } else {
            Duration::from_secs(load.seconds).mul_f64(0.6)
        };
        let start = end.checked_sub(length).unwrap_or(end);
        record.usage = procs::usage(&samples, start, end, procs::clk_tck(), rss_idle);
        if record.error.is_none() {
            match scenario::read_outcome(scenario, &report, &notify) {
                Ok(o) => record.outcome = Some(o),
                Err(e) => record.error = Some(e.to_string()),
            }
        }
    }

    fn report_progress(&self, r: &RunRecord) {
        match (&r.outcome, &r.error) {
            (Some(o), None) => eprintln!(
                "    {} users{}: {:.0} {} p50 {:.2} p99 {:.2} ms, {} failed; server {:.2} cores",
                r.load.users,
                rate_text(r.load.rate),
                o.throughput,
                r.scenario.unit(),
                o.p50,
                o.p99,
                o.failures,
                r.usage.map_or(f64::NAN, |u| u.server_cores)
            ),
            (_, Some(e)) => eprintln!(
                "    {} users{}: FAILED: {e}",
                r.load.users,
                rate_text(r.load.rate)
            ),
            _ => {}
        }
        if let (Some(x), None, Some(u)) = (
            r.outcome.as_ref().and_then(|o| o.restart),
            &r.error,
            r.usage,
        ) {
            eprintln!(
                "    RSS {:.1} MiB after the fill; stopped in {:.1} s{}; restarted: answering \
                 after {:.2} s, all state served after {:.2} s, RSS {:.1} MiB",
                u.rss_end_mib,
                x.stop_s,
                if x.killed { " (killed)" } else { "" },
                x.answer_s,
                x.served_s,
                x.rss_mib
            );
        }
    }
}

/// Cores used over `window` by everything but `own_pids`.
fn other_cores(own_pids: &[u32], window: Duration) -> Option<f64> {
    let own = |pids: &[u32]| -> u64 {
        pids.iter()
            .filter_map(|&p| procs::sample(p))
            .map(|s| s.cpu_ticks)
            .sum()
    };
    let (b0, _) = procs::machine_cpu()?;
    let o0 = own(own_pids);
    let t0 = Instant::now();
    std::thread::sleep(window);
    let (b1, _) = procs::machine_cpu()?;
    let o1 = own(own_pids);
    let ticks = b1.saturating_sub(b0).saturating_sub(o1.saturating_sub(o0));
    Some(ticks as f64 / procs::clk_tck() / t0.elapsed().as_secs_f64())
}

/// Where a saturation matrix runs (what every point of it shares).
struct MatrixAt<'a> {
    dir: &'a Path,
    nodes: usize,
    scenario: Scenario,
    is_baseline: bool,
    startup: f64,
}

/// ` x N/s` or ` (closed loop)`.
pub fn rate_text(rate: f64) -> String {
    if rate > 0.0 {
        format!(" x {rate}/s")
    } else {
        " (closed loop)".into()
    }
}

/// A label usable in a file name.
pub fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_rates() {
        assert_eq!(slug("r-nacos (baseline)"), "r-nacos__baseline_");
        assert_eq!(rate_text(0.0), " (closed loop)");
        assert_eq!(rate_text(12.5), " x 12.5/s");
    }

    #[test]
    fn labels() {
        let spec = |flavor, version: &str| ServerSpec {
            label: String::new(),
            flavor,
            binary: PathBuf::from("/x"),
            version: version.into(),
            env: Vec::new(),
            java: None,
        };
        assert_eq!(label_for(&spec(Flavor::Tacos, "tacos 0.1.0")), "tacos");
        assert_eq!(label_for(&spec(Flavor::RNacos, "rnacos 0.8.8")), "r-nacos");
        assert_eq!(label_for(&spec(Flavor::Tacos, "")), "tacos");
        assert_eq!(
            label_for(&spec(Flavor::Nacos, "Java Nacos 3.0.3 (JDK 17)")),
            "nacos"
        );
        assert_eq!(with_env("tacos".into(), &[]), "tacos");
        assert_eq!(
            with_env(
                "tacos".into(),
                &[("TACOS_AUDIT_LIMIT".into(), "1000".into())]
            ),
            "tacos [TACOS_AUDIT_LIMIT=1000]"
        );
    }
}
