//! The scenarios the qa tool runs: which binary, with which arguments, and how to read
//! what it measured (the restart scenario runs in qa itself: [`super::restart`]).

use std::path::Path;

use serde_json::Value;

use super::QaError;

/// A scenario of the qa run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scenario {
    Set,
    Set2,
    Query,
    Listen,
    GrpcQuery,
    GrpcPublish,
    Fanout,
    Restart,
}

impl Scenario {
    pub const ALL: [Scenario; 8] = [
        Scenario::Set,
        Scenario::Set2,
        Scenario::Query,
        Scenario::Listen,
        Scenario::GrpcQuery,
        Scenario::GrpcPublish,
        Scenario::Fanout,
        Scenario::Restart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Set => "set",
            Scenario::Set2 => "set2",
            Scenario::Query => "query",
            Scenario::Listen => "listen",
            Scenario::GrpcQuery => "grpc-query",
            Scenario::GrpcPublish => "grpc-publish",
            Scenario::Fanout => "fanout",
            Scenario::Restart => "restart",
        }
    }

    pub fn parse(text: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == text.trim())
    }

    /// The binary (next to `qa`) that runs it; `None`: qa runs it itself (restart:
    /// its fill client and the restart in between are one measurement).
    pub fn binary(self) -> Option<&'static str> {
        match self {
            Scenario::Set | Scenario::Set2 | Scenario::Query => Some("http_config"),
            Scenario::Listen => Some("http_config_listen"),
            Scenario::GrpcQuery | Scenario::GrpcPublish => Some("grpc_config"),
            Scenario::Fanout => Some("fanout"),
            Scenario::Restart => None,
        }
    }

    /// Whether the saturation matrix applies (the listen and fan-out scenarios are
    /// sized by their listeners instead, the restart scenario by its configs).
    pub fn saturates(self) -> bool {
        !self.notifies() && self != Scenario::Restart
    }

    /// Whether its requests are publishes (each a Raft log write).
    pub fn publishes(self) -> bool {
        matches!(self, Scenario::Set | Scenario::Set2 | Scenario::GrpcPublish)
    }

    /// Whether it measures notifications (publish answered -> listener told) rather
    /// than requests.
    pub fn notifies(self) -> bool {
        matches!(self, Scenario::Listen | Scenario::Fanout)
    }

    /// One line on what a request is.
    pub fn describe(self) -> &'static str {
        match self {
            Scenario::Set => "HTTP publish (unique content) to a random one of 100 keys",
            Scenario::Set2 => "HTTP publish (unique content) to a random one of 10,000 keys",
            Scenario::Query => "HTTP read of a random one of the seeded keys, content checked",
            Scenario::Listen => {
                "HTTP long-poll listeners while a writer publishes; latency = publish answered -> listener answered"
            }
            Scenario::GrpcQuery => "gRPC ConfigQueryRequest of a random one of 100 seeded keys",
            Scenario::GrpcPublish => "gRPC ConfigPublishRequest (unique content), 100 keys",
            Scenario::Fanout => {
                "one key, half the listeners HTTP long polls and half gRPC streams, spread over every node; one publish at a time; latency = publish answered -> each listener told"
            }
            Scenario::Restart => {
                "fill a fresh server with configs (HTTP publishes, closed loop; throughput and latency are the fill's), stop it (SIGTERM), start it on the same data dir and time until the last write before the stop reads back on every node"
            }
        }
    }

    /// What its throughput counts.
    pub fn unit(self) -> &'static str {
        if self.notifies() {
            "notifications/s"
        } else if self == Scenario::Restart {
            "publishes/s"
        } else {
            "req/s"
        }
    }
}

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `http://127.0.0.1:PORT` of the node the scenario loads.
    pub host: String,
    /// The node the listen scenario's writer publishes to.
    pub publish_host: String,
    /// 127.0.0.1:PORT of the gRPC port of the loaded node.
    pub grpc: String,
    /// 127.0.0.1:PORT (HTTP) of every node, and their PIDs: the fan-out scenario
    /// spreads its listeners over all of them and reports their RSS.
    pub all_hosts: Vec<String>,
    pub pids: Vec<u32>,
}

