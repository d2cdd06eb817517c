//! A cluster of real `tacos` processes for integration tests.
//!
//! * [`Cluster::start`] runs N nodes on free ports, each with its own data
//!   dir inside one test-owned [`TempDir`]: node 1 initializes the cluster,
//!   the others `--join` it; it returns once every node is a voter and all
//!   nodes hold the same state.
//! * Nodes are addressed by index (`0..len`); node `i` has Raft id `i + 1`.
//!   [`Cluster::stop`], [`Cluster::kill9`] and [`Cluster::restart`] reuse the
//!   node's ports, data dir and arguments.
//! * [`Cluster::wait_for_leader`] and [`Cluster::wait_converged`] poll the
//!   admin routes (`/tacos/v1/admin/raft`, `/tacos/v1/admin/digest`) with a
//!   deadline and panic with every node's Raft view and log tail.
//!
//! Clusters in one test binary run one at a time (each holds a process-wide
//! lock while it lives): several clusters of debug builds on a small machine
//! starve each other's heartbeats and cause spurious elections.

use std::fmt::Write as _;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::{Mutex, MutexGuard};

use super::{
    assert_true, free_port, java_encode, md5_hex, read_lossy, temp_dir, NacosApi, Reply, Server,
    POLL,
};

/// The group every config of these tests is in.
pub const GROUP: &str = "DEFAULT_GROUP";
/// How long a cluster may take to agree on a leader.
pub const LEADER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long live nodes may take to reach the same applied index and state.
pub const CONVERGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a node may take to become healthy (it knows a leader).
pub const HEALTHY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long membership may take to show a change on every node.
pub const MEMBERS_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on one admin or health request.
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(3);
/// Bound on a linearizable read or membership change made by the harness
/// (either may wait 10 s for a leader; writes are bounded by the client's
/// 30 s).
pub const ROUTED_TIMEOUT: Duration = Duration::from_secs(15);
/// Attempts to start a node whose port was taken in the meantime.
const START_ATTEMPTS: usize = 5;
/// Log lines shown per log file in a failure message.
const LOG_TAIL_LINES: usize = 40;

pub const RAFT: &str = "/tacos/v1/admin/raft";
pub const MEMBERS: &str = "/tacos/v1/admin/cluster/members";
pub const LEARNERS: &str = "/tacos/v1/admin/cluster/learners";
pub const VOTERS: &str = "/tacos/v1/admin/cluster/voters";
pub const DIGEST: &str = "/tacos/v1/admin/digest";
pub const LISTENER: &str = "/nacos/v1/cs/configs/listener";

/// One cluster at a time per test binary.
static SERIAL: Mutex<()> = Mutex::const_new(());

/// One node: its ports, data dir and arguments stay the same across restarts.
struct ClusterNode {
    id: u64,
    http_port: u16,
    cluster_port: u16,
    grpc_port: u16,
    /// Holds the node's data dir (`dir/data`) and its log files.
    dir: TempDir,
    /// Every argument after `--data-dir` and `--http-port`.
    args: Vec<String>,
    server: Option<Server>,
    /// Log files of earlier runs, oldest first.
    old_logs: Vec<PathBuf>,
    api: NacosApi,
}

/// A cluster of `tacos` processes (see the module docs).
pub struct Cluster {
    nodes: Vec<ClusterNode>,
    /// Arguments every node gets (before its own).
    common: Vec<String>,
    tmp: TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    /// A cluster with no node yet; `common` arguments go to every node.
    pub async fn empty(common: &[&str]) -> Cluster {
        let serial = SERIAL.lock().await;
        Cluster {
            nodes: Vec::new(),
            common: common.iter().map(|s| s.to_string()).collect(),
            tmp: temp_dir(),
            _serial: serial,
        }
    }

