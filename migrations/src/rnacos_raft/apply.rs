//! r-nacos's state machine, as far as config data goes: applies snapshot items and log
//! requests the way r-nacos applies them (see the parent module's docs), then hands the
//! result over as a [`Source`].

use std::collections::{BTreeMap, HashMap, VecDeque};

use prost::Message;
use tacos_core::md5_hex;

use super::wire::{self, one_variant};
use super::{Kinds, HISTORY_LIMIT};
use crate::rnacos::{parse_namespaces, INNER_TENANT, NAMESPACES_DATA_ID, NAMESPACES_GROUP};
use crate::source::{
    Config, ConfigKey, HistoryRow, Namespace, NamespacePrivilege, Password, Skipped, Source, User,
};

const USER_TABLE: &str = "T_USER";
const CONFIG_TREE: &str = "T_CONFIG";
const NAMESPACE_TREE: &str = "T_NAMESPACE";
/// r-nacos's marker "the 0.5 namespace list was imported" (a `T_NAMESPACE` key).
const ALREADY_SYNC: &str = "__already_sync";
/// r-nacos's id for the public namespace, never stored.
const PUBLIC: &str = "public";

/// A config as r-nacos holds it in memory.
struct ConfigState {
    content: String,
    md5: String,
    histories: VecDeque<HistoryRow>,
    config_type: Option<String>,
    desc: Option<String>,
    last_modified: i64,
}

#[derive(Default)]
pub(crate) struct Machine {
    /// By r-nacos's key string `dataId\x02group[\x02tenant]`.
    configs: HashMap<String, ConfigState>,
    /// Raw `UserDo` bytes by username bytes.
    users: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Registered namespaces, in r-nacos's order.
    namespaces: Vec<Namespace>,
    already_sync: bool,
    /// Requests that are not config data, by kind.
    ignored: Kinds,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<String>,
}

/// r-nacos's `ConfigType::new_by_value(..).get_value()`.
fn normalise_type(t: &str) -> String {
    match t.to_lowercase().as_str() {
        "json" => "json",
        "xml" => "xml",
        "yml" | "yaml" => "yaml",
        "html" => "html",
        "toml" => "toml",
        "properties" => "properties",
        _ => "text",
    }
    .to_string()
}

/// r-nacos's `ConfigKey::from(&str)`: `dataId\x02group[\x02tenant]`.
fn parse_key(key: &str) -> ConfigKey {
    let mut parts = key.split('\x02');
    let data_id = parts.next().unwrap_or_default().to_string();
    let group = parts.next().unwrap_or_default().to_string();
    let tenant = parts.next().unwrap_or_default().to_string();
    ConfigKey {
        tenant,
        group,
        data_id,
    }
}

/// The body of a variant that must have one.
fn body<'a>(
    name: &str,
    body: &'a Option<Box<serde_json::value::RawValue>>,
) -> Result<&'a str, String> {
    body.as_ref()
        .map(|b| b.get())
        .ok_or_else(|| format!("{name} without a body"))
}

fn parse<T: serde::de::DeserializeOwned>(name: &str, json: &str) -> Result<T, String> {
    serde_json::from_str(json).map_err(|e| format!("bad {name}: {e}"))
}

impl Machine {
    fn ignore(&mut self, kind: String) {
        *self.ignored.entry(kind).or_default() += 1;
    }

    /// Applies one log record's value (async-raft's entry payload, JSON).
    pub fn apply_entry(&mut self, value: &[u8]) -> Result<(), String> {
        let payload: wire::EntryPayload =
            serde_json::from_slice(value).map_err(|e| format!("not a Raft entry: {e}"))?;
        let data = match payload {
            wire::EntryPayload::Normal(normal) => normal.data,
            wire::EntryPayload::Blank => {
                self.ignore("Blank".into());
                return Ok(());
            }
            wire::EntryPayload::ConfigChange(_) => {
                self.ignore("ConfigChange".into());
                return Ok(());
            }
            wire::EntryPayload::SnapshotPointer(_) => {
                self.ignore("SnapshotPointer".into());
                return Ok(());
            }
        };
        let (name, request) = one_variant(&data)?;
        match name.as_str() {
            "ConfigSet" => {
                let set: wire::ConfigSet = parse(&name, body(&name, &request)?)?;
                self.config_set(set);
            }
            "ConfigFullValue" => {
                let full: wire::ConfigFullValue = parse(&name, body(&name, &request)?)?;
                let key = String::from_utf8_lossy(&full.key).into_owned();
                self.config_full_value(key, &full.value)?;
            }
            "ConfigRemove" => {
                let remove: wire::ConfigRemove = parse(&name, body(&name, &request)?)?;
                self.configs.remove(&remove.key);
            }
            "TableManagerReq" => self.table(body(&name, &request)?)?,
            "NamespaceReq" => self.namespace(body(&name, &request)?)?,
            _ => self.ignore(name),
        }
        Ok(())
    }