/// How much load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    pub users: usize,
    /// Per user, requests/s; 0 = unlimited.
    pub rate: f64,
    pub seconds: u64,
}

/// Scenario sizes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    pub query_keys: usize,
    pub listen_keys: usize,
    pub listen_publish_rate: f64,
    /// Fan-out: listeners (half long polls, half gRPC) and publishes.
    pub fanout_listeners: usize,
    pub fanout_rounds: usize,
    /// Restart: configs filled, publishes per config, and when (after all state is
    /// served again) the last RSS sample is taken (zero: none).
    pub restart_configs: usize,
    pub restart_versions: usize,
    pub restart_settle_seconds: u64,
}

/// The arguments of the scenario's binary.
pub fn command_args(
    scenario: Scenario,
    target: &Target,
    load: &Load,
    params: &Params,
    report: &Path,
    notify_report: &Path,
) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
    let secs = format!("{}s", load.seconds.max(1));
    let users = load.users.max(1).to_string();
    let rate = format!("{}", load.rate);
    let report = report.display().to_string();
    match scenario {
        Scenario::GrpcQuery | Scenario::GrpcPublish => {
            let mode = if scenario == Scenario::GrpcQuery {
                "query"
            } else {
                "publish"
            };
            push(&["--host", &target.grpc, "-c", &users, "-t", &secs]);
            push(&["--mode", mode, "--keys", "100", "--rate", &rate]);
            push(&["--label", scenario.name(), "--report-file", &report]);
        }
        Scenario::Set | Scenario::Set2 | Scenario::Query => {
            // The light client: a goose user costs about as much CPU as the server's
            // answer, so on two shared cores goose bounds a read run's capacity.
            let (mode, keys, prefix) = match scenario {
                Scenario::Set => ("publish", 100, "loadtest-"),
                Scenario::Set2 => ("publish", 10_000, "loadtest2-"),
                _ => ("query", params.query_keys, "loadtest-q-"),
            };
            push(&["--host", &target.host, "-c", &users, "-t", &secs]);
            push(&["--mode", mode, "--keys", &keys.to_string()]);
            push(&["--key-prefix", prefix, "--rate", &rate]);
            push(&["--label", scenario.name(), "--report-file", &report]);
        }
        Scenario::Fanout => {
            let http = params.fanout_listeners / 2;
            let grpc = params.fanout_listeners - http;
            let pids: Vec<String> = target.pids.iter().map(u32::to_string).collect();
            push(&["--hosts", &target.all_hosts.join(",")]);
            push(&["--http-listeners", &http.to_string()]);
            push(&["--grpc-listeners", &grpc.to_string()]);
            push(&["--rounds", &params.fanout_rounds.max(1).to_string()]);
            if !pids.is_empty() {
                push(&["--pid", &pids.join(",")]);
            }
            push(&["--label", scenario.name(), "--report-file", &report]);
        }
        Scenario::Listen => {
            // The goose listen scenario; all users start within about a quarter of a
            // second.
            let hatch = (load.users.max(1) * 4).to_string();
            push(&[
                "--host",
                &target.host,
                "-u",
                &users,
                "-r",
                &hatch,
                "-t",
                &secs,
            ]);
            push(&["--report-file", &report]);
            if load.rate > 0.0 {
                push(&["--rate-per-user", &rate]);
            }
            push(&["--keys", &params.listen_keys.to_string()]);
            push(&[
                "--publish-rate",
                &params.listen_publish_rate.to_string(),
                "--publish-host",
                &target.publish_host,
                "--notify-report",
                &notify_report.display().to_string(),
            ]);
        }
        // Run by qa itself (no binary).
        Scenario::Restart => {}
    }
    a
}

