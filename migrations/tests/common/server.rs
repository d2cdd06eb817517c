//! Runs the real binaries: `tacos-migrate` and the `tacos` server (found beside the test
//! binary, else under `$CARGO_TARGET_DIR/debug` or `<workspace>/target/debug`; with
//! `cargo test -p tacos-migrate` alone run `cargo build --bin tacos` first).

use std::fs;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::md5_hex;

/// The password of the admin tacos creates at first start.
pub const ADMIN_PASSWORD: &str = "some-long-pass";
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

// ---- harness -------------------------------------------------------------------------

/// The `tacos` server binary (see the module docs).
pub fn tacos_bin() -> PathBuf {
    let mut tried = Vec::new();
    // <target>/<profile>/deps/<this test> -> <target>/<profile>/tacos
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
        "the tacos server binary is not built (looked at {tried:?}). `cargo test --workspace` \
         builds it before the tests run; with `cargo test -p tacos-migrate` run \
         `cargo build --bin tacos` first"
    );
}

/// A loopback port that was free a moment ago, never handed out twice in this process.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let mut handed_out = HANDED_OUT.lock().unwrap();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
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
        Ports {
            http: free_port(),
            grpc: free_port(),
            cluster: free_port(),
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

/// Runs `tacos-migrate` with `args`.
pub fn migrate(args: &[&str]) -> Output {
    clean_command(Path::new(env!("CARGO_BIN_EXE_tacos-migrate")))
        .args(args)
        .output()
        .expect("run tacos-migrate")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `tacos-migrate --from FROM --to TO` plus `extra` and the ports; must succeed.
pub fn migrate_ok(from: &Path, to: &Path, ports: Ports, extra: &[&str]) -> String {
    let (from, to) = (from.display().to_string(), to.display().to_string());
    let port_args = ports.args();
    let mut args = vec!["--from", &from, "--to", &to];
    args.extend(port_args.iter().map(String::as_str));
    args.extend(extra);
    let out = migrate(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "tacos-migrate failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

/// Migrates the fixture copy at `source` into `target` (new ports),
/// asserting the source is left as it was and the report holds each of
/// `wants`; returns the ports and the report.
pub fn migrate_fixture_copy(source: &Path, target: &Path, wants: &[&str]) -> (Ports, String) {
    let ports = Ports::new();
    let before = super::snapshot(source);
    let report = migrate_ok(source, target, ports, &[]);
    assert_eq!(before, super::snapshot(source), "the source was modified");
    for want in wants {
        assert!(report.contains(want), "missing {want:?} in:\n{report}");
    }
    (ports, report)
}

/// A running `tacos` server; killed (and reaped) when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub log: PathBuf,
    pub http: reqwest::blocking::Client,
    /// Sent as HTTP Basic auth by [`Server::get`].
    pub basic: Option<(String, String)>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts tacos on `data_dir` and waits until it answers `/health` with 200.
    pub fn start(data_dir: &Path, ports: Ports) -> Server {
        Server::start_with(data_dir, ports, &[])
    }

    /// [`Server::start`] with more flags for tacos.
    pub fn start_with(data_dir: &Path, ports: Ports, extra: &[&str]) -> Server {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("http client");
        let base = format!("http://127.0.0.1:{}", ports.http);
        Server::start_as(data_dir, ports, extra, base, http)
    }

    /// [`Server::start`] serving HTTPS with the PEM files in `pki` (see
    /// [`write_pki`]): `server.crt` for `localhost`, signed by `ca.crt`, which
    /// [`Server::http`] trusts. [`Server::base`] is `https://localhost:PORT`.
    pub fn start_tls(data_dir: &Path, ports: Ports, pki: &Path) -> Server {
        let ca = fs::read(pki.join("ca.crt")).expect("read ca.crt");
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(30))
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA PEM"))
            .build()
            .expect("https client");
        let (cert, key) = (pki.join("server.crt"), pki.join("server.key"));
        let args = [
            "--cert-file",
            cert.to_str().expect("utf-8 path"),
            "--key-file",
            key.to_str().expect("utf-8 path"),
        ];
        let base = format!("https://localhost:{}", ports.http);
        Server::start_as(data_dir, ports, &args, base, http)
    }

    fn start_as(
        data_dir: &Path,
        ports: Ports,
        extra: &[&str],
        base: String,
        http: reqwest::blocking::Client,
    ) -> Server {
        let log = data_dir.with_extension("server.log");
        let log_file = fs::File::create(&log).expect("create server log");
        let child = clean_command(&tacos_bin())
            .arg("--data-dir")
            .arg(data_dir)
            .args(ports.args())
            .args(["--admin-password", ADMIN_PASSWORD])
            .args(extra)
            .stdout(log_file.try_clone().expect("clone log file"))
            .stderr(log_file)
            .spawn()
            .expect("start tacos");
        let mut server = Server {
            child,
            base,
            log,
            http,
            basic: None,
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

    pub fn get(&self, path: &str, query: &[(&str, &str)]) -> reqwest::blocking::Response {
        let mut request = self.http.get(self.url(path)).query(query);
        if let Some((user, password)) = &self.basic {
            request = request.basic_auth(user, Some(password));
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

/// Writes into `dir` a CA (`ca.crt`), a server certificate signed by it for
/// `localhost` and `127.0.0.1` (`server.crt`, `server.key`), and another CA that
/// signed nothing (`other-ca.crt`), all PEM.
pub fn write_pki(dir: &Path) {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let now = time::OffsetDateTime::now_utc();
    let ca = |name: &str| {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = now - time::Duration::days(1);
        params.not_after = now + time::Duration::days(30);
        let cert = params.self_signed(&key).expect("CA cert");
        (cert.pem(), Issuer::new(params, key))
    };
    let (pem, issuer) = ca("migration test CA");
    fs::write(dir.join("ca.crt"), pem).expect("write ca.crt");
    fs::write(dir.join("other-ca.crt"), ca("another CA").0).expect("write other-ca.crt");
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("params");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(30);
    let cert = params.signed_by(&key, &issuer).expect("sign");
    fs::write(dir.join("server.crt"), cert.pem()).expect("write server.crt");
    fs::write(dir.join("server.key"), key.serialize_pem()).expect("write server.key");
}

pub fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// Asserts `server` serves the config with `content` (md5 in the Content-MD5 header).
pub fn assert_config(server: &Server, tenant: &str, group: &str, data_id: &str, content: &str) {
    let reply = server.get(
        "/nacos/v1/cs/configs",
        &[("dataId", data_id), ("group", group), ("tenant", tenant)],
    );
    let name = format!("{tenant}/{group}/{data_id}");
    assert_eq!(reply.status(), 200, "GET {name}");
    let md5 = reply
        .headers()
        .get("content-md5")
        .unwrap_or_else(|| panic!("no Content-MD5 for {name}"))
        .to_str()
        .expect("ascii md5")
        .to_string();
    let body = reply.text().expect("body");
    assert_eq!(body, content, "content of {name}");
    assert_eq!(md5, md5_hex(content), "Content-MD5 of {name}");
}

/// A config's history rows, newest first, as the server lists them.
pub fn history_rows(server: &Server, tenant: &str, group: &str, data_id: &str) -> Vec<Value> {
    let reply = server.get(
        "/nacos/v1/cs/history",
        &[
            ("search", "accurate"),
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
            ("pageNo", "1"),
            ("pageSize", "100"),
        ],
    );
    assert_eq!(reply.status(), 200, "history of {tenant}/{group}/{data_id}");
    let page: Value = reply.json().expect("history JSON");
    page["pageItems"].as_array().expect("pageItems").clone()
}

/// The history rows' md5s of a config, newest first, as the server lists them.
pub fn history_md5s(server: &Server, tenant: &str, group: &str, data_id: &str) -> Vec<String> {
    history_rows(server, tenant, group, data_id)
        .iter()
        .map(|row| {
            // Each row's md5 is its content's.
            assert_eq!(s(row, "md5"), md5_hex(s(row, "content")), "{row}");
            s(row, "md5").to_string()
        })
        .collect()
}

/// Asserts a migrated config's history is what an r-nacos fixture's
/// `expected.json` entry `c` says: the md5s and op users, newest first
/// (no op user: written through the open API). Returns the rows.
pub fn assert_rnacos_history(server: &Server, c: &Value) -> Vec<Value> {
    let (tenant, group, data_id) = (s(c, "tenant"), s(c, "group"), s(c, "dataId"));
    let rows = history_rows(server, tenant, group, data_id);
    let strings = |field: &str| -> Vec<Option<String>> {
        c[field]
            .as_array()
            .unwrap_or_else(|| panic!("{field} in {c}"))
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let md5s: Vec<Option<String>> = rows.iter().map(|r| Some(s(r, "md5").to_string())).collect();
    assert_eq!(
        md5s,
        strings("history_md5s"),
        "history of {tenant}/{group}/{data_id}"
    );
    let users: Vec<Option<String>> = rows
        .iter()
        .map(|r| {
            r["srcUser"]
                .as_str()
                .filter(|u| !u.is_empty())
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        users,
        strings("history_op_users"),
        "op users of {tenant}/{group}/{data_id}"
    );
    rows
}

/// Asserts every key an r-nacos fixture's `expected.json` lists as deleted
/// is absent (404).
pub fn assert_deleted_absent(server: &Server, expected: &Value) {
    for d in expected["deleted"].as_array().expect("deleted") {
        let query = [
            ("dataId", s(d, "dataId")),
            ("group", s(d, "group")),
            ("tenant", s(d, "tenant")),
        ];
        assert_eq!(
            server.get("/nacos/v1/cs/configs", &query).status(),
            404,
            "{d}"
        );
    }
}

/// Asserts the server lists every namespace of an r-nacos fixture's
/// `expected.json` with its name.
pub fn assert_namespaces_named(server: &Server, expected: &Value) {
    let reply = server.get("/nacos/v1/console/namespaces", &[]);
    assert_eq!(reply.status(), 200);
    let listed: Value = reply.json().expect("namespaces JSON");
    for ns in expected["namespaces"].as_array().expect("namespaces") {
        let found = listed["data"]
            .as_array()
            .expect("data")
            .iter()
            .find(|n| n["namespace"] == ns["id"])
            .unwrap_or_else(|| panic!("namespace {ns} not listed in {listed}"));
        assert_eq!(found["namespaceShowName"], ns["name"]);
    }
}
