//! `qa`: a release QA report of a Nacos-compatible config server against a baseline, in
//! one command. See `qa --help` and loadtest/README.md.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use loadtest::latency::parse_duration;
use loadtest::qa::java_nacos;
use loadtest::qa::procs;
use loadtest::qa::report;
use loadtest::qa::run::{self, Options};
use loadtest::qa::scenario::{Params, Scenario};
use loadtest::qa::servers::Flavor;

const ABOUT: &str = "qa: a one-command release QA report of a Nacos-compatible config server \
(Tacos) against a baseline (r-nacos or Java Nacos)";

const LONG_ABOUT: &str = "\
qa: a one-command release QA report of a Nacos-compatible config server (Tacos) against
a baseline (r-nacos, Java Nacos or another Tacos build), all on 127.0.0.1.

For each topology (--nodes: 1 node, a 3-node cluster, 7 nodes, or a list) it
  1. finds the saturation point of each scenario: a matrix of users x per-user rate
     (--users x --rates, --matrix-time per point) on one fresh server, for the server
     under test and (unless --no-baseline-saturation) the baseline; the capacity is the
     highest throughput, the knee the highest load served before throughput stops
     growing and p99 climbs;
  2. runs each scenario just below saturation (--load-fraction of the capacity,
     offered by the fewest users that reached 1.5x that, else the most users) on both
     servers, alternating server and baseline (ABAB... over --rounds rounds), each run
     on a fresh server with fresh data dirs, sampling RSS and CPU of every server
     process (and the load tool, and the rest of the machine) from /proc;
  3. writes <--out>/<version>.md with SVG plots: per scenario throughput,
     p50/p90/p99, RSS and CPU of both, the ratios, pass/fail verdicts against the
     budgets file (--budgets), and a note on noise (machine, load average, alternation,
     spread between rounds).

Scenarios (--scenarios): set, set2, query (http_config, a light HTTP client on one
thread, so the load tool does not bound a read run's capacity), listen (a goose
scenario), all run as child processes from --bin-dir, and optionally grpc-query,
grpc-publish (grpc_config)
and fanout (the fanout tool: --fanout-listeners, half long polls and half gRPC
streams, over every node, --fanout-rounds publishes; latency per listener, missed
listeners and server RSS per listener; qa raises its file-descriptor limit so the
servers it starts inherit it, and gives Tacos TACOS_MAX_LONG_POLLS to fit).

restart (opt-in: about 10 minutes per round on 1 node with the defaults) fills a fresh
server with --restart-configs configs x --restart-versions publishes each (64
connections from qa itself, closed loop, every publish checked), records RSS, stops
every node (SIGTERM), starts them again on the same data dirs and measures the seconds
until the last write before the stop reads back on every node (all state served), then
RSS 2 s and --restart-settle after that. Reported beside the baseline: fill rate, RSS
after the fill, restart seconds, RSS after the restart. On a cluster every node
restarts. Time per run: the start, the fill (stopped and failed when slower than 500
publishes/s), at most 30 s for the stop and 300 s until all state is served, then
--restart-settle.
Every server and load tool it starts is stopped at the end, on error and on Ctrl-C;
its work dir (logs, raw reports) is removed unless --keep-work.