    /// Starts `n` nodes (node 1 initializes, the others join through node 1)
    /// and waits until all are voters, a leader is known and all hold the
    /// same state.
    pub async fn start(n: usize, common: &[&str]) -> Cluster {
        assert!(n >= 1);
        let mut cluster = Cluster::empty(common).await;
        let started = Instant::now();
        let first = cluster.add_node(None, &[]);
        cluster.start_node(first).await;
        let others: Vec<usize> = (1..n).map(|_| cluster.add_node(Some(first), &[])).collect();
        cluster.start_nodes(&others).await;
        let ids: Vec<u64> = (1..=n as u64).collect();
        cluster.wait_voters(&ids).await;
        cluster.wait_for_leader(LEADER_TIMEOUT).await;
        cluster.wait_converged().await;
        eprintln!("cluster of {n} started in {:?}", started.elapsed());
        cluster
    }

    /// Adds node `len + 1` (not started) with the common arguments and
    /// `extra`; it joins through node `join`'s cluster address when given.
    pub fn add_node(&mut self, join: Option<usize>, extra: &[&str]) -> usize {
        let mut args = self.common.clone();
        args.extend(extra.iter().map(|s| s.to_string()));
        self.add_node_with(join, args)
    }

    /// The arguments every node gets (given to [`Cluster::start`]).
    pub fn common_args(&self) -> &[String] {
        &self.common
    }

