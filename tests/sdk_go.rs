//! The official Go SDK (`github.com/nacos-group/nacos-sdk-go/v2` v2.3.2,
//! gRPC) against the real binary, through the driver in `tests/go/`
//! (`tests/go/prepare.sh` builds it into `tests/go/bin/tacos-go-sdk`;
//! `scripts/test.sh` runs that script).
//!
//! * the config cases on one node: publish, get, listen (each change heard
//!   once), remove, CAS, a namespace, config types, search, two server
//!   addresses one of them dead, the address server (`endpoint`), a tag
//!   gray and a beta, the encrypted data key; non-ASCII keys; the same with
//!   `--open-api-auth` (username and password, and a wrong password
//!   refused); publish, get, listen and remove over TLS and over mutual
//!   TLS, logged in;
//! * the SDK's cache dir answering reads while every server is down;
//! * a 3-node cluster: the node the client is connected to stops (SIGTERM:
//!   it sends `ConnectResetRequest`), the client moves to another node and
//!   hears a change published right after (times printed, not asserted).
//!
//! What each case checks is documented in the driver (`tests/go/*.go`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::cluster::{Cluster, GROUP};
use common::tls::Pki;
use common::{free_port, NacosApi, Server};

/// Bound on one driver run (its cases wait 20 s at most for a listener).
const RUN_LIMIT: Duration = Duration::from_secs(100);
/// How long the listener may take to hear a change (its SDK re-listens
/// every 5 s; a push is at once).
const NOTIFY_WAIT: Duration = Duration::from_secs(30);
/// How long the client may take to reach another node after its node
/// stopped.
const MOVE_WAIT: Duration = Duration::from_secs(60);

/// The driver's path (`common::drivers::go_driver_path`: panics, naming
/// prepare.sh, if it is missing or older than the module's sources).
fn driver() -> std::path::PathBuf {
    common::drivers::go_driver_path()
}

/// A running driver: its stdout lines as they come, its stdin to answer.
struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr_path: PathBuf,
}

impl Driver {
    fn spawn(args: &[&str], dir: &Path) -> Driver {
        use std::os::unix::process::CommandExt;
        let stderr_path = dir.join("driver.err");
        let mut child = Command::new(driver())
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run the Go SDK driver: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Driver {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            stderr_path,
        }
    }

    /// The next line, `None` after `limit` or at the end of its output.
    fn next_line(&mut self, limit: Duration) -> Option<String> {
        let line = self.lines.recv_timeout(limit).ok()?;
        println!("go: {line}");
        self.seen.push(line.clone());
        Some(line)
    }

