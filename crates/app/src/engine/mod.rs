//! Where the use cases' commands go, behind one trait (toydb's
//! `sql/engine/{local,raft}.rs` is the model): the use cases build a
//! command and hand it to an [`Engine`], which applies it and answers the
//! apply's [`Response`]. The server's engine is the Raft node ([`raft`]:
//! replicated, fsynced, then applied on every member); [`Local`] applies to
//! a [`State`] in memory, so every use case and every rule of the
//! application has unit tests that need no node, no network and no HTTP.

mod local;
mod raft;

pub use local::Local;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tacos_core::Command;
use tacos_raft::freshness::Behind;
use tacos_raft::rpc::RouteError;
use tacos_state::{Response, State};

/// A write on its way: the apply's answer, or why it was not applied.
pub type Written<'a> = Pin<Box<dyn Future<Output = Result<Response, RouteError>> + Send + 'a>>;

/// Applies the application's commands and shows the state they made.
pub trait Engine: Send + Sync + 'static {
    /// Applies `command` (once committed, where that applies) and answers
    /// what apply said; a deterministic refusal is a
    /// `Response::Rejected`, not an error.
    fn write(&self, command: Command) -> Written<'_>;

    /// The current state (lock-free).
    fn state(&self) -> Arc<State>;

    /// Whether reads may be served here now (a learner too far behind may
    /// not: [`tacos_raft::freshness`]).
    fn readable(&self) -> Result<(), Behind>;
}
