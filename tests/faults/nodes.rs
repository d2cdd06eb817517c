//! Three real `tacos` processes (built with `fault-injection`), each behind
//! a [`Proxy`] on its cluster port, with failpoint control files.
//!
//! Node N binds 127.0.0.(N+1) for everything and advertises 127.0.1.N, where
//! its proxy listens on the same cluster port. Clients talk to the nodes
//! directly (HTTP); only traffic between nodes goes through proxies.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::proxy::Proxy;
use super::common::{basic_auth, free_port, tacos_command, ADMIN_PASSWORD};

pub struct Node {
    pub id: u64,
    pub ip: IpAddr,
    pub proxy_ip: IpAddr,
    pub http_port: u16,
    grpc_port: u16,
    pub cluster_port: u16,
    dir: PathBuf,
    pub failpoints: PathBuf,
    child: Option<Child>,
    pub proxy: Proxy,
    starts: u32,
}

impl Node {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.ip, self.http_port)
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("tacos-{}.log", self.starts))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

pub struct Nodes {
    pub nodes: Vec<Node>,
    pub client: reqwest::Client,
    _tmp: tempfile::TempDir,
}

fn signal(pid: u32, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) on our own child, not yet reaped (we hold its Child).
    unsafe {
        libc::kill(pid, signal);
    }
}