    /// Reads lines until one equals `want`; panics after `limit`.
    async fn expect(&mut self, want: &str, limit: Duration) -> Instant {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = tokio::task::block_in_place(|| self.next_line(left));
            match line {
                Some(line) if line == want => return Instant::now(),
                Some(_) => continue,
                None => panic!(
                    "the Go driver did not print {want:?} within {limit:?}; its output:\n{}\nstderr:\n{}",
                    self.seen.join("\n"),
                    self.stderr()
                ),
            }
        }
    }

    fn answer(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("writing to the driver");
    }

    /// Closes stdin and reads the rest of the output until the driver
    /// exits (bounded by `limit`).
    async fn finish(&mut self, limit: Duration) -> ExitStatus {
        self.stdin.take();
        let deadline = Instant::now() + limit;
        tokio::task::block_in_place(|| {
            while let Some(_line) =
                self.next_line(deadline.saturating_duration_since(Instant::now()))
            {}
        });
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting on the driver") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the Go driver did not exit within {limit:?}; its output:\n{}\nstderr:\n{}",
                self.seen.join("\n"),
                self.stderr()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Its stderr, without the SDK's log lines (those go to its log dir).
    fn stderr(&self) -> String {
        common::read_lossy(&self.stderr_path)
    }

    /// Asserts the run passed: exit status 0 and `all ok` last.
    fn assert_all_ok(&self, status: ExitStatus) {
        assert!(
            status.success() && self.seen.last().map(String::as_str) == Some("all ok"),
            "the Go SDK run failed ({status}):\n{}\nstderr:\n{}",
            self.seen.join("\n"),
            self.stderr()
        );
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Runs `cases` with `args` to its end and asserts every case passed.
async fn run_cases(args: &[&str], dir: &Path) {
    let started = Instant::now();
    let mut driver = Driver::spawn(args, dir);
    let status = driver.finish(RUN_LIMIT).await;
    println!("driver ran {:?}", started.elapsed());
    driver.assert_all_ok(status);
}

/// A server whose gRPC port is its HTTP port + 1000, as the SDK assumes for
/// addresses it gets from the address server.
async fn start_with_grpc_offset(tmp: &tempfile::TempDir, extra: &[&str]) -> Server {
    for _ in 0..5 {
        let port = free_port();
        let grpc = port + 1000;
        if std::net::TcpListener::bind(("127.0.0.1", grpc)).is_err() {
            continue;
        }
        let grpc = grpc.to_string();
        let mut args = vec!["--grpc-port", grpc.as_str()];
        args.extend_from_slice(extra);
        let mut server = Server::spawn(tmp, port, &args);
        let deadline = Instant::now() + common::READY_TIMEOUT;
        loop {
            if !server.is_running() {
                let log = server.log();
                assert!(
                    log.contains("cannot listen on"),
                    "tacos exited while starting:\n{log}"
                );
                break;
            }
            if matches!(server.api().health().await, Ok(r) if r.status == 200) {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "tacos not healthy in time:\n{}",
                server.log()
            );
            tokio::time::sleep(common::POLL).await;
        }
    }
    panic!("no free port pair (P, P + 1000) for tacos");
}

fn dir_arg(tmp: &tempfile::TempDir) -> String {
    tmp.path().join("go").to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_config_cases() {
    driver();
    let tmp = common::temp_dir();
    let server = start_with_grpc_offset(&tmp, &[]).await;
    let addr = format!("127.0.0.1:{}", server.port());
    let dead = format!("127.0.0.1:{}:{}", free_port(), free_port());
    let work = dir_arg(&tmp);
    run_cases(
        &[
            "cases",
            "-server",
            &addr,
            "-dead",
            &dead,
            "-endpoint",
            &addr,
            "-admin-password",
            common::ADMIN_PASSWORD,
            "-skip",
            "auth-refused,non-ascii-keys",
            "-workdir",
            &work,
        ],
        tmp.path(),
    )
    .await;
}

/// Keys in other scripts (`订单服务配置.yaml` in `支付组`, `é.yaml`), as
/// Java Nacos' `ParamUtils.isValid` accepts them. The SDK checks nothing
/// on its side but that dataId and content are not empty.
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_non_ascii_keys() {
    driver();
    let tmp = common::temp_dir();
    let server = start_with_grpc_offset(&tmp, &[]).await;
    let addr = format!("127.0.0.1:{}", server.port());
    let work = dir_arg(&tmp);
    run_cases(
        &[
            "cases",
            "-server",
            &addr,
            "-admin-password",
            common::ADMIN_PASSWORD,
            "-only",
            "non-ascii-keys",
            "-workdir",
            &work,
        ],
        tmp.path(),
    )
    .await;
}

/// With --open-api-auth the SDK logs in (`/nacos/v1/auth/users/login`) with
/// ClientConfig.Username/Password and sends the token with each gRPC
/// request; a wrong password is refused.
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_with_open_api_auth() {
    driver();
    let tmp = common::temp_dir();
    let server = start_with_grpc_offset(&tmp, &["--open-api-auth"]).await;
    let addr = format!("127.0.0.1:{}", server.port());
    let work = dir_arg(&tmp);
    run_cases(
        &[
            "cases",
            "-server",
            &addr,
            "-user",
            common::ADMIN_USER,
            "-password",
            common::ADMIN_PASSWORD,
            "-admin-password",
            common::ADMIN_PASSWORD,
            "-only",
            "publish-get,listen,remove,cas,namespace,config-type,search,auth-refused",
            "-workdir",
            &work,
        ],
        tmp.path(),
    )
    .await;
}

/// Over TLS, with login: the driver's `-tls-ca` sets the SDK's
/// `ClientConfig.TLSCfg` (`Appointed`, `Enable`, `CaFile`) and
/// `ServerConfig.Scheme = "https"` (the login URL); tests/go/tls.go says
/// what the SDK does with them. The SDK verifies the server's certificate
/// on both ports (its CA only for HTTP, the system roots plus the CA for
/// gRPC). The server runs TLS-only, and plaintext to either port must fail.
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_over_tls_with_login() {
    let pki = Pki::new();
    let ca = common::tls::path_arg(&pki.ca());
    run_tls_cases(pki.server_args(), &["-tls-ca", &ca]).await;
}

/// Mutual TLS (--client-cert-auth): `TLSCfg.CertFile` / `KeyFile` as
/// well; the server refuses a client without a certificate, so passing
/// shows the SDK presented it (on gRPC and on the login over HTTPS).
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_over_mutual_tls_with_login() {
    let pki = Pki::new();
    let files = ["ca.crt", "client.crt", "client.key"].map(|f| common::tls::path_arg(&pki.path(f)));
    run_tls_cases(
        pki.mutual_args(),
        &[
            "-tls-ca",
            &files[0],
            "-tls-cert",
            &files[1],
            "-tls-key",
            &files[2],
        ],
    )
    .await;
}

/// `publish-get`, `listen` and `remove` (the listener hears each change
/// once), logged in, against a server started with `server_args` and
/// `--open-api-auth`, the driver given `tls`.
async fn run_tls_cases(mut server_args: Vec<String>, tls: &[&str]) {
    driver();
    let tmp = common::temp_dir();
    let grpc_port = free_port();
    server_args.extend([
        "--open-api-auth".to_string(),
        "--grpc-port".to_string(),
        grpc_port.to_string(),
    ]);
    let server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    let server = Server::start_with_args(&tmp, &server_args).await;
    common::tls::assert_plaintext_refused(server.port(), Some(grpc_port)).await;
    let addr = format!("127.0.0.1:{}:{grpc_port}", server.port());
    let work = dir_arg(&tmp);
    let mut args = vec![
        "cases",
        "-server",
        &addr,
        "-user",
        common::ADMIN_USER,
        "-password",
        common::ADMIN_PASSWORD,
        "-admin-password",
        common::ADMIN_PASSWORD,
        "-only",
        "publish-get,listen,remove",
        "-workdir",
        &work,
    ];
    args.extend_from_slice(tls);
    run_cases(&args, tmp.path()).await;
}

/// After a read, every server stops; the SDK's cache dir still answers.
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_cache_dir_answers_while_every_server_is_down() {
    driver();
    let tmp = common::temp_dir();
    let mut server = start_with_grpc_offset(&tmp, &[]).await;
    let addr = format!("127.0.0.1:{}", server.port());
    let work = dir_arg(&tmp);
    let mut driver = Driver::spawn(&["cache", "-server", &addr, "-workdir", &work], tmp.path());
    driver.expect("WAIT stop-all", RUN_LIMIT).await;
    let status = server.stop().await;
    assert!(status.success(), "tacos exited with {status}");
    driver.answer("stopped");
    let status = driver.finish(RUN_LIMIT).await;
    driver.assert_all_ok(status);
}

/// A 3-node cluster; the Go client listens (the driver's `listen` mode,
/// which tests/failover.rs runs too). The node it is connected to gets
/// SIGTERM and sends it `ConnectResetRequest`; the client reaches another
/// node and hears a change published right after the node stopped.
#[tokio::test(flavor = "multi_thread")]
async fn go_sdk_listener_moves_to_another_node_on_sigterm() {
    driver();
    let mut cluster = Cluster::start(3, &[]).await;
    let servers: Vec<String> = (0..3)
        .map(|i| {
            format!(
                "127.0.0.1:{}:{}",
                cluster.http_port(i),
                cluster.grpc_port(i)
            )
        })
        .collect();
    let servers = servers.join(",");
    let key = "go-sigterm.properties";
    let work = cluster.tmp().path().join("go");
    std::fs::create_dir_all(&work).expect("making the driver's dir");
    let mut driver = Driver::spawn(&["listen", &servers, key, &work.to_string_lossy()], &work);
    driver.expect("READY", Duration::from_secs(60)).await;

    publish_anywhere(&cluster, &[0, 1, 2], key, "before-stop").await;
    driver.expect("FIRED before-stop", NOTIFY_WAIT).await;
    let from = connected_node(&cluster, &[0, 1, 2], Duration::from_secs(20))
        .await
        .expect("no node holds the Go client's listen");
    let others: Vec<usize> = (0..3).filter(|&i| i != from).collect();
    println!("the Go client listens on node {}", cluster.id(from));

    let sent = Instant::now();
    let watchers: Vec<(usize, NacosApi)> = others.iter().map(|&i| (i, cluster.api(i))).collect();
    let (_, moved) = tokio::join!(cluster.stop(from), async move {
        let deadline = Instant::now() + MOVE_WAIT;
        loop {
            for (i, api) in &watchers {
                if listens(api).await {
                    return Some((*i, Instant::now()));
                }
            }
            if Instant::now() > deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let stopped = sent.elapsed();
    let log = cluster.log(from);
    let drain = log
        .lines()
        .find(|l| l.contains("gRPC clients moved to other nodes"))
        .unwrap_or("(no drain line in the log)")
        .to_string();
    let (to, moved_at) = moved.unwrap_or_else(|| {
        panic!(
            "the Go client reached no other node within {MOVE_WAIT:?} of SIGTERM to node {}; its drain: {drain}",
            cluster.id(from)
        )
    });
    println!(
        "SIGTERM to node {}: it exited after {stopped:?}; the Go client listened on node {} {:?} after the signal",
        cluster.id(from),
        cluster.id(to),
        moved_at - sent
    );
    println!("node {}'s drain: {drain}", cluster.id(from));

    let published = publish_anywhere(&cluster, &others, key, "after-stop").await;
    let heard = driver.expect("FIRED after-stop", NOTIFY_WAIT).await;
    println!(
        "a change published after the stop reached the listener in {:?}",
        heard - published
    );
    let status = driver.finish(Duration::from_secs(20)).await;
    assert!(status.success(), "the listen driver exited with {status}");
    let fired: Vec<&String> = driver
        .seen
        .iter()
        .filter(|l| l.starts_with("FIRED "))
        .collect();
    assert_eq!(
        fired,
        ["FIRED before-stop", "FIRED after-stop"],
        "the listener fired once per change"
    );
}

/// Whether a node holds a listened gRPC key (the Go client's).
async fn listens(api: &NacosApi) -> bool {
    let Ok(reply) = api.get_path("/tacos/v1/admin/listeners").await else {
        return false;
    };
    reply.status == 200 && reply.json()["grpcKeys"].as_u64().unwrap_or(0) >= 1
}

/// The node among `nodes` holding the client's listen, waiting up to
/// `limit` (the SDK listens from a 5 s loop).
async fn connected_node(cluster: &Cluster, nodes: &[usize], limit: Duration) -> Option<usize> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        for &i in nodes {
            if listens(&cluster.api(i)).await {
                return Some(i);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Publishes through the first of `nodes` that accepts (a stop may cost an
/// election); returns when it was accepted.
async fn publish_anywhere(cluster: &Cluster, nodes: &[usize], key: &str, content: &str) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        for &i in nodes {
            match cluster.api(i).try_publish(key, GROUP, "", content).await {
                Ok(response) => {
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    if status == 200 && body == "true" {
                        return Instant::now();
                    }
                    last = format!("node {}: {status} {body}", cluster.id(i));
                }
                Err(e) => last = format!("node {}: {e}", cluster.id(i)),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no node accepted the publish of {content:?} within 30 s; last: {last}");
}
