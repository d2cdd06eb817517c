//! Raft: the openraft type config, the storage adapters, the network, and
//! the node that ties them together.

pub mod cluster_server;
pub mod log_storage;
pub mod network;
pub mod node;
pub mod proposer;
pub mod rpc;
pub mod state_machine;
pub mod types;

pub use node::Node;
pub use types::{NodeId, NodeInfo, TypeConfig};