/// What one run measured (latencies in ms).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    pub throughput: f64,
    pub requests: u64,
    /// Failed requests; for listen: missed notifications and failed publishes.
    pub failures: u64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    /// NaN where the tool's report has none.
    pub p999: f64,
    pub max: f64,
    /// Listen only: publishes the writer made.
    pub publishes: Option<u64>,
    /// Listen only: p50 and p99 from before the publish was sent (always positive).
    pub from_send: Option<(f64, f64)>,
    /// Fan-out only: server RSS grown per listener set up, KiB (all nodes).
    pub rss_per_listener_kib: Option<f64>,
    /// Restart only: the stop and the start on the same data dirs.
    pub restart: Option<RestartOutcome>,
}

/// What the restart scenario measured between the end of its fill and all state being
/// served again (seconds from the first node's start; RSS summed over all nodes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestartOutcome {
    /// From SIGTERM to every node having exited.
    pub stop_s: f64,
    /// A node did not exit within the grace period and was killed.
    pub killed: bool,
    /// Until every node answered HTTP (with anything).
    pub answer_s: f64,
    /// Until the last write before the stop read back on every node: all state served.
    pub served_s: f64,
    /// 2 s after `served_s`.
    pub rss_mib: f64,
    /// `--restart-settle` after `served_s` (NaN: not measured).
    pub rss_settled_mib: f64,
}

/// Failed share of requests; all failed when there were failures but no
/// counted requests.
pub fn error_rate(requests: u64, failures: u64) -> f64 {
    if requests == 0 {
        if failures > 0 {
            1.0
        } else {
            0.0
        }
    } else {
        failures as f64 / requests as f64
    }
}

impl Outcome {
    pub fn error_rate(&self) -> f64 {
        error_rate(self.requests, self.failures)
    }
}

fn read_json(path: &Path) -> Result<Value, QaError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| QaError::io(format!("reading {}", path.display()), e))?;
    serde_json::from_str(&text)
        .map_err(|e| QaError::Scenario(format!("{}: not JSON: {e}", path.display())))
}

/// Reads the run's result files.
pub fn read_outcome(
    scenario: Scenario,
    report: &Path,
    notify_report: &Path,
) -> Result<Outcome, QaError> {
    match scenario {
        Scenario::Listen => {
            let v = read_json(notify_report)?;
            outcome_from_notify(&v).ok_or_else(|| {
                QaError::Scenario(format!("{}: unexpected shape", notify_report.display()))
            })
        }
        Scenario::Fanout => {
            let v = read_json(report)?;
            outcome_from_fanout(&v)
                .ok_or_else(|| QaError::Scenario(format!("{}: unexpected shape", report.display())))
        }
        // grpc_config and http_config write the same report.
        _ => {
            let v = read_json(report)?;
            outcome_from_tool(&v)
                .ok_or_else(|| QaError::Scenario(format!("{}: unexpected shape", report.display())))
        }
    }
}

/// The numbers of an `http_config_listen --notify-report`.
pub fn outcome_from_notify(v: &Value) -> Option<Outcome> {
    let l = &v["notify_latency"];
    let f = |x: &Value| x.as_f64().unwrap_or(f64::NAN);
    Some(Outcome {
        throughput: v["notifications_per_s"].as_f64()?,
        requests: v["expected_notifications"].as_u64()?,
        failures: v["missed"].as_u64()? + v["publish_failures"].as_u64().unwrap_or(0),
        p50: f(&l["p50_ms"]),
        p90: f(&l["p90_ms"]),
        p99: f(&l["p99_ms"]),
        p999: f(&l["p99_9_ms"]),
        max: f(&l["max_ms"]),
        publishes: v["publishes"].as_u64(),
        from_send: Some((
            f(&v["notify_latency_from_send"]["p50_ms"]),
            f(&v["notify_latency_from_send"]["p99_ms"]),
        )),
        rss_per_listener_kib: None,
        restart: None,
    })
}

