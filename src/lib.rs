//! Tacos: a config center server that speaks the Nacos protocols, with its
//! state replicated by Raft and kept in memory.
//!
//! Layers, bottom up: [`store`] (log segments, snapshots, crash recovery),
//! [`state`] (the in-memory tables and `apply`), [`raft`] (openraft adapters
//! and the node), [`api`] (HTTP). See `docs/architecture.md`.

pub mod api;
pub mod model;
pub mod raft;
pub mod server;
pub mod settings;
pub mod state;
pub mod store;
