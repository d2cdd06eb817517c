//! Starting and stopping the servers under test: one node or a 3-node cluster of Tacos
//! or r-nacos, or one Java Nacos standalone node ([`super::java_nacos`]), on 127.0.0.1,
//! each node with a fresh data dir.
//!
//! Ports of node `i` (0-based) in a slot with base port `B`: HTTP `B + 10i`, gRPC
//! HTTP + 1000, Tacos cluster port HTTP + 2001, r-nacos console HTTP + 2000 (Java
//! Nacos: cluster gRPC HTTP + 1001, console HTTP + 1, JRaft HTTP - 1000). Every start takes the next slot
//! whose ports are all free, so a server that is slow to release its ports never
//! collides with the next one.
//!
//! A server is ready when a probe publish on node 1 answers `true` and reads back on
//! every node (for Tacos also: node 1 reports as many voters as nodes, at most
//! [`TACOS_VOTERS`]: Tacos nodes beyond the third join as learners, read replicas
//! that serve reads and listeners, as a large deployment would add them). r-nacos 0.8
//! sometimes panics at start and then acknowledges writes it does not keep: its log is
//! checked for `panicked` and the start retried with a fresh dir. Java Nacos answers
//! only once it started (20-35 s on a 2-core machine): a node of it is up when the
//! probe read answers 200 or 404, and the probe publish must then read back (Nacos
//! answers a publish before its read cache has the new content).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use super::http::{self, port_free};
use super::java_nacos::{self, JavaNacos};
use super::procs::Proc;
use super::QaError;

/// Voters of a Tacos cluster; nodes beyond join with `--learner`.
pub const TACOS_VOTERS: usize = 3;

/// The admin password the Tacos nodes get at cluster init.
pub const ADMIN_PASSWORD: &str = "qa-admin-password";

/// Which server software a binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Tacos,
    RNacos,
    /// Java Nacos standalone: a `nacos-server.jar` run by `java`.
    Nacos,
}

impl Flavor {
    /// Guesses from the file name: a `.jar` is Java Nacos, `rnacos`/`r-nacos` is
    /// r-nacos, anything else Tacos.
    pub fn guess(path: &Path) -> Flavor {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        if name.ends_with(".jar") {
            Flavor::Nacos
        } else if name.contains("rnacos") || name.contains("r-nacos") {
            Flavor::RNacos
        } else {
            Flavor::Tacos
        }
    }

    pub fn parse(text: &str) -> Option<Flavor> {
        match text.to_ascii_lowercase().as_str() {
            "tacos" => Some(Flavor::Tacos),
            "rnacos" | "r-nacos" => Some(Flavor::RNacos),
            "nacos" | "java-nacos" | "java" => Some(Flavor::Nacos),
            _ => None,
        }
    }

    /// Whether a topology of `nodes` nodes can run; the error says why not.
    pub fn supports_nodes(self, nodes: usize) -> Result<(), String> {
        match self {
            Flavor::Nacos if nodes != 1 => Err(format!(
                "Java Nacos runs as one standalone node here (embedded Derby): {nodes} Java \
                 Nacos nodes would need a cluster on an external MySQL, which qa does not \
                 set up; use --nodes 1"
            )),
            _ => Ok(()),
        }
    }

    /// How long a start of `nodes` nodes may take until ready.
    pub fn start_timeout(self, nodes: usize) -> Duration {
        Duration::from_secs(match (self, nodes) {
            // 20-35 s on a quiet 2-core machine; much more on a busy one.
            (Flavor::Nacos, _) => 300,
            (_, 1) => 45,
            (_, 2..=3) => 90,
            _ => 150,
        })
    }

    /// The ports of node `i` (0-based) in the slot starting at `base`.
    pub fn ports(self, base: u16, i: usize) -> Ports {
        match self {
            Flavor::Nacos => java_nacos::ports(node_ports(base, i).http),
            _ => node_ports(base, i),
        }
    }
}

/// A server binary to test.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Short name in the report, e.g. `tacos` or `r-nacos`.
    pub label: String,
    pub flavor: Flavor,
    pub binary: PathBuf,
    /// `--version` output, first line.
    pub version: String,
    /// Extra environment for every node (e.g. `TACOS_AUDIT_LIMIT=1000`), set
    /// after the inherited `TACOS_*`/`RNACOS_*` variables were cleared.
    pub env: Vec<(String, String)>,
    /// Java Nacos: the JVM that runs `binary` (the jar) and the Nacos release.
    pub java: Option<JavaNacos>,
}

