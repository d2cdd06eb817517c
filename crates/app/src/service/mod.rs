//! The config center's write use cases, one file each (the shape of
//! mini-redis' commands): publish (a config, a gray version, an import),
//! remove, gray stop and promote, rollback, namespaces.
//!
//! Each one validates the input with Nacos' rules, stamps what apply must
//! not compute itself (time, md5, generated ids, the history limit), builds
//! one command — a use case is one command, applied atomically — proposes
//! it through the [`Writer`], and turns the apply outcome into a typed
//! result. Reads are not here: handlers read the in-memory state directly,
//! with the list rules of `crate::query`.
//!
//! Who did it, by layer: a request is made by a `Principal` (who the route
//! guard authenticated: `crate::auth`); a write is asked for by a
//! [`Caller`] (that principal, the user or the `src_user` an open-API
//! client claims, and the client IP). Each use case decides here whether
//! its caller may (one check per use case, before it checks the input, as
//! Nacos' auth filter runs before its controllers); no handler does.
//! From the one caller the writer stamps the command's `Actor` (the audit
//! row) and the use case the config's `Origin` (its history row); those two
//! names are the replicated log's, kept for the data already on disk.

mod gray;
mod import;
mod namespaces;
mod publish;
mod remove;
mod rollback;
#[cfg(test)]
mod tests;

pub use gray::{checked_tag, GrayTarget};
pub use import::{clone_items, CloneTarget, ImportError, ImportOutcome};
pub use publish::{beta_list, edit_expectation, PublishRequest, Published, MAX_IMPORT_BYTES};

use std::sync::Arc;

use tacos_raft::freshness::Behind;

use crate::engine::Engine;
use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{now_ms, Command, Op};
use tacos_raft::rpc::RouteError;
use tacos_state::{Access, ApplyError, ConfigKey, Response, State};

use crate::auth::Principal;

/// Why a write was not done.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    #[error(transparent)]
    Rejected(#[from] ApplyError),
    /// Nacos' rule on every surface: an admin is not deleted (take its
    /// admin flag away first); the last enabled admin is kept by apply too.
    #[error("cannot delete admin: {0}")]
    AdminNotDeletable(String),
    /// The caller may not do this (a use case that decides who may).
    #[error(transparent)]
    Denied(crate::auth::AuthError),
    #[error(transparent)]
    Write(#[from] RouteError),
    #[error("internal error: {0}")]
    Internal(String),
}

/// Who is writing and from where.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Who the route guard authenticated: what each use case asks "may
    /// they" (made by [`Principal::caller`], the one way in).
    pub principal: Principal,
    /// The logged-in user, or (open API without auth) the `src_user` the
    /// client claims: the audit log's actor.
    pub user: String,
    /// The author a config's history records (Nacos' `srcUser`): the
    /// `src_user` the client gives, else `user`, as Nacos takes it
    /// (`RequestUtil.getSrcUserName` only when none is given). The audit
    /// log keeps who really wrote.
    pub src_user: String,
    pub ip: String,
    /// Whether `user` was authenticated.
    pub authenticated: bool,
}

impl Caller {
    /// The server itself (bootstrap).
    pub fn system() -> Self {
        Caller {
            principal: Principal::Open,
            user: "system".into(),
            src_user: "system".into(),
            ip: String::new(),
            authenticated: true,
        }
    }

    /// The one check of a config write: may this caller write the config
    /// (or configs) the names cover, read as Nacos' resource parsers read
    /// a request (a blank group or dataId is every one). Made before the
    /// names are checked, as Nacos' auth filter runs before its
    /// controllers.
    pub(crate) fn may_write(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
    ) -> Result<(), ServiceError> {
        self.principal
            .require_named(namespace, group, data_id, Access::Write)
            .map_err(ServiceError::Denied)
    }

