//! The state as snapshot records, and back.
//!
//! Each record is one byte of kind followed by a protobuf message from
//! `proto/snapshot.proto`. Order: counters, namespaces, configs, grays
//! (betas in snapshots written before cluster protocol 4),
//! history rows (each config's oldest first: grouped by config in older
//! snapshots, in the order they were written since rows are kept in
//! chunks), then the auth key, users, roles and audit rows (oldest first),
//! so loading can append rows.

use std::collections::HashMap;
use std::sync::Arc;

use prost::Message;

use super::{
    data_key_of, data_key_text, Access, AuthKey, Config, ConfigKey, Gray, GrayRule, HistoryRow,
    Namespace, OpType, Permissions, Resource, Role, State, User, BETA_GRAY, BETA_PRIORITY,
};
use tacos_core::snapshot as pb;

const COUNTERS: u8 = 1;
const NAMESPACE: u8 = 2;
const CONFIG: u8 = 3;
const BETA: u8 = 4;
const HISTORY: u8 = 5;
const AUTH: u8 = 6;
const USER: u8 = 7;
const AUDIT: u8 = 8;
const ROLE: u8 = 9;
const GRAY: u8 = 10;

/// Why snapshot records could not be turned back into a state.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("empty snapshot record")]
    Empty,
    #[error("unknown snapshot record kind {0}")]
    UnknownKind(u8),
    #[error("bad snapshot record: {0}")]
    Protobuf(#[from] prost::DecodeError),
    #[error("snapshot record without a config key")]
    MissingKey,
    #[error("gray {name:?} has an unknown rule type {kind:?}")]
    BadGrayRule { name: String, kind: String },
    #[error("history row {0} appears twice")]
    DuplicateHistoryRow(u64),
    #[error("unknown history op type {0:?}")]
    BadOpType(String),
    #[error("user {0:?} has a permission with no access")]
    BadAccess(String),
    #[error("role {0:?} has a permission with no access")]
    BadRoleAccess(String),
}

fn record(kind: u8, message: &impl Message) -> Vec<u8> {
    let mut buf = Vec::with_capacity(1 + message.encoded_len());
    buf.push(kind);
    message.encode(&mut buf).expect("a Vec grows as needed");
    buf
}

/// One snapshot record, for tools that build a state from another source
/// (`tacos-migrate`): encode each with [`Record::encode`], load them with
/// a [`SnapshotLoader`] in the order the module docs give, and
/// write them with `store::snapshot::encode`.
#[derive(Debug, Clone)]
pub enum Record {
    Counters(pb::CountersRecord),
    Namespace(pb::NamespaceRecord),
    Config(pb::ConfigRecord),
    Gray(pb::GrayRecord),
    History(pb::HistoryRecord),
    User(pb::UserRecord),
    Role(pb::RoleRecord),
    Audit(pb::AuditRecord),
}

impl Record {
    /// The record's bytes in a snapshot file body.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Record::Counters(r) => record(COUNTERS, r),
            Record::Namespace(r) => record(NAMESPACE, r),
            Record::Config(r) => record(CONFIG, r),
            Record::Gray(r) => record(GRAY, r),
            Record::History(r) => record(HISTORY, r),
            Record::User(r) => record(USER, r),
            Record::Role(r) => record(ROLE, r),
            Record::Audit(r) => record(AUDIT, r),
        }
    }

    /// Reads back what [`Record::encode`] wrote (None: another kind, such as the
    /// beta and auth records only the state's own snapshots carry, or bad bytes).
    pub fn decode(bytes: &[u8]) -> Option<Record> {
        let (&kind, body) = bytes.split_first()?;
        Some(match kind {
            COUNTERS => Record::Counters(Message::decode(body).ok()?),
            NAMESPACE => Record::Namespace(Message::decode(body).ok()?),
            CONFIG => Record::Config(Message::decode(body).ok()?),
            GRAY => Record::Gray(Message::decode(body).ok()?),
            HISTORY => Record::History(Message::decode(body).ok()?),
            USER => Record::User(Message::decode(body).ok()?),
            ROLE => Record::Role(Message::decode(body).ok()?),
            AUDIT => Record::Audit(Message::decode(body).ok()?),
            _ => return None,
        })
    }
}

fn key_of(key: Option<&tacos_core::command::ConfigKey>) -> Result<ConfigKey, DecodeError> {
    key.map(ConfigKey::from).ok_or(DecodeError::MissingKey)
}

