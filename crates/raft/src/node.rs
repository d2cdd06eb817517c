//! A Tacos node: opens the data dir, starts openraft on it, bootstraps or
//! joins a cluster, and routes writes, read-index checks and membership
//! changes to the leader.
//!
//! Routing: a request is executed here when this node leads; otherwise it is
//! sent to the leader over the cluster port (at most one hop), and the
//! leader's answer (error included) comes back. A request is retried on
//! another leader only when it certainly was not executed (the receiver was
//! not the leader, or there was no leader); a write whose leader changed
//! mid-flight is reported as such, never as done.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::{ChangeMembers, Config, ServerState, SnapshotPolicy};

use super::freshness::{self, Behind, Freshness, Lag};
use super::log_storage::RaftLog;
use super::network::Peers;
use super::proposer::Proposer;
use super::rpc::{Forward, ForwardReply, Request, RouteError};
use super::state_machine::{ChangeSink, StateMachine};
use std::net::IpAddr;
use std::path::PathBuf;
use tacos_core::types::{LogId, NodeId, NodeInfo, Raft, RaftMetrics};
use tacos_core::Command;
use tacos_state::{Response, State, StateHandle};
use tacos_store::{Fs, LogOptions, LogStore};

/// How long start-up waits for the state in memory to be complete.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a restarted voter of a cluster waits at start-up to catch up
/// with the writes committed while it was down, before it serves anyway.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a routed request waits for a leader to appear.
const ROUTE_TIMEOUT: Duration = Duration::from_secs(10);
/// A forwarded request's deadline on the wire (a join waits for catch-up).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(10);
const JOIN_TIMEOUT: Duration = Duration::from_secs(120);
/// After a forwarded write, how long this node waits to apply it itself so
/// the client reads its own write here.
const APPLY_WAIT: Duration = Duration::from_secs(5);
/// How often the log size is checked against the snapshot threshold.
const SNAPSHOT_CHECK: Duration = Duration::from_secs(1);

/// What a node needs to start: the raft layer's own options, filled by the
/// server from its settings.
pub struct NodeOptions {
    pub node_id: NodeId,
    pub data_dir: PathBuf,
    /// The file system the log and snapshots go through (a fault-injecting
    /// one in fault tests).
    pub fs: Arc<dyn Fs>,
    /// How other nodes and clients reach this one.
    pub me: NodeInfo,
    /// Outgoing cluster connections leave from this address when given (a
    /// multi-homed host; fault tests tell nodes apart by it).
    pub local_addr: Option<IpAddr>,
    /// The shared secret on every cluster call.
    pub cluster_token: Option<String>,
    /// Mutual TLS with the other nodes, when on.
    pub peer_tls: Option<crate::rpc::PeerTls>,
    /// The node will join a cluster through a member (never initialize one).
    pub joining: bool,
    /// It joins as a learner (receives the log, serves reads, never votes)
    /// and stays one.
    pub learner: bool,
    /// How far behind a learner may serve reads ([`freshness`]).
    pub freshness: freshness::Limits,
    /// Initialize a new one-voter cluster on an empty data dir (node 1 does
    /// unless it joins).
    pub init: bool,
    pub segment_size: u64,
    /// Encryption at rest: the key-encryption key that opens the data dir's
    /// data key (see tacos_store::crypt).
    pub kek: Option<Arc<tacos_store::Kek>>,
    pub snapshot_entries: u64,
    pub snapshot_log_bytes: u64,
    /// Audit rows kept (stamped into the notes this node records).
    pub audit_limit: u32,
}

