//! The openraft type configuration: what a log entry carries, what apply
//! returns, and how nodes are addressed.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::{Batch, Response};

/// Raft node ids. Node 1 initializes a new cluster.
pub type NodeId = u64;

/// How to reach a node: the address other nodes use for Raft traffic, and
/// the address clients use for HTTP.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub cluster_addr: String,
    pub http_addr: String,
}

impl fmt::Display for NodeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cluster={} http={}", self.cluster_addr, self.http_addr)
    }
}

openraft::declare_raft_types!(
    /// Tacos' Raft types: an entry carries a [`Batch`] of commands; apply
    /// answers one [`Response`] per command. The batch is behind an `Arc`
    /// because openraft clones an entry for every reader — each replication
    /// target and apply — and a deep clone copied every config's content
    /// once per follower and learner (a third of the leader's memmove time
    /// with 4 learners); the wire and disk bytes are the batch's own.
    pub TypeConfig:
        D = std::sync::Arc<Batch>,
        R = Vec<Response>,
        NodeId = NodeId,
        Node = NodeInfo,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<NodeId>;
pub type Vote = openraft::Vote<NodeId>;
pub type Membership = openraft::Membership<NodeId, NodeInfo>;
pub type StoredMembership = openraft::StoredMembership<NodeId, NodeInfo>;
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, NodeInfo>;
pub type Snapshot = openraft::Snapshot<TypeConfig>;
pub type StorageError = openraft::StorageError<NodeId>;
pub type Raft = openraft::Raft<TypeConfig>;
pub type RaftMetrics = openraft::RaftMetrics<NodeId, NodeInfo>;
