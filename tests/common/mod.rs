//! A small harness for integration tests that run the real `tacos` binary.
//!
//! * [`free_port`] picks a loopback port nobody is listening on.
//! * [`Server`] runs the binary on a data dir inside a test-owned
//!   [`TempDir`], logs its stdout+stderr to a file in that temp dir, waits
//!   until it answers, and stops it with SIGTERM ([`Server::stop`]) or
//!   SIGKILL ([`Server::kill9`]); dropping it kills a process still running.
//! * [`NacosApi`] is a cheap, cloneable client for the Nacos HTTP config API
//!   of one server (move it into tasks for concurrent load), with the
//!   response shapes ([`Page`], [`ConfigItem`], [`HistoryItem`]).
//! * [`run_to_exit`] runs the binary when it is expected to exit by itself
//!   (bad settings, data dir in use) and returns its status and output.
//!
//! Each test binary uses only part of this module.
#![allow(dead_code)]

pub mod cluster;
pub mod drivers;
pub mod grpc;
pub mod proxy;
pub mod reference;
pub mod tls;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::fs::File;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use tempfile::TempDir;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_tacos");
/// How long a starting server may take to answer HTTP.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a server may take to exit after SIGTERM.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a process expected to exit by itself may run.
pub const EXIT_TIMEOUT: Duration = Duration::from_secs(30);
/// Poll interval while waiting.
pub const POLL: Duration = Duration::from_millis(50);
/// Bound on one HTTP request made by the harness.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A fresh temp dir for one test (removed when dropped).
pub fn temp_dir() -> TempDir {
    tempfile::Builder::new()
        .prefix("tacos-it-")
        .tempdir()
        .expect("creating a temp dir")
}

/// The data dir the harness uses inside a test's temp dir.
pub fn data_dir(tmp: &TempDir) -> PathBuf {
    tmp.path().join("data")
}

/// A loopback port that was free a moment ago, taken from below the
/// kernel's ephemeral range: a port in that range can be taken as the local
/// end of any outgoing connection (the nodes', the SDKs', ours) while a test
/// has a node stopped, and the node could then not restart on its port.
/// Ports are never handed out twice within one test process, so parallel
/// tests do not collide.
pub fn free_port() -> u16 {
    static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    static STATE: Mutex<u64> = Mutex::new(0);
    const LOWEST: u16 = 10_000;
    let below = ephemeral_low().saturating_sub(1);
    if below > LOWEST + 1000 {
        let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
        if *state == 0 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            *state = (nanos ^ u64::from(std::process::id()).rotate_left(32)) | 1;
        }
        for _ in 0..10_000 {
            // xorshift64: spread over the range, different per process.
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            let port = LOWEST + (*state % u64::from(below - LOWEST)) as u16;
            if HANDED_OUT.lock().unwrap().contains(&port) {
                continue;
            }
            if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
                HANDED_OUT.lock().unwrap().insert(port);
                return port;
            }
        }
    }
    // No room below the ephemeral range: any port the kernel hands out.
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("binding 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        if HANDED_OUT.lock().unwrap().insert(port) {
            return port;
        }
    }
}

/// What the official SDKs add to a server's HTTP port to find its gRPC
/// port (Nacos' default offset).
pub const SDK_GRPC_OFFSET: u16 = 1000;

/// A free loopback port P with P + [`SDK_GRPC_OFFSET`] free as well, for a
/// node (or a proxy) that SDKs given only `host:P` must find.
pub fn free_port_pair() -> u16 {
    loop {
        let port = free_port();
        let Some(grpc) = port.checked_add(SDK_GRPC_OFFSET) else {
            continue;
        };
        if TcpListener::bind((Ipv4Addr::LOCALHOST, grpc)).is_ok() {
            return port;
        }
    }
}

/// The first port of the kernel's ephemeral range (Linux; 32768 elsewhere).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A unique path for a log file in `dir`.
fn log_file_path(dir: &Path, what: &str) -> PathBuf {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let seq = SEQ.fetch_add(1, Ordering::SeqCst);
    dir.join(format!("{what}-{seq}.log"))
}