impl State {
    /// A digest of every table (md5 over the snapshot records, which come in
    /// a fixed order): nodes that applied the same log have the same digest.
    pub fn digest(&self) -> String {
        let mut md5 = md5::Context::new();
        for record in self.snapshot_records() {
            md5.consume((record.len() as u64).to_le_bytes());
            md5.consume(&record);
        }
        format!("{:x}", md5.compute())
    }

    /// The tables as snapshot record payloads.
    pub fn snapshot_records(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        let counters = std::iter::once(record(
            COUNTERS,
            &pb::CountersRecord {
                next_config_id: self.next_config_id,
                next_history_id: self.next_history_id,
                next_audit_id: self.next_audit_id,
            },
        ));
        let namespaces = self.namespaces.values().map(|n| {
            record(
                NAMESPACE,
                &pb::NamespaceRecord {
                    id: n.id.clone(),
                    name: n.name.clone(),
                    desc: n.desc.clone(),
                    create_time: n.create_time,
                },
            )
        });
        let configs = self
            .configs
            .iter()
            .filter_map(|(key, e)| Some((key, e.config.as_ref()?)))
            .map(|(key, c)| {
                record(
                    CONFIG,
                    &pb::ConfigRecord {
                        key: Some(key.into()),
                        id: c.id,
                        content: c.content.to_string(),
                        md5: c.md5.to_string(),
                        config_type: c.config_type.clone(),
                        desc: c.desc.clone(),
                        app_name: c.app_name.clone(),
                        tags: c.tags.clone(),
                        create_time: c.create_time,
                        modify_time: c.modify_time,
                        src_user: c.src_user.to_string(),
                        src_ip: c.src_ip.to_string(),
                        encrypted_data_key: data_key_text(&c.encrypted_data_key).to_string(),
                    },
                )
            });
        let grays = self.grays.iter().flat_map(|(key, grays)| {
            grays.iter().map(move |g| {
                record(
                    GRAY,
                    &pb::GrayRecord {
                        key: Some(key.into()),
                        name: g.name.clone(),
                        rule: Some(tacos_core::command::GrayRule {
                            r#type: g.rule.kind().to_string(),
                            version: super::GRAY_RULE_VERSION.to_string(),
                            expr: g.rule.expr(),
                            priority: g.priority,
                        }),
                        content: g.content.to_string(),
                        md5: g.md5.to_string(),
                        config_type: g.config_type.clone(),
                        app_name: g.app_name.clone(),
                        src_user: g.src_user.to_string(),
                        src_ip: g.src_ip.to_string(),
                        create_time: g.create_time,
                        modify_time: g.modify_time,
                        encrypted_data_key: data_key_text(&g.encrypted_data_key).to_string(),
                    },
                )
            })
        });
        let history = self.history_log.live_records().map(|body| {
            let mut buf = Vec::with_capacity(1 + body.len());
            buf.push(HISTORY);
            buf.extend_from_slice(&body);
            buf
        });
        let auth = self.auth.iter().map(|a| {
            record(
                AUTH,
                &pb::AuthRecord {
                    token_key: a.token_key.clone(),
                    init_time: a.init_time,
                },
            )
        });
        let users = self.users.values().map(|u| record(USER, &user_record(u)));
        let roles = self.roles.values().map(|r| {
            record(
                ROLE,
                &pb::RoleRecord {
                    role: r.name.clone(),
                    usernames: r.users.iter().cloned().collect(),
                    permissions: permission_records(&r.permissions),
                },
            )
        });
        let audit = self.audit.iter().map(|a| {
            record(
                AUDIT,
                &pb::AuditRecord {
                    id: a.id,
                    time_ms: a.time_ms,
                    user: a.user.to_string(),
                    ip: a.ip.to_string(),
                    action: a.action.to_string(),
                    target: a.target.clone(),
                    detail: a.detail.clone(),
                    outcome: a.outcome.to_string(),
                },
            )
        });
        counters
            .chain(namespaces)
            .chain(configs)
            .chain(grays)
            .chain(history)
            .chain(auth)
            .chain(users)
            .chain(roles)
            .chain(audit)
    }

    /// A state from its snapshot records (from [`State::snapshot_records`]).
    pub fn from_snapshot_records<R: AsRef<[u8]>>(
        records: impl IntoIterator<Item = R>,
    ) -> Result<State, DecodeError> {
        let mut loader = SnapshotLoader::default();
        for record in records {
            loader.load(record.as_ref())?;
        }
        Ok(loader.finish())
    }