Java Nacos (--baseline nacos: the nacos-server.jar in $REFERENCE_NACOS3_JAR; nacos2:
$REFERENCE_NACOS2_JAR; or a jar path, --baseline-kind nacos): one standalone node with
its embedded Derby, started as scripts/reference-nacos.sh does (nacos.home in the run's
dir, HTTP port P with context /nacos, gRPC P+1000, the script's application.properties,
`java -Xms512m -Xmx512m -Xmn256m -jar`, as Nacos' startup.sh in standalone mode;
$REFERENCE_NACOS_JVM replaces the heap flags, $REFERENCE_NACOS_JAVA the java binary; the
report's version line names JDK, flags and GC). Ready once a read answers 200 or 404 and
a probe publish reads back (up to 300 s: it takes 15-35 s on 2 cores). One node only:
several Java nodes need MySQL, so --nodes 3 or 7 is refused with a Nacos side. With the
512 MiB heap it holds about 2,000 long polls: use --fanout-listeners 2000 or less.

--smoke: a few seconds, no baseline, 1 node, a tiny matrix; what CI runs.

Examples:
  qa --baseline /work/rnacos/bin/rnacos                      # docs/qa/<version>.md
  qa --baseline rnacos --nodes 1 --scenarios set,query --rounds 3
  qa --baseline nacos --nodes 1 --label vs-nacos3                # Java Nacos 3
  qa --baseline /x/nacos-server.jar --baseline-kind nacos --nodes 1 --scenarios set
  qa --baseline rnacos --nodes 1 --scenarios fanout --fanout-listeners 50000
  qa --baseline rnacos --nodes 1 --scenarios restart --label restart-100k
  qa --smoke --server target/debug/tacos --out /tmp/qa
  qa --baseline target/release/tacos --baseline-env TACOS_AUDIT_LIMIT=1000 \
     --nodes 1 --scenarios set --out /tmp/qa-ab              # A/B a setting";

#[derive(Debug, Parser)]
#[command(name = "qa", about = ABOUT, long_about = LONG_ABOUT)]
struct Args {
    /// The server under test [default: `tacos` next to this binary]
    #[arg(long, value_name = "PATH")]
    server: Option<PathBuf>,
    /// What --server is: tacos, rnacos or nacos [default: from the file name]
    #[arg(long, value_name = "KIND", value_parser = parse_flavor)]
    server_kind: Option<Flavor>,
    /// The baseline server, e.g. r-nacos (`cargo install rnacos`), a Java Nacos
    /// nacos-server.jar, or `nacos` ($REFERENCE_NACOS3_JAR), `nacos2`
    /// ($REFERENCE_NACOS2_JAR); none: no comparison
    #[arg(long, value_name = "PATH")]
    baseline: Option<PathBuf>,
    /// What --baseline is: tacos, rnacos or nacos (Java Nacos) [default: from the file
    /// name: a .jar is Java Nacos]
    #[arg(long, value_name = "KIND", value_parser = parse_flavor)]
    baseline_kind: Option<Flavor>,
    /// An environment variable for every node of the server under test (repeatable),
    /// e.g. `--server-env TACOS_AUDIT_LIMIT=1000`
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    server_env: Vec<(String, String)>,
    /// An environment variable for every baseline node (repeatable); with the same binary
    /// as --server this A/Bs a setting
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_env)]
    baseline_env: Vec<(String, String)>,
    /// Topologies: 1, 3, 7 or a list (1,3); 7 = Tacos' 3 voters + 4 learners (r-nacos:
    /// 7 members); Java Nacos: 1 only
    #[arg(
        long,
        value_name = "LIST",
        default_value = "1,3",
        value_delimiter = ','
    )]
    nodes: Vec<usize>,
    /// Scenarios: set, set2, query, listen, grpc-query, grpc-publish, fanout, restart
    /// (grpc-*, restart: opt-in)
    #[arg(long, value_name = "LIST", default_value = "set,set2,query,listen,fanout", value_delimiter = ',', value_parser = parse_scenario)]
    scenarios: Vec<Scenario>,
    /// Users (connections) in the saturation matrix
    #[arg(
        long,
        value_name = "LIST",
        default_value = "4,16,64",
        value_delimiter = ','
    )]
    users: Vec<usize>,
    /// Per-user rates (req/s) in the saturation matrix; 0 = unlimited (closed loop)
    #[arg(
        long,
        value_name = "LIST",
        default_value = "100,250,0",
        value_delimiter = ','
    )]
    rates: Vec<f64>,
    /// Length of each saturation point
    #[arg(long, value_name = "DURATION", default_value = "4s", value_parser = parse_duration)]
    matrix_time: Duration,
    /// Length of each A/B run
    #[arg(long, value_name = "DURATION", default_value = "12s", value_parser = parse_duration)]
    time: Duration,
    /// A/B rounds (each runs every scenario on both servers)
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// The A/B load as a share of the server under test's capacity
    #[arg(long, default_value_t = 0.8)]
    load_fraction: f64,
    /// Run the saturation matrix on the server under test only
    #[arg(long)]
    no_baseline_saturation: bool,
    /// Listeners in the listen scenario
    #[arg(long, default_value_t = 500)]
    listeners: usize,
    /// Keys the listen scenario's listeners spread over (one each)
    #[arg(long, default_value_t = 10)]
    listen_keys: usize,
    /// Publishes per second by the listen scenario's writer
    #[arg(long, default_value_t = 20.0)]
    publish_rate: f64,
    /// Listeners of the fanout scenario (half long polls, half gRPC streams)
    #[arg(long, default_value_t = 10_000)]
    fanout_listeners: usize,
    /// Publishes of the fanout scenario (each one round)
    #[arg(long, default_value_t = 5)]
    fanout_rounds: usize,
    /// Configs the restart scenario fills before its restart
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    restart_configs: usize,
    /// Publishes per config in the restart scenario's fill (each a history row)
    #[arg(long, value_name = "N", default_value_t = 10)]
    restart_versions: usize,
    /// The restart scenario's last RSS sample, this long after all state was served
    /// again (it also samples 2 s after); 0 = none
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    restart_settle: Duration,
    /// Keys the query scenario reads (seeded first)
    #[arg(long, default_value_t = 100)]
    query_keys: usize,
    /// Budgets file [default: qa-budgets.toml of this crate]
    #[arg(long, value_name = "FILE")]
    budgets: Option<PathBuf>,
    /// Where the report goes [default: docs/qa of this workspace]
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Report name (file <label>.md) [default: the server's version]
    #[arg(long)]
    label: Option<String>,
    /// Work dir for data dirs, logs and raw reports [default: a new dir under /tmp]
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Keep the work dir (it is printed)
    #[arg(long)]
    keep_work: bool,
    /// First port to use on 127.0.0.1 (each server start takes the next free slot
    /// above it)
    #[arg(long, default_value_t = 31000, value_parser = clap::value_parser!(u16).range(1024..=60000))]
    base_port: u16,
    /// Where the scenario binaries are [default: next to this binary]
    #[arg(long, value_name = "DIR")]
    bin_dir: Option<PathBuf>,
    /// Before starting, wait until the 1-minute load average is below this [default:
    /// half the cores; 0 = do not wait; smoke: 0]
    #[arg(long, value_name = "LOAD")]
    wait_load: Option<f64>,
    /// Wait at most this long for --wait-load
    #[arg(long, value_name = "DURATION", default_value = "20m", value_parser = parse_duration)]
    wait_load_max: Duration,
    /// Before each run, wait until other processes use less than this many cores
    /// [default: 0.3; smoke: do not wait]
    #[arg(long, value_name = "CORES")]
    quiet_cores: Option<f64>,
    /// Wait at most this long per run for --quiet-cores, then go on
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    quiet_max: Duration,
    /// Start no new run after this long (the report says it is incomplete)
    #[arg(long, value_name = "DURATION", default_value = "40m", value_parser = parse_duration)]
    deadline: Duration,
    /// Exit 1 when a budget fails (the report is written either way)
    #[arg(long)]
    strict: bool,
    /// CI smoke mode: a few seconds, no baseline, 1 node, a tiny matrix
    #[arg(long)]
    smoke: bool,
}