/// Set to a key file to run every test with encryption at rest on: each
/// tacos the tests start gets `TACOS_ENCRYPTION_KEY_FILE` naming it (e.g.
/// `openssl rand -hex 32 > /tmp/kek; TACOS_TEST_ENCRYPTION_KEY_FILE=/tmp/kek
/// cargo test --test sdk_rust`).
pub const TEST_ENCRYPTION_KEY_FILE: &str = "TACOS_TEST_ENCRYPTION_KEY_FILE";

/// The binary with a clean environment: no `TACOS_*` variable leaks in from
/// the environment running the tests (but see [`TEST_ENCRYPTION_KEY_FILE`]).
pub fn tacos_command() -> Command {
    let mut command = Command::new(BIN);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("TACOS_") {
            command.env_remove(name);
        }
    }
    if let Some(key_file) = std::env::var_os(TEST_ENCRYPTION_KEY_FILE) {
        command.env("TACOS_ENCRYPTION_KEY_FILE", key_file);
    }
    // Plain logs in the log files.
    command.env("NO_COLOR", "1");
    command.stdin(Stdio::null());
    command
}

/// Reads a file that may not exist (yet); lossy for non-UTF-8.
pub fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default()
}

/// An HTTP answer, body already read.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    pub async fn read(response: reqwest::Response) -> Result<Reply, reqwest::Error> {
        let status = response.status().as_u16();
        let body = response.text().await?;
        Ok(Reply { status, body })
    }

    /// Parses a JSON body.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.body))
    }

    /// Parses a 200 answer holding a Nacos page (search or history).
    pub fn page<T: DeserializeOwned>(&self) -> Page<T> {
        assert_eq!(self.status, 200, "expected a page, got {self:?}");
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not the expected page JSON ({e}): {}", self.body))
    }
}

/// Java's `URLEncoder.encode(s, "UTF-8")`, as Nacos clients encode form
/// bodies and `Listening-Configs`: alphanumerics and `.-*_` stay, space
/// becomes `+`, every other byte is `%XX` (uppercase).
/// The first admin's name and password in every server the tests start
/// (unless a test passes its own `--admin-password`).
pub const ADMIN_USER: &str = "nacos";
pub const ADMIN_PASSWORD: &str = "test-admin-password";

/// Pass in `extra` to start a server without `--admin-password` (it then
/// generates one); not passed on to the binary.
pub const NO_ADMIN_PASSWORD: &str = "<no admin password>";

/// `Basic base64(nacos:password)` for the test admin.
pub fn admin_basic_auth() -> String {
    basic_auth(ADMIN_USER, ADMIN_PASSWORD)
}

/// Default headers that log in as the test admin.
pub fn admin_headers() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        admin_basic_auth().parse().expect("a valid header value"),
    );
    headers
}

/// An HTTP Basic `Authorization` value.
pub fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

pub fn java_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The lowercase hex md5 of `content`'s UTF-8 bytes (what Nacos reports).
pub fn md5_hex(content: &str) -> String {
    format!("{:x}", md5::compute(content.as_bytes()))
}

/// A header as text ("" when absent or not text).
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Ids are strings in Nacos JSON (`"id": "42"`); accept numbers too.
fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        other => Err(serde::de::Error::custom(format!(
            "expected a string or number id, got {other}"
        ))),
    }
}

/// A Nacos `Page`: search results and history listings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub total_count: usize,
    pub page_number: u64,
    pub pages_available: u64,
    pub page_items: Vec<T>,
}

/// One config in `search=accurate|blur` results.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigItem {
    #[serde(deserialize_with = "string_or_number")]
    pub id: String,
    pub data_id: String,
    pub group: String,
    pub content: String,
    pub md5: String,
    #[serde(default)]
    pub tenant: String,
    #[serde(default)]
    pub app_name: String,
    #[serde(rename = "type", default)]
    pub config_type: String,
}

/// One row of `GET /nacos/v1/cs/history`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem {
    #[serde(deserialize_with = "string_or_number")]
    pub id: String,
    pub last_id: i64,
    pub data_id: String,
    pub group: String,
    #[serde(default)]
    pub tenant: String,
    #[serde(default)]
    pub app_name: String,
    pub md5: String,
    pub content: String,
    #[serde(default)]
    pub src_ip: String,
    #[serde(default)]
    pub src_user: String,
    pub op_type: String,
    pub created_time: String,
    pub last_modified_time: String,
}