/// A running node.
pub struct Node {
    pub id: NodeId,
    pub raft: Raft,
    me: NodeInfo,
    state: StateHandle,
    log: LogStore,
    proposer: Proposer,
    peers: Peers,
    /// The commit point found on disk at start: reads wait until it is applied.
    committed_at_open: Option<LogId>,
    stopping: Arc<AtomicBool>,
    /// Audit rows kept (stamped into the notes this node records).
    audit_limit: u32,
    /// Joins as a learner rather than a voter.
    join_as_learner: bool,
    /// A learner's measure of how far behind it is.
    freshness: Arc<Freshness>,
    /// The key-encryption key, when encryption at rest is on (backups are
    /// sealed with it).
    kek: Option<Arc<tacos_store::Kek>>,
    /// Held by a membership request for its whole run on the leader.
    /// openraft's `change_membership` is two proposals (joint config, then
    /// uniform), and another change can slip in between them and fail the
    /// second: the first change then took effect but was answered as an
    /// error, so its join went unaudited and the cluster could stay joint.
    membership: tokio::sync::Mutex<()>,
}

/// Triggers a snapshot whenever `threshold` bytes of entries were appended
/// since the last one, so memory (the log is cached) and replay time stay
/// bounded however many commands each entry batches.
fn snapshot_by_log_size(raft: Raft, log: LogStore, threshold: u64) {
    tokio::spawn(async move {
        let mut last = log.appended_bytes();
        let mut tick = tokio::time::interval(SNAPSHOT_CHECK);
        loop {
            tick.tick().await;
            let now = log.appended_bytes();
            if now.saturating_sub(last) < threshold {
                continue;
            }
            last = now;
            if raft.trigger().snapshot().await.is_err() {
                return; // raft stopped
            }
        }
    });
}

impl Node {
    /// Opens the data dir and starts Raft. A new data dir is initialized as
    /// a one-voter cluster when this is node 1 (or `--init`) and no `--join`
    /// is given. Call [`Node::wait_ready`] before serving reads.
    pub async fn start(options: NodeOptions, changes: Arc<dyn ChangeSink>) -> anyhow::Result<Node> {
        let fs = options.fs.clone();
        let data_dir = &options.data_dir;
        let log_options = LogOptions {
            segment_size: options.segment_size,
            kek: options.kek.clone(),
        };
        let (log, recovery) = LogStore::open(fs.clone(), data_dir, log_options)?;
        tracing::info!(
            data_dir = %data_dir.display(),
            segments = recovery.segments,
            entries = recovery.entries,
            committed = ?recovery.committed,
            torn_tail = ?recovery.torn_tail,
            "opened the log"
        );
        let state_machine =
            StateMachine::open(fs, data_dir, log.data_key())?.with_change_sink(changes);
        let state = state_machine.state();
        let applied = state.load().last_applied;
        let (purged, _) = log.log_state();
        if purged.map(|p| p.index) > applied.map(|a| a.index) {
            anyhow::bail!(
                "the log in {} was purged up to {purged:?} but no snapshot covers it (newest snapshot ends at {applied:?}); refusing to start with missing data",
                data_dir.display()
            );
        }

        let config = Config {
            cluster_name: "tacos".into(),
            heartbeat_interval: 250,
            election_timeout_min: 1000,
            election_timeout_max: 2000,
            install_snapshot_timeout: 10_000,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(options.snapshot_entries),
            // Entries carry batches of commands: keep a short tail only.
            max_in_snapshot_log_to_keep: 200,
            ..Default::default()
        }
        .validate()
        .context("raft configuration")?;
        let peers = Peers::new(
            options.cluster_token.clone(),
            options.local_addr,
            options.peer_tls.as_ref(),
        );
        let raft = Raft::new(
            options.node_id,
            Arc::new(config),
            peers.clone(),
            RaftLog::new(log.clone()),
            state_machine,
        )
        .await
        .context("starting raft")?;

        let me = options.me.clone();
        let initialized = raft.is_initialized().await.context("reading raft state")?;
        if !initialized {
            if !options.joining && (options.node_id == 1 || options.init) {
                tracing::info!(node_id = options.node_id, "initializing a new cluster");
                raft.initialize(BTreeMap::from([(options.node_id, me.clone())]))
                    .await
                    .context("initializing the cluster")?;
            } else if !options.joining {
                tracing::warn!(
                    node_id = options.node_id,
                    "this node belongs to no cluster yet: start it with --join ADDR, or add it from the leader (POST /tacos/v1/admin/cluster/learners)"
                );
            }
        }

        let proposer = Proposer::start(raft.clone());
        snapshot_by_log_size(raft.clone(), log.clone(), options.snapshot_log_bytes);
        Ok(Node {
            id: options.node_id,
            raft,
            me,
            state,
            log,
            proposer,
            peers,
            committed_at_open: recovery.committed,
            stopping: Arc::new(AtomicBool::new(false)),
            audit_limit: options.audit_limit,
            join_as_learner: options.learner,
            freshness: Arc::new(Freshness::new(options.freshness)),
            kek: options.kek,
            membership: tokio::sync::Mutex::new(()),
        })
    }