/// The numbers of a `fanout --report-file`: one notification expected per listener
/// set up and publish; listeners that could not be set up count as missed in every
/// round.
pub fn outcome_from_fanout(v: &Value) -> Option<Outcome> {
    let l = &v["latency"];
    let f = |x: &Value| x.as_f64().unwrap_or(f64::NAN);
    let rounds = v["rounds"].as_u64()?;
    let not_set_up = v["listeners"]
        .as_u64()?
        .saturating_sub(v["listeners_set_up"].as_u64()?);
    Some(Outcome {
        throughput: v["notifications_per_s"].as_f64()?,
        requests: v["expected_notifications"].as_u64()? + not_set_up * rounds,
        failures: v["missed"].as_u64()?
            + not_set_up * rounds
            + v["publish_failures"].as_u64().unwrap_or(0),
        p50: f(&l["p50_ms"]),
        p90: f(&l["p90_ms"]),
        p99: f(&l["p99_ms"]),
        p999: f(&l["p99_9_ms"]),
        max: f(&l["max_ms"]),
        publishes: Some(rounds),
        from_send: Some((
            f(&v["latency_from_send"]["p50_ms"]),
            f(&v["latency_from_send"]["p99_ms"]),
        )),
        rss_per_listener_kib: v["rss_per_listener_kib"].as_f64(),
        restart: None,
    })
}