impl ServerSpec {
    pub fn new(label: &str, flavor: Flavor, binary: &Path) -> Result<ServerSpec, QaError> {
        if !binary.is_file() {
            return Err(QaError::Setup(format!(
                "{label}: no binary at {}",
                binary.display()
            )));
        }
        // Servers run in their own dirs: the path must not be relative.
        let binary = &std::fs::canonicalize(binary)
            .map_err(|e| QaError::io(format!("resolving {}", binary.display()), e))?;
        if flavor == Flavor::Nacos {
            let java = JavaNacos::probe(binary, |var| std::env::var(var).ok())?;
            return Ok(ServerSpec {
                label: label.to_string(),
                flavor,
                binary: binary.to_path_buf(),
                version: java.describe(),
                env: Vec::new(),
                java: Some(java),
            });
        }
        let version = Command::new(binary)
            .arg("--version")
            .env_remove("RUST_LOG")
            .output()
            .map_err(|e| QaError::io(format!("running {} --version", binary.display()), e))?;
        let version = String::from_utf8_lossy(&version.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        Ok(ServerSpec {
            label: label.to_string(),
            flavor,
            binary: binary.to_path_buf(),
            version,
            env: Vec::new(),
            java: None,
        })
    }

    /// The version number from `--version` (its last word), or `unknown`; Java
    /// Nacos' release.
    pub fn version_number(&self) -> String {
        if let Some(java) = &self.java {
            return java.nacos_version.clone();
        }
        self.version
            .split_whitespace()
            .last()
            .unwrap_or("unknown")
            .trim_start_matches('v')
            .to_string()
    }
}

/// One node's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ports {
    pub http: u16,
    pub grpc: u16,
    pub cluster: u16,
    pub console: u16,
    /// Java Nacos' JRaft port (HTTP - 1000), open even in standalone mode.
    pub raft: Option<u16>,
}

impl Ports {
    /// Every port the node listens on.
    pub fn all(&self) -> Vec<u16> {
        let mut all = vec![self.http, self.grpc, self.cluster, self.console];
        all.extend(self.raft);
        all
    }
}

/// The ports of node `i` (0-based) in the slot starting at `base`.
pub fn node_ports(base: u16, i: usize) -> Ports {
    let http = base + 10 * i as u16;
    Ports {
        http,
        grpc: http + 1000,
        cluster: http + 2001,
        console: http + 2000,
        raft: None,
    }
}

static NEXT_SLOT: AtomicU16 = AtomicU16::new(0);
/// Slots are this far apart; 30 slots from the base port.
const SLOT_WIDTH: u16 = 40;
const SLOTS: u16 = 30;

/// The next slot (from `base_port`) whose ports for `nodes` nodes of `flavor` are all
/// free.
pub fn allocate(flavor: Flavor, base_port: u16, nodes: usize) -> Result<Vec<Ports>, QaError> {
    if flavor == Flavor::Nacos && base_port < 2024 {
        return Err(QaError::Setup(format!(
            "Java Nacos also listens on its HTTP port - 1000 (JRaft): --base-port {base_port} \
             would put that below 1024; use 2024 or more"
        )));
    }
    for _ in 0..SLOTS {
        let slot = NEXT_SLOT.fetch_add(1, Ordering::SeqCst) % SLOTS;
        let base = base_port + slot * SLOT_WIDTH;
        let ports: Vec<Ports> = (0..nodes).map(|i| flavor.ports(base, i)).collect();
        if ports.iter().all(|p| p.all().into_iter().all(port_free)) {
            return Ok(ports);
        }
    }
    Err(QaError::Setup(format!(
        "no free ports for {nodes} node(s) from 127.0.0.1:{base_port} (tried {SLOTS} slots)"
    )))
}

/// A running node.
#[derive(Debug)]
pub struct Node {
    pub id: usize,
    pub ports: Ports,
    pub dir: PathBuf,
    pub proc: Proc,
}

/// A running server: one node or a cluster.
#[derive(Debug)]
pub struct Cluster {
    pub spec: ServerSpec,
    pub nodes: Vec<Node>,
    /// How long it took until ready.
    pub startup: Duration,
}