    /// Waits until reads here see every write this node knew was committed
    /// when it stopped. A node that is its cluster's only voter also waits to
    /// lead (it elects itself at once instead of after a timeout).
    ///
    /// A voter of a larger cluster then also catches up with the writes the
    /// cluster committed while it was down (the leader's read index, at most
    /// [`CATCH_UP_TIMEOUT`]): otherwise its first answers come from an older
    /// state, and a client that already holds a newer config is told it
    /// changed, reads the older one and hands it to its listeners. Without a
    /// leader in that time the node starts with what it has.
    pub async fn wait_ready(&self) -> anyhow::Result<()> {
        let (sole_voter, voter_of_many) = {
            let metrics = self.metrics();
            let membership = metrics.membership_config.membership();
            let voters: Vec<NodeId> = membership.voter_ids().collect();
            (
                voters == [self.id],
                voters.len() > 1 && voters.contains(&self.id),
            )
        };
        if sole_voter {
            self.raft
                .trigger()
                .elect()
                .await
                .context("starting an election")?;
            let id = self.id;
            self.raft
                .wait(Some(READY_TIMEOUT))
                .metrics(
                    |m| {
                        m.current_leader == Some(id)
                            && m.last_applied.map(|l| l.index) >= m.last_log_index
                    },
                    "leading and caught up",
                )
                .await
                .context("waiting for this node to lead and apply its log")?;
        } else if let Some(committed) = self.committed_at_open {
            self.raft
                .wait(Some(READY_TIMEOUT))
                .applied_index_at_least(Some(committed.index), "applied the known commits")
                .await
                .context("waiting for this node to apply its committed log")?;
        }
        if voter_of_many {
            self.catch_up_with_the_cluster().await;
        }
        tracing::info!(configs = self.state().config_count(), "node is ready");
        Ok(())
    }

    /// Applies what the cluster committed while this node was down: waits
    /// for the leader's read index (bounded by [`CATCH_UP_TIMEOUT`]).
    async fn catch_up_with_the_cluster(&self) {
        let started = Instant::now();
        match tokio::time::timeout(CATCH_UP_TIMEOUT, self.linearizable_barrier()).await {
            Ok(Ok(())) => tracing::info!(
                applied = ?self.raft.metrics().borrow().last_applied,
                elapsed = ?started.elapsed(),
                "caught up with the cluster"
            ),
            Ok(Err(e)) => tracing::warn!(
                "starting without catching up with the cluster first (reads may be behind until it does): {e}"
            ),
            Err(_) => tracing::warn!(
                "no leader answered within {CATCH_UP_TIMEOUT:?}; starting without catching up with the cluster first (reads may be behind until it does)"
            ),
        }
    }