    /// [`Cluster::add_node`] with `args` instead of the common arguments.
    pub fn add_node_with(&mut self, join: Option<usize>, args: Vec<String>) -> usize {
        let index = self.nodes.len();
        let id = index as u64 + 1;
        let http_port = free_port();
        let cluster_port = free_port();
        let grpc_port = free_port();
        let dir = tempfile::Builder::new()
            .prefix(&format!("node{id}-"))
            .tempdir_in(self.tmp.path())
            .expect("creating a node dir");
        let mut args = args;
        args.extend([
            "--node-id".to_string(),
            id.to_string(),
            "--cluster-port".to_string(),
            cluster_port.to_string(),
            "--grpc-port".to_string(),
            grpc_port.to_string(),
        ]);
        if let Some(via) = join {
            args.extend(["--join".to_string(), self.cluster_addr(via)]);
        }
        let api = NacosApi::for_server(
            http_port,
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        self.nodes.push(ClusterNode {
            id,
            http_port,
            cluster_port,
            grpc_port,
            dir,
            args,
            server: None,
            old_logs: Vec::new(),
            api,
        });
        index
    }

    fn node(&self, i: usize) -> &ClusterNode {
        self.nodes
            .get(i)
            .unwrap_or_else(|| panic!("no node {i} (the cluster has {})", self.nodes.len()))
    }

    fn node_mut(&mut self, i: usize) -> &mut ClusterNode {
        let len = self.nodes.len();
        self.nodes
            .get_mut(i)
            .unwrap_or_else(|| panic!("no node {i} (the cluster has {len})"))
    }

    /// How many nodes (running or not) the cluster has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Node `i`'s Raft id.
    pub fn id(&self, i: usize) -> u64 {
        self.node(i).id
    }

    /// The index of the node with Raft id `id`.
    pub fn index_of(&self, id: u64) -> usize {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node with id {id}"))
    }

    pub fn http_port(&self, i: usize) -> u16 {
        self.node(i).http_port
    }

    pub fn grpc_port(&self, i: usize) -> u16 {
        self.node(i).grpc_port
    }

    pub fn cluster_port(&self, i: usize) -> u16 {
        self.node(i).cluster_port
    }

    /// `127.0.0.1:<cluster port>`, as other nodes reach node `i`.
    pub fn cluster_addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.node(i).cluster_port)
    }

    /// `127.0.0.1:<http port>`.
    pub fn http_addr(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.node(i).http_port)
    }

    /// The arguments node `i` is started with (after data dir and HTTP port).
    pub fn args(&self, i: usize) -> &[String] {
        &self.node(i).args
    }

    /// The Nacos API of node `i`.
    pub fn api(&self, i: usize) -> NacosApi {
        self.node(i).api.clone()
    }

    /// The test's temp dir (node dirs are inside it).
    pub fn tmp(&self) -> &TempDir {
        &self.tmp
    }

    /// Whether node `i` runs.
    pub fn is_live(&mut self, i: usize) -> bool {
        self.node_mut(i)
            .server
            .as_mut()
            .is_some_and(|s| s.is_running())
    }

    /// Indexes of the nodes that were started and not stopped.
    pub fn live(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].server.is_some())
            .collect()
    }

    // ---- processes ----------------------------------------------------------

    /// Spawns node `i` without waiting.
    pub fn spawn(&mut self, i: usize) {
        let node = self.node_mut(i);
        assert!(node.server.is_none(), "node {} already runs", node.id);
        let args: Vec<&str> = node.args.iter().map(String::as_str).collect();
        let server = Server::spawn(&node.dir, node.http_port, &args);
        node.server = Some(server);
    }

    /// Forgets node `i`'s (ended) process, keeping its log for messages.
    fn forget(&mut self, i: usize) -> Option<Server> {
        let node = self.node_mut(i);
        let server = node.server.take()?;
        node.old_logs.push(server.log_path().to_path_buf());
        Some(server)
    }

    /// Waits until node `i` answers `GET /health` 200 (it knows a leader).
    /// A node that exited because its port was taken in the meantime is
    /// started again (same ports: they are in the cluster's membership).
    pub async fn wait_healthy(&mut self, i: usize) {
        let deadline = Instant::now() + HEALTHY_TIMEOUT;
        let mut attempts = 1;
        loop {
            let exited = {
                let server = self.node_mut(i).server.as_mut().expect("node not started");
                if server.is_running() {
                    None
                } else {
                    Some(server.log())
                }
            };
            if let Some(log) = exited {
                let id = self.id(i);
                if log.contains("cannot listen on") && attempts < START_ATTEMPTS {
                    eprintln!("node {id}: a port was taken, starting again: {log}");
                    attempts += 1;
                    self.forget(i);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    self.spawn(i);
                    continue;
                }
                panic!(
                    "node {id} exited while starting; log:\n{log}\n{}",
                    self.diagnostics().await
                );
            }
            let last = match self.get(i, "/health").await {
                Ok(reply) if reply.status == 200 => return,
                Ok(reply) => format!("{reply:?}"),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                panic!(
                    "node {} not healthy within {HEALTHY_TIMEOUT:?} (last: {last})\n{}",
                    self.id(i),
                    self.diagnostics().await
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Starts node `i` and waits until it is healthy.
    pub async fn start_node(&mut self, i: usize) {
        self.spawn(i);
        self.wait_healthy(i).await;
    }

    /// Starts several nodes at once (they may need each other for a quorum)
    /// and waits until all are healthy.
    pub async fn start_nodes(&mut self, nodes: &[usize]) {
        for &i in nodes {
            self.spawn(i);
        }
        for &i in nodes {
            self.wait_healthy(i).await;
        }
    }

    /// Starts a stopped node again with the same ports, data dir and args.
    pub async fn restart(&mut self, i: usize) {
        self.start_node(i).await;
    }

    /// SIGTERM to node `i`; waits (bounded) until it exited and asserts it
    /// exited successfully.
    pub async fn stop(&mut self, i: usize) -> ExitStatus {
        let id = self.id(i);
        let status = self
            .node_mut(i)
            .server
            .as_mut()
            .unwrap_or_else(|| panic!("node {id} is not running"))
            .stop()
            .await;
        let server = self.forget(i).expect("server");
        assert!(
            status.success(),
            "node {id} exited with {status} after SIGTERM; log:\n{}",
            tail(&server.log(), LOG_TAIL_LINES)
        );
        status
    }

    /// SIGKILL to node `i`.
    pub fn kill9(&mut self, i: usize) -> ExitStatus {
        let id = self.id(i);
        let status = self
            .node_mut(i)
            .server
            .as_mut()
            .unwrap_or_else(|| panic!("node {id} is not running"))
            .kill9();
        self.forget(i);
        status
    }

    /// The process id of node `i`, which must be running (for signals the
    /// helpers do not send, without waiting for the process to exit).
    pub fn pid(&self, i: usize) -> u32 {
        let node = self.node(i);
        node.server
            .as_ref()
            .unwrap_or_else(|| panic!("node {} is not running", node.id))
            .pid()
    }

    /// Everything node `i`'s current (or last) run logged.
    pub fn log(&self, i: usize) -> String {
        let node = self.node(i);
        match (&node.server, node.old_logs.last()) {
            (Some(server), _) => server.log(),
            (None, Some(path)) => read_lossy(path),
            (None, None) => String::new(),
        }
    }

    /// Node `i`'s log once it contains `needle`, or as it is after `timeout`
    /// (a line logged after the event a test waited for may trail it).
    pub async fn log_with(&self, i: usize, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let log = self.log(i);
            if log.contains(needle) || Instant::now() >= deadline {
                return log;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // ---- HTTP ----------------------------------------------------------------

    /// Starts a v1 long poll (30 s) on node `i` for `data_id` in
    /// [`GROUP`], holding the md5 of `content`; the task ends with its answer.
    pub fn long_poll(
        &self,
        i: usize,
        data_id: &str,
        content: &str,
    ) -> tokio::task::JoinHandle<Reply> {
        let probe = format!("{data_id}\u{2}{GROUP}\u{2}{}\u{1}", md5_hex(content));
        let api = self.api(i);
        tokio::spawn(async move {
            let value = java_encode(&probe);
            let response = api
                .client()
                .post(api.url(LISTENER))
                .header("Long-Pulling-Timeout", "30000")
                .form(&[("Listening-Configs", value.as_str())])
                .timeout(Duration::from_secs(45))
                .send()
                .await
                .expect("POST listener");
            Reply::read(response)
                .await
                .expect("reading the listener answer")
        })
    }

    /// `GET path` on node `i` with a short timeout; transport errors as text.
    pub async fn get(&self, i: usize, path: &str) -> Result<Reply, String> {
        let api = &self.node(i).api;
        let sent = api
            .client()
            .get(api.url(path))
            .timeout(ADMIN_TIMEOUT)
            .send()
            .await;
        match sent {
            Ok(response) => Reply::read(response)
                .await
                .map_err(|e| format!("node {} GET {path}: {e}", self.id(i))),
            Err(e) => Err(format!("node {} GET {path}: {e}", self.id(i))),
        }
    }

    /// `GET path` on node `i`, a 200 JSON answer parsed.
    pub async fn get_json(&self, i: usize, path: &str) -> Result<Value, String> {
        let reply = self.get(i, path).await?;
        if reply.status != 200 {
            return Err(format!("node {} GET {path}: {reply:?}", self.id(i)));
        }
        serde_json::from_str(&reply.body).map_err(|e| {
            format!(
                "node {} GET {path}: not JSON ({e}): {}",
                self.id(i),
                reply.body
            )
        })
    }

    /// Node `i`'s Raft view (`GET /tacos/v1/admin/raft`).
    pub async fn raft(&self, i: usize) -> Result<Value, String> {
        self.get_json(i, RAFT).await
    }

    /// Node `i`'s Raft view; panics if it does not answer.
    pub async fn raft_view(&self, i: usize) -> Value {
        match self.raft(i).await {
            Ok(view) => view,
            Err(e) => panic!("{e}\n{}", self.diagnostics().await),
        }
    }

    /// Node `i`'s digest (`GET /tacos/v1/admin/digest`).
    pub async fn digest(&self, i: usize) -> Result<Value, String> {
        self.get_json(i, DIGEST).await
    }

    /// Node `i`'s membership (`GET /tacos/v1/admin/cluster/members`).
    pub async fn members(&self, i: usize) -> Result<Value, String> {
        self.get_json(i, MEMBERS).await
    }

    /// A membership change (`POST` learners/voters, `DELETE` members) on node
    /// `i`; the answer whatever its status. `ROUTED_TIMEOUT` bounds it.
    pub async fn admin(
        &self,
        i: usize,
        method: reqwest::Method,
        path: &str,
        form: &[(&str, &str)],
    ) -> Reply {
        let api = &self.node(i).api;
        let mut request = api
            .client()
            .request(method.clone(), api.url(path))
            .timeout(ROUTED_TIMEOUT);
        request = if method == reqwest::Method::DELETE {
            request.query(form)
        } else {
            request.form(form)
        };
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("node {} {method} {path} {form:?}: {e}", self.id(i)));
        Reply::read(response)
            .await
            .unwrap_or_else(|e| panic!("node {} {method} {path}: reading: {e}", self.id(i)))
    }

    /// Publishes `content` under `data_id` (group [`GROUP`], no tenant) on
    /// node `i` and asserts the answer is 200 `true`.
    pub async fn publish(&self, i: usize, data_id: &str, content: &str) {
        let what = format!("node {} publishing {data_id}", self.id(i));
        let response = self.node(i).api.publish(data_id, GROUP, "", content).await;
        assert_true(response, &what).await;
    }

    /// A local read of `data_id` on node `i`: `Some(content)` on 200, `None`
    /// on 404; panics on anything else.
    pub async fn read(&self, i: usize, data_id: &str) -> Option<String> {
        self.read_with(i, data_id, None).await
    }

    /// A linearizable read (`consistency=linearizable`) of `data_id` on node
    /// `i`, as [`Cluster::read`].
    pub async fn read_linearizable(&self, i: usize, data_id: &str) -> Option<String> {
        self.read_with(i, data_id, Some("linearizable")).await
    }

    async fn read_with(
        &self,
        i: usize,
        data_id: &str,
        consistency: Option<&str>,
    ) -> Option<String> {
        let mut query = vec![("dataId", data_id), ("group", GROUP), ("tenant", "")];
        if let Some(mode) = consistency {
            query.push(("consistency", mode));
        }
        let query = serde_urlencoded::to_string(&query).expect("encoding a query");
        let path = format!("{}?{query}", NacosApi::CONFIGS);
        let api = &self.node(i).api;
        let response = api
            .client()
            .get(api.url(&path))
            .timeout(ROUTED_TIMEOUT)
            .send()
            .await
            .unwrap_or_else(|e| panic!("node {} GET {path}: {e}", self.id(i)));
        let reply = Reply::read(response)
            .await
            .unwrap_or_else(|e| panic!("node {} GET {path}: reading: {e}", self.id(i)));
        match reply.status {
            200 => Some(reply.body),
            404 => None,
            _ => panic!("node {} GET {path} answered {reply:?}", self.id(i)),
        }
    }

    // ---- waiting -------------------------------------------------------------

    /// Calls `check` every [`POLL`] until it returns `Ok`; after `timeout`
    /// panics with `what`, the last error and the cluster's diagnostics.
    pub async fn poll_until<T, F, Fut>(&self, what: &str, timeout: Duration, mut check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            let last = match check().await {
                Ok(value) => return value,
                Err(e) => e,
            };
            if Instant::now() > deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {what}; last: {last}\n{}",
                    self.diagnostics().await
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The node every live node names as leader, if that node itself leads.
    pub async fn leader(&self) -> Result<usize, String> {
        let live = self.live();
        if live.is_empty() {
            return Err("no node runs".into());
        }
        let mut named = Vec::new();
        for &i in &live {
            let view = self.raft(i).await?;
            named.push((i, view["leader"].as_u64(), view["state"].clone()));
        }
        let leader_id = named[0]
            .1
            .ok_or_else(|| format!("no leader known: {named:?}"))?;
        if named
            .iter()
            .any(|(_, leader, _)| *leader != Some(leader_id))
        {
            return Err(format!("nodes disagree on the leader: {named:?}"));
        }
        let index = self
            .nodes
            .iter()
            .position(|n| n.id == leader_id)
            .ok_or_else(|| format!("the leader {leader_id} is not a node of this cluster"))?;
        match named.iter().find(|(i, _, _)| *i == index) {
            Some((_, _, state)) if state == "Leader" => Ok(index),
            Some((_, _, state)) => Err(format!("node {leader_id} is named leader but is {state}")),
            None => Err(format!("the leader {leader_id} is not running: {named:?}")),
        }
    }

    /// Waits until every live node names the same leader and that node leads;
    /// returns its index.
    pub async fn wait_for_leader(&self, timeout: Duration) -> usize {
        self.poll_until("a leader all live nodes agree on", timeout, || {
            self.leader()
        })
        .await
    }

    /// Waits until every live node applied the same index and holds the same
    /// state (digest); returns the digest answer of the first live node.
    pub async fn wait_converged(&self) -> Value {
        self.poll_until("all live nodes converged", CONVERGE_TIMEOUT, || async {
            let mut digests = Vec::new();
            for i in self.live() {
                digests.push(self.digest(i).await?);
            }
            let first = digests.first().ok_or("no node runs")?.clone();
            let same = digests
                .iter()
                .all(|d| d["applied"] == first["applied"] && d["digest"] == first["digest"]);
            if same {
                Ok(first)
            } else {
                Err(format!("digests differ: {digests:?}"))
            }
        })
        .await
    }

    /// Waits until every live node lists exactly `ids` as voters and no
    /// learners.
    pub async fn wait_voters(&self, ids: &[u64]) {
        let mut want: Vec<u64> = ids.to_vec();
        want.sort_unstable();
        let what = format!("voters {want:?} on every live node");
        self.poll_until(&what, MEMBERS_TIMEOUT, || async {
            for i in self.live() {
                let members = self.members(i).await?;
                let voters = member_ids(&members["voters"]);
                let learners = member_ids(&members["learners"]);
                if voters != want || !learners.is_empty() {
                    return Err(format!(
                        "node {} lists voters {voters:?}, learners {learners:?}",
                        self.id(i)
                    ));
                }
            }
            Ok(())
        })
        .await
    }

    /// Every node's ports, Raft view, digest and log tails, for failure
    /// messages.
    pub async fn diagnostics(&self) -> String {
        let mut out = String::from("---- cluster diagnostics ----\n");
        for (i, node) in self.nodes.iter().enumerate() {
            let running = node.server.is_some();
            let _ = writeln!(
                out,
                "== node {} (http {}, cluster {}, {}) args {:?}",
                node.id,
                node.http_port,
                node.cluster_port,
                if running { "running" } else { "not running" },
                node.args
            );
            if running {
                let raft = self.raft(i).await.map_or_else(|e| e, |v| v.to_string());
                let digest = self.digest(i).await.map_or_else(|e| e, |v| v.to_string());
                let _ = writeln!(out, "raft: {raft}\ndigest: {digest}");
            }
            let mut logs: Vec<PathBuf> =
                node.old_logs.iter().rev().take(2).rev().cloned().collect();
            if let Some(server) = &node.server {
                logs.push(server.log_path().to_path_buf());
            }
            for path in logs {
                let _ = writeln!(
                    out,
                    "-- log {} (last {LOG_TAIL_LINES} lines):\n{}",
                    path.display(),
                    tail(&read_lossy(&path), LOG_TAIL_LINES)
                );
            }
        }
        out
    }
}

/// The ids of a `voters` or `learners` list, sorted.
pub fn member_ids(list: &Value) -> Vec<u64> {
    let mut ids: Vec<u64> = list
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["id"].as_u64()).collect())
        .unwrap_or_default();
    ids.sort_unstable();
    ids
}

/// The last `lines` lines of `text`.
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
