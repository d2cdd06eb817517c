//! The openraft type configuration: what a log entry carries, what apply
//! returns, and how nodes are addressed.

use std::any::Any;
use std::fmt;

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

/// What openraft reads a snapshot from, and receives one into.
pub type SnapshotData = Box<dyn SnapshotIo>;

/// A snapshot's bytes: in memory (a `Cursor<Vec<u8>>`: built or received
/// here, or a sealed file opened), or a plain snapshot file that openraft
/// reads where it needs to. A node's start asks for the current snapshot only
/// for its metadata, and a follower's catch-up streams it a chunk at a time;
/// as bytes in memory each held the whole file (a 197 MiB spike at start on a
/// node of 100,000 configs with 10 versions each).
pub trait SnapshotIo:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + tokio::io::AsyncSeek + Send + Unpin + 'static
{
    /// The concrete value, to take it apart by type: an install takes the
    /// received bytes out of their cursor rather than copying them.
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send>;
}

impl<T> SnapshotIo for T
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + tokio::io::AsyncSeek + Send + Unpin + 'static,
{
    fn into_any(self: Box<Self>) -> Box<dyn Any + Send> {
        self
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
        SnapshotData = SnapshotData,
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
