//! Applying config writes: publish (with compare-and-set and the keep
//! rules of an update), import (all or nothing), remove, and the history
//! rows each one records.

use std::sync::Arc;

use super::{
    audit, data_key_of, pb, shown_namespace, ApplyError, Config, ConfigKey, Entry, HistoryRow,
    Namespace, OpType, Response, State,
};

impl State {
    pub(super) fn publish(
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
    pub(super) fn import(
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

    pub(super) fn remove(
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

    pub(super) fn record_history(
        &mut self,
        key: &ConfigKey,
        new: NewRow,
        time_ms: i64,
        limit: u32,
    ) {
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
    pub(super) fn history_of(&self, key: &ConfigKey) -> (ConfigKey, Arc<[u64]>) {
        match self.configs.get_key_value(key) {
            Some((filed, entry)) => (filed.clone(), entry.history.clone()),
            None => (key.clone(), Arc::from([])),
        }
    }

    /// Sets (or, with `None`, removes) the config under `key`; its history
    /// stays.
    pub(super) fn put_config(&mut self, key: &ConfigKey, config: Option<Arc<Config>>) {
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
    pub(super) fn put_history(&mut self, key: ConfigKey, ids: Arc<[u64]>) {
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
}

/// A history row about to be recorded.
pub(super) struct NewRow {
    pub(super) op: OpType,
    pub(super) content: Arc<str>,
    pub(super) md5: Arc<str>,
    pub(super) app_name: String,
    pub(super) gray_name: String,
    pub(super) src_user: Arc<str>,
    pub(super) src_ip: Arc<str>,
    pub(super) encrypted_data_key: Option<Arc<str>>,
}