fn parse_flavor(s: &str) -> Result<Flavor, String> {
    Flavor::parse(s).ok_or_else(|| format!("{s:?}: tacos, rnacos or nacos"))
}

/// `--baseline` and `--baseline-kind`: the keywords `nacos`, `nacos3` and `nacos2`
/// name the Java Nacos jar in `$REFERENCE_NACOS3_JAR` / `$REFERENCE_NACOS2_JAR`.
fn resolve_baseline(
    baseline: Option<&Path>,
    kind: Option<Flavor>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<(Option<PathBuf>, Option<Flavor>)> {
    let Some(path) = baseline else {
        return Ok((None, kind));
    };
    match java_nacos::resolve_keyword(path, lookup) {
        None => Ok((Some(path.to_path_buf()), kind)),
        Some(Err(e)) => bail!("--baseline {e}"),
        Some(Ok(jar)) => match kind {
            None | Some(Flavor::Nacos) => Ok((Some(jar), Some(Flavor::Nacos))),
            Some(other) => bail!(
                "--baseline {} is Java Nacos, but --baseline-kind says {other:?}",
                path.display()
            ),
        },
    }
}

/// Refuses topologies a side cannot run (Java Nacos: one node).
fn check_topologies(nodes: &[usize], sides: &[(&str, &Path, Option<Flavor>)]) -> Result<()> {
    for (side, path, kind) in sides {
        let flavor = kind.unwrap_or_else(|| Flavor::guess(path));
        for &n in nodes {
            if let Err(why) = flavor.supports_nodes(n) {
                bail!("--nodes {n} with {side} {}: {why}", path.display());
            }
        }
    }
    Ok(())
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((key, value)) if !key.is_empty() && !key.contains(char::is_whitespace) => {
            Ok((key.to_string(), value.to_string()))
        }
        _ => Err(format!("{s:?}: expected KEY=VALUE")),
    }
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    Scenario::parse(s).ok_or_else(|| {
        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        format!("{s:?}: one of {}", names.join(", "))
    })
}

