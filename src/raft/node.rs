//! A Tacos node: opens the data dir, starts openraft on it, initializes a new
//! cluster, and waits until the state in memory is complete before anyone is
//! served.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use openraft::{Config, SnapshotPolicy};

use super::log_storage::RaftLog;
use super::network::SingleNodeNetwork;
use super::proposer::Proposer;
use super::state_machine::{StateHandle, StateMachine};
use super::types::{LogId, NodeId, NodeInfo, Raft, RaftMetrics};
use crate::model::Command;
use crate::settings::Settings;
use crate::state::{Response, State};
use crate::store::{LogOptions, LogStore, StdFs};
use crate::watch::ChangeSink;

/// How long start-up waits for the node to become leader and catch up.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a write was not done.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WriteError {
    #[error("no leader is available to take the write right now; retry shortly")]
    NoLeader,
    #[error(
        "this node is not the leader (the leader is node {leader}) and forwarding is not available"
    )]
    NotLeader { leader: NodeId },
    #[error("the node stopped and cannot take writes: {0}")]
    Stopped(String),
}

/// A running node.
pub struct Node {
    pub id: NodeId,
    pub raft: Raft,
    state: StateHandle,
    log: LogStore,
    proposer: Proposer,
    stopping: Arc<AtomicBool>,
}

/// How often the log size is checked against the snapshot threshold.
const SNAPSHOT_CHECK: Duration = Duration::from_secs(1);

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
    /// Opens the data dir and starts Raft. Returns once this node leads and
    /// has applied every entry in its log, so reads see all acknowledged data.
    pub async fn start(settings: &Settings, changes: ChangeSink) -> anyhow::Result<Node> {
        let fs: Arc<dyn crate::store::Fs> = Arc::new(StdFs);
        let options = LogOptions {
            segment_size: settings.segment_size,
        };
        let (log, recovery) = LogStore::open(fs.clone(), &settings.data_dir, options)?;
        tracing::info!(
            data_dir = %settings.data_dir.display(),
            segments = recovery.segments,
            entries = recovery.entries,
            committed = ?recovery.committed,
            torn_tail = ?recovery.torn_tail,
            "opened the log"
        );
        let state_machine = StateMachine::open(fs, &settings.data_dir)?.with_change_sink(changes);
        let state = state_machine.state();
        let applied = state.load().last_applied;
        let (purged, _) = log.log_state();
        if purged.map(|p| p.index) > applied.map(|a| a.index) {
            anyhow::bail!(
                "the log in {} was purged up to {purged:?} but no snapshot covers it (newest snapshot ends at {applied:?}); refusing to start with missing data",
                settings.data_dir.display()
            );
        }

        let config = Config {
            cluster_name: "tacos".into(),
            heartbeat_interval: 250,
            election_timeout_min: 1000,
            election_timeout_max: 2000,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(settings.snapshot_entries),
            // Entries carry batches of commands: keep a short tail only.
            max_in_snapshot_log_to_keep: 200,
            ..Default::default()
        }
        .validate()
        .context("raft configuration")?;
        let raft = Raft::new(
            settings.node_id,
            Arc::new(config),
            SingleNodeNetwork,
            RaftLog::new(log.clone()),
            state_machine,
        )
        .await
        .context("starting raft")?;

        let me = NodeInfo {
            cluster_addr: String::new(),
            http_addr: settings.http_addr(),
        };
        if raft.is_initialized().await.context("reading raft state")? {
            // A single voter need not wait out an election timeout.
            raft.trigger()
                .elect()
                .await
                .context("starting an election")?;
        } else {
            tracing::info!(node_id = settings.node_id, "initializing a new cluster");
            raft.initialize(BTreeMap::from([(settings.node_id, me)]))
                .await
                .context("initializing the cluster")?;
        }

        let id = settings.node_id;
        raft.wait(Some(READY_TIMEOUT))
            .metrics(
                |m| {
                    m.current_leader == Some(id)
                        && m.last_applied.map(|l| l.index) >= m.last_log_index
                },
                "leading and caught up",
            )
            .await
            .context("waiting for this node to lead and apply its log")?;
        let proposer = Proposer::start(raft.clone());
        snapshot_by_log_size(raft.clone(), log.clone(), settings.snapshot_log_bytes);
        let node = Node {
            id,
            raft,
            state,
            log,
            proposer,
            stopping: Arc::new(AtomicBool::new(false)),
        };
        tracing::info!(configs = node.state().config_count(), "node is ready");
        Ok(node)
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

    /// Proposes a command and waits until it is committed (durable on a
    /// quorum) and applied here.
    pub async fn write(&self, command: Command) -> Result<(LogId, Response), WriteError> {
        self.proposer.propose(command).await
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
