//! The replicated state: in-memory tables and the deterministic `apply`.
//!
//! The tables are persistent (structurally shared) maps from `imbl`, so
//! cloning a [`State`] is O(1). The state machine keeps the current state in
//! an `ArcSwap`: readers load it without a lock or an actor hop, `apply`
//! builds the next version and swaps it in, and a snapshot is just a clone
//! taken at one applied index, encoded off the write path.
//!
//! Applying a [`Command`] depends only on the command and the state: no
//! clock, no randomness (the accepting node stamps time, md5 and limits into
//! the command). Deterministic refusals are returned as
//! [`Response::Rejected`]; they never stop the node.
//!
//! # Layout
//!
//! [`State`] (this file) holds the tables, answers reads and dispatches
//! each command to the file of its domain, which applies it:
//!
//! ```text
//! config.rs       publish (CAS, keep rules), import, remove; their history rows
//! gray.rs         betas by client IP, gray rules by tag/label; stop, promote
//! namespace.rs    create, update, remove; writes name an existing namespace
//! auth.rs         the token key, users, passwords
//! permission.rs   resources, access, Nacos-style patterns
//! roles.rs        roles, their users and permissions
//! audit.rs        who did what (audit_log.rs: the rows, compressed)
//! history_log.rs  history rows, mostly compressed
//! snapshot.rs     the state as records, and back
//! types.rs        Config, Gray, HistoryRow, Namespace
//! ```

mod audit;
mod audit_log;
mod auth;
mod config;
mod gray;
mod history_log;
mod namespace;
mod permission;
mod roles;
mod snapshot;
mod types;

use std::sync::Arc;

use imbl::OrdMap;

pub use audit::AuditRow;
pub use audit_log::AuditIter;
pub use auth::{AuthKey, User};
pub use history_log::HistoryIter;
pub use permission::{add as permission_add, glob, Access, Permissions, Resource, ALL_NAMESPACES};
pub use roles::{Role, ADMIN_ROLE};
pub use snapshot::{user_record, DecodeError, Record, SnapshotLoader};
pub use tacos_core::{
    canonical_namespace, shown_namespace, ApplyError, ConfigKey, Response, PUBLIC_NAMESPACE,
};
pub use types::{
    data_key_of, data_key_text, tag_gray_name, ClientLabels, Config, Gray, GrayRule, HistoryRow,
    Namespace, OpType, BETA_GRAY, BETA_PRIORITY, GRAY_RULE_VERSION, TAG_PRIORITY,
};

use tacos_core::command as pb;
use tacos_core::types::{LogId, StoredMembership};
use tacos_core::{Command, Op};

/// Shared, lock-free access to the current state: the state machine swaps
/// in each new version; readers load it without a lock.
pub type StateHandle = Arc<arc_swap::ArcSwap<State>>;

/// What an applied batch changed.
#[derive(Debug, Clone)]
pub enum Changes {
    /// These configs (or their gray versions) changed.
    Keys(Vec<ConfigKey>),
    /// Anything may have changed (a snapshot was installed).
    All,
}

/// The state at one applied log index.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// The last log entry applied to this state.
    pub last_applied: Option<LogId>,
    /// The membership as of `last_applied`.
    pub membership: StoredMembership,
    /// Every config and every key with history rows (a removed config's
    /// rows stay), in key order.
    configs: OrdMap<ConfigKey, Entry>,
    /// Entries that hold a config.
    config_count: usize,
    /// Per config, its gray versions by priority (highest first), then name.
    grays: OrdMap<ConfigKey, Vec<Arc<Gray>>>,
    /// The rows themselves, mostly compressed ([`history_log`]).
    history_log: history_log::HistoryLog,
    namespaces: OrdMap<String, Arc<Namespace>>,
    auth: Option<Arc<AuthKey>>,
    users: OrdMap<String, Arc<User>>,
    roles: OrdMap<String, Arc<Role>>,
    audit: audit_log::AuditLog,
    next_config_id: u64,
    next_history_id: u64,
    next_audit_id: u64,
}

/// What the state holds under one key: the config (none once removed) and
/// the ids of its history rows, oldest first, at most the history limit
/// (replaced whole on each write). One map for both, so a write looks its
/// key up once, and the config, its entry and its history rows share one
/// copy of the key.
#[derive(Debug, Clone)]
struct Entry {
    config: Option<Arc<Config>>,
    history: Arc<[u64]>,
}

impl State {
    // ---- reads -----------------------------------------------------------

    pub fn config(&self, key: &ConfigKey) -> Option<&Arc<Config>> {
        self.configs.get(key)?.config.as_ref()
    }

    /// A config's gray versions in matching order: highest priority first,
    /// then by name (Nacos' `CacheItem.sortConfigGray`).
    pub fn grays(&self, key: &ConfigKey) -> &[Arc<Gray>] {
        self.grays.get(key).map_or(&[], Vec::as_slice)
    }

    /// One gray version of a config by name.
    pub fn gray(&self, key: &ConfigKey, name: &str) -> Option<&Arc<Gray>> {
        self.grays(key).iter().find(|g| g.name == name)
    }

    /// Every config that has gray versions, with them (in key order).
    pub fn all_grays(&self) -> impl Iterator<Item = (&ConfigKey, &[Arc<Gray>])> {
        self.grays.iter().map(|(k, v)| (k, v.as_slice()))
    }

