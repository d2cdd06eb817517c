//! The application layer: every rule of Tacos' use cases, once, below every
//! protocol that needs it.
//!
//! HTTP (Nacos v1, v2, the console, admin) and gRPC handlers parse a
//! request, call one function here, and render its answer. What is checked,
//! stamped (time, md5, limits) and proposed for a write, and who may do it,
//! is decided here, never in a handler.
//!
//! - [`gray_match`]: which version of a config (a gray or the formal one) a
//!   client sees.
//! - [`engine`]: where commands go: the Raft node, or a local state (unit
//!   tests of every use case without a node).
//! - [`service`]: config, gray and namespace writes (validation, stamping,
//!   proposing one command per use case).
//! - [`auth`]: users, passwords, tokens, permissions, roles, login limits.
//! - [`cluster`]: the member view of Nacos' cluster node routes.
//! - [`read`]: who may read or watch what, decided once per operation.
//! - [`query`]: the rules of list routes (name filters, paging).
//! - [`syntax`]: whether a content parses as its type (the console's rule).
//! - [`transfer`]: the Nacos zip layouts of export and import, and the
//!   import plan (what to create, overwrite, skip).
//! - [`watch`]: the watch hub: held long polls and gRPC listeners woken by
//!   applied changes.

pub mod auth;
pub mod cluster;
pub mod engine;
pub mod gray_match;
pub mod query;
pub mod read;
pub mod service;
pub mod syntax;
pub mod transfer;
pub mod watch;

#[cfg(test)]
mod testing;
