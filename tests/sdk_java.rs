//! The official Nacos Java client (Maven `com.alibaba.nacos:nacos-client`,
//! 2.x and 3.x) against the real binary, through the driver in
//! `tests/java/` (built by `tests/java/prepare.sh`, which `scripts/test.sh`
//! runs; the versions are in `tests/java/nacos2/pom.xml` and
//! `tests/java/nacos3/pom.xml`).
//!
//! * `java_2x_client_*` / `java_3x_client_*`: one server with
//!   `--open-api-auth`, the driver's `cases` run: publish, get, listen,
//!   remove, CAS, a namespace, login, config type, two server addresses (one
//!   dead), the endpoint (address server), gray by tag through
//!   `nacos.app.conn.labels` and by the client's IP (beta), a config
//!   encryption plugin (the driver's own: none is on Maven Central), keys in
//!   non-ASCII scripts, (3.x) fuzzy watch, and last the client's snapshot
//!   while the server is down (the driver asks for the stop on stdout).
//!   The client's log must show no failed connection attempt.
//! * `java_*_moves_on_sigterm`: a 3-node cluster, the driver's `listen`
//!   process on all three; SIGTERM to the node it is connected to: the node
//!   sends `ConnectResetRequest`, the client moves at once and hears a change
//!   published right after. Times are printed, never asserted.
//! * `java_*_over_tls_with_login` / `java_*_over_mutual_tls`: the driver's
//!   `tls` run (publish, get, listen, remove) against a TLS-only server.
//!
//! The client derives the gRPC port as HTTP + 1000, so every server here
//! gets such a port pair.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use common::drivers::{java_driver, java_driver_classpath, JavaClient};
use common::tls::Pki;
use common::{free_port, free_port_pair, Server, ADMIN_PASSWORD, ADMIN_USER, SDK_GRPC_OFFSET};

/// Bound on one `cases` run of the driver.
const CASES_LIMIT: Duration = Duration::from_secs(150);
/// Bound on one `tls` run of the driver.
const TLS_LIMIT: Duration = Duration::from_secs(90);
/// Bound on the listener process starting and adding its listener.
const LISTENER_START: Duration = Duration::from_secs(60);
/// Bound on a listener event after a change.
const EVENT_WAIT: Duration = Duration::from_secs(30);

/// What the Java client logs when a connection attempt failed.
const CONNECT_ERRORS: [&str; 3] = [
    "Client don't receive server abilities table",
    "Handle server request exception",
    "Error to process server push response",
];