impl Nodes {
    /// Starts three nodes (1 initializes, 2 and 3 join through 1's proxy)
    /// and waits for three voters.
    pub async fn start() -> Nodes {
        let tmp = tempfile::Builder::new()
            .prefix("tacos-faults-")
            .tempdir()
            .expect("temp dir");
        let mut nodes = Vec::new();
        for id in 1..=3u64 {
            let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1 + id as u8));
            let proxy_ip = IpAddr::V4(Ipv4Addr::new(127, 0, 1, id as u8));
            let cluster_port = free_port();
            let proxy = Proxy::start(
                SocketAddr::new(proxy_ip, cluster_port),
                SocketAddr::new(ip, cluster_port),
            )
            .await;
            let dir = tmp.path().join(format!("node{id}"));
            std::fs::create_dir_all(&dir).expect("node dir");
            let failpoints = dir.join("failpoints");
            std::fs::write(&failpoints, "").expect("failpoint file");
            nodes.push(Node {
                id,
                ip,
                proxy_ip,
                http_port: free_port(),
                grpc_port: free_port(),
                cluster_port,
                dir,
                failpoints,
                child: None,
                proxy,
                starts: 0,
            });
        }
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(1))
            .timeout(Duration::from_secs(4))
            .build()
            .expect("client");
        let mut cluster = Nodes {
            nodes,
            client,
            _tmp: tmp,
        };
        for i in 0..3 {
            cluster.spawn(i);
        }
        cluster.wait_voters(3, Duration::from_secs(60)).await;
        cluster
    }

    /// Starts node `i` (again); its data dir is kept across starts.
    pub fn spawn(&mut self, i: usize) {
        let join = format!("{}:{}", self.nodes[0].proxy_ip, self.nodes[0].cluster_port);
        let node = &mut self.nodes[i];
        assert!(node.child.is_none(), "node {} already runs", node.id);
        node.starts += 1;
        let log = std::fs::File::create(node.log_path()).expect("log file");
        let log_err = log.try_clone().expect("log file");
        let mut command = tacos_command();
        command
            .env("TACOS_FAILPOINTS", &node.failpoints)
            .env("RUST_LOG", "info,openraft=warn")
            .args(["--node-id", &node.id.to_string()])
            .arg("--data-dir")
            .arg(node.dir.join("data"))
            .args(["--bind", &node.ip.to_string()])
            .args(["--advertise", &node.proxy_ip.to_string()])
            .args(["--http-port", &node.http_port.to_string()])
            .args(["--grpc-port", &node.grpc_port.to_string()])
            .args(["--cluster-port", &node.cluster_port.to_string()])
            .args(["--admin-password", ADMIN_PASSWORD])
            .stdout(log)
            .stderr(log_err);
        if node.id != 1 {
            command.args(["--join", &join]);
        }
        node.child = Some(command.spawn().expect("spawning tacos"));
    }

    /// SIGKILLs node `i` and reaps it.
    pub fn kill(&mut self, i: usize) -> Option<ExitStatus> {
        let mut child = self.nodes[i].child.take()?;
        let _ = child.kill();
        child.wait().ok()
    }

    pub fn pause(&self, i: usize) {
        if let Some(pid) = self.nodes[i].pid() {
            signal(pid, libc::SIGSTOP);
        }
    }

    pub fn resume(&self, i: usize) {
        if let Some(pid) = self.nodes[i].pid() {
            signal(pid, libc::SIGCONT);
        }
    }

    pub fn is_running(&mut self, i: usize) -> bool {
        match self.nodes[i].child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Waits (bounded) for node `i` to exit by itself; its status.
    pub async fn wait_exit(&mut self, i: usize, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(child) = self.nodes[i].child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.nodes[i].child = None;
                    return Some(status);
                }
            } else {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Cuts every link between node `i` and the others, both ways.
    pub fn isolate(&self, i: usize) {
        for j in 0..self.nodes.len() {
            if j != i {
                self.nodes[i].proxy.block(self.nodes[j].ip);
                self.nodes[j].proxy.block(self.nodes[i].ip);
            }
        }
    }

    /// Delays every chunk to and from node `i`.
    pub fn slow(&self, i: usize, delay: Duration) {
        self.nodes[i].proxy.delay(delay);
        for j in 0..self.nodes.len() {
            if j != i {
                self.nodes[j].proxy.delay(delay);
            }
        }
    }

    pub fn heal(&self) {
        for node in &self.nodes {
            node.proxy.heal();
        }
    }

    pub fn cut_count(&self) -> u64 {
        self.nodes.iter().map(|n| n.proxy.cut_count()).sum()
    }

    pub fn set_failpoints(&self, i: usize, text: &str) {
        std::fs::write(&self.nodes[i].failpoints, text).expect("failpoint file");
    }

    /// An admin GET on node `i`, parsed.
    pub async fn admin(&self, i: usize, path: &str) -> Option<Value> {
        let response = self
            .client
            .get(self.nodes[i].url(path))
            .header("Authorization", basic_auth("nacos", ADMIN_PASSWORD))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.json().await.ok()
    }

    /// Node `i`'s Raft view.
    pub async fn raft(&self, i: usize) -> Option<Value> {
        self.admin(i, "/tacos/v1/admin/raft").await
    }

    /// The leader as the live nodes agree on it (index), and its term.
    pub async fn leader(&self) -> Option<(usize, u64)> {
        for i in 0..self.nodes.len() {
            if let Some(view) = self.raft(i).await {
                if view["state"] == "Leader" {
                    return Some((i, view["term"].as_u64().unwrap_or(0)));
                }
            }
        }
        None
    }

    /// Waits for a leader (bounded).
    pub async fn wait_leader(&self, limit: Duration) -> (usize, u64) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(found) = self.leader().await {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no leader within {limit:?}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until node 1..3 all report `voters` voters and a leader.
    pub async fn wait_voters(&self, voters: usize, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let mut ready = 0;
            for i in 0..self.nodes.len() {
                if let Some(view) = self.raft(i).await {
                    let count = view["members"]["voters"].as_array().map_or(0, Vec::len);
                    if count == voters && !view["leader"].is_null() {
                        ready += 1;
                    }
                }
            }
            if ready == self.nodes.len() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not reach {voters} voters within {limit:?}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until every node has applied the same index with the same
    /// digest; returns that digest.
    pub async fn wait_converged(&self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let mut digests = Vec::new();
            for i in 0..self.nodes.len() {
                digests.push(self.admin(i, "/tacos/v1/admin/digest").await);
            }
            if let Some(Some(first)) = digests.first() {
                let same = digests.iter().all(|d| {
                    d.as_ref().is_some_and(|d| {
                        d["digest"] == first["digest"] && d["applied"] == first["applied"]
                    })
                });
                if same {
                    return first["digest"].as_str().unwrap_or_default().to_string();
                }
            }
            assert!(
                Instant::now() < deadline,
                "nodes did not converge within {limit:?}: {digests:?}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The tail of every node's logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for node in &self.nodes {
            for start in 1..=node.starts {
                let path = node.dir.join(format!("tacos-{start}.log"));
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                out.push_str(&format!("--- node {} start {start} ---\n", node.id));
                for line in tail.iter().rev() {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        out
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.resume(i);
            self.kill(i);
        }
    }
}