impl Cluster {
    /// Starts `nodes` nodes of `spec` under `dir` (fresh data dirs) and waits until ready;
    /// r-nacos is retried (fresh dirs) when it panicked at start.
    pub fn start(
        spec: &ServerSpec,
        nodes: usize,
        dir: &Path,
        base_port: u16,
        timeout: Duration,
    ) -> Result<Cluster, QaError> {
        let attempts = if spec.flavor == Flavor::RNacos { 8 } else { 2 };
        let mut last_error = None;
        for attempt in 1..=attempts {
            let attempt_dir = dir.join(format!("attempt{attempt}"));
            match Self::start_once(spec, nodes, &attempt_dir, base_port, timeout) {
                Ok(cluster) => return Ok(cluster),
                Err(e) => {
                    eprintln!(
                        "  {} ({nodes} node(s)) did not start (attempt {attempt}/{attempts}): {e}",
                        spec.label
                    );
                    last_error = Some(e);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| QaError::Setup("no start attempt".into())))
    }

    fn start_once(
        spec: &ServerSpec,
        count: usize,
        dir: &Path,
        base_port: u16,
        timeout: Duration,
    ) -> Result<Cluster, QaError> {
        spec.flavor.supports_nodes(count).map_err(QaError::Setup)?;
        let started = Instant::now();
        let ports = allocate(spec.flavor, base_port, count)?;
        let mut nodes = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let node_dir = dir.join(format!("node{}", i + 1));
            std::fs::create_dir_all(&node_dir)
                .map_err(|e| QaError::io(format!("creating {}", node_dir.display()), e))?;
            let proc = spawn_node(spec, i, p, &ports[0], &node_dir)?;
            nodes.push(Node {
                id: i + 1,
                ports: *p,
                dir: node_dir,
                proc,
            });
            if i == 0 && count > 1 {
                // Let node 1 initialize the cluster before the others ask to join.
                wait_http(spec.flavor, &mut nodes[0], Instant::now() + timeout)?;
            }
        }
        let mut cluster = Cluster {
            spec: spec.clone(),
            nodes,
            startup: Duration::ZERO,
        };
        cluster.wait_ready(started + timeout)?;
        cluster.startup = started.elapsed();
        Ok(cluster)
    }