#[tokio::test(flavor = "multi_thread")]
async fn java_2x_client_publishes_listens_and_falls_back_to_its_snapshot() {
    run_cases(JavaClient::Nacos2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn java_3x_client_publishes_listens_fuzzy_watches_and_falls_back_to_its_snapshot() {
    run_cases(JavaClient::Nacos3).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn java_2x_client_moves_on_sigterm() {
    moves_on_sigterm(JavaClient::Nacos2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn java_3x_client_moves_on_sigterm() {
    moves_on_sigterm(JavaClient::Nacos3).await;
}

// ---- the driver ------------------------------------------------------------

/// A running driver process: its stdout lines arrive on `lines`; stdin
/// stays open (closing it ends a `listen` process); stderr goes to a file.
struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: UnboundedReceiver<(Instant, String)>,
    stderr_path: PathBuf,
    /// Every stdout line so far.
    seen: Vec<String>,
}

impl Driver {
    fn spawn(generation: JavaClient, work: &Path, args: &[&str]) -> Driver {
        use std::os::unix::process::CommandExt;
        let stderr_path = work.join("driver.err");
        let mut child = java_driver(generation, work)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("driver stderr file"))
            // Its own group, killed as a whole at the end.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run java (a JDK 17 on PATH, or JAVA=...): {e}"));
        let stdout = child.stdout.take().expect("driver stdout");
        let (tx, lines) = unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Driver {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr_path,
            seen: Vec::new(),
        }
    }

    /// The next stdout line (printed as it comes), or None at its end or
    /// after `within`.
    async fn next_line(&mut self, within: Duration) -> Option<(Instant, String)> {
        match tokio::time::timeout(within, self.lines.recv()).await {
            Ok(Some((at, line))) => {
                println!("java| {line}");
                self.seen.push(line.clone());
                Some((at, line))
            }
            _ => None,
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("driver stdin open");
        writeln!(stdin, "{line}").expect("writing to the driver");
        stdin.flush().expect("flushing the driver's stdin");
    }

    /// The end of the driver's stderr (its client log), for failures.
    fn stderr_tail(&self) -> String {
        let text = common::read_lossy(&self.stderr_path);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(150)..].join("\n")
    }

    fn stderr(&self) -> String {
        common::read_lossy(&self.stderr_path)
    }

    /// Waits (bounded) for the process to exit; kills its group after.
    fn finish(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        self.stdin.take();
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting on the driver") {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.kill();
        status
    }

    fn kill(&mut self) {
        // SAFETY: kill(2) on the process group this test created.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---- servers ---------------------------------------------------------------

/// Starts the binary on a port pair (gRPC = HTTP + 1000) with `extra`
/// arguments and waits until it is healthy; a start that lost its port in
/// the meantime is tried again on another pair.
async fn start_on_pair(tmp: &TempDir, extra: &[String]) -> Server {
    for attempt in 1..=3 {
        let port = free_port_pair();
        let grpc = (port + SDK_GRPC_OFFSET).to_string();
        let mut args = vec!["--grpc-port", grpc.as_str()];
        args.extend(extra.iter().map(String::as_str));
        let mut server = Server::spawn(tmp, port, &args);
        let deadline = Instant::now() + common::READY_TIMEOUT;
        loop {
            if !server.is_running() {
                let log = server.log();
                if attempt < 3 && log.contains("cannot listen on") {
                    break;
                }
                panic!("tacos exited while starting; log:\n{log}");
            }
            if matches!(server.api().health().await, Ok(r) if r.status == 200) {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "tacos on port {port} not healthy in time; log:\n{}",
                server.log()
            );
            tokio::time::sleep(common::POLL).await;
        }
    }
    unreachable!("three starts lost their port")
}

// ---- the cases run ---------------------------------------------------------

async fn run_cases(generation: JavaClient) {
    java_driver_classpath(generation);
    let tmp = common::temp_dir();
    let mut server = start_on_pair(&tmp, &["--open-api-auth".to_string()]).await;
    let addr = format!("127.0.0.1:{}", server.port());
    // A port nobody listens on, as the dead one of two addresses.
    let dead = free_port_pair().to_string();
    let started = Instant::now();
    let mut driver = Driver::spawn(
        generation,
        tmp.path(),
        &[
            "cases",
            "--server",
            &addr,
            "--dead-port",
            &dead,
            "--user",
            ADMIN_USER,
            "--password",
            ADMIN_PASSWORD,
        ],
    );
    let deadline = Instant::now() + CASES_LIMIT;
    let mut stopped_server = false;
    while let Some((_, line)) = driver
        .next_line(deadline.saturating_duration_since(Instant::now()))
        .await
    {
        if line == "NEED stop-servers" {
            let status = server.stop().await;
            assert!(status.success(), "tacos exited with {status} on SIGTERM");
            stopped_server = true;
            driver.say("stopped");
        }
    }
    let status = driver.finish(Duration::from_secs(10));
    println!(
        "java {} cases took {:?}",
        generation.module(),
        started.elapsed()
    );
    let out = driver.seen.join("\n");
    let client_log = driver.stderr();
    for needle in CONNECT_ERRORS {
        println!(
            "client log: {} x {needle:?}",
            client_log.matches(needle).count()
        );
    }
    let failed = !status.is_some_and(|s| s.success())
        || !driver.seen.iter().any(|l| l == "all ok")
        || driver.seen.iter().any(|l| l.starts_with("FAIL "));
    assert!(
        !failed,
        "the Java driver ({}) failed (exit {status:?}):\n{out}\n---- its client log: errors ----\n{}\n---- its stderr (tail) ----\n{}\n---- tacos log (tail) ----\n{}",
        generation.module(),
        client_log
            .lines()
            .filter(|l| l.contains("ERROR") || l.contains("] fail") || l.contains("WARN"))
            .filter(|l| !l.contains("Nacos Logging"))
            .take(60)
            .collect::<Vec<_>>()
            .join("\n"),
        driver.stderr_tail(),
        common::cluster::tail(&server.log(), 60)
    );
    assert!(stopped_server, "the snapshot case never asked for the stop");
    // No connection attempt to the live server failed (a push before the
    // client had taken the connection into use aborts it: docs/grpc.md).
    for needle in CONNECT_ERRORS {
        assert!(
            !client_log.contains(needle),
            "the Java client logged {needle:?}:\n{}",
            client_log
                .lines()
                .filter(|l| CONNECT_ERRORS.iter().any(|n| l.contains(n)))
                .take(20)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    for case in [
        "publish_get",
        "listen",
        "remove",
        "cas",
        "namespace",
        "auth",
        "config_type",
        "multi_address",
        "endpoint",
        "gray_tag",
        "gray_beta",
        "encryption",
        "unicode_keys",
        "snapshot",
    ] {
        assert!(
            driver
                .seen
                .iter()
                .any(|l| l.starts_with(&format!("ok {case} "))),
            "case {case} did not run:\n{out}"
        );
    }
    if matches!(generation, JavaClient::Nacos3) {
        assert!(
            driver.seen.iter().any(|l| l.starts_with("ok fuzzy_watch ")),
            "case fuzzy_watch did not run:\n{out}"
        );
    }
}

// ---- over TLS --------------------------------------------------------------

/// Over TLS with login (--open-api-auth): the driver's `tls` command
/// (tests/java/src/main/java/tacos/sdk/TlsMain.java, which names every
/// setting and where the client reads it) publishes, reads, listens and
/// removes. The client verifies the server's certificate on gRPC
/// (`nacos.remote.client.rpc.tls.trustAll=false` with the CA) and on the
/// login over HTTPS (`tls.client.authServer`). The server runs TLS-only;
/// plaintext to either port must fail.
#[tokio::test(flavor = "multi_thread")]
async fn java_2x_client_over_tls_with_login() {
    run_tls(JavaClient::Nacos2, false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn java_3x_client_over_tls_with_login() {
    run_tls(JavaClient::Nacos3, false).await;
}

/// Mutual TLS (--client-cert-auth): `nacos.remote.client.rpc.tls.mutualAuth`
/// with `certChainFile` / `certPrivateKey`. Without login: the client's
/// HTTP calls (the login) have no way to present a certificate (TlsMain
/// says why), so a server requiring one refuses them.
#[tokio::test(flavor = "multi_thread")]
async fn java_2x_client_over_mutual_tls() {
    run_tls(JavaClient::Nacos2, true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn java_3x_client_over_mutual_tls() {
    run_tls(JavaClient::Nacos3, true).await;
}

async fn run_tls(generation: JavaClient, mutual: bool) {
    java_driver_classpath(generation);
    let pki = Pki::new();
    let tmp = common::temp_dir();
    let mut server_args = if mutual {
        pki.mutual_args()
    } else {
        pki.server_args()
    };
    if !mutual {
        server_args.push("--open-api-auth".into());
    }
    let server = start_on_pair(&tmp, &server_args).await;
    common::tls::assert_plaintext_refused(server.port(), Some(server.port() + SDK_GRPC_OFFSET))
        .await;
    let addr = format!("127.0.0.1:{}", server.port());
    let [ca, cert, key] =
        ["ca.crt", "client.crt", "client.key"].map(|f| pki.path(f).display().to_string());
    let mut args = vec!["tls", "--server", &addr, "--ca", &ca];
    if mutual {
        args.extend(["--cert", &cert, "--key", &key]);
    } else {
        args.extend(["--user", ADMIN_USER, "--password", ADMIN_PASSWORD]);
    }
    let mut driver = Driver::spawn(generation, tmp.path(), &args);
    let deadline = Instant::now() + TLS_LIMIT;
    while driver
        .next_line(deadline.saturating_duration_since(Instant::now()))
        .await
        .is_some()
    {}
    let status = driver.finish(Duration::from_secs(10));
    let out = driver.seen.join("\n");
    assert!(
        status.is_some_and(|s| s.success()) && driver.seen.iter().any(|l| l == "all ok"),
        "the Java driver ({}) over TLS failed (exit {status:?}):\n{out}\n---- its stderr (tail) ----\n{}\n---- tacos log (tail) ----\n{}",
        generation.module(),
        driver.stderr_tail(),
        common::cluster::tail(&server.log(), 40)
    );
    for step in ["connect", "publish_get", "listen", "remove"] {
        assert!(
            driver
                .seen
                .iter()
                .any(|l| l.starts_with(&format!("ok {step} "))),
            "step {step} did not run:\n{out}"
        );
    }
}

// ---- SIGTERM of the client's node ------------------------------------------

/// One cluster at a time in this test binary (three debug nodes each).
static CLUSTER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Node {
    _dir: TempDir,
    server: Server,
}

/// Three nodes on port pairs: node 1 initializes, 2 and 3 join; returns
/// once all three are voters and healthy.
async fn start_cluster() -> Vec<Node> {
    let cluster_port = free_port();
    let first_dir = common::temp_dir();
    let first = start_on_pair(
        &first_dir,
        &[
            "--node-id".into(),
            "1".into(),
            "--cluster-port".into(),
            cluster_port.to_string(),
        ],
    )
    .await;
    let mut nodes = vec![Node {
        _dir: first_dir,
        server: first,
    }];
    for id in 2..=3u64 {
        let dir = common::temp_dir();
        let server = start_on_pair(
            &dir,
            &[
                "--node-id".into(),
                id.to_string(),
                "--join".into(),
                format!("127.0.0.1:{cluster_port}"),
            ],
        )
        .await;
        nodes.push(Node { _dir: dir, server });
    }
    let api = nodes[0].server.api();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let members = api.get_path("/tacos/v1/admin/cluster/members").await;
        if let Ok(reply) = &members {
            if reply.status == 200
                && common::cluster::member_ids(&reply.json()["voters"]) == vec![1, 2, 3]
            {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not reach three voters: {members:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    nodes
}

/// Publishes through the first live node that takes it (a stopped node
/// may have been the leader: the others elect a new one).
async fn publish_somewhere(nodes: &mut [Node], data_id: &str, content: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for node in nodes.iter_mut() {
            if !node.server.is_running() {
                continue;
            }
            if let Ok(response) = node
                .server
                .api()
                .try_publish(data_id, "DEFAULT_GROUP", "", content)
                .await
            {
                if let Ok(reply) = common::Reply::read(response).await {
                    if reply.status == 200 && reply.body == "true" {
                        return;
                    }
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "no live node took the publish of {content}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `asked=` and `moved=` counts of a node's drain log line.
fn drain_counts(log: &str) -> Option<(u64, u64)> {
    let line = log
        .lines()
        .find(|l| l.contains("gRPC clients moved to other nodes"))?;
    let count = |name: &str| -> Option<u64> {
        let at = line.find(&format!("{name}="))? + name.len() + 1;
        line[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some((count("asked")?, count("moved")?))
}

async fn moves_on_sigterm(generation: JavaClient) {
    java_driver_classpath(generation);
    let _serial = CLUSTER.lock().await;
    let mut nodes = start_cluster().await;
    let work = common::temp_dir();
    let servers = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.server.port()))
        .collect::<Vec<_>>()
        .join(",");
    let key = format!("java-{}-sigterm.properties", generation.module());
    let work_dir = work.path().to_string_lossy().into_owned();
    let mut driver = Driver::spawn(
        generation,
        work.path(),
        &["listen", &servers, &key, &work_dir],
    );
    // READY, and the server it is on.
    let mut connected: Option<String> = None;
    let mut ready = false;
    let deadline = Instant::now() + LISTENER_START;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some((_, line)) = driver.next_line(left).await else {
            panic!(
                "the Java listener did not start; stderr:\n{}",
                driver.stderr_tail()
            );
        };
        if let Some(at) = line.strip_prefix("CONNECTED ") {
            connected = Some(at.to_string());
        }
        ready |= line == "READY";
        if ready && connected.is_some() {
            break;
        }
    }
    publish_somewhere(&mut nodes, &key, "before=1").await;
    wait_fired(&mut driver, "before=1", &mut connected).await;
    let on = connected.clone().expect("connected somewhere");
    let victim = nodes
        .iter()
        .position(|n| on == format!("127.0.0.1:{}", n.server.port()))
        .unwrap_or_else(|| panic!("the client is on {on}, not one of {servers}"));
    println!(
        "the Java client is on node {} ({on}); SIGTERM to it",
        victim + 1
    );

    // SIGTERM, without waiting: the node drains while the client moves.
    let pid = nodes[victim].server.pid() as libc::pid_t;
    let sent = Instant::now();
    // SAFETY: kill(2) on a child of this process that has not been reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    publish_somewhere(&mut nodes, &key, "after=1").await;
    let published = sent.elapsed();
    let mut moved_at: Option<Duration> = None;
    let mut fired_at: Option<Duration> = None;
    let mut exited_at: Option<Duration> = None;
    // Until the client moved, heard the change and the node exited (or the
    // bound): lines as they come, the node's exit polled in between.
    let deadline = Instant::now() + EVENT_WAIT;
    while (moved_at.is_none() || fired_at.is_none() || exited_at.is_none())
        && Instant::now() < deadline
    {
        if exited_at.is_none() && !nodes[victim].server.is_running() {
            exited_at = Some(sent.elapsed());
        }
        let Some((at, line)) = driver.next_line(Duration::from_millis(10)).await else {
            continue;
        };
        match line.strip_prefix("CONNECTED ") {
            Some(to) if to != on && moved_at.is_none() => {
                moved_at = Some(at.duration_since(sent));
                connected = Some(to.to_string());
            }
            _ => {}
        }
        if line == "FIRED after=1" && fired_at.is_none() {
            fired_at = Some(at.duration_since(sent));
        }
    }
    // The node exits after its drain (bounded by its --drain-seconds).
    let exit_deadline = Instant::now() + common::STOP_TIMEOUT;
    while exited_at.is_none() {
        if !nodes[victim].server.is_running() {
            exited_at = Some(sent.elapsed());
        }
        assert!(
            Instant::now() < exit_deadline,
            "node {} did not exit after SIGTERM",
            victim + 1
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let node_log = nodes[victim].server.log();
    let client_log = driver.stderr();
    println!(
        "java {}: SIGTERM -> connected to {} after {moved_at:?}; change published {published:?} \
         after the SIGTERM, heard after {fired_at:?}; the node exited after {exited_at:?}",
        generation.module(),
        connected.as_deref().unwrap_or("?"),
    );
    assert!(
        moved_at.is_some() && fired_at.is_some(),
        "the Java client did not move ({moved_at:?}) or did not hear the change ({fired_at:?}); \
         stdout:\n{}\nstderr (tail):\n{}\nnode log (tail):\n{}",
        driver.seen.join("\n"),
        driver.stderr_tail(),
        common::cluster::tail(&node_log, 40)
    );
    // The node asked its one client to move and saw it go before it exited,
    // and the client says it was asked (RpcClient logs every server push).
    let counts = drain_counts(&node_log);
    assert!(
        matches!(counts, Some((asked, moved)) if asked >= 1 && moved == asked),
        "node {} did not see its client move on ConnectResetRequest (asked, moved = {counts:?}); log:\n{}",
        victim + 1,
        common::cluster::tail(&node_log, 40)
    );
    assert!(
        client_log.contains("ConnectResetRequest"),
        "the Java client's log does not mention ConnectResetRequest:\n{}",
        driver.stderr_tail()
    );
    driver.finish(Duration::from_secs(10));
}

/// Waits for `FIRED content`, noting CONNECTED lines on the way.
async fn wait_fired(driver: &mut Driver, content: &str, connected: &mut Option<String>) {
    let want = format!("FIRED {content}");
    let deadline = Instant::now() + EVENT_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some((_, line)) = driver.next_line(left).await else {
            panic!(
                "the Java listener did not hear {content}; stderr:\n{}",
                driver.stderr_tail()
            );
        };
        if let Some(at) = line.strip_prefix("CONNECTED ") {
            *connected = Some(at.to_string());
        }
        if line == want {
            return;
        }
    }
}