    fn config_set(&mut self, set: wire::ConfigSet) {
        let md5 = md5_hex(&set.value);
        let config_type = set.config_type.as_deref().map(normalise_type);
        let row = HistoryRow {
            id: set.history_id,
            content: set.value.clone(),
            last_time_ms: set.op_time,
            op_user: set.op_user.map(Into::into),
            ..HistoryRow::default()
        };
        match self.configs.get_mut(&set.key) {
            Some(config) => {
                if config_type.is_some() {
                    config.config_type = config_type;
                }
                if set.desc.is_some() {
                    config.desc = set.desc;
                }
                if config.md5 == md5 {
                    return;
                }
                config.content = set.value;
                config.md5 = md5;
                if config.histories.len() >= HISTORY_LIMIT {
                    config.histories.pop_front();
                } else {
                    // One more slot, not double: a million rows in deques grown by
                    // doubling held half as much again in empty slots.
                    config.histories.reserve_exact(1);
                }
                config.histories.push_back(row);
                config.last_modified = set.op_time;
            }
            None => {
                self.configs.insert(
                    set.key,
                    ConfigState {
                        content: set.value,
                        md5,
                        histories: VecDeque::from([row]),
                        config_type,
                        desc: set.desc,
                        last_modified: set.op_time,
                    },
                );
            }
        }
    }

    /// A whole config (snapshot `T_CONFIG` item or `ConfigFullValue`), as r-nacos's
    /// `From<ConfigValueDO> for ConfigValue` makes it.
    fn config_full_value(&mut self, key: String, value: &[u8]) -> Result<(), String> {
        let value = wire::ConfigValueDo::decode(value).map_err(|e| format!("bad config: {e}"))?;
        let content = value.content.unwrap_or_default();
        let histories: VecDeque<HistoryRow> = value
            .histories
            .into_iter()
            .map(|h| HistoryRow {
                id: h.id.unwrap_or_default(),
                content: h.content.unwrap_or_default(),
                last_time_ms: h.last_time.unwrap_or_default(),
                op_user: h.op_user.map(Into::into),
                ..HistoryRow::default()
            })
            .collect();
        let last_modified = histories.back().map_or(0, |h| h.last_time_ms);
        self.configs.insert(
            key,
            ConfigState {
                md5: md5_hex(&content),
                content,
                histories,
                config_type: value.config_type.as_deref().map(normalise_type),
                desc: value.desc,
                last_modified,
            },
        );
        Ok(())
    }

    fn table(&mut self, json: &str) -> Result<(), String> {
        let raw = serde_json::value::RawValue::from_string(json.to_string())
            .map_err(|e| format!("bad TableManagerReq: {e}"))?;
        let (name, request) = one_variant(&raw)?;
        match name.as_str() {
            "Set" => {
                let set: wire::TableSet = parse("TableManagerReq::Set", body(&name, &request)?)?;
                if set.table_name == USER_TABLE {
                    self.users.insert(set.key, set.value);
                } else {
                    self.ignore(format!("TableManagerReq.Set({})", set.table_name));
                }
            }
            "Remove" => {
                let remove: wire::TableRemove =
                    parse("TableManagerReq::Remove", body(&name, &request)?)?;
                if remove.table_name == USER_TABLE {
                    self.users.remove(&remove.key);
                } else {
                    self.ignore(format!("TableManagerReq.Remove({})", remove.table_name));
                }
            }
            "Drop" => {
                let table: String = parse("TableManagerReq::Drop", body(&name, &request)?)?;
                if table == USER_TABLE {
                    self.users.clear();
                } else {
                    self.ignore(format!("TableManagerReq.Drop({table})"));
                }
            }
            _ => self.ignore(format!("TableManagerReq.{name}")),
        }
        Ok(())
    }