    /// [`may_write`](Self::may_write) on one (checked) config.
    pub(crate) fn may_write_key(&self, key: &ConfigKey) -> Result<(), ServiceError> {
        self.principal
            .require_key(key, Access::Write)
            .map_err(ServiceError::Denied)
    }

    /// The audit actor for a command accepted now.
    pub fn actor(&self, audit_limit: u32) -> pb::Actor {
        let user = if self.authenticated {
            self.user.clone()
        } else if self.user.is_empty() {
            "anonymous".to_string()
        } else {
            format!("anonymous:{}", self.user)
        };
        pb::Actor {
            user,
            ip: self.ip.clone(),
            time_ms: now_ms(),
            audit_limit,
        }
    }
}

/// Limits the service enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_content_size: usize,
    pub history_limit: u32,
    /// Most gray versions per config (`--max-grays-per-config`).
    pub max_grays: u32,
    pub audit_limit: u32,
    /// A publish into a namespace that does not exist creates it (off:
    /// refused; `--strict-namespaces`).
    pub create_namespaces: bool,
}

/// Config and namespace writes.
#[derive(Clone)]
pub struct ConfigService {
    writer: Writer,
    limits: Limits,
}

/// Checks a key as the client sent it and returns its canonical form.
pub fn checked_key(namespace: &str, group: &str, data_id: &str) -> Result<ConfigKey, InvalidInput> {
    validate::data_id(data_id)?;
    validate::group(group)?;
    validate::namespace(namespace)?;
    Ok(ConfigKey::new(namespace, group, data_id))
}

/// Every write of the application goes through here: it stamps the audit
/// actor on the operation, proposes it through the [`Engine`] (the node,
/// which routes it to the leader and waits for the apply; or a local state
/// in tests), and turns a deterministic refusal into an error.
#[derive(Clone)]
pub struct Writer {
    engine: Arc<dyn Engine>,
    audit_limit: u32,
}

impl Writer {
    pub fn new(engine: Arc<dyn Engine>, audit_limit: u32) -> Self {
        Writer {
            engine,
            audit_limit,
        }
    }

    /// Proposes `op` on behalf of `caller` (audited).
    pub async fn propose(&self, op: Op, caller: &Caller) -> Result<Response, ServiceError> {
        let command = Command::by(op, caller.actor(self.audit_limit));
        let response = self.engine.write(command).await?;
        match response {
            Response::Rejected(error) => Err(error.into()),
            other => Ok(other),
        }
    }

    /// Proposes an operation that answers `Removed`: whether there was
    /// something to remove.
    pub async fn propose_removal(&self, op: Op, caller: &Caller) -> Result<bool, ServiceError> {
        let response = self.propose(op, caller).await?;
        Ok(matches!(response, Response::Removed { existed: true }))
    }

    /// The current state (lock-free).
    pub fn state(&self) -> Arc<State> {
        self.engine.state()
    }

    /// Whether reads may be served here now (see [`ConfigService::readable`]).
    pub fn readable(&self) -> Result<(), Behind> {
        self.engine.readable()
    }
}

pub(crate) fn origin(caller: &Caller) -> pb::Origin {
    pb::Origin {
        src_user: caller.src_user.clone(),
        src_ip: caller.ip.clone(),
        time_ms: now_ms(),
    }
}

impl ConfigService {
    pub fn new(engine: Arc<dyn Engine>, limits: Limits) -> Self {
        ConfigService {
            writer: Writer::new(engine, limits.audit_limit),
            limits,
        }
    }

    /// The largest content a write may carry (`--max-content-size`).
    pub fn max_content_size(&self) -> usize {
        self.limits.max_content_size
    }

    /// The current state (lock-free).
    pub fn state(&self) -> Arc<State> {
        self.writer.state()
    }

    /// Whether this node may serve reads, long polls and listens now: a
    /// learner too far behind the leader may not
    /// ([`tacos_raft::freshness`]); every other node may.
    pub fn readable(&self) -> Result<(), Behind> {
        self.writer.readable()
    }
}
