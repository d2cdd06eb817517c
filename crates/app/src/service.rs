//! The service layer between the protocol handlers and Raft.
//!
//! Writes: validate the input with Nacos' rules, stamp what apply must not
//! compute itself (time, md5, generated ids, the history limit), propose the
//! command, and turn the apply outcome into a typed result. Reads are not
//! here: handlers read the in-memory state directly.

use std::sync::Arc;

use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{md5_hex, now_ms, Command, Op};
use tacos_raft::node::Node;
use tacos_raft::rpc::RouteError;
use tacos_state::{canonical_namespace, ApplyError, ConfigKey, HistoryRow, Response, State};

/// Most bytes one import may take encoded: it is one log entry, which must
/// stay well inside a log record and a cluster frame.
pub const MAX_IMPORT_BYTES: usize = 48 * 1024 * 1024;
const _: () =
    assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_store::record::MAX_RECORD_LEN as usize);
const _: () = assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_raft::rpc::MAX_FRAME);

/// Why a write was not done.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    #[error(transparent)]
    Rejected(#[from] ApplyError),
    #[error(transparent)]
    Write(#[from] RouteError),
    #[error("internal error: {0}")]
    Internal(String),
}

/// Who is writing and from where.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// The logged-in user, or (open API without auth) the `src_user` the
    /// client claims.
    pub user: String,
    pub ip: String,
    /// Whether `user` was authenticated.
    pub authenticated: bool,
}