    fn namespace(&mut self, json: &str) -> Result<(), String> {
        let raw = serde_json::value::RawValue::from_string(json.to_string())
            .map_err(|e| format!("bad NamespaceReq: {e}"))?;
        let (name, request) = one_variant(&raw)?;
        match name.as_str() {
            "Set" | "Update" | "AddOnly" => {
                let param: wire::NamespaceParam = parse("NamespaceReq", body(&name, &request)?)?;
                let (only_add, only_update) = match name.as_str() {
                    "Set" => (false, false),
                    "Update" => (false, true),
                    _ => (true, true),
                };
                self.set_namespace(
                    param.namespace_id,
                    param.namespace_name,
                    only_add,
                    only_update,
                );
            }
            "Delete" => {
                let delete: wire::NamespaceDelete =
                    parse("NamespaceReq::Delete", body(&name, &request)?)?;
                self.namespaces.retain(|n| n.id != delete.id);
            }
            "InitFromOldValue" => {
                let old: String = parse("NamespaceReq::InitFromOldValue", body(&name, &request)?)?;
                self.init_from_old_value(&old);
                self.already_sync = true;
            }
            _ => self.ignore(format!("NamespaceReq.{name}")),
        }
        Ok(())
    }

    /// r-nacos's `NamespaceActor::set_namespace` for registered (user) namespaces.
    fn set_namespace(
        &mut self,
        id: String,
        name: Option<String>,
        only_add: bool,
        only_update: bool,
    ) {
        if id == PUBLIC || id.is_empty() {
            return;
        }
        if id == ALREADY_SYNC {
            self.already_sync = true;
            return;
        }
        match self.namespaces.iter_mut().find(|n| n.id == id) {
            // Already registered: `only_add` leaves it.
            Some(_) if only_add => {}
            Some(existing) => {
                if let Some(name) = name {
                    existing.name = name;
                }
            }
            None if only_update => {}
            None => self.namespaces.push(Namespace {
                id,
                name: name.unwrap_or_default(),
                ..Namespace::default()
            }),
        }
    }

    /// Registers the namespaces of r-nacos 0.5's list (JSON, the config
    /// `__INNER_SYSTEM__`/`sys`/`namespaces`) that are not registered yet. A list that is
    /// not JSON registers nothing, as in r-nacos.
    fn init_from_old_value(&mut self, list: &str) {
        if list.is_empty() {
            return;
        }
        match parse_namespaces(list) {
            Ok((namespaces, _)) => {
                for ns in namespaces {
                    if !self.namespaces.iter().any(|n| n.id == ns.id) {
                        self.set_namespace(ns.id, Some(ns.name), true, false);
                    }
                }
            }
            Err(reason) => self.notes.push(format!(
                "the r-nacos 0.5 namespace list is not readable ({reason}); r-nacos ignores \
                 it too"
            )),
        }
    }

    /// One item of a snapshot file.
    pub fn load_snapshot_item(&mut self, item: wire::LogSnapshotItem) -> Result<(), String> {
        match item.tree.as_str() {
            CONFIG_TREE => {
                let key = String::from_utf8(item.key).map_err(|_| "key is not UTF-8")?;
                self.config_full_value(key, &item.value)
            }
            USER_TABLE => {
                self.users.insert(item.key, item.value);
                Ok(())
            }
            NAMESPACE_TREE => {
                let ns = wire::NamespaceDo::decode(item.value.as_slice())
                    .map_err(|e| format!("bad namespace: {e}"))?;
                let id = ns.namespace_id.unwrap_or_default();
                self.set_namespace(id, ns.namespace_name, false, false);
                Ok(())
            }
            other => {
                self.ignore(format!("snapshot tree {other}"));
                Ok(())
            }
        }
    }