    /// A publish of `content` over `key` that keeps the current config's
    /// type, desc, app and tags (for a config that is gone: type text and
    /// `app_if_gone`): what a beta promotion and a history rollback write.
    /// The caller stamps origin, CAS and the history limit.
    pub fn republish(
        &self,
        key: &ConfigKey,
        content: &str,
        md5: &str,
        app_if_gone: &str,
    ) -> pb::PublishConfig {
        let config = self.config(key);
        let kept = |field: fn(&Config) -> &String, gone: &str| {
            config.map_or_else(|| gone.to_string(), |c| field(c).clone())
        };
        pb::PublishConfig {
            key: Some(key.into()),
            content: content.to_string(),
            md5: md5.to_string(),
            config_type: kept(|c| &c.config_type, "text"),
            desc: kept(|c| &c.desc, ""),
            app_name: kept(|c| &c.app_name, app_if_gone),
            tags: kept(|c| &c.tags, ""),
            ..Default::default()
        }
    }

    /// Number of configs.
    pub fn config_count(&self) -> usize {
        self.config_count
    }

    /// The configs of one (canonical) namespace, in key order.
    pub fn configs_in<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a ConfigKey, &'a Arc<Config>)> + 'a {
        let start = ConfigKey::from_parts(namespace.to_string(), String::new(), String::new());
        self.configs
            .range(start..)
            .take_while(move |(key, _)| key.namespace == namespace)
            .filter_map(|(key, entry)| Some((key, entry.config.as_ref()?)))
    }

    /// The history rows of a config, oldest first.
    pub fn history(&self, key: &ConfigKey) -> HistoryIter<'_> {
        let ids = self.configs.get(key).map_or(&[][..], |e| &e.history[..]);
        self.history_log.rows(ids)
    }

    /// One history row by id.
    pub fn history_row(&self, id: u64) -> Option<Arc<HistoryRow>> {
        self.history_log.get(id)
    }

    /// The ids of `key`'s history rows, oldest first (without decoding
    /// them).
    pub fn history_ids(&self, key: &ConfigKey) -> &[u64] {
        self.configs.get(key).map_or(&[][..], |e| &e.history[..])
    }

    /// Every live history row, in id order, each sealed chunk decoded once:
    /// for readers of many configs' history (a migration's check), where
    /// `history(key)` per config would decode a chunk per config.
    pub fn history_rows(&self) -> impl Iterator<Item = Arc<HistoryRow>> + '_ {
        self.history_log.live_rows()
    }

    /// The row before `id` of the same config.
    pub fn previous_history_row(&self, id: u64) -> Option<Arc<HistoryRow>> {
        let row = self.history_log.get(id)?;
        let ids = &self.configs.get(&row.key)?.history;
        let before = ids.iter().rev().find(|&&other| other < id)?;
        self.history_log.get(*before)
    }

    /// Custom namespaces (the public one is implicit).
    pub fn namespaces(&self) -> impl Iterator<Item = &Arc<Namespace>> {
        self.namespaces.values()
    }

    /// Whether `namespace` (canonical) exists.
    pub fn has_namespace(&self, namespace: &str) -> bool {
        namespace.is_empty() || self.namespaces.contains_key(namespace)
    }

    // ---- apply -----------------------------------------------------------

    /// Applies one command; keys whose content (or beta) changed are pushed
    /// to `changed` so listeners can be told. A command with an actor is
    /// recorded in the audit log, refused or not.
    pub fn apply(&mut self, command: &Command, changed: &mut Vec<ConfigKey>) -> Response {
        let response = self.apply_op(command.op.as_ref(), changed);
        if let Some(actor) = &command.actor {
            self.record_audit(actor, command.op.as_ref(), &response);
        }
        response
    }

    fn apply_op(&mut self, op: Option<&Op>, changed: &mut Vec<ConfigKey>) -> Response {
        let result = match op {
            Some(Op::PublishConfig(publish)) => self.publish(publish, changed),
            Some(Op::RemoveConfig(remove)) => self.remove(remove, changed),
            Some(Op::PublishBeta(beta)) => self.publish_beta(beta, changed),
            Some(Op::StopBeta(stop)) => self.stop_beta(stop, changed),
            Some(Op::PromoteBeta(promote)) => self.promote_beta(promote, changed),
            Some(Op::PublishGray(publish)) => self.publish_gray(publish, changed),
            Some(Op::StopGray(stop)) => self.stop_gray(stop, changed),
            Some(Op::PromoteGray(promote)) => self.promote_gray(promote, changed),
            Some(Op::CreateNamespace(create)) => self.create_namespace(create),
            Some(Op::UpdateNamespace(update)) => self.update_namespace(update),
            Some(Op::RemoveNamespace(remove)) => self.remove_namespace(remove),
            Some(Op::InitAuth(init)) => self.init_auth(init),
            Some(Op::CreateUser(create)) => self.create_user(create),
            Some(Op::UpdateUser(update)) => self.update_user(update),
            Some(Op::RemoveUser(remove)) => self.remove_user(remove),
            Some(Op::RehashPassword(rehash)) => self.rehash_password(rehash),
            Some(Op::SetPermission(permission)) => self.set_permission(permission),
            Some(Op::AuditNote(_)) => Ok(Response::Done),
            Some(Op::ImportConfigs(import)) => self.import(import, changed),
            Some(Op::BindRole(bind)) => self.bind_role(bind),
            Some(Op::UnbindRole(unbind)) => self.unbind_role(unbind),
            Some(Op::SetRolePermission(permission)) => self.set_role_permission(permission),
            None => Err(ApplyError::UnknownCommand),
        };
        result.unwrap_or_else(Response::Rejected)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gray_tests;