/// The numbers of a `grpc_config` or `http_config --report-file`.
pub fn outcome_from_tool(v: &Value) -> Option<Outcome> {
    let l = &v["latency"];
    let f = |x: &Value| x.as_f64().unwrap_or(f64::NAN);
    Some(Outcome {
        throughput: v["throughput"].as_f64()?,
        requests: v["requests"].as_u64()?,
        failures: v["errors"].as_u64()?,
        p50: f(&l["p50_ms"]),
        p90: f(&l["p90_ms"]),
        p99: f(&l["p99_ms"]),
        p999: f(&l["p99_9_ms"]),
        max: f(&l["max_ms"]),
        publishes: None,
        from_send: None,
        rss_per_listener_kib: None,
        restart: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target() -> Target {
        Target {
            host: "http://127.0.0.1:31000".into(),
            publish_host: "http://127.0.0.1:31010".into(),
            grpc: "127.0.0.1:32000".into(),
            all_hosts: vec!["127.0.0.1:31000".into(), "127.0.0.1:31010".into()],
            pids: vec![7, 8],
        }
    }

    const PARAMS: Params = Params {
        query_keys: 100,
        listen_keys: 10,
        listen_publish_rate: 20.0,
        fanout_listeners: 1001,
        fanout_rounds: 3,
        restart_configs: 1000,
        restart_versions: 2,
        restart_settle_seconds: 0,
    };

    #[test]
    fn names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
        }
        assert_eq!(Scenario::parse("nope"), None);
        assert!(!Scenario::Listen.saturates());
        assert!(!Scenario::Fanout.saturates());
        assert!(Scenario::Set2.saturates());
        assert_eq!(Scenario::Fanout.unit(), "notifications/s");
        assert!(!Scenario::Restart.saturates());
        assert!(!Scenario::Restart.notifies());
        assert_eq!(Scenario::Restart.binary(), None);
        assert_eq!(Scenario::Restart.unit(), "publishes/s");
        assert_eq!(Scenario::Set2.binary(), Some("http_config"));
        assert_eq!(Scenario::Listen.binary(), Some("http_config_listen"));
    }

    #[test]
    fn fanout_arguments_and_report() {
        let load = Load {
            users: 1001,
            rate: 0.0,
            seconds: 5,
        };
        let a = command_args(
            Scenario::Fanout,
            &target(),
            &load,
            &PARAMS,
            Path::new("r.json"),
            Path::new("n.json"),
        );
        assert_eq!(
            a.join(" "),
            "--hosts 127.0.0.1:31000,127.0.0.1:31010 --http-listeners 500 --grpc-listeners 501 \
             --rounds 3 --pid 7,8 --label fanout --report-file r.json"
        );
        let v = json!({"rounds": 3, "listeners": 10, "listeners_set_up": 9,
            "expected_notifications": 27, "missed": 1, "publish_failures": 0,
            "notifications_per_s": 5000.0, "rss_per_listener_kib": 12.5,
            "latency": {"p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0, "max_ms": 4.0},
            "latency_from_send": {"p50_ms": 2.0, "p99_ms": 5.0}});
        let o = outcome_from_fanout(&v).unwrap();
        assert_eq!(o.requests, 30);
        assert_eq!(o.failures, 4);
        assert_eq!(o.from_send, Some((2.0, 5.0)));
        assert_eq!(o.rss_per_listener_kib, Some(12.5));
        assert!(outcome_from_fanout(&json!({})).is_none());
    }

    #[test]
    fn request_and_listen_arguments() {
        let load = Load {
            users: 16,
            rate: 50.0,
            seconds: 10,
        };
        let a = command_args(
            Scenario::Query,
            &target(),
            &load,
            &PARAMS,
            Path::new("/w/r.json"),
            Path::new("/w/n.json"),
        );
        assert_eq!(
            a.join(" "),
            "--host http://127.0.0.1:31000 -c 16 -t 10s --mode query --keys 100 \
             --key-prefix loadtest-q- --rate 50 --label query --report-file /w/r.json"
        );
        let a = command_args(
            Scenario::Set2,
            &target(),
            &load,
            &PARAMS,
            Path::new("/w/r.json"),
            Path::new("/w/n.json"),
        );
        assert!(a
            .join(" ")
            .contains("--mode publish --keys 10000 --key-prefix loadtest2-"));
        let closed = Load { rate: 0.0, ..load };
        let a = command_args(
            Scenario::Listen,
            &target(),
            &closed,
            &PARAMS,
            Path::new("/w/r.json"),
            Path::new("/w/n.json"),
        );
        let line = a.join(" ");
        assert!(!line.contains("--rate-per-user"));
        assert!(line.contains("--publish-host http://127.0.0.1:31010"));
        assert!(line.contains("--notify-report /w/n.json"));
        assert!(line.contains("--publish-rate 20"));
    }

    #[test]
    fn grpc_arguments() {
        let load = Load {
            users: 8,
            rate: 0.0,
            seconds: 5,
        };
        let a = command_args(
            Scenario::GrpcPublish,
            &target(),
            &load,
            &PARAMS,
            Path::new("r.json"),
            Path::new("n.json"),
        );
        assert_eq!(
            a.join(" "),
            "--host 127.0.0.1:32000 -c 8 -t 5s --mode publish --keys 100 --rate 0 \
             --label grpc-publish --report-file r.json"
        );
    }

    #[test]
    fn reads_tool_reports() {
        let n = json!({"notifications_per_s": 950.5, "expected_notifications": 1000,
            "missed": 2, "publish_failures": 1, "publishes": 100,
            "notify_latency": {"p50_ms": 1.5, "p90_ms": 2.0, "p99_ms": 4.0, "max_ms": 9.0}});
        let o = outcome_from_notify(&n).unwrap();
        assert_eq!(o.failures, 3);
        assert_eq!(o.p99, 4.0);
        assert_eq!(o.publishes, Some(100));
        assert!(o.from_send.is_some());
        assert!((o.error_rate() - 0.003).abs() < 1e-12);
        let g = json!({"throughput": 100.0, "requests": 1000, "errors": 0,
            "latency": {"p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0, "max_ms": 4.0}});
        assert_eq!(outcome_from_tool(&g).unwrap().p90, 2.0);
        assert!(outcome_from_tool(&json!({})).is_none());
    }
}