    /// Adds one snapshot record to the tables; history ids go to `history`
    /// (see [`SnapshotLoader`]).
    fn load_record(
        &mut self,
        payload: &[u8],
        history: &mut HashMap<ConfigKey, Vec<u64>>,
    ) -> Result<(), DecodeError> {
        let (&kind, body) = payload.split_first().ok_or(DecodeError::Empty)?;
        match kind {
            COUNTERS => {
                let r = pb::CountersRecord::decode(body)?;
                self.next_config_id = r.next_config_id;
                self.next_history_id = r.next_history_id;
                self.next_audit_id = r.next_audit_id;
            }
            NAMESPACE => {
                let r = pb::NamespaceRecord::decode(body)?;
                let namespace = Namespace {
                    id: r.id.clone(),
                    name: r.name,
                    desc: r.desc,
                    create_time: r.create_time,
                };
                self.namespaces.insert(r.id, Arc::new(namespace));
            }
            CONFIG => {
                let r = pb::ConfigRecord::decode(body)?;
                let key = key_of(r.key.as_ref())?;
                let config = Config {
                    id: r.id,
                    content: r.content.into(),
                    md5: r.md5.into(),
                    config_type: r.config_type,
                    desc: r.desc,
                    app_name: r.app_name,
                    tags: r.tags,
                    create_time: r.create_time,
                    modify_time: r.modify_time,
                    src_user: r.src_user.into(),
                    src_ip: r.src_ip.into(),
                    encrypted_data_key: data_key_of(&r.encrypted_data_key),
                };
                self.put_config(&key, Some(Arc::new(config)));
            }
            BETA => {
                // Written before cluster protocol 4: the gray named "beta".
                let r = pb::BetaRecord::decode(body)?;
                let key = key_of(r.key.as_ref())?;
                let gray = Gray {
                    name: BETA_GRAY.to_string(),
                    rule: GrayRule::Beta { ips: r.beta_ips },
                    priority: BETA_PRIORITY,
                    content: r.content.into(),
                    md5: r.md5.into(),
                    config_type: String::new(),
                    app_name: String::new(),
                    src_user: r.src_user.into(),
                    src_ip: r.src_ip.into(),
                    create_time: r.modify_time,
                    modify_time: r.modify_time,
                    encrypted_data_key: None,
                };
                self.put_gray(&key, gray);
            }
            GRAY => {
                let r = pb::GrayRecord::decode(body)?;
                let key = key_of(r.key.as_ref())?;
                let rule = r.rule.unwrap_or_default();
                let parsed = GrayRule::parse(&rule.r#type, &rule.expr).ok_or_else(|| {
                    DecodeError::BadGrayRule {
                        name: r.name.clone(),
                        kind: rule.r#type.clone(),
                    }
                })?;
                let gray = Gray {
                    name: r.name,
                    rule: parsed,
                    priority: rule.priority,
                    content: r.content.into(),
                    md5: r.md5.into(),
                    config_type: r.config_type,
                    app_name: r.app_name,
                    src_user: r.src_user.into(),
                    src_ip: r.src_ip.into(),
                    create_time: r.create_time,
                    modify_time: r.modify_time,
                    encrypted_data_key: data_key_of(&r.encrypted_data_key),
                };
                self.put_gray(&key, gray);
            }
            HISTORY => {
                // Each config's rows come oldest first.
                let row = history_row(pb::HistoryRecord::decode(body)?)?;
                if self.history_log.contains(row.id) {
                    return Err(DecodeError::DuplicateHistoryRow(row.id));
                }
                history.entry(row.key.clone()).or_default().push(row.id);
                self.history_log.push(row);
            }
            AUTH => {
                let r = pb::AuthRecord::decode(body)?;
                self.auth = Some(Arc::new(AuthKey {
                    token_key: r.token_key,
                    init_time: r.init_time,
                }));
            }
            USER => {
                let user = user_from_record(pb::UserRecord::decode(body)?)?;
                self.users.insert(user.username.clone(), Arc::new(user));
            }
            ROLE => {
                let r = pb::RoleRecord::decode(body)?;
                let permissions = permissions_from_records(r.permissions)
                    .ok_or_else(|| DecodeError::BadRoleAccess(r.role.clone()))?;
                self.load_role(Role {
                    name: r.role,
                    users: r.usernames.into_iter().collect(),
                    permissions,
                });
            }
            AUDIT => {
                let r = pb::AuditRecord::decode(body)?;
                let repeating = super::audit::Repeating {
                    user: &r.user,
                    ip: &r.ip,
                    action: &r.action,
                    outcome: &r.outcome,
                };
                self.push_audit(r.id, r.time_ms, repeating, r.target, r.detail);
            }
            other => return Err(DecodeError::UnknownKind(other)),
        }
        Ok(())
    }
}