impl Caller {
    /// The server itself (bootstrap).
    pub fn system() -> Self {
        Caller {
            user: "system".into(),
            ip: String::new(),
            authenticated: true,
        }
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

/// A config publish as a client asks for it.
#[derive(Debug, Clone, Default)]
pub struct PublishRequest {
    pub namespace: String,
    pub group: String,
    pub data_id: String,
    pub content: String,
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
    pub tags: String,
    /// Compare-and-set against this md5 (when `Some` and not empty).
    pub cas_md5: Option<String>,
    /// What the config must be before the write (checked in apply).
    pub expect: pb::Expect,
    /// Publish as a beta to these IPs (when not empty).
    pub beta_ips: Vec<String>,
}

/// Limits the service enforces.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_content_size: usize,
    pub history_limit: u32,
    pub audit_limit: u32,
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
/// actor on the operation, proposes it through the node (which routes it to
/// the leader and waits for the apply), and turns a deterministic refusal
/// into an error.
#[derive(Clone)]
pub struct Writer {
    node: Arc<Node>,
    audit_limit: u32,
}

impl Writer {
    pub fn new(node: Arc<Node>, audit_limit: u32) -> Self {
        Writer { node, audit_limit }
    }

    /// Proposes `op` on behalf of `caller` (audited).
    pub async fn propose(&self, op: Op, caller: &Caller) -> Result<Response, ServiceError> {
        let command = Command::by(op, caller.actor(self.audit_limit));
        let (_, response) = self.node.write(command).await?;
        match response {
            Response::Rejected(error) => Err(error.into()),
            other => Ok(other),
        }
    }

    /// The current state (lock-free).
    pub fn state(&self) -> Arc<State> {
        self.node.state()
    }
}

fn origin(caller: &Caller) -> pb::Origin {
    pb::Origin {
        src_user: caller.user.clone(),
        src_ip: caller.ip.clone(),
        time_ms: now_ms(),
    }
}

impl ConfigService {
    pub fn new(node: Arc<Node>, limits: Limits) -> Self {
        ConfigService {
            writer: Writer::new(node, limits.audit_limit),
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

    /// Checks a publish and stamps it; the beta IPs come back beside it.
    fn checked_publish(
        &self,
        req: PublishRequest,
        caller: &Caller,
    ) -> Result<(pb::PublishConfig, Vec<String>), InvalidInput> {
        let key = checked_key(&req.namespace, &req.group, &req.data_id)?;
        validate::content(&req.content, self.limits.max_content_size)?;
        let publish = pb::PublishConfig {
            key: Some((&key).into()),
            md5: md5_hex(&req.content),
            content: req.content,
            config_type: validate::config_type(&req.config_type).to_string(),
            desc: req.desc,
            app_name: req.app_name,
            tags: req.tags,
            origin: Some(origin(caller)),
            cas_md5: req.cas_md5.filter(|m| !m.is_empty()),
            history_limit: self.limits.history_limit,
            expect: req.expect.into(),
        };
        Ok((publish, req.beta_ips))
    }

    /// Publishes a config (or its beta, when `beta_ips` is given).
    pub async fn publish(&self, req: PublishRequest, caller: &Caller) -> Result<(), ServiceError> {
        let (publish, beta_ips) = self.checked_publish(req, caller)?;
        let op = if beta_ips.is_empty() {
            Op::PublishConfig(publish)
        } else {
            Op::PublishBeta(pb::PublishBeta {
                key: publish.key,
                content: publish.content,
                md5: publish.md5,
                beta_ips,
                origin: publish.origin,
                config_type: publish.config_type,
                app_name: publish.app_name,
            })
        };
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Publishes several configs as one write: all of them, or (if one is
    /// refused, e.g. its CAS md5 no longer matches) none, with
    /// [`ApplyError::ImportRefused`] naming it. Every publish is checked
    /// first; betas cannot be imported.
    pub async fn import(
        &self,
        requests: Vec<PublishRequest>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        if requests.is_empty() {
            return Err(InvalidInput::Other("import", "it holds no configs".into()).into());
        }
        let mut publishes = Vec::with_capacity(requests.len());
        for request in requests {
            let (publish, beta_ips) = self.checked_publish(request, caller)?;
            if !beta_ips.is_empty() {
                return Err(InvalidInput::Other(
                    "import",
                    "a beta cannot be imported; publish it on its own".into(),
                )
                .into());
            }
            publishes.push(publish);
        }
        let op = Op::ImportConfigs(pb::ImportConfigs { publishes });
        let size = op.encoded_len();
        if size > MAX_IMPORT_BYTES {
            return Err(InvalidInput::Other(
                "import",
                format!(
                    "it is {} MiB; at most {} MiB go in one import (split it)",
                    size.div_ceil(1024 * 1024),
                    MAX_IMPORT_BYTES / 1024 / 1024
                ),
            )
            .into());
        }
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Removes a config; removing an absent one is not an error.
    pub async fn remove(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        let key = checked_key(namespace, group, data_id)?;
        let op = Op::RemoveConfig(pb::RemoveConfig {
            key: Some((&key).into()),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        Ok(matches!(
            self.writer.propose(op, caller).await?,
            Response::Removed { existed: true }
        ))
    }

    /// Ends a beta release.
    pub async fn stop_beta(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        let key = checked_key(namespace, group, data_id)?;
        let op = Op::StopBeta(pb::StopBeta {
            key: Some((&key).into()),
        });
        Ok(matches!(
            self.writer.propose(op, caller).await?,
            Response::Removed { existed: true }
        ))
    }

    /// Makes the beta the user saw (`beta_md5`) the config, keeping the
    /// config's metadata, and ends the beta: one command, so a failure
    /// leaves both as they were. `cas_md5` is the config version the user
    /// saw.
    pub async fn promote_beta(
        &self,
        key: &ConfigKey,
        beta_md5: &str,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        let op = Op::PromoteBeta(pb::PromoteBeta {
            key: Some(key.into()),
            beta_md5: beta_md5.to_string(),
            cas_md5: cas_md5.filter(|m| !m.is_empty()),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Publishes a history row's content again over its config, keeping the
    /// config's metadata. `cas_md5` is the config version the user saw.
    pub async fn rollback(
        &self,
        row: &HistoryRow,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        let state = self.state();
        if state.config(&row.key).is_some_and(|c| c.md5 == row.md5) {
            return Err(InvalidInput::Other(
                "id",
                format!("row {} holds the current content already", row.id),
            )
            .into());
        }
        let mut publish = state.republish(&row.key, &row.content, &row.md5, &row.app_name);
        drop(state);
        publish.origin = Some(origin(caller));
        publish.cas_md5 = cas_md5.filter(|m| !m.is_empty());
        publish.history_limit = self.limits.history_limit;
        self.writer
            .propose(Op::PublishConfig(publish), caller)
            .await
            .map(|_| ())
    }

    /// Creates a namespace; an empty id gets a generated one. Returns the id.
    pub async fn create_namespace(
        &self,
        id: &str,
        name: &str,
        desc: &str,
        caller: &Caller,
    ) -> Result<String, ServiceError> {
        let id = if id.trim().is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            id.trim().to_string()
        };
        validate::namespace(&id)?;
        if canonical_namespace(&id).is_empty() {
            return Err(ApplyError::NamespaceExists(id).into());
        }
        check_namespace_name(name)?;
        let op = Op::CreateNamespace(pb::CreateNamespace {
            id: id.clone(),
            name: name.to_string(),
            desc: desc.to_string(),
            time_ms: now_ms(),
        });
        self.writer.propose(op, caller).await?;
        Ok(id)
    }

    pub async fn update_namespace(
        &self,
        id: &str,
        name: &str,
        desc: &str,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        validate::namespace(id)?;
        check_namespace_name(name)?;
        let op = Op::UpdateNamespace(pb::UpdateNamespace {
            id: id.to_string(),
            name: name.to_string(),
            desc: desc.to_string(),
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }

    pub async fn remove_namespace(&self, id: &str, caller: &Caller) -> Result<(), ServiceError> {
        validate::namespace(id)?;
        let op = Op::RemoveNamespace(pb::RemoveNamespace { id: id.to_string() });
        self.writer.propose(op, caller).await.map(|_| ())
    }
}

fn check_namespace_name(name: &str) -> Result<(), InvalidInput> {
    if name.trim().is_empty() {
        return Err(InvalidInput::Missing("namespaceName"));
    }
    if name.chars().count() > 128 || name.chars().any(|c| "@#$%^&*".contains(c)) {
        return Err(InvalidInput::Other("namespaceName", name.to_string()));
    }
    Ok(())
}
