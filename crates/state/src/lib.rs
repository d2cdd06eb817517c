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

mod audit;
mod audit_log;
mod auth;
mod history_log;
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

    fn key_in_existing_namespace(
        &self,
        key: Option<&pb::ConfigKey>,
    ) -> Result<ConfigKey, ApplyError> {
        let key = ConfigKey::from(key.ok_or(ApplyError::UnknownCommand)?);
        if !self.has_namespace(&key.namespace) {
            return Err(ApplyError::NamespaceNotFound(key.namespace.clone()));
        }
        Ok(key)
    }

    fn publish(
        &mut self,
        p: &pb::PublishConfig,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(p.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let new_namespace = !self.has_namespace(&key.namespace);
        if new_namespace && !p.create_namespace {
            return Err(ApplyError::NamespaceNotFound(key.namespace.clone()));
        }
        let origin = p.origin.clone().unwrap_or_default();
        let old = self.config(&key).cloned();
        match (p.expect(), &old) {
            (pb::Expect::Absent, Some(_)) => {
                return Err(ApplyError::ConfigExists {
                    namespace: shown_namespace(&key.namespace).to_string(),
                    group: key.group.clone(),
                    data_id: key.data_id.clone(),
                })
            }
            (pb::Expect::Present, None) => {
                return Err(ApplyError::ConfigGone {
                    group: key.group.clone(),
                    data_id: key.data_id.clone(),
                })
            }
            _ => {}
        }
        if let (Some(cas), Some(old)) = (&p.cas_md5, &old) {
            if **cas != *old.md5 {
                return Err(ApplyError::CasMismatch);
            }
        }
        let (id, create_time) = match &old {
            Some(old) => (old.id, old.create_time),
            None => {
                self.next_config_id += 1;
                (self.next_config_id, origin.time_ms)
            }
        };
        let config = Config {
            id,
            content: p.content.as_str().into(),
            md5: p.md5.as_str().into(),
            config_type: p.config_type.clone(),
            desc: p.desc.clone(),
            // An update without an app name or tags keeps the config's
            // (Nacos' update; only a sent empty value clears them).
            app_name: match &old {
                Some(old) if p.keep_app_name => old.app_name.clone(),
                _ => p.app_name.clone(),
            },
            tags: match &old {
                Some(old) if p.keep_tags => old.tags.clone(),
                _ => p.tags.clone(),
            },
            create_time,
            modify_time: origin.time_ms,
            // Runs of writes by one user from one place: one string each.
            src_user: audit::share(old.as_ref().map(|o| &o.src_user), &origin.src_user),
            src_ip: audit::share(old.as_ref().map(|o| &o.src_ip), &origin.src_ip),
            encrypted_data_key: data_key_of(&p.encrypted_data_key),
        };
        // Nacos keeps the new content for an insert and the replaced
        // content for an update.
        let (op, recorded) = match &old {
            Some(old) => (OpType::Update, old.as_ref()),
            None => (OpType::Insert, &config),
        };
        let (content, md5, app_name, encrypted_data_key) = (
            recorded.content.clone(),
            recorded.md5.clone(),
            recorded.app_name.clone(),
            recorded.encrypted_data_key.clone(),
        );
        let (src_user, src_ip) = (config.src_user.clone(), config.src_ip.clone());
        if new_namespace {
            // Every check passed: the first publish into a tenant creates it.
            let namespace = Namespace {
                id: key.namespace.clone(),
                name: key.namespace.clone(),
                desc: String::new(),
                create_time: origin.time_ms,
            };
            self.namespaces
                .insert(key.namespace.clone(), Arc::new(namespace));
        }
        self.put_config(&key, Some(Arc::new(config)));
        let row = NewRow {
            op,
            content,
            md5,
            app_name,
            gray_name: String::new(),
            src_user,
            src_ip,
            encrypted_data_key,
        };
        self.record_history(&key, row, origin.time_ms, p.history_limit);
        changed.push(key);
        Ok(Response::Done)
    }

    /// Applies every publish of an import, or none: they go to a copy of
    /// the state (O(1) to take) that replaces this one only if all of them
    /// were accepted.
    fn import(
        &mut self,
        import: &pb::ImportConfigs,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let mut next = self.clone();
        let mut keys = Vec::with_capacity(import.publishes.len());
        for publish in &import.publishes {
            next.publish(publish, &mut keys)
                .map_err(|reason| ApplyError::ImportRefused {
                    entry: publish
                        .key
                        .as_ref()
                        .map_or_else(String::new, |k| format!("{}/{}", k.group, k.data_id)),
                    reason: Box::new(reason),
                })?;
        }
        *self = next;
        changed.extend(keys);
        Ok(Response::Done)
    }

    fn remove(
        &mut self,
        r: &pb::RemoveConfig,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(r.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let Some(old) = self.config(&key).cloned() else {
            return Ok(Response::Removed { existed: false });
        };
        self.put_config(&key, None);
        let origin = r.origin.clone().unwrap_or_default();
        let row = NewRow {
            op: OpType::Delete,
            content: old.content.clone(),
            md5: old.md5.clone(),
            app_name: old.app_name.clone(),
            gray_name: String::new(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            encrypted_data_key: old.encrypted_data_key.clone(),
        };
        self.record_history(&key, row, origin.time_ms, r.history_limit);
        changed.push(key);
        Ok(Response::Removed { existed: true })
    }

    fn record_history(&mut self, key: &ConfigKey, new: NewRow, time_ms: i64, limit: u32) {
        let NewRow {
            op,
            content,
            md5,
            app_name,
            gray_name,
            src_user,
            src_ip,
            encrypted_data_key,
        } = new;
        self.next_history_id += 1;
        let id = self.next_history_id;
        let (key, ids) = self.history_of(key);
        let row = HistoryRow {
            id,
            last_id: ids.last().copied().unwrap_or(0),
            key: key.clone(),
            content,
            md5,
            app_name,
            src_user,
            src_ip,
            op,
            created_time: time_ms,
            last_modified_time: time_ms,
            gray_name,
            encrypted_data_key,
        };
        let drop = (ids.len() + 1).saturating_sub(limit.max(1) as usize);
        let kept: Arc<[u64]> = ids[drop..].iter().copied().chain([id]).collect();
        self.put_history(key, kept);
        for &old in &ids[..drop] {
            self.history_log.release(old);
        }
        self.history_log.push(row);
    }

    /// A config's history ids, and the key they are filed under (the rows
    /// a write records share it instead of the copy the command decoded).
    fn history_of(&self, key: &ConfigKey) -> (ConfigKey, Arc<[u64]>) {
        match self.configs.get_key_value(key) {
            Some((filed, entry)) => (filed.clone(), entry.history.clone()),
            None => (key.clone(), Arc::from([])),
        }
    }

    /// Sets (or, with `None`, removes) the config under `key`; its history
    /// stays.
    fn put_config(&mut self, key: &ConfigKey, config: Option<Arc<Config>>) {
        let had = match self.configs.get_mut(key) {
            Some(entry) => {
                let had = entry.config.is_some();
                entry.config = config.clone();
                if entry.config.is_none() && entry.history.is_empty() {
                    self.configs.remove(key);
                }
                had
            }
            None => {
                if config.is_some() {
                    let entry = Entry {
                        config: config.clone(),
                        history: Arc::from([]),
                    };
                    self.configs.insert(key.clone(), entry);
                }
                false
            }
        };
        match (had, config.is_some()) {
            (false, true) => self.config_count += 1,
            (true, false) => self.config_count -= 1,
            _ => {}
        }
    }

    /// Sets the history ids of `key` (the key filed by
    /// [`history_of`](Self::history_of)).
    fn put_history(&mut self, key: ConfigKey, ids: Arc<[u64]>) {
        match self.configs.get_mut(&key) {
            Some(entry) => entry.history = ids,
            None => {
                let entry = Entry {
                    config: None,
                    history: ids,
                };
                self.configs.insert(key, entry);
            }
        }
    }

    /// Inserts or replaces a gray version, keeping the matching order.
    fn put_gray(&mut self, key: &ConfigKey, gray: Gray) {
        let grays = self.grays.entry(key.clone()).or_default();
        grays.retain(|g| g.name != gray.name);
        let at = grays
            .iter()
            .position(|g| {
                (std::cmp::Reverse(g.priority), &g.name)
                    > (std::cmp::Reverse(gray.priority), &gray.name)
            })
            .unwrap_or(grays.len());
        grays.insert(at, Arc::new(gray));
    }

    /// Removes a gray version; returns it.
    fn take_gray(&mut self, key: &ConfigKey, name: &str) -> Option<Arc<Gray>> {
        let grays = self.grays.get_mut(key)?;
        let at = grays.iter().position(|g| g.name == name)?;
        let gray = grays.remove(at);
        if grays.is_empty() {
            self.grays.remove(key);
        }
        Some(gray)
    }

    /// A beta publish from a log written before cluster protocol 4: the
    /// gray named "beta", applied exactly as then (no history row, no
    /// limit: only a beta could exist).
    fn publish_beta(
        &mut self,
        b: &pb::PublishBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(b.key.as_ref())?;
        let origin = b.origin.clone().unwrap_or_default();
        // What a beta held then (and an old snapshot keeps): no type, app
        // or create time of its own.
        let gray = Gray {
            name: BETA_GRAY.to_string(),
            rule: GrayRule::Beta {
                ips: b.beta_ips.clone(),
            },
            priority: BETA_PRIORITY,
            content: b.content.as_str().into(),
            md5: b.md5.as_str().into(),
            config_type: String::new(),
            app_name: String::new(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            create_time: origin.time_ms,
            modify_time: origin.time_ms,
            encrypted_data_key: None,
        };
        self.put_gray(&key, gray);
        changed.push(key);
        Ok(Response::Done)
    }

    /// A beta stop from an old log (no history row, as then).
    fn stop_beta(
        &mut self,
        s: &pb::StopBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(s.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let existed = self.take_gray(&key, BETA_GRAY).is_some();
        if existed {
            changed.push(key);
        }
        Ok(Response::Removed { existed })
    }

    /// A beta promotion from an old log: the formal publish's history row
    /// only, as then.
    fn promote_beta(
        &mut self,
        p: &pb::PromoteBeta,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let beta = self
            .gray(&key, BETA_GRAY)
            .cloned()
            .ok_or_else(|| ApplyError::GrayNotFound(BETA_GRAY.to_string()))?;
        if *beta.md5 != *p.beta_md5 {
            return Err(ApplyError::GrayReplaced(BETA_GRAY.to_string()));
        }
        let mut publish = self.republish(&key, &beta.content, &beta.md5, "");
        publish.encrypted_data_key = data_key_text(&beta.encrypted_data_key).to_string();
        publish.origin = p.origin.clone();
        publish.cas_md5 = p.cas_md5.clone();
        publish.history_limit = p.history_limit;
        // A refused publish changes nothing, so the beta stays with it.
        self.publish(&publish, changed)?;
        self.take_gray(&key, BETA_GRAY);
        Ok(Response::Done)
    }

    /// Publishes or replaces a gray version (Nacos'
    /// `ConfigOperationService.publishConfigGray`): a new name past the
    /// limit is refused; a history row "I" (new content) or "U" (the
    /// replaced content) names the gray.
    fn publish_gray(
        &mut self,
        p: &pb::PublishGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let rule = p.rule.as_ref().ok_or(ApplyError::UnknownCommand)?;
        if rule.version != GRAY_RULE_VERSION {
            return Err(ApplyError::GrayRuleVersionInvalid);
        }
        let parsed =
            GrayRule::parse(&rule.r#type, &rule.expr).ok_or(ApplyError::GrayRuleVersionInvalid)?;
        let old = self.gray(&key, &p.name).cloned();
        if old.is_none() && self.grays(&key).len() >= p.max_grays as usize {
            return Err(ApplyError::GrayOverMaxCount(p.max_grays));
        }
        if let (Some(cas), Some(old)) = (&p.cas_md5, &old) {
            if **cas != *old.md5 {
                return Err(ApplyError::GrayCasMismatch);
            }
        }
        let origin = p.origin.clone().unwrap_or_default();
        let gray = Gray {
            name: p.name.clone(),
            rule: parsed,
            priority: rule.priority,
            content: p.content.as_str().into(),
            md5: p.md5.as_str().into(),
            config_type: p.config_type.clone(),
            app_name: p.app_name.clone(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            create_time: old.as_ref().map_or(origin.time_ms, |g| g.create_time),
            modify_time: origin.time_ms,
            encrypted_data_key: data_key_of(&p.encrypted_data_key),
        };
        let row = match &old {
            Some(old) => NewRow {
                op: OpType::Update,
                content: old.content.clone(),
                md5: old.md5.clone(),
                app_name: old.app_name.clone(),
                gray_name: p.name.clone(),
                src_user: gray.src_user.clone(),
                src_ip: gray.src_ip.clone(),
                encrypted_data_key: old.encrypted_data_key.clone(),
            },
            None => NewRow {
                op: OpType::Insert,
                content: gray.content.clone(),
                md5: gray.md5.clone(),
                app_name: gray.app_name.clone(),
                gray_name: p.name.clone(),
                src_user: gray.src_user.clone(),
                src_ip: gray.src_ip.clone(),
                encrypted_data_key: gray.encrypted_data_key.clone(),
            },
        };
        self.put_gray(&key, gray);
        self.record_history(&key, row, origin.time_ms, p.history_limit);
        changed.push(key);
        Ok(Response::Done)
    }

    /// Removes a gray version, with a history row "D" holding its content.
    fn stop_gray(
        &mut self,
        s: &pb::StopGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = ConfigKey::from(s.key.as_ref().ok_or(ApplyError::UnknownCommand)?);
        let Some(old) = self.take_gray(&key, &s.name) else {
            return Ok(Response::Removed { existed: false });
        };
        let origin = s.origin.clone().unwrap_or_default();
        let row = NewRow {
            op: OpType::Delete,
            content: old.content.clone(),
            md5: old.md5.clone(),
            app_name: old.app_name.clone(),
            gray_name: s.name.clone(),
            src_user: origin.src_user.as_str().into(),
            src_ip: origin.src_ip.as_str().into(),
            encrypted_data_key: old.encrypted_data_key.clone(),
        };
        self.record_history(&key, row, origin.time_ms, s.history_limit);
        changed.push(key);
        Ok(Response::Removed { existed: true })
    }

    /// The gray's content becomes the config and the gray ends, in one
    /// apply: the history rows of a formal publish and a gray removal, as
    /// Nacos writes them when its console publishes the gray's content and
    /// then deletes the gray.
    fn promote_gray(
        &mut self,
        p: &pb::PromoteGray,
        changed: &mut Vec<ConfigKey>,
    ) -> Result<Response, ApplyError> {
        let key = self.key_in_existing_namespace(p.key.as_ref())?;
        let gray = self
            .gray(&key, &p.name)
            .cloned()
            .ok_or_else(|| ApplyError::GrayNotFound(p.name.clone()))?;
        if *gray.md5 != *p.gray_md5 {
            return Err(ApplyError::GrayReplaced(p.name.clone()));
        }
        let mut publish = self.republish(&key, &gray.content, &gray.md5, &gray.app_name);
        publish.encrypted_data_key = data_key_text(&gray.encrypted_data_key).to_string();
        publish.origin = p.origin.clone();
        publish.cas_md5 = p.cas_md5.clone();
        publish.history_limit = p.history_limit;
        // A refused publish changes nothing, so the gray stays with it.
        self.publish(&publish, changed)?;
        let stop = pb::StopGray {
            key: p.key.clone(),
            name: p.name.clone(),
            origin: p.origin.clone(),
            history_limit: p.history_limit,
        };
        self.stop_gray(&stop, changed)?;
        Ok(Response::Done)
    }

    fn create_namespace(&mut self, c: &pb::CreateNamespace) -> Result<Response, ApplyError> {
        let id = canonical_namespace(&c.id);
        if id.is_empty() || self.namespaces.contains_key(id) {
            return Err(ApplyError::NamespaceExists(c.id.clone()));
        }
        let namespace = Namespace {
            id: id.to_string(),
            name: c.name.clone(),
            desc: c.desc.clone(),
            create_time: c.time_ms,
        };
        self.namespaces.insert(id.to_string(), Arc::new(namespace));
        Ok(Response::Done)
    }

    fn update_namespace(&mut self, u: &pb::UpdateNamespace) -> Result<Response, ApplyError> {
        let Some(old) = self.namespaces.get(&u.id) else {
            return Err(ApplyError::NamespaceNotFound(u.id.clone()));
        };
        let mut namespace = Namespace::clone(old);
        namespace.name = u.name.clone();
        namespace.desc = u.desc.clone();
        self.namespaces.insert(u.id.clone(), Arc::new(namespace));
        Ok(Response::Done)
    }

    fn remove_namespace(&mut self, r: &pb::RemoveNamespace) -> Result<Response, ApplyError> {
        if !self.namespaces.contains_key(&r.id) {
            return Err(ApplyError::NamespaceNotFound(r.id.clone()));
        }
        let count = self.configs_in(&r.id).count();
        if count > 0 {
            return Err(ApplyError::NamespaceNotEmpty(r.id.clone(), count));
        }
        self.namespaces.remove(&r.id);
        // Permissions in it go too, so a namespace created later under the
        // same id does not inherit them.
        let holders: Vec<String> = self
            .users
            .values()
            .filter(|u| u.permissions.keys().any(|p| p.namespace == r.id))
            .map(|u| u.username.clone())
            .collect();
        for username in holders {
            if let Some(user) = self.users.get(&username) {
                let mut user = User::clone(user);
                user.permissions.retain(|p, _| p.namespace != r.id);
                self.users.insert(username, Arc::new(user));
            }
        }
        self.revoke_namespace_from_roles(&r.id);
        Ok(Response::Removed { existed: true })
    }
}

/// A history row about to be recorded.
struct NewRow {
    op: OpType,
    content: Arc<str>,
    md5: Arc<str>,
    app_name: String,
    gray_name: String,
    src_user: Arc<str>,
    src_ip: Arc<str>,
    encrypted_data_key: Option<Arc<str>>,
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod gray_tests;
