//! Raft: the openraft type config, the storage adapters, the network, and
//! the node that ties them together.

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
