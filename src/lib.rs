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
//!
//! Inside this crate, the modules point one way too: `server` starts
//! `api` (HTTP) and `grpc`, which answer with the use cases below; `ops`
//! (the operator subcommands) reads `api`'s route table and the `backup`
//! format it shares with `api`; `settings`, `secret`, `metrics` and
//! `backup` are leaves. No module imports an item of its parent module
//! (each folder's kit is a file of its own: `v3/answer.rs`,
//! `nacos_v1/answer.rs`, `console/answer.rs`), and there is no circle.

pub mod api;
pub mod backup;
pub mod dashboard_history;
pub mod grpc;
pub mod heap_trim;
pub mod metrics;
pub mod ops;
pub mod secret;
pub mod server;
pub mod settings;
pub mod tls;