    /// The state as a [`Source`].
    pub fn finish(mut self) -> Source {
        // r-nacos registers the 0.5 list at the first start of 0.6+ (`load_completed`).
        let old_list = ConfigKey {
            tenant: INNER_TENANT.to_string(),
            group: NAMESPACES_GROUP.to_string(),
            data_id: NAMESPACES_DATA_ID.to_string(),
        };
        if !self.already_sync {
            let old_key = format!("{NAMESPACES_DATA_ID}\x02{NAMESPACES_GROUP}\x02{INNER_TENANT}");
            if let Some(content) = self.configs.get(&old_key).map(|c| c.content.clone()) {
                self.init_from_old_value(&content);
                self.notes.push(
                    "the namespaces of the r-nacos 0.5 list were registered, as r-nacos 0.6+ \
                     does at its first start"
                        .to_string(),
                );
            }
        }

        let mut configs = Vec::with_capacity(self.configs.len());
        let mut history = BTreeMap::new();
        for (raw, state) in self.configs.drain() {
            let key = parse_key(&raw);
            if key.tenant == INNER_TENANT {
                if key != old_list {
                    self.skipped.push(Skipped {
                        what: format!("config {key}"),
                        reason: format!(
                            "an internal r-nacos config (tenant {INNER_TENANT}) this tool \
                             does not know"
                        ),
                    });
                }
                continue;
            }
            configs.push(Config {
                tenant: key.tenant.clone(),
                group: key.group.clone(),
                data_id: key.data_id.clone(),
                content: state.content,
                last_time_ms: state.last_modified,
                config_type: state.config_type,
                desc: state.desc,
                grays: Vec::new(),
                ..Config::default()
            });
            history.insert(key, Vec::from(state.histories));
        }
        configs.sort_by(|a, b| {
            (&a.tenant, &a.group, &a.data_id).cmp(&(&b.tenant, &b.group, &b.data_id))
        });

        let mut users = Vec::new();
        for (key, value) in std::mem::take(&mut self.users) {
            let shown = String::from_utf8_lossy(&key).into_owned();
            match decode_user(&key, &value) {
                Ok(Some(user)) => users.push(user),
                Ok(None) => self.skipped.push(Skipped {
                    what: format!("user {shown:?}"),
                    reason: "an LDAP user: r-nacos checks its password against LDAP, which \
                             Tacos does not do"
                        .to_string(),
                }),
                Err(reason) => self.skipped.push(Skipped {
                    what: format!("user {shown:?}"),
                    reason,
                }),
            }
        }
        users.sort_by(|a, b| a.username.cmp(&b.username));

        if !self.ignored.is_empty() {
            let kinds: Vec<String> = self
                .ignored
                .iter()
                .map(|(kind, n)| format!("{kind} x{n}"))
                .collect();
            self.notes.push(format!(
                "not config data, not carried: {}",
                kinds.join(", ")
            ));
        }
        Source {
            configs,
            history,
            users,
            namespaces: self.namespaces,
            skipped: self.skipped,
            notes: self.notes,
            ..Source::default()
        }
    }
}