impl HistoryItem {
    /// The id as a number (panics if it is not one).
    pub fn id_number(&self) -> u64 {
        self.id
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("history id is not a number: {self:?}"))
    }
}

/// The Nacos config API path and query of one `search=accurate` page of a
/// namespace (every config in it: dataId and group left empty).
pub fn search_accurate_path(tenant: &str, page_no: u64, page_size: u64) -> String {
    let query = serde_urlencoded::to_string([
        ("search", "accurate"),
        ("dataId", ""),
        ("group", ""),
        ("tenant", tenant),
        ("pageNo", &page_no.to_string()),
        ("pageSize", &page_size.to_string()),
    ])
    .expect("encoding a query");
    format!("/nacos/v1/cs/configs?{query}")
}

/// An HTTP client for the Nacos config API of one server, sending requests
/// as the Java and Python Nacos clients do. Cloning is cheap (shared
/// connection pool), so it can be moved into tasks for concurrent load.
///
/// The `try_*` methods return transport errors; the others panic on them
/// (with the request in the message).
#[derive(Clone)]
pub struct NacosApi {
    client: reqwest::Client,
    base: String,
}

impl NacosApi {
    pub const CONFIGS: &'static str = "/nacos/v1/cs/configs";
    pub const HISTORY: &'static str = "/nacos/v1/cs/history";

    /// A client that sends the test admin's credentials (HTTP Basic) with
    /// every request, so admin and console routes answer.
    pub fn new(port: u16) -> NacosApi {
        NacosApi::with_headers(port, admin_headers())
    }

    /// A client that sends no credentials.
    pub fn anonymous(port: u16) -> NacosApi {
        NacosApi::with_headers(port, reqwest::header::HeaderMap::new())
    }