    fn wait_ready(&mut self, deadline: Instant) -> Result<(), QaError> {
        let flavor = self.spec.flavor;
        for node in &mut self.nodes {
            wait_http(flavor, node, deadline)?;
        }
        let nonce = format!(
            "qa-probe-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        let body = crate::nacos::publish_form("qa-probe", crate::GROUP, &nonce, "", None);
        let query = crate::nacos::query_path("qa-probe", crate::GROUP, "", None);
        let t = Duration::from_secs(3);
        let first_http = self.nodes[0].ports.http;
        // The probe write (retried: a young cluster may not have a leader yet).
        loop {
            self.check_alive()?;
            match http::post_form(first_http, crate::CONFIGS_PATH, &body, t) {
                Ok(r) if r.status == 200 && r.body.trim() == "true" => break,
                _ if Instant::now() > deadline => {
                    return Err(self.not_ready("the probe publish never answered `true`"))
                }
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
        // Read back on every node.
        for i in 0..self.nodes.len() {
            let port = self.nodes[i].ports.http;
            loop {
                self.check_alive()?;
                match http::get(port, &query, None, t) {
                    Ok(r) if r.status == 200 && r.body == nonce => break,
                    _ if Instant::now() > deadline => {
                        return Err(
                            self.not_ready(&format!("node {} never read the probe back", i + 1))
                        )
                    }
                    _ => std::thread::sleep(Duration::from_millis(200)),
                }
            }
        }
        if self.spec.flavor == Flavor::Tacos && self.nodes.len() > 1 {
            let want = self.nodes.len().min(TACOS_VOTERS);
            loop {
                self.check_alive()?;
                if tacos_voters(first_http) == Some(want) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(self.not_ready(&format!("node 1 never reported {want} voters")));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        // r-nacos: a panic right after start leaves a server that answers but loses
        // writes; give it a moment to show.
        if self.spec.flavor == Flavor::RNacos {
            std::thread::sleep(Duration::from_millis(500));
        }
        self.check_alive()?;
        Ok(())
    }

    fn not_ready(&self, what: &str) -> QaError {
        QaError::Start {
            server: self.spec.label.clone(),
            detail: format!("{what}; logs: {}", self.logs()),
        }
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.proc.log.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// An error if a node exited or logged a panic.
    pub fn check_alive(&mut self) -> Result<(), QaError> {
        for i in 0..self.nodes.len() {
            if !self.nodes[i].proc.running() {
                return Err(self.not_ready(&format!("node {} exited", i + 1)));
            }
            let log = std::fs::read_to_string(&self.nodes[i].proc.log).unwrap_or_default();
            if log.contains("panicked") {
                return Err(self.not_ready(&format!("node {} panicked", i + 1)));
            }
        }
        Ok(())
    }

    /// Whether any node logged a panic (checked again after each run).
    pub fn panicked(&self) -> bool {
        self.nodes.iter().any(|n| {
            std::fs::read_to_string(&n.proc.log)
                .map(|l| l.contains("panicked"))
                .unwrap_or(false)
        })
    }

    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.proc.pid()).collect()
    }

    /// `http://127.0.0.1:PORT` of node `i` (0-based).
    pub fn url(&self, i: usize) -> String {
        format!("http://127.0.0.1:{}", self.nodes[i].ports.http)
    }

    /// Stops every node (SIGTERM to all at once, SIGKILL to any left after 5 s: the data
    /// dirs are thrown away, and r-nacos holding long polls may not exit on SIGTERM).
    pub fn stop(&mut self) {
        for node in self.nodes.iter_mut() {
            node.proc.terminate();
        }
        for node in self.nodes.iter_mut().rev() {
            node.proc.stop(Duration::from_secs(5));
        }
    }
}

impl Cluster {
    /// Stops every node for a restart on the same data dirs: SIGTERM to all at once,
    /// then up to `grace` for them to exit on their own (SIGKILL to any left). Returns
    /// how long they took and whether one had to be killed.
    pub fn stop_gracefully(&mut self, grace: Duration) -> (Duration, bool) {
        let started = Instant::now();
        for node in self.nodes.iter_mut() {
            node.proc.terminate();
        }
        let mut killed = false;
        for node in self.nodes.iter_mut() {
            let left = grace.saturating_sub(started.elapsed());
            if node.proc.running() && node.proc.wait_timeout(left).is_none() {
                killed = true;
                node.proc.stop(Duration::ZERO);
            }
        }
        (started.elapsed(), killed)
    }

    /// Starts every node again, with the ports, data dir and log (appended to) it had,
    /// after [`Cluster::stop_gracefully`]; does not wait for anything (the caller
    /// times what it waits for).
    pub fn respawn(&mut self) -> Result<(), QaError> {
        let first = self.nodes[0].ports;
        for node in self.nodes.iter_mut() {
            node.proc = spawn_node(&self.spec, node.id - 1, &node.ports, &first, &node.dir)?;
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits until node answers HTTP at all (any status; Java Nacos: 200 or 404, the
/// answers of a started server to a read).
fn wait_http(flavor: Flavor, node: &mut Node, deadline: Instant) -> Result<(), QaError> {
    loop {
        if !node.proc.running() {
            return Err(QaError::Start {
                server: node.proc.name.clone(),
                detail: format!("exited at start; log: {}", node.proc.log.display()),
            });
        }
        let answer = http::get(
            node.ports.http,
            "/nacos/v1/cs/configs?dataId=qa-ping&group=qa",
            None,
            Duration::from_secs(2),
        );
        match answer {
            Ok(r) if flavor != Flavor::Nacos || r.status == 200 || r.status == 404 => return Ok(()),
            _ => {}
        }
        if Instant::now() > deadline {
            return Err(QaError::Start {
                server: node.proc.name.clone(),
                detail: format!(
                    "no HTTP answer on 127.0.0.1:{}; log: {}",
                    node.ports.http,
                    node.proc.log.display()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The number of voters node 1 of a Tacos cluster reports, if it knows a leader.
fn tacos_voters(http_port: u16) -> Option<usize> {
    let auth = format!("nacos:{ADMIN_PASSWORD}");
    let r = http::get(
        http_port,
        "/tacos/v1/admin/raft",
        Some(&auth),
        Duration::from_secs(2),
    )
    .ok()?;
    if r.status != 200 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(&r.body).ok()?;
    if v["leader"].is_null() {
        return None;
    }
    v["members"]["voters"].as_array().map(Vec::len)
}

/// Starts node `i` (0-based) of `spec` in `dir` (its data in `dir/data`, its output
/// appended to `dir/server.log`), node 1 having `first`'s ports.
fn spawn_node(
    spec: &ServerSpec,
    i: usize,
    p: &Ports,
    first: &Ports,
    dir: &Path,
) -> Result<Proc, QaError> {
    let mut command = match spec.flavor {
        Flavor::Tacos => tacos_command(spec, i, p, first, dir),
        Flavor::RNacos => rnacos_command(spec, i, p, first, dir),
        Flavor::Nacos => {
            let java = spec.java.as_ref().ok_or_else(|| {
                QaError::Setup(format!("{}: no JVM for the Nacos jar", spec.label))
            })?;
            // nacos.home must be absolute: the JVM runs in it.
            let home = std::path::absolute(dir)
                .map_err(|e| QaError::io(format!("resolving {}", dir.display()), e))?;
            java_nacos::write_home(&home, java.generation(), p.http)?;
            java_nacos::command(java, &spec.binary, &home)
        }
    };
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    Proc::spawn(
        &format!("{} node {}", spec.label, i + 1),
        command,
        &dir.join("server.log"),
    )
}

/// A command with none of the environment that would change a server's setup.
fn clean_command(binary: &Path, dir: &Path, prefix: &str) -> Command {
    let mut command = Command::new(binary);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with(prefix) {
            command.env_remove(name);
        }
    }
    command.current_dir(dir).env("RUST_LOG", "warn");
    command
}

/// Node `i` of a Tacos cluster whose node 1 has `first`'s ports.
pub fn tacos_command(spec: &ServerSpec, i: usize, p: &Ports, first: &Ports, dir: &Path) -> Command {
    let mut c = clean_command(&spec.binary, dir, "TACOS_");
    c.arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--bind", "127.0.0.1"])
        .args(["--http-port", &p.http.to_string()])
        .args(["--grpc-port", &p.grpc.to_string()])
        .args(["--cluster-port", &p.cluster.to_string()])
        .args(["--node-id", &(i + 1).to_string()])
        // As a variable, not a flag: a Tacos build from before auth ignores
        // it and still starts (A/B between versions).
        .env("TACOS_ADMIN_PASSWORD", ADMIN_PASSWORD);
    if i > 0 {
        c.args(["--join", &format!("127.0.0.1:{}", first.cluster)]);
    }
    if i >= TACOS_VOTERS {
        c.arg("--learner");
    }
    c
}

/// Node `i` of an r-nacos cluster whose node 1 has `first`'s ports (r-nacos' Raft runs
/// over its gRPC port).
pub fn rnacos_command(
    spec: &ServerSpec,
    i: usize,
    p: &Ports,
    first: &Ports,
    dir: &Path,
) -> Command {
    let mut c = clean_command(&spec.binary, dir, "RNACOS_");
    let data = dir.join("data");
    c.env("RNACOS_HTTP_PORT", p.http.to_string())
        .env("RNACOS_GRPC_PORT", p.grpc.to_string())
        .env("RNACOS_HTTP_CONSOLE_PORT", p.console.to_string())
        .env("RNACOS_SDK_HOST", "127.0.0.1")
        .env("RNACOS_CONSOLE_HOST", "127.0.0.1")
        .env("RNACOS_DATA_DIR", &data)
        .env("RNACOS_CONFIG_DB_DIR", &data)
        .env("RNACOS_RAFT_NODE_ID", (i + 1).to_string())
        .env("RNACOS_RAFT_NODE_ADDR", format!("127.0.0.1:{}", p.grpc))
        .env("RUST_LOG", "warn");
    if i == 0 {
        c.env("RNACOS_RAFT_AUTO_INIT", "true");
    } else {
        c.env("RNACOS_RAFT_AUTO_INIT", "false")
            .env("RNACOS_RAFT_JOIN_ADDR", format!("127.0.0.1:{}", first.grpc));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_do_not_overlap() {
        let nodes: Vec<Ports> = (0..3).map(|i| node_ports(31000, i)).collect();
        let mut all: Vec<u16> = nodes
            .iter()
            .flat_map(|p| [p.http, p.grpc, p.cluster, p.console])
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        assert_eq!(nodes[1].http, 31010);
        assert_eq!(nodes[1].grpc, 32010);
        // Two slots apart do not overlap either.
        let next = node_ports(31000 + SLOT_WIDTH, 0);
        assert!(!all.contains(&next.http) && !all.contains(&next.cluster));
    }

    #[test]
    fn flavors() {
        assert_eq!(Flavor::guess(Path::new("/x/bin/rnacos")), Flavor::RNacos);
        assert_eq!(
            Flavor::guess(Path::new("/x/target/release/tacos")),
            Flavor::Tacos
        );
        assert_eq!(Flavor::parse("r-nacos"), Some(Flavor::RNacos));
        assert_eq!(Flavor::parse("go"), None);
    }

    #[test]
    fn java_nacos_flavor() {
        assert_eq!(Flavor::parse("nacos"), Some(Flavor::Nacos));
        assert_eq!(Flavor::parse("Java-Nacos"), Some(Flavor::Nacos));
        assert_eq!(
            Flavor::guess(Path::new(
                "/work/ref-build/nacos-3.0.3/bootstrap/target/nacos-server.jar"
            )),
            Flavor::Nacos
        );
        assert_eq!(Flavor::guess(Path::new("x/NACOS.JAR")), Flavor::Nacos);
        // Not a jar: the name decides as before.
        assert_eq!(Flavor::guess(Path::new("/x/nacos-server")), Flavor::Tacos);
        // One node only, with a reason.
        assert!(Flavor::Nacos.supports_nodes(1).is_ok());
        for n in [3, 7] {
            let e = Flavor::Nacos.supports_nodes(n).unwrap_err();
            assert!(e.contains("MySQL") && e.contains("--nodes 1"), "{e}");
            assert!(Flavor::Tacos.supports_nodes(n).is_ok());
            assert!(Flavor::RNacos.supports_nodes(n).is_ok());
        }
        assert_eq!(Flavor::Nacos.start_timeout(1), Duration::from_secs(300));
        assert_eq!(Flavor::Tacos.start_timeout(1), Duration::from_secs(45));
        assert_eq!(Flavor::RNacos.start_timeout(3), Duration::from_secs(90));
        let p = Flavor::Nacos.ports(31000, 0);
        assert_eq!(
            p.all(),
            [31000, 32000, 32001, 31001, 30000],
            "HTTP, gRPC, cluster gRPC, console, JRaft"
        );
        assert!(allocate(Flavor::Nacos, 1500, 1).is_err());
        assert_eq!(Flavor::Tacos.ports(31000, 1), node_ports(31000, 1));
        // A Java Nacos spec reports its release.
        let java = ServerSpec {
            flavor: Flavor::Nacos,
            version: "Java Nacos 3.0.3 (JDK 17, -Xmx512m, default GC)".into(),
            java: Some(JavaNacos {
                java: PathBuf::from("java"),
                jvm: vec!["-Xmx512m".into()],
                nacos_version: "3.0.3".into(),
                jdk: "17".into(),
                gc: None,
            }),
            ..spec(Flavor::Nacos)
        };
        assert_eq!(java.version_number(), "3.0.3");
    }

    fn spec(flavor: Flavor) -> ServerSpec {
        ServerSpec {
            label: "x".into(),
            flavor,
            binary: PathBuf::from("/bin/true"),
            version: "tacos 0.1.0".into(),
            env: Vec::new(),
            java: None,
        }
    }

    #[test]
    fn commands() {
        let p0 = node_ports(31000, 0);
        let p1 = node_ports(31000, 1);
        let c = tacos_command(&spec(Flavor::Tacos), 1, &p1, &p0, Path::new("/tmp/n2"));
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.windows(2).any(|w| w == ["--join", "127.0.0.1:33001"]));
        assert!(args.windows(2).any(|w| w == ["--bind", "127.0.0.1"]));
        assert!(args.windows(2).any(|w| w == ["--node-id", "2"]));
        assert!(!args.iter().any(|a| a == "--learner"));
        let p4 = node_ports(31000, 3);
        let c = tacos_command(&spec(Flavor::Tacos), 3, &p4, &p0, Path::new("/tmp/n4"));
        assert!(c.get_args().any(|a| a == "--learner"));
        let c = rnacos_command(&spec(Flavor::RNacos), 1, &p1, &p0, Path::new("/tmp/n2"));
        let env: Vec<(String, String)> = c
            .get_envs()
            .filter_map(|(k, v)| {
                Some((
                    k.to_string_lossy().into_owned(),
                    v?.to_string_lossy().into_owned(),
                ))
            })
            .collect();
        assert!(env.contains(&("RNACOS_RAFT_JOIN_ADDR".into(), "127.0.0.1:32000".into())));
        assert!(env.contains(&("RNACOS_SDK_HOST".into(), "127.0.0.1".into())));
        assert!(env.contains(&("RNACOS_RAFT_AUTO_INIT".into(), "false".into())));
        assert_eq!(spec(Flavor::Tacos).version_number(), "0.1.0");
    }
}