/// A `T_USER` entry; `Ok(None)` for an LDAP user.
fn decode_user(key: &[u8], value: &[u8]) -> Result<Option<User>, String> {
    let name = std::str::from_utf8(key).map_err(|_| "username is not UTF-8".to_string())?;
    let user = wire::UserDo::decode(value).map_err(|e| format!("not a user: {e}"))?;
    if user.username != name {
        return Err(format!("its value is for user {:?}", user.username));
    }
    if user.source.as_deref() == Some("LDAP") {
        return Ok(None);
    }
    let password = match user.password_hash.filter(|h| !h.is_empty()) {
        Some(hash) => Password::Bcrypt(hash),
        None => Password::Plain(user.password),
    };
    let flags = user.namespace_privilege_flags.unwrap_or_default();
    let namespace_privilege = (flags & 1 != 0).then_some(NamespacePrivilege {
        whitelist_is_all: flags & 2 != 0,
        whitelist: user.namespace_white_list,
        blacklist_is_all: flags & 4 != 0,
        blacklist: user.namespace_black_list,
    });
    Ok(Some(User {
        username: user.username,
        password,
        nickname: user.nickname,
        gmt_create: user.gmt_create,
        gmt_modified: user.gmt_modified,
        enabled: user.enable,
        roles: user.roles,
        extend_info: user.extend_info,
        namespace_privilege,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: &str, value: &str, id: u64, t: i64, ty: Option<&str>) -> Vec<u8> {
        serde_json::json!({"Normal": {"data": {"ConfigSet": {
            "key": key, "value": value, "config_type": ty, "desc": null,
            "history_id": id, "history_table_id": null, "op_time": t, "op_user": null}}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn config_set_keeps_history_as_rnacos_does() {
        let mut m = Machine::default();
        m.apply_entry(&set("a\x02G", "one", 1, 10, Some("YML")))
            .unwrap();
        m.apply_entry(&set("a\x02G", "one", 2, 20, Some("json")))
            .unwrap();
        m.apply_entry(&set("a\x02G", "two", 3, 30, None)).unwrap();
        for i in 0..150 {
            m.apply_entry(&set(
                "b\x02G\x02dev",
                &format!("v{i}"),
                100 + i,
                i as i64,
                None,
            ))
            .unwrap();
        }
        m.apply_entry(&set("gone\x02G", "x", 500, 1, None)).unwrap();
        m.apply_entry(br#"{"Normal":{"data":{"ConfigRemove":{"key":"gone\u0002G"}}}}"#)
            .unwrap();
        m.apply_entry(br#""Blank""#).unwrap();
        let s = m.finish();
        assert_eq!(s.configs.len(), 2);
        let a = &s.configs[0];
        assert_eq!((a.data_id.as_str(), a.content.as_str()), ("a", "two"));
        // The same md5 added no row but set the type; a later None kept it.
        assert_eq!(a.config_type.as_deref(), Some("json"));
        assert_eq!(a.last_time_ms, 30);
        let rows = &s.history[&a.key()];
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 3]);
        let b = &s.history[&s.configs[1].key()];
        assert_eq!(b.len(), HISTORY_LIMIT);
        assert_eq!(b[0].id, 150);
        assert_eq!(b[99].content, "v149");
        assert!(
            s.notes.iter().any(|n| n.contains("Blank x1")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn namespaces_follow_set_delete_and_the_old_list() {
        let mut m = Machine::default();
        let ns = |v: serde_json::Value| {
            serde_json::json!({"Normal": {"data": {"NamespaceReq": v}}})
                .to_string()
                .into_bytes()
        };
        m.apply_entry(&ns(
            serde_json::json!({"Set": {"namespace_id": "a", "namespace_name": "A", "type": null}}),
        ))
        .unwrap();
        m.apply_entry(&ns(
            serde_json::json!({"Set": {"namespace_id": "b", "namespace_name": "B", "type": null}}),
        ))
        .unwrap();
        m.apply_entry(&ns(serde_json::json!({"Update": {"namespace_id": "a", "namespace_name": "A2", "type": null}})))
            .unwrap();
        m.apply_entry(&ns(serde_json::json!({"Update": {"namespace_id": "zz", "namespace_name": "Z", "type": null}})))
            .unwrap();
        m.apply_entry(&ns(serde_json::json!({"Delete": {"id": "b"}})))
            .unwrap();
        m.apply_entry(&set(
            "namespaces\x02sys\x02__INNER_SYSTEM__",
            r#"[{"namespaceId":"a","namespaceName":"old"},{"namespaceId":"c","namespaceName":"C"}]"#,
            9,
            1,
            None,
        ))
        .unwrap();
        let s = m.finish();
        let got: Vec<(&str, &str)> = s
            .namespaces
            .iter()
            .map(|n| (n.id.as_str(), n.name.as_str()))
            .collect();
        assert_eq!(got, [("a", "A2"), ("c", "C")]);
        assert!(s.configs.is_empty(), "the internal list is not a config");
    }

    #[test]
    fn users_carry_their_hash_form_and_privileges() {
        let user = |name: &str, password: &str, hash: Option<&str>, flags: Option<u32>| {
            wire::UserDo {
                username: name.into(),
                password: password.into(),
                enable: true,
                roles: vec!["1".into()],
                password_hash: hash.map(str::to_string),
                namespace_privilege_flags: flags,
                namespace_white_list: vec!["dev".into()],
                ..wire::UserDo::default()
            }
            .encode_to_vec()
        };
        let mut m = Machine::default();
        m.users
            .insert(b"new".to_vec(), user("new", "", Some("$2b$10$x"), Some(1)));
        m.users
            .insert(b"old".to_vec(), user("old", "plain-pass", None, None));
        m.users
            .insert(b"odd".to_vec(), user("other", "x", None, None));
        let mut ldap = wire::UserDo::decode(user("ldap", "", None, None).as_slice()).unwrap();
        ldap.source = Some("LDAP".into());
        m.users.insert(b"ldap".to_vec(), ldap.encode_to_vec());
        let s = m.finish();
        let names: Vec<&str> = s.users.iter().map(|u| u.username.as_str()).collect();
        assert_eq!(names, ["new", "old"]);
        assert_eq!(s.users[0].password, Password::Bcrypt("$2b$10$x".into()));
        let p = s.users[0].namespace_privilege.as_ref().unwrap();
        assert!(p.allows("dev") && !p.allows("prod"));
        assert_eq!(s.users[1].password, Password::Plain("plain-pass".into()));
        assert_eq!(s.users[1].namespace_privilege, None);
        let skipped: Vec<&str> = s.skipped.iter().map(|s| s.what.as_str()).collect();
        assert_eq!(skipped, ["user \"ldap\"", "user \"odd\""]);
    }
}
