//! Raft: the openraft type config, the storage adapters, the network, and
//! the node that ties them together.
//!
//! # Layout
//!
//! A write goes down this list and comes back up: the [`node`] routes it
//! to the leader (over [`rpc`] when this node does not lead), the
//! [`proposer`] batches it with its neighbours into one log entry, openraft
//! appends it through [`log_storage`] (the durable log of `tacos-store`),
//! replicates it through [`network`] to the other nodes' [`cluster_server`],
//! and once committed, [`state_machine`] applies it to the state (`tacos-state`)
//! and tells the watch hub what changed.
//!
//! ```text
//! node.rs            start, bootstrap or join; route writes, read indexes, membership
//! proposer.rs        concurrent writes -> one entry, one fsync, one commit
//! log_storage.rs     openraft's RaftLogStorage over the durable LogStore
//! state_machine.rs   openraft's RaftStateMachine: the State in an ArcSwap, snapshots
//! network.rs         the cluster client: Raft RPCs and forwards, back-off, TLS
//! cluster_server.rs  the cluster port: token and protocol checks, then openraft
//! rpc.rs             what travels on the cluster port, and its version
//! freshness.rs       how far behind a learner may serve reads
//! ```

pub mod cluster_server;
pub mod freshness;
pub mod log_storage;
pub mod network;
pub mod node;
pub mod proposer;
pub mod rpc;
pub mod state_machine;

pub use node::{Node, NodeOptions};
pub use state_machine::ChangeSink;
pub use tacos_core::types::{NodeId, NodeInfo, TypeConfig};