    /// Asks the cluster at `addr` (any member) to take this node in, and
    /// retries with backoff until this node is a voter (a learner, with
    /// `--learner`). Returns at once when it already is one.
    pub async fn join(&self, addr: &str) {
        let mut backoff = Duration::from_millis(200);
        let (id, me) = (self.id, self.me.clone());
        loop {
            if self.is_voter() {
                tracing::info!("this node is a voter");
                return;
            }
            if self.join_as_learner && self.is_learner() {
                tracing::info!("this node is a learner");
                return;
            }
            let request = if self.join_as_learner {
                Request::AddLearner {
                    id,
                    node: me.clone(),
                }
            } else {
                Request::Join {
                    id,
                    node: me.clone(),
                }
            };
            let forward = Forward { hops: 0, request };
            match self.peers.forward(addr, &forward, JOIN_TIMEOUT).await {
                Ok(ForwardReply::Membership { voters, .. }) if voters.contains(&self.id) => {
                    tracing::info!(via = addr, ?voters, "joined the cluster");
                    return;
                }
                Ok(ForwardReply::Membership { learners, .. })
                    if self.join_as_learner && learners.contains(&self.id) =>
                {
                    tracing::info!(via = addr, "joined the cluster as a learner");
                    return;
                }
                Ok(ForwardReply::Failed(e)) => tracing::warn!(via = addr, "join refused: {e}"),
                Ok(other) => tracing::warn!(via = addr, "unexpected join answer: {other:?}"),
                Err(e) => tracing::warn!(via = addr, "join failed: {e}"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }

    /// Whether this node is a member that does not vote.
    pub fn is_learner(&self) -> bool {
        self.applied_if_learner().is_some()
    }

    /// The index applied here, if this node is a learner. Reads the metrics
    /// in place (no clone): every read and listen asks it.
    fn applied_if_learner(&self) -> Option<u64> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        let learner = metrics
            .membership_config
            .membership()
            .learner_ids()
            .any(|id| id == self.id);
        learner.then(|| metrics.last_applied.map_or(0, |l| l.index))
    }

    /// Whether reads may be served here now: always on a voter; on a
    /// learner only while it is fresh enough ([`freshness`]).
    pub fn check_fresh(&self) -> Result<(), Behind> {
        match self.applied_if_learner() {
            None => Ok(()),
            Some(applied) => self.freshness.check(applied, Instant::now()),
        }
    }

    /// A learner's lag as last measured (`None` on a voter).
    pub fn learner_lag(&self) -> Option<Lag> {
        self.applied_if_learner()
            .map(|applied| self.freshness.lag(applied, Instant::now()))
    }

    /// While this node is a learner, asks the leader's read index every
    /// [`freshness::CHECK_PERIOD`] (see [`freshness`]). Runs until Raft
    /// stops.
    pub fn watch_freshness(self: &Arc<Self>) {
        let node = Arc::clone(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(freshness::CHECK_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if node.stopping.load(Ordering::Relaxed) || node.metrics().running_state.is_err() {
                    return;
                }
                if !node.is_learner() {
                    continue;
                }
                node.freshness.start(Instant::now());
                let asked = tokio::time::timeout(
                    freshness::CHECK_PERIOD * 2,
                    node.route(Request::ReadIndex, 0),
                );
                if let Ok(ForwardReply::ReadIndex { index }) = asked.await {
                    node.freshness.record(index, Instant::now());
                }
            }
        });
    }

    fn is_voter(&self) -> bool {
        let metrics = self.metrics();
        let voter = metrics
            .membership_config
            .membership()
            .voter_ids()
            .any(|id| id == self.id);
        voter
    }

    /// Ends the process if storage fails or Raft stops on its own: a node that
    /// cannot persist must not keep serving.
    pub fn exit_on_fatal(&self) {
        let mut failure = self.log.failure();
        let mut metrics = self.raft.metrics();
        let stopping = self.stopping.clone();
        tokio::spawn(async move {
            loop {
                let reason = tokio::select! {
                    changed = failure.changed() => {
                        if changed.is_err() { return; }
                        failure.borrow().clone()
                    }
                    changed = metrics.changed() => {
                        if changed.is_err() { return; }
                        metrics.borrow().running_state.as_ref().err().map(|e| e.to_string())
                    }
                };
                if let Some(reason) = reason {
                    if stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    tracing::error!("stopping the node: {reason}");
                    eprintln!("tacos: fatal storage or raft error, exiting: {reason}");
                    std::process::exit(74);
                }
            }
        });
    }

    /// The key-encryption key, when encryption at rest is on.
    pub fn kek(&self) -> Option<Arc<tacos_store::Kek>> {
        self.kek.clone()
    }

    /// The current state (a consistent point-in-time view, no lock held).
    pub fn state(&self) -> Arc<State> {
        self.state.load_full()
    }

    /// The handle through which the current state is read.
    pub fn state_handle(&self) -> StateHandle {
        self.state.clone()
    }

    /// Raft metrics as of now.
    pub fn metrics(&self) -> RaftMetrics {
        self.raft.metrics().borrow().clone()
    }

    /// The last commit point this node persisted.
    pub fn committed(&self) -> Option<LogId> {
        self.log.committed()
    }

    /// Proposes a command (through the leader) and waits until it is
    /// committed (durable on a quorum) and applied here.
    pub async fn write(&self, command: Command) -> Result<(LogId, Response), RouteError> {
        match self.route(Request::Write(Box::new(command)), 0).await {
            ForwardReply::Written { log_id, response } => {
                self.wait_applied(log_id.index, APPLY_WAIT).await;
                Ok((log_id, response))
            }
            ForwardReply::Failed(e) => Err(e),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until a read here is linearizable: asks the leader for its read
    /// index (which confirms its leadership with a quorum), then waits until
    /// this node applied up to it.
    pub async fn linearizable_barrier(&self) -> Result<(), RouteError> {
        match self.route(Request::ReadIndex, 0).await {
            ForwardReply::ReadIndex { index } => {
                if self.wait_applied(index, ROUTE_TIMEOUT).await {
                    Ok(())
                } else {
                    Err(RouteError::Unreachable(format!(
                        "this node did not catch up to the read index {index} in time"
                    )))
                }
            }
            ForwardReply::Failed(e) => Err(e),
            other => Err(unexpected(other)),
        }
    }

    /// Runs a membership request on the leader.
    pub async fn change_membership(&self, request: Request) -> Result<ForwardReply, RouteError> {
        match self.route(request, 0).await {
            ForwardReply::Failed(e) => Err(e),
            reply => Ok(reply),
        }
    }

    async fn wait_applied(&self, index: u64, timeout: Duration) -> bool {
        // The usual case (the write ran here, or already arrived): no waiter.
        let applied = self.raft.metrics().borrow().last_applied.map(|l| l.index);
        if applied >= Some(index) {
            return true;
        }
        self.raft
            .wait(Some(timeout))
            .applied_index_at_least(Some(index), "routed request applied here")
            .await
            .is_ok()
    }

    /// Executes `request` where the leader is: here, or one hop away.
    /// `hops` is how many nodes already passed it on.
    pub async fn route(&self, request: Request, hops: u8) -> ForwardReply {
        let deadline = Instant::now() + ROUTE_TIMEOUT;
        let timeout = match request {
            Request::Join { .. } => JOIN_TIMEOUT,
            _ => FORWARD_TIMEOUT,
        };
        loop {
            // Read the leader and its address without cloning the metrics:
            // this runs for every write.
            let (current_leader, leader_addr) = {
                let metrics = self.raft.metrics();
                let metrics = metrics.borrow();
                let addr = metrics.current_leader.and_then(|leader| {
                    metrics
                        .membership_config
                        .membership()
                        .get_node(&leader)
                        .map(|n| n.cluster_addr.clone())
                });
                (metrics.current_leader, addr)
            };
            let reply = match current_leader {
                Some(leader) if leader == self.id => self.execute(request.clone()).await,
                Some(_) if hops == 0 => match leader_addr {
                    None => ForwardReply::Failed(RouteError::NoLeader),
                    Some(addr) => {
                        let forward = Forward {
                            hops: hops + 1,
                            request: request.clone(),
                        };
                        self.peers
                            .forward(&addr, &forward, timeout)
                            .await
                            .unwrap_or_else(ForwardReply::Failed)
                    }
                },
                Some(leader) => ForwardReply::Failed(RouteError::NotLeader { leader }),
                None => ForwardReply::Failed(RouteError::NoLeader),
            };
            let retry = match &reply {
                // Nobody executed it: safe to try again on a (new) leader.
                ForwardReply::Failed(
                    RouteError::NoLeader | RouteError::NotLeader { .. } | RouteError::LeaderDown(_),
                ) => hops == 0,
                // A write that may have reached the leader is not repeated.
                ForwardReply::Failed(RouteError::Unreachable(_)) => {
                    hops == 0 && !matches!(request, Request::Write(_))
                }
                _ => false,
            };
            if !retry || Instant::now() >= deadline {
                return reply;
            }
            self.wait_for_leader_change(current_leader, deadline).await;
        }
    }

    /// Sleeps until the known leader differs from `stale` (or a short while).
    async fn wait_for_leader_change(&self, stale: Option<NodeId>, deadline: Instant) {
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = self
            .raft
            .wait(Some(left.min(Duration::from_millis(500))))
            .metrics(
                |m| m.current_leader.is_some() && m.current_leader != stale,
                "a new leader",
            )
            .await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    /// Executes a request on this node, which believes it leads.
    async fn execute(&self, request: Request) -> ForwardReply {
        let result = match request {
            Request::Write(command) => match self.proposer.propose(*command).await {
                Ok((log_id, response)) => Ok(ForwardReply::Written { log_id, response }),
                Err(e) => Err(e),
            },
            Request::ReadIndex => match self.raft.ensure_linearizable().await {
                Ok(read) => Ok(ForwardReply::ReadIndex {
                    index: read.map(|l| l.index).unwrap_or(0),
                }),
                Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => Err(f
                    .leader_id
                    .map_or(RouteError::NoLeader, |leader| RouteError::NotLeader {
                        leader,
                    })),
                // No quorum confirmed the leadership in time.
                Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(e))) => {
                    Err(RouteError::Unreachable(e.to_string()))
                }
                Err(RaftError::Fatal(e)) => Err(RouteError::Stopped(e.to_string())),
            },
            Request::Join { id, node } => {
                let _one_at_a_time = self.membership.lock().await;
                self.join_member(id, node).await
            }
            Request::AddLearner { id, node } => {
                let _one_at_a_time = self.membership.lock().await;
                self.add_learner(id, node).await
            }
            Request::Promote { id } => {
                let _one_at_a_time = self.membership.lock().await;
                self.apply_change(ChangeMembers::AddVoterIds([id].into()))
                    .await
            }
            Request::Remove { id } => {
                let _one_at_a_time = self.membership.lock().await;
                self.remove_member(id).await
            }
        };
        result.unwrap_or_else(ForwardReply::Failed)
    }

    async fn join_member(&self, id: NodeId, node: NodeInfo) -> Result<ForwardReply, RouteError> {
        let metrics = self.metrics();
        let membership = metrics.membership_config.membership();
        match membership.get_node(&id) {
            Some(known) if *known != node => {
                return Err(RouteError::Membership(format!(
                    "node {id} is already a member at {known}, not {node}; remove it first"
                )));
            }
            Some(_) if membership.voter_ids().any(|v| v == id) => {
                return Ok(self.membership_reply(None));
            }
            Some(_) => {}
            None => {
                tracing::info!(id, %node, "adding a joining node as a learner");
                self.raft
                    .add_learner(id, node.clone(), true)
                    .await
                    .map_err(membership_error)?;
            }
        }
        tracing::info!(id, "promoting a caught-up learner to voter");
        let reply = self
            .apply_change(ChangeMembers::AddVoterIds([id].into()))
            .await?;
        self.audit_join(id, &node).await;
        Ok(reply)
    }

    /// Records a join in the audit log (as done by the joining node).
    async fn audit_join(&self, id: NodeId, node: &NodeInfo) {
        let note = tacos_core::command::AuditNote {
            action: "membership.join".into(),
            target: format!("node {id}"),
            detail: format!("cluster={} http={}", node.cluster_addr, node.http_addr),
        };
        let actor = tacos_core::command::Actor {
            user: format!("node-{id}"),
            ip: node
                .cluster_addr
                .rsplit_once(':')
                .map_or(String::new(), |(host, _)| host.to_string()),
            time_ms: tacos_core::now_ms(),
            audit_limit: self.audit_limit,
        };
        let command = Command::by(tacos_core::Op::AuditNote(note), actor);
        // This node leads (it just changed the membership): propose here.
        if let Err(e) = self.proposer.propose(command).await {
            tracing::warn!(id, "could not record the join in the audit log: {e}");
        }
    }

    async fn add_learner(&self, id: NodeId, node: NodeInfo) -> Result<ForwardReply, RouteError> {
        let metrics = self.metrics();
        if let Some(known) = metrics.membership_config.membership().get_node(&id) {
            return if *known == node {
                Ok(self.membership_reply(None))
            } else {
                Err(RouteError::Membership(format!(
                    "node {id} is already a member at {known}; remove it first"
                )))
            };
        }
        let written = self
            .raft
            .add_learner(id, node, false)
            .await
            .map_err(membership_error)?;
        Ok(self.membership_reply(Some(written.log_id)))
    }

    async fn remove_member(&self, id: NodeId) -> Result<ForwardReply, RouteError> {
        let metrics = self.metrics();
        let membership = metrics.membership_config.membership();
        let change = if membership.voter_ids().any(|v| v == id) {
            if membership.voter_ids().count() == 1 {
                return Err(RouteError::Membership(format!(
                    "node {id} is the only voter; a cluster cannot remove its last voter"
                )));
            }
            ChangeMembers::RemoveVoters([id].into())
        } else if membership.get_node(&id).is_some() {
            ChangeMembers::RemoveNodes([id].into())
        } else {
            return Err(RouteError::Membership(format!(
                "node {id} is not a member of this cluster"
            )));
        };
        self.apply_change(change).await
    }

    async fn apply_change(
        &self,
        change: ChangeMembers<NodeId, NodeInfo>,
    ) -> Result<ForwardReply, RouteError> {
        let written = self
            .raft
            .change_membership(change, false)
            .await
            .map_err(membership_error)?;
        Ok(self.membership_reply(Some(written.log_id)))
    }

    fn membership_reply(&self, log_id: Option<LogId>) -> ForwardReply {
        let metrics = self.metrics();
        let membership = metrics.membership_config.membership();
        ForwardReply::Membership {
            log_id,
            voters: membership.voter_ids().collect(),
            learners: membership.learner_ids().collect(),
        }
    }

    /// Whether this node currently leads.
    pub fn is_leader(&self) -> bool {
        self.metrics().state == ServerState::Leader
    }

    /// Stops Raft and makes sure everything written is on disk.
    pub async fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!("raft shutdown: {e}");
        }
        if let Err(e) = self.log.flush().await {
            tracing::error!("final log flush failed: {e}");
        }
    }
}

fn unexpected(reply: ForwardReply) -> RouteError {
    RouteError::Unreachable(format!("the leader answered out of turn: {reply:?}"))
}

fn membership_error(error: RaftError<NodeId, ClientWriteError<NodeId, NodeInfo>>) -> RouteError {
    match error {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => f
            .leader_id
            .map_or(RouteError::NoLeader, |leader| RouteError::NotLeader {
                leader,
            }),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            RouteError::Membership(e.to_string())
        }
        RaftError::Fatal(e) => RouteError::Stopped(e.to_string()),
    }
}