/// The work dir, for the Ctrl-C handler to remove.
static WORK_DIR: OnceLock<(PathBuf, bool)> = OnceLock::new();
static HANDLER: Mutex<()> = Mutex::new(());

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            procs::kill_registered(Duration::from_secs(5));
            eprintln!("qa: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("finding this binary")?;
    let exe_dir = exe
        .parent()
        .map(Path::to_path_buf)
        .context("this binary has no directory")?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let server = args.server.clone().unwrap_or_else(|| exe_dir.join("tacos"));
    if !server.is_file() {
        bail!(
            "no server binary at {} (build it: `cargo build --release --bin tacos`, or give --server)",
            server.display()
        );
    }
    let (baseline, baseline_flavor) =
        resolve_baseline(args.baseline.as_deref(), args.baseline_kind, |var| {
            std::env::var(var).ok()
        })?;
    let mut opts = Options {
        server,
        server_flavor: args.server_kind,
        baseline,
        baseline_flavor,
        server_env: args.server_env.clone(),
        baseline_env: args.baseline_env.clone(),
        nodes: args.nodes.clone(),
        scenarios: args.scenarios.clone(),
        users: args.users.clone(),
        rates: args.rates.clone(),
        matrix_seconds: args.matrix_time.as_secs().max(1),
        run_seconds: args.time.as_secs().max(1),
        rounds: args.rounds,
        load_fraction: args.load_fraction,
        baseline_saturation: !args.no_baseline_saturation,
        listeners: args.listeners,
        params: Params {
            query_keys: args.query_keys,
            listen_keys: args.listen_keys,
            listen_publish_rate: args.publish_rate,
            fanout_listeners: args.fanout_listeners,
            fanout_rounds: args.fanout_rounds,
            restart_configs: args.restart_configs,
            restart_versions: args.restart_versions,
            restart_settle_seconds: args.restart_settle.as_secs(),
        },
        budgets: args
            .budgets
            .clone()
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("qa-budgets.toml")),
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| workspace.join("docs/qa")),
        label: args.label.clone(),
        work_dir: PathBuf::new(),
        base_port: args.base_port,
        bin_dir: match &args.bin_dir {
            Some(d) => {
                std::fs::canonicalize(d).with_context(|| format!("--bin-dir {}", d.display()))?
            }
            None => exe_dir,
        },
        wait_load: None,
        wait_load_max: args.wait_load_max,
        deadline: args.deadline,
        quiet_cores: match args.quiet_cores {
            Some(x) if x <= 0.0 => None,
            Some(x) => Some(x),
            None if args.smoke => None,
            None => Some(0.3),
        },
        quiet_max: args.quiet_max,
        smoke: args.smoke,
        command_line: command_line(),
    };
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as f64;
    opts.wait_load = match args.wait_load {
        Some(x) if x <= 0.0 => None,
        Some(x) => Some(x),
        None if args.smoke => None,
        None => Some(cores / 2.0),
    };
    if args.smoke {
        // A few seconds: one node, three scenarios, a two-point matrix, one round.
        opts.baseline = None;
        opts.nodes = vec![1];
        opts.scenarios = vec![Scenario::Set, Scenario::Query, Scenario::Listen];
        opts.users = vec![2, 8];
        opts.rates = vec![0.0];
        opts.matrix_seconds = 1;
        opts.run_seconds = 2;
        opts.rounds = 1;
        opts.listeners = 8;
        opts.params.query_keys = 10;
        opts.params.listen_keys = 4;
        opts.params.listen_publish_rate = 10.0;
        opts.deadline = opts.deadline.min(Duration::from_secs(120));
        if args.label.is_none() {
            opts.label = Some("smoke".into());
        }
    }
    validate(&opts)?;
    if opts.scenarios.contains(&Scenario::Fanout) {
        prepare_fanout(&mut opts)?;
    }
    let work = match &args.work_dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!(
            "tacos-qa-{}-{}",
            std::process::id(),
            chrono::Local::now().format("%Y%m%d-%H%M%S")
        )),
    };
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    opts.work_dir = work.clone();
    let _ = WORK_DIR.set((work.clone(), args.keep_work || args.work_dir.is_some()));
    ctrlc::set_handler(|| {
        // One at a time; a second Ctrl-C while cleaning up waits here.
        let _guard = HANDLER.lock();
        eprintln!("\nqa: interrupted; stopping everything it started");
        procs::kill_registered(Duration::from_secs(3));
        if let Some((dir, keep)) = WORK_DIR.get() {
            if !keep {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        std::process::exit(130);
    })
    .context("installing the Ctrl-C handler")?;

    eprintln!(
        "qa: {} vs {}; nodes {:?}; scenarios {}; work dir {}",
        opts.server.display(),
        opts.baseline
            .as_ref()
            .map_or("no baseline".into(), |b| b.display().to_string()),
        opts.nodes,
        opts.scenarios
            .iter()
            .map(|s| s.name())
            .collect::<Vec<_>>()
            .join(","),
        work.display()
    );
    let results = run::run(&opts).context("qa run")?;
    let written = report::write(&results, &opts.out_dir).context("writing the report")?;
    procs::kill_registered(Duration::from_secs(5));
    let keep = args.keep_work || args.work_dir.is_some();
    if !keep {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        eprintln!("work dir kept: {}", work.display());
    }
    println!("report: {}", written.markdown.display());
    for p in &written.plots {
        println!("plot:   {}", p.display());
    }
    println!(
        "budgets: {} passed, {} failed{}",
        written.passed_budgets,
        written.failed_budgets,
        results
            .incomplete
            .as_ref()
            .map_or(String::new(), |w| format!(" (incomplete: {w})"))
    );
    if args.strict && (written.failed_budgets > 0 || results.incomplete.is_some()) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn validate(opts: &Options) -> Result<()> {
    if opts.nodes.is_empty() || opts.nodes.iter().any(|&n| ![1, 3, 7].contains(&n)) {
        bail!("--nodes takes 1, 3, 7 or a list of them (e.g. 1,3)");
    }
    let mut sides = vec![("--server", opts.server.as_path(), opts.server_flavor)];
    if let Some(b) = &opts.baseline {
        sides.push(("--baseline", b.as_path(), opts.baseline_flavor));
    }
    check_topologies(&opts.nodes, &sides)?;
    if opts.scenarios.is_empty() {
        bail!("--scenarios is empty");
    }
    if opts.users.is_empty() || opts.users.contains(&0) {
        bail!("--users needs at least one count, each above 0");
    }
    if opts.rates.is_empty() || opts.rates.iter().any(|r| !(r.is_finite() && *r >= 0.0)) {
        bail!("--rates needs at least one rate, each 0 (unlimited) or positive");
    }
    if opts.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    if !(opts.load_fraction > 0.0 && opts.load_fraction <= 1.0) {
        bail!("--load-fraction must be in (0, 1]");
    }
    if opts.params.fanout_listeners == 0 || opts.params.fanout_rounds == 0 {
        bail!("--fanout-listeners and --fanout-rounds must be at least 1");
    }
    if opts.params.restart_configs == 0 || opts.params.restart_versions == 0 {
        bail!("--restart-configs and --restart-versions must be at least 1");
    }
    if (1..=2).contains(&opts.params.restart_settle_seconds) {
        bail!("--restart-settle must be 0 (none) or more than 2 s (RSS is also read at 2 s)");
    }
    if opts.listeners == 0 || opts.params.listen_keys == 0 || opts.params.query_keys == 0 {
        bail!("--listeners, --listen-keys and --query-keys must be at least 1");
    }
    if !(opts.params.listen_publish_rate.is_finite() && opts.params.listen_publish_rate > 0.0) {
        bail!("--publish-rate must be positive");
    }
    Ok(())
}

/// The fan-out scenario holds a socket per listener in the servers: raise this
/// process's file-descriptor limit, which the servers it starts inherit (the
/// fanout tool raises its own), and let Tacos hold that many long polls (its
/// TACOS_MAX_LONG_POLLS refuses more with 503) unless the run sets it.
fn prepare_fanout(opts: &mut Options) -> Result<()> {
    let listeners = opts.params.fanout_listeners as u64;
    // A node holds its share of the listeners; the fanout tool raises its own limit
    // and fails clearly when it cannot hold them all.
    match loadtest::fanout::sys::raise_nofile(listeners + 1024) {
        Ok((soft, _)) => eprintln!("qa: RLIMIT_NOFILE {soft} for the servers (fanout)"),
        Err(e) => eprintln!("qa: fanout: {e}; the servers keep the limit there is"),
    }
    let long_polls = (listeners / 2 + 1000).max(20_000).to_string();
    let tacos = |flavor: Option<Flavor>, path: &Path| {
        flavor.unwrap_or_else(|| Flavor::guess(path)) == Flavor::Tacos
    };
    let set = |env: &mut Vec<(String, String)>| {
        if !env.iter().any(|(k, _)| k == "TACOS_MAX_LONG_POLLS") && listeners / 2 >= 20_000 {
            env.push(("TACOS_MAX_LONG_POLLS".into(), long_polls.clone()));
        }
    };
    if tacos(opts.server_flavor, &opts.server) {
        set(&mut opts.server_env);
    }
    if let Some(b) = &opts.baseline {
        if tacos(opts.baseline_flavor, b) {
            set(&mut opts.baseline_env);
        }
    }
    Ok(())
}

/// This invocation as a shell line, for the report. Absolute paths are cut
/// to their file name (`rnacos`, `tacos`): a report names binaries, never
/// the machine's directories.
fn command_line() -> String {
    let mut args = std::env::args();
    let mut line = args
        .next()
        .and_then(|p| {
            Path::new(&p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "qa".into());
    for a in args {
        line.push(' ');
        let a = if Path::new(&a).is_absolute() {
            report::file_name_of(Path::new(&a))
        } else {
            a
        };
        if a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,:".contains(c))
        {
            line.push_str(&a);
        } else {
            line.push_str(&format!("'{}'", a.replace('\'', "'\\''")));
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::{check_topologies, parse_env, resolve_baseline, Args, Flavor, Scenario};
    use clap::Parser;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    #[test]
    fn java_nacos_baseline() {
        let jar = std::env::current_exe().unwrap();
        let jar_text = jar.display().to_string();
        let env = |var: &str| (var == "REFERENCE_NACOS3_JAR").then(|| jar_text.clone());
        // The keyword: the jar of $REFERENCE_NACOS3_JAR, Java Nacos.
        let args = Args::try_parse_from(["qa", "--baseline", "nacos", "--nodes", "1"]).unwrap();
        let (path, kind) =
            resolve_baseline(args.baseline.as_deref(), args.baseline_kind, env).unwrap();
        assert_eq!(path, Some(jar.clone()));
        assert_eq!(kind, Some(Flavor::Nacos));
        // nacos2 without its variable, a conflicting kind: refused.
        let e = resolve_baseline(Some(Path::new("nacos2")), None, env).unwrap_err();
        assert!(e.to_string().contains("REFERENCE_NACOS2_JAR"), "{e}");
        assert!(resolve_baseline(Some(Path::new("nacos")), Some(Flavor::RNacos), env).is_err());
        // A path stays a path; --baseline-kind nacos parses.
        let args = Args::try_parse_from([
            "qa",
            "--baseline",
            "/x/nacos-server.jar",
            "--baseline-kind",
            "nacos",
        ])
        .unwrap();
        assert_eq!(args.baseline_kind, Some(Flavor::Nacos));
        let (path, kind) =
            resolve_baseline(args.baseline.as_deref(), args.baseline_kind, env).unwrap();
        assert_eq!(path, Some(PathBuf::from("/x/nacos-server.jar")));
        assert_eq!(kind, Some(Flavor::Nacos));
        assert_eq!(resolve_baseline(None, None, env).unwrap(), (None, None));
        assert!(Args::try_parse_from(["qa", "--baseline-kind", "java-nacos"]).is_ok());
        assert!(Args::try_parse_from(["qa", "--baseline-kind", "go"]).is_err());
    }

    #[test]
    fn java_nacos_runs_one_node() {
        let tacos = ("--server", Path::new("/x/tacos"), None);
        // Guessed from the .jar, or said with --baseline-kind.
        let jar = ("--baseline", Path::new("/x/nacos-server.jar"), None);
        let kind = ("--baseline", Path::new("/x/server"), Some(Flavor::Nacos));
        assert!(check_topologies(&[1], &[tacos, jar]).is_ok());
        for side in [jar, kind] {
            let e = check_topologies(&[1, 3], &[tacos, side]).unwrap_err();
            let e = e.to_string();
            assert!(e.starts_with("--nodes 3 with --baseline"), "{e}");
            assert!(e.contains("MySQL") && e.contains("--nodes 1"), "{e}");
        }
        let rnacos = ("--baseline", Path::new("/x/rnacos"), None);
        assert!(check_topologies(&[1, 3, 7], &[tacos, rnacos]).is_ok());
    }

    #[test]
    fn restart_is_opt_in_with_its_flags() {
        let default = Args::try_parse_from(["qa"]).unwrap();
        assert!(!default.scenarios.contains(&Scenario::Restart));
        assert_eq!(default.restart_configs, 100_000);
        assert_eq!(default.restart_versions, 10);
        assert_eq!(default.restart_settle, Duration::from_secs(30));
        let small = Args::try_parse_from([
            "qa",
            "--scenarios",
            "restart",
            "--restart-configs",
            "2000",
            "--restart-versions",
            "2",
            "--restart-settle",
            "0",
        ])
        .unwrap();
        assert_eq!(small.scenarios, vec![Scenario::Restart]);
        assert_eq!(small.restart_configs, 2000);
        assert_eq!(small.restart_versions, 2);
        assert_eq!(small.restart_settle, Duration::ZERO);
        assert!(Args::try_parse_from(["qa", "--restart-configs", "-1"]).is_err());
    }

    #[test]
    fn env_pairs() {
        assert_eq!(
            parse_env("TACOS_AUDIT_LIMIT=1000"),
            Ok(("TACOS_AUDIT_LIMIT".into(), "1000".into()))
        );
        assert_eq!(parse_env("A="), Ok(("A".into(), String::new())));
        assert!(parse_env("no-equals").is_err());
        assert!(parse_env("=x").is_err());
        assert!(parse_env("A B=x").is_err());
    }
}
