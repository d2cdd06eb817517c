//! Tacos: a config center server that speaks the Nacos protocols, with its
//! state replicated by Raft and kept in memory.
//!
//! This crate is the top layer, the server: protocol adapters and the
//! process. The layers below are crates of their own, so the compiler keeps
//! every arrow pointing down (`tests/layers.rs` checks the manifests):
//!
//! ```text
//! tacos (this crate)  HTTP (Nacos v1, v2, console, admin), gRPC, settings, ops, TLS set-up, main
//!   tacos-app         one module per use case, the watch hub, auth rules
//!   tacos-raft        openraft adapters, proposer, node, cluster RPC
//!   tacos-state       in-memory tables, apply, snapshot records
//!   tacos-store       log segments, metadata, snapshot files, crash recovery
//!   tacos-core        commands, keys, validation, Response, the openraft type config
//!
//!   tacos-tls         certificates checked and reloaded, rustls configs (beside the
//!                     stack: used by tacos-raft for the cluster port and by this crate)
//! ```
//!
//! See `docs/architecture.md` for the path of a publish through them.

pub mod api;
pub mod dashboard_history;
pub mod grpc;
pub mod heap_trim;
pub mod metrics;
pub mod ops;
pub mod secret;
pub mod server;
pub mod settings;
pub mod tls;