/// Rebuilds a state from its snapshot records, in the order
/// [`State::snapshot_records`] wrote them (a snapshot file, a backup, one
/// a leader sends).
///
/// History ids are gathered per key in a hash map and filed under their
/// keys once, at the end: rows come in id order, each config's far apart,
/// and filing each row as it came cost a walk of the ordered map, a dozen
/// and more key comparisons that each chase pointers to the strings — most
/// of a restart with 100,000 configs × 10 versions (docs/benchmarks.md).
#[derive(Debug, Default)]
pub struct SnapshotLoader {
    state: State,
    history: HashMap<ConfigKey, Vec<u64>>,
}

impl SnapshotLoader {
    /// Adds the next record.
    pub fn load(&mut self, payload: &[u8]) -> Result<(), DecodeError> {
        self.state.load_record(payload, &mut self.history)
    }

    /// The state the records held.
    pub fn finish(self) -> State {
        let mut state = self.state;
        for (key, ids) in self.history {
            state.put_history(key, ids.into());
        }
        state
    }
}

/// A user as a snapshot record (also what `tacos-migrate` writes).
pub fn user_record(u: &User) -> pb::UserRecord {
    pb::UserRecord {
        username: u.username.clone(),
        password_hash: u.password_hash.clone(),
        admin: u.admin,
        disabled: !u.enabled,
        create_time: u.create_time,
        modify_time: u.modify_time,
        generation: u.generation,
        permissions: permission_records(&u.permissions),
    }
}

fn permission_records(permissions: &Permissions) -> Vec<pb::PermissionRecord> {
    permissions
        .iter()
        .map(|(resource, access)| pb::PermissionRecord {
            namespace: resource.namespace.clone(),
            access: access.to_pb() as i32,
            group: resource.group.clone(),
            data_id: resource.data_id.clone(),
        })
        .collect()
}

/// `None` if a record has no access. A record without group and dataId
/// (snapshots from before group/dataId grants) covers its whole namespace.
fn permissions_from_records(records: Vec<pb::PermissionRecord>) -> Option<Permissions> {
    records
        .into_iter()
        .map(|p| {
            let resource = Resource::from_record(&p.namespace, &p.group, &p.data_id);
            Some((resource, Access::from_pb(p.access)?))
        })
        .collect()
}

fn user_from_record(r: pb::UserRecord) -> Result<User, DecodeError> {
    let permissions = permissions_from_records(r.permissions)
        .ok_or_else(|| DecodeError::BadAccess(r.username.clone()))?;
    Ok(User {
        username: r.username,
        password_hash: r.password_hash,
        admin: r.admin,
        enabled: !r.disabled,
        create_time: r.create_time,
        modify_time: r.modify_time,
        generation: r.generation,
        permissions,
    })
}

/// A history row as its snapshot record (also how sealed history chunks
/// hold it).
pub(crate) fn history_record(h: &HistoryRow) -> pb::HistoryRecord {
    pb::HistoryRecord {
        id: h.id,
        key: Some((&h.key).into()),
        content: h.content.to_string(),
        md5: h.md5.to_string(),
        app_name: h.app_name.clone(),
        src_user: h.src_user.to_string(),
        src_ip: h.src_ip.to_string(),
        op_type: h.op.code().to_string(),
        created_time: h.created_time,
        last_modified_time: h.last_modified_time,
        last_id: h.last_id,
        publish_type: if h.gray_name.is_empty() {
            String::new()
        } else {
            "gray".to_string()
        },
        gray_name: h.gray_name.clone(),
        encrypted_data_key: data_key_text(&h.encrypted_data_key).to_string(),
    }
}

/// A history row from its snapshot record.
pub(crate) fn history_row(r: pb::HistoryRecord) -> Result<HistoryRow, DecodeError> {
    let key = key_of(r.key.as_ref())?;
    let op = OpType::from_code(&r.op_type).ok_or(DecodeError::BadOpType(r.op_type))?;
    Ok(HistoryRow {
        id: r.id,
        last_id: r.last_id,
        key,
        content: r.content.into(),
        md5: r.md5.into(),
        app_name: r.app_name,
        src_user: r.src_user.into(),
        src_ip: r.src_ip.into(),
        op,
        created_time: r.created_time,
        last_modified_time: r.last_modified_time,
        gray_name: r.gray_name,
        encrypted_data_key: data_key_of(&r.encrypted_data_key),
    })
}
