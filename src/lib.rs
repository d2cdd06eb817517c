//! Tacos: a config center server that speaks the Nacos protocols, with its
//! state replicated by Raft and kept in memory.
//!
//! Layers, bottom up: [`store`] (log segments, snapshots, crash recovery),
//! [`state`] (the in-memory tables and `apply`), [`raft`] (openraft adapters
//! and the node), [`service`] (validation and commands), [`watch`] (listeners),
//! [`api`] (HTTP), [`grpc`] (Nacos gRPC). See `docs/storage.md` and
//! `docs/cluster.md`.

pub mod api;
pub mod auth;
pub mod grpc;
pub mod metrics;
pub mod model;
pub mod ops;
pub mod raft;
pub mod server;
pub mod service;
pub mod settings;
pub mod state;
pub mod store;
pub mod watch;
