//! Runs the `tacos-migrate` binary and the real `tacos` server for the Java Nacos (MySQL)
//! tests.
//!
//! The `tacos` binary is this workspace's, found beside the test binary
//! (`<target dir>/<profile>/tacos`), else under `$CARGO_TARGET_DIR/debug` or
//! `<workspace>/target/debug`. `cargo test --workspace` builds it before running any
//! test; with `cargo test -p tacos-migrate` alone run `cargo build --bin tacos` first.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::mariadb::free_port;

const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The `tacos` server binary (see the module docs).
pub fn tacos_bin() -> PathBuf {
    let mut tried = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(profile_dir) = exe.parent().and_then(Path::parent) {
            tried.push(profile_dir.join("tacos"));
        }
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        tried.push(PathBuf::from(dir).join("debug/tacos"));
    }
    tried.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/tacos"));
    if let Some(found) = tried.iter().find(|p| p.is_file()) {
        return found.clone();
    }
    panic!(
        "the tacos server binary is not built (looked at {tried:?}); with \
         `cargo test -p tacos-migrate` run `cargo build --bin tacos` first"
    );
}

/// A command without the `TACOS_*` variables of the environment running the tests.
pub fn clean_command(bin: &Path) -> Command {
    let mut command = Command::new(bin);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("TACOS_") {
            command.env_remove(name);
        }
    }
    command.env("NO_COLOR", "1").stdin(Stdio::null());
    command
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Ports of one node.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    pub http: u16,
    pub grpc: u16,
    pub cluster: u16,
}

impl Ports {
    pub fn new() -> Ports {
        let http = free_port();
        let mut grpc = free_port();
        while grpc == http {
            grpc = free_port();
        }
        let mut cluster = free_port();
        while cluster == http || cluster == grpc {
            cluster = free_port();
        }
        Ports {
            http,
            grpc,
            cluster,
        }
    }

    pub fn args(&self) -> Vec<String> {
        vec![
            "--http-port".into(),
            self.http.to_string(),
            "--grpc-port".into(),
            self.grpc.to_string(),
            "--cluster-port".into(),
            self.cluster.to_string(),
        ]
    }
}

/// Runs `tacos-migrate` with `args`.
pub fn migrate(args: &[&str]) -> Output {
    clean_command(Path::new(env!("CARGO_BIN_EXE_tacos-migrate")))
        .args(args)
        .output()
        .expect("run tacos-migrate")
}

/// A running `tacos` server; killed (and reaped) when dropped.
pub struct Server {
    child: Child,
    base: String,
    log: PathBuf,
    pub http: reqwest::blocking::Client,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts tacos on `data_dir` with `extra` flags and waits until `/health` says 200.
    pub fn start(data_dir: &Path, ports: Ports, extra: &[&str]) -> Server {
        let log = data_dir.with_extension("server.log");
        let log_file = fs::File::create(&log).expect("create server log");
        let child = clean_command(&tacos_bin())
            .arg("--data-dir")
            .arg(data_dir)
            .args(ports.args())
            .args(extra)
            .stdout(log_file.try_clone().expect("clone log file"))
            .stderr(log_file)
            .spawn()
            .expect("start tacos");
        let mut server = Server {
            child,
            base: format!("http://127.0.0.1:{}", ports.http),
            log,
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait().expect("try_wait") {
                panic!(
                    "tacos exited ({status}) while starting; log:\n{}",
                    server.log_text()
                );
            }
            let health = server.http.get(server.url("/health")).send();
            if matches!(&health, Ok(r) if r.status() == 200) {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "tacos not healthy within {READY_TIMEOUT:?} (last: {health:?}); log:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn log_text(&self) -> String {
        fs::read(&self.log).map(|b| text(&b)).unwrap_or_default()
    }

    /// `GET path?query` with `token` (as `accessToken`) when given.
    pub fn get(
        &self,
        path: &str,
        token: Option<&str>,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> reqwest::blocking::Response {
        let mut request = self.http.get(self.url(path)).query(query);
        if let Some(token) = token {
            request = request.query(&[("accessToken", token)]);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// `POST /nacos/v1/auth/login`: (status, body).
    pub fn login(&self, username: &str, password: &str) -> (u16, String) {
        let reply = self
            .http
            .post(self.url("/nacos/v1/auth/login"))
            .form(&[("username", username), ("password", password)])
            .send()
            .expect("login");
        let status = reply.status().as_u16();
        (status, reply.text().expect("login body"))
    }
}