    fn with_headers(port: u16, headers: reqwest::header::HeaderMap) -> NacosApi {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(2))
            .timeout(REQUEST_TIMEOUT)
            .default_headers(headers)
            .build()
            .expect("building the HTTP client");
        NacosApi {
            client,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// [`NacosApi::new`] for a server started with `args`: over HTTPS when
    /// they hold `--cert-file` (see [`tls::client_side`]).
    pub fn for_server(port: u16, args: &[&str]) -> NacosApi {
        match tls::client_side(args) {
            None => NacosApi::new(port),
            Some((ca, identity)) => NacosApi::https(port, &ca, identity),
        }
    }

    /// The test admin's client over HTTPS, trusting `ca` and presenting
    /// the cert+key PEM `identity` when given.
    pub fn https(port: u16, ca: &Path, identity: Option<PathBuf>) -> NacosApi {
        let client = tls::https_builder(ca, identity)
            .default_headers(admin_headers())
            .build()
            .expect("building the HTTPS client");
        NacosApi {
            client,
            base: format!("https://localhost:{port}"),
        }
    }

    /// The shared client, for requests the helpers do not cover.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// `http://127.0.0.1:{port}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `GET path`, any status.
    pub async fn get_path(&self, path: &str) -> Result<Reply, reqwest::Error> {
        Reply::read(self.client.get(self.url(path)).send().await?).await
    }

    /// `POST /nacos/v1/cs/configs` with the form `dataId, group, content,
    /// tenant` (a success answers 200 `true`).
    pub async fn try_publish(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
        content: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let form = [
            ("dataId", data_id),
            ("group", group),
            ("content", content),
            ("tenant", tenant),
        ];
        self.try_publish_with(&form, &[]).await
    }

    /// [`NacosApi::try_publish`], panicking on a transport error.
    pub async fn publish(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
        content: &str,
    ) -> reqwest::Response {
        self.try_publish(data_id, group, tenant, content)
            .await
            .unwrap_or_else(|e| panic!("POST {} {group}/{data_id}: {e}", Self::CONFIGS))
    }

    /// `POST /nacos/v1/cs/configs` with any form pairs (e.g. `type`,
    /// `appName`, `config_tags`) and extra headers (e.g. `casMd5`, `betaIps`).
    pub async fn try_publish_with(
        &self,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Result<reqwest::Response, reqwest::Error> {
        let mut request = self.client.post(self.url(Self::CONFIGS)).form(form);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await
    }

    /// [`NacosApi::try_publish_with`], panicking on a transport error.
    pub async fn publish_with(
        &self,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        self.try_publish_with(form, headers)
            .await
            .unwrap_or_else(|e| panic!("POST {} {form:?}: {e}", Self::CONFIGS))
    }

    /// `GET /nacos/v1/cs/configs?dataId&group&tenant`: status, raw body and
    /// headers (`Content-MD5`, `Config-Type`, ...).
    pub async fn try_get(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
    ) -> Result<(StatusCode, String, HeaderMap), reqwest::Error> {
        let query = [("dataId", data_id), ("group", group), ("tenant", tenant)];
        let response = self
            .client
            .get(self.url(Self::CONFIGS))
            .query(&query)
            .send()
            .await?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await?;
        Ok((status, body, headers))
    }

    /// [`NacosApi::try_get`], panicking on a transport error.
    pub async fn get(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
    ) -> (StatusCode, String, HeaderMap) {
        self.try_get(data_id, group, tenant)
            .await
            .unwrap_or_else(|e| panic!("GET {} {group}/{data_id}: {e}", Self::CONFIGS))
    }

    /// `DELETE /nacos/v1/cs/configs?dataId&group&tenant` (a success answers
    /// 200 `true`, also when there was nothing to delete).
    pub async fn try_delete(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let query = [("dataId", data_id), ("group", group), ("tenant", tenant)];
        self.client
            .delete(self.url(Self::CONFIGS))
            .query(&query)
            .send()
            .await
    }

    /// [`NacosApi::try_delete`], panicking on a transport error.
    pub async fn delete(&self, data_id: &str, group: &str, tenant: &str) -> reqwest::Response {
        self.try_delete(data_id, group, tenant)
            .await
            .unwrap_or_else(|e| panic!("DELETE {} {group}/{data_id}: {e}", Self::CONFIGS))
    }

    /// One page of `search=accurate` over all configs of `tenant`, parsed
    /// (panics unless 200 with the expected JSON).
    pub async fn search_accurate(
        &self,
        tenant: &str,
        page_no: u64,
        page_size: u64,
    ) -> Page<ConfigItem> {
        let path = search_accurate_path(tenant, page_no, page_size);
        self.get_path(&path)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            .page()
    }

    /// Every config of `tenant`, page by page (`page_size` a page; Nacos
    /// serves at most 500).
    pub async fn search_all(&self, tenant: &str, page_size: u64) -> Vec<ConfigItem> {
        let first = self.search_accurate(tenant, 1, page_size).await;
        self.rest_of_search(tenant, first, page_size).await
    }

    /// Completes a listing from its first page (of `page_size`), checking
    /// that the pages add up to `totalCount`.
    pub async fn rest_of_search(
        &self,
        tenant: &str,
        first: Page<ConfigItem>,
        page_size: u64,
    ) -> Vec<ConfigItem> {
        let total = first.total_count;
        let pages = first.pages_available;
        let mut items = first.page_items;
        for page_no in 2..=pages {
            let page = self.search_accurate(tenant, page_no, page_size).await;
            assert_eq!(
                page.total_count, total,
                "the total changed while paging a quiet server"
            );
            assert_eq!(page.page_number, page_no, "page {page_no} numbered wrong");
            items.extend(page.page_items);
        }
        assert_eq!(
            items.len(),
            total,
            "pages of {pages} hold {} items, totalCount is {total}",
            items.len()
        );
        items
    }

    /// `GET /nacos/v1/cs/history?search=accurate&dataId&group&tenant&pageNo&pageSize`,
    /// parsed (newest row first; panics unless 200 with the expected JSON).
    pub async fn history(
        &self,
        data_id: &str,
        group: &str,
        tenant: &str,
        page_no: u64,
        page_size: u64,
    ) -> Page<HistoryItem> {
        let query = serde_urlencoded::to_string([
            ("search", "accurate"),
            ("dataId", data_id),
            ("group", group),
            ("tenant", tenant),
            ("pageNo", &page_no.to_string()),
            ("pageSize", &page_size.to_string()),
        ])
        .expect("encoding a query");
        let path = format!("{}?{query}", Self::HISTORY);
        self.get_path(&path)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
            .page()
    }

    /// `GET /health`.
    pub async fn health(&self) -> Result<Reply, reqwest::Error> {
        self.get_path("/health").await
    }
}

/// Asserts a write (publish or delete) was answered 200 `true`.
pub async fn assert_true(response: reqwest::Response, what: &str) {
    let reply = Reply::read(response)
        .await
        .unwrap_or_else(|e| panic!("{what}: reading the answer: {e}"));
    assert!(
        reply.status == 200 && reply.body == "true",
        "{what} answered {reply:?}"
    );
}

/// Why a server did not answer.
enum NotReady {
    /// The process exited before it answered.
    Exited(ExitStatus),
}

/// A running `tacos` process.
pub struct Server {
    child: Option<Child>,
    pid: u32,
    port: u16,
    grpc_port: u16,
    data_dir: PathBuf,
    log_path: PathBuf,
    api: NacosApi,
}

impl Server {
    /// Starts the binary on `data_dir(tmp)` and waits until `GET /health`
    /// answers 200.
    pub async fn start(tmp: &TempDir) -> Server {
        Server::start_with_args(tmp, &[]).await
    }

    /// [`Server::start`] with extra command-line arguments.
    pub async fn start_with_args(tmp: &TempDir, extra: &[&str]) -> Server {
        let (mut server, _) = Server::launch(tmp, extra, "/health").await;
        server.wait_healthy().await;
        server
    }

    /// Starts the binary on `data_dir(tmp)` and returns the FIRST HTTP answer
    /// it gives to `GET probe_path`, whatever its status (the server must not
    /// answer anything before its state is complete).
    pub async fn start_probing(tmp: &TempDir, probe_path: &str) -> (Server, Reply) {
        Server::launch(tmp, &[], probe_path).await
    }

    /// Spawns the binary, retrying on a fresh port if the picked one was
    /// taken by someone else in the meantime.
    async fn launch(tmp: &TempDir, extra: &[&str], probe_path: &str) -> (Server, Reply) {
        const ATTEMPTS: usize = 3;
        for attempt in 1..=ATTEMPTS {
            let mut server = Server::spawn(tmp, free_port(), extra);
            match server.first_reply(probe_path).await {
                Ok(reply) => return (server, reply),
                Err(NotReady::Exited(status)) => {
                    let log = server.log();
                    if attempt < ATTEMPTS && log.contains("cannot listen on") {
                        eprintln!("port {} was taken, retrying: {log}", server.port);
                        continue;
                    }
                    panic!(
                        "tacos exited ({status}) before answering on port {}; log {}:\n{log}",
                        server.port,
                        server.log_path.display()
                    );
                }
            }
        }
        unreachable!()
    }

    /// Spawns the binary on `data_dir(tmp)` and `port` without waiting.
    /// stdout and stderr go to one log file in `tmp`. Unless `extra` names
    /// them, the cluster and gRPC ports are free ports too (HTTP + 1001 and
    /// HTTP + 1000 may be taken).
    pub fn spawn(tmp: &TempDir, port: u16, extra: &[&str]) -> Server {
        let data_dir = data_dir(tmp);
        let log_path = log_file_path(tmp.path(), &format!("tacos-{port}"));
        let log = File::create(&log_path).expect("creating the server log file");
        let log_err = log.try_clone().expect("cloning the log file handle");
        let mut command = tacos_command();
        if !extra.contains(&"--cluster-port") {
            command.arg("--cluster-port").arg(free_port().to_string());
        }
        let grpc_port = match extra.iter().position(|a| *a == "--grpc-port") {
            Some(at) => extra
                .get(at + 1)
                .and_then(|p| p.parse().ok())
                .unwrap_or_default(),
            None => {
                let port = free_port();
                command.arg("--grpc-port").arg(port.to_string());
                port
            }
        };
        if !extra.contains(&"--admin-password") && !extra.contains(&NO_ADMIN_PASSWORD) {
            command.arg("--admin-password").arg(ADMIN_PASSWORD);
        }
        let extra: Vec<&str> = extra
            .iter()
            .copied()
            .filter(|a| *a != NO_ADMIN_PASSWORD)
            .collect();
        let child = command
            .arg("--data-dir")
            .arg(&data_dir)
            .arg("--http-port")
            .arg(port.to_string())
            .args(extra.iter().map(OsStr::new))
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {BIN}: {e}"));
        Server {
            pid: child.id(),
            child: Some(child),
            port,
            grpc_port,
            data_dir,
            log_path,
            api: NacosApi::for_server(port, &extra),
        }
    }

    /// Polls `GET path` until the server gives any HTTP answer; panics after
    /// [`READY_TIMEOUT`].
    async fn first_reply(&mut self, path: &str) -> Result<Reply, NotReady> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.try_wait() {
                return Err(NotReady::Exited(status));
            }
            let request = self
                .api
                .client
                .get(self.api.url(path))
                .timeout(Duration::from_secs(5));
            let last_error = match request.send().await {
                Ok(response) => match Reply::read(response).await {
                    Ok(reply) => return Ok(reply),
                    Err(e) => e,
                },
                Err(e) => e,
            };
            if Instant::now() > deadline {
                panic!(
                    "tacos on port {} gave no answer to GET {path} within {READY_TIMEOUT:?} \
                     (last error: {last_error}); log:\n{}",
                    self.port,
                    self.log()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until `GET /health` answers 200 (bounded).
    pub async fn wait_healthy(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.try_wait() {
                panic!(
                    "tacos exited ({status}) while waiting for health; log:\n{}",
                    self.log()
                );
            }
            let last = self.api.health().await;
            if matches!(&last, Ok(reply) if reply.status == 200) {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "tacos on port {} not healthy within {READY_TIMEOUT:?} (last: {last:?}); log:\n{}",
                    self.port,
                    self.log()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Exit status if the process has exited (and forgets the child).
    fn try_wait(&mut self) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        let status = child.try_wait().expect("waiting on tacos")?;
        self.child = None;
        Some(status)
    }

    fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.pid).expect("pid fits pid_t");
        // SAFETY: kill(2) with a pid of our own child, which has not been
        // reaped yet (we still hold its `Child`), so the pid is not reused.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(
            rc,
            0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
    }

    /// Sends SIGTERM and waits (bounded) for the process to exit.
    pub async fn stop(&mut self) -> ExitStatus {
        assert!(
            self.child.is_some(),
            "tacos on port {} is not running",
            self.port
        );
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = self.try_wait() {
                return status;
            }
            if Instant::now() > deadline {
                self.kill9();
                panic!(
                    "tacos on port {} did not exit within {STOP_TIMEOUT:?} of SIGTERM; log:\n{}",
                    self.port,
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Sends SIGKILL and reaps the process.
    pub fn kill9(&mut self) -> ExitStatus {
        assert!(
            self.child.is_some(),
            "tacos on port {} is not running",
            self.port
        );
        self.signal(libc::SIGKILL);
        self.child
            .take()
            .unwrap()
            .wait()
            .expect("waiting on tacos after SIGKILL")
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.try_wait();
        self.child.is_some()
    }

    pub fn api(&self) -> NacosApi {
        self.api.clone()
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn grpc_port(&self) -> u16 {
        self.grpc_port
    }

    /// Sends SIGHUP (the server rereads its certificate files).
    pub fn hangup(&self) {
        self.signal(libc::SIGHUP);
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Everything the process wrote to stdout and stderr so far.
    pub fn log(&self) -> String {
        read_lossy(&self.log_path)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The outcome of a process that ran to its end.
#[derive(Debug)]
pub struct Exited {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` (and extra `envs`) until it exits by itself,
/// with stdout and stderr in separate files in `log_dir`. Panics (after killing
/// it) if it is still running after [`EXIT_TIMEOUT`].
pub fn run_to_exit<S: AsRef<OsStr>>(log_dir: &Path, args: &[S], envs: &[(&str, &str)]) -> Exited {
    let shown: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let stdout_path = log_file_path(log_dir, "run-stdout");
    let stderr_path = log_file_path(log_dir, "run-stderr");
    let mut child = tacos_command()
        .args(args)
        .envs(envs.iter().copied())
        .stdout(File::create(&stdout_path).expect("creating stdout file"))
        .stderr(File::create(&stderr_path).expect("creating stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {BIN}: {e}"));
    let deadline = Instant::now() + EXIT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting on tacos") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "tacos {shown:?} was still running after {EXIT_TIMEOUT:?}; stdout:\n{}\nstderr:\n{}",
                read_lossy(&stdout_path),
                read_lossy(&stderr_path)
            );
        }
        std::thread::sleep(POLL);
    };
    Exited {
        status,
        stdout: read_lossy(&stdout_path),
        stderr: read_lossy(&stderr_path),
    }
}

/// At most 100 characters of `s`, for messages.
fn shorten(s: &str) -> String {
    match s.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…({} bytes)", &s[..cut], s.len()),
        None => s.to_owned(),
    }
}

/// Compares a recovered key/value map with the expected one and panics with
/// a short, readable diff (missing, wrong and unexpected keys).
pub fn assert_same_items(
    actual: &BTreeMap<String, String>,
    expected: &BTreeMap<String, String>,
    what: &str,
) {
    let missing: Vec<&String> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let wrong: Vec<(&String, String, String)> = expected
        .iter()
        .filter_map(|(k, v)| match actual.get(k) {
            Some(got) if got != v => Some((k, shorten(v), shorten(got))),
            _ => None,
        })
        .collect();
    let unexpected: Vec<&String> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    if missing.is_empty() && wrong.is_empty() && unexpected.is_empty() {
        return;
    }
    panic!(
        "{what}: {} missing, {} wrong, {} unexpected of {} expected / {} present\n\
         missing (first 10): {:?}\nwrong (key, expected, got; first 5): {:?}\n\
         unexpected (first 10): {:?}",
        missing.len(),
        wrong.len(),
        unexpected.len(),
        expected.len(),
        actual.len(),
        &missing[..missing.len().min(10)],
        &wrong[..wrong.len().min(5)],
        &unexpected[..unexpected.len().min(10)],
    );
}

/// Runs an SDK driver script with a time limit, in its own process group
/// (SDKs start helper processes that would otherwise outlive it and hold its
/// output open); the whole group is killed afterwards. Returns whether it
/// exited successfully, and its stdout and stderr.
pub fn run_sdk_script(
    program: &str,
    args: &[&str],
    work_dir: &Path,
    limit: std::time::Duration,
) -> (bool, String, String) {
    use std::os::unix::process::CommandExt;
    let out_path = work_dir.join(format!("{program}.out"));
    let err_path = work_dir.join(format!("{program}.err"));
    // The npm `nacos` client shares one "cluster-client" leader per machine
    // on a TCP port (7777 by default): concurrent test processes would
    // become each other's followers and see ECONNRESET when the leader
    // exits. A port of its own per run keeps them apart.
    let mut child = std::process::Command::new(program)
        .args(args)
        // SDKs write snapshots and logs under their working dir (the
        // Python client's `nacos-data/`): the run's own, not the checkout.
        .current_dir(work_dir)
        .env("NODE_CLUSTER_CLIENT_PORT", free_port().to_string())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // SAFETY: kill(2) on the process group this function created.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    (status.is_some_and(|s| s.success()), stdout, stderr)
}

/// A Nacos gRPC payload of `kind` whose body is the raw bytes `value`, as
/// the official clients frame it.
pub fn grpc_raw_payload(
    kind: &str,
    client_ip: &str,
    value: Option<Vec<u8>>,
) -> tacos::grpc::pb::Payload {
    tacos::grpc::pb::Payload {
        metadata: Some(tacos::grpc::pb::Metadata {
            r#type: kind.to_string(),
            client_ip: client_ip.to_string(),
            headers: Default::default(),
        }),
        body: value.map(|value| prost_types::Any {
            type_url: String::new(),
            value,
        }),
    }
}

/// A Nacos gRPC payload of `kind` with `body` as JSON.
pub fn grpc_payload(
    kind: &str,
    client_ip: &str,
    body: &serde_json::Value,
) -> tacos::grpc::pb::Payload {
    grpc_raw_payload(kind, client_ip, Some(serde_json::to_vec(body).unwrap()))
}
