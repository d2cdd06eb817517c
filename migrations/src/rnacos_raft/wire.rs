//! What r-nacos 0.5–0.8 writes in its Raft files, written by hand with `prost` derive and
//! `serde` (learnt from r-nacos's `raft/filestore/log-pb.proto`, `config/model.rs`,
//! `user/model.rs`, `namespace/model.rs` and `raft/store/mod.rs`; the same from 0.5.0 to
//! 0.8.5 but for the fields noted). prost skips unknown fields and rejects a `string` that
//! is not UTF-8.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

/// `index`, after its 8-byte `last_applied_log`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RaftIndex {
    #[prost(message, repeated, tag = "1")]
    pub logs: Vec<LogRange>,
    #[prost(uint64, tag = "2")]
    pub current_log: u64,
    #[prost(message, repeated, tag = "3")]
    pub snapshots: Vec<SnapshotRange>,
    #[prost(uint64, tag = "7")]
    pub current_term: u64,
    #[prost(uint64, repeated, tag = "9")]
    pub member: Vec<u64>,
}

/// One log file (`log_<id>`).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LogRange {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub pre_term: u64,
    #[prost(uint64, tag = "3")]
    pub start_index: u64,
    /// Set when the file is closed (0 for the open one).
    #[prost(uint64, tag = "4")]
    pub record_count: u64,
    /// Records below it are already in a snapshot.
    #[prost(uint64, tag = "5")]
    pub split_off_index: u64,
    #[prost(bool, tag = "6")]
    pub is_close: bool,
    #[prost(bool, tag = "7")]
    pub mark_remove: bool,
}

/// One snapshot file (`snapshot_<id>`), holding the state up to `end_index`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SnapshotRange {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub end_index: u64,
}

/// One record of a log file.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LogRecord {
    #[prost(uint64, tag = "1")]
    pub index: u64,
    #[prost(uint64, tag = "2")]
    pub term: u64,
    /// The async-raft `EntryPayload<ClientRequest>` as JSON.
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
}

/// The first message of a snapshot file.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SnapshotHeader {
    #[prost(uint64, tag = "1")]
    pub last_index: u64,
}

/// Every later message of a snapshot file.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct LogSnapshotItem {
    #[prost(string, tag = "1")]
    pub tree: String,
    #[prost(bytes = "vec", tag = "4")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "5")]
    pub value: Vec<u8>,
}

/// A config in a snapshot (tree `T_CONFIG`) or a `ConfigFullValue` entry. Fields 3 and 4
/// since 0.5.x (absent before).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ConfigValueDo {
    #[prost(string, optional, tag = "1")]
    pub content: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub histories: Vec<ConfigHistoryItemDo>,
    #[prost(string, optional, tag = "3")]
    pub config_type: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub desc: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ConfigHistoryItemDo {
    #[prost(uint64, optional, tag = "1")]
    pub id: Option<u64>,
    #[prost(string, optional, tag = "2")]
    pub content: Option<String>,
    #[prost(int64, optional, tag = "3")]
    pub last_time: Option<i64>,
    #[prost(string, optional, tag = "4")]
    pub op_user: Option<String>,
}

/// A user (tree `T_USER`). Fields 1–8 as in 0.4 (0.5 keeps the password in field 2 in
/// plain text); 9 (`password_hash`, BCrypt) since 0.6.0; 10–13 since 0.6.x. The times are
/// `uint32` seconds, decoded here as `int64` (the same varint).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct UserDo {
    #[prost(string, tag = "1")]
    pub username: String,
    #[prost(string, tag = "2")]
    pub password: String,
    #[prost(string, tag = "3")]
    pub nickname: String,
    #[prost(int64, tag = "4")]
    pub gmt_create: i64,
    #[prost(int64, tag = "5")]
    pub gmt_modified: i64,
    #[prost(bool, tag = "6")]
    pub enable: bool,
    #[prost(string, repeated, tag = "7")]
    pub roles: Vec<String>,
    #[prost(btree_map = "string, string", tag = "8")]
    pub extend_info: BTreeMap<String, String>,
    #[prost(string, optional, tag = "9")]
    pub password_hash: Option<String>,
    /// Bits: 1 enabled, 2 white list is "all", 4 black list is "all".
    #[prost(uint32, optional, tag = "10")]
    pub namespace_privilege_flags: Option<u32>,
    #[prost(string, repeated, tag = "11")]
    pub namespace_white_list: Vec<String>,
    #[prost(string, repeated, tag = "12")]
    pub namespace_black_list: Vec<String>,
    /// `INNER` (or absent) or `LDAP`.
    #[prost(string, optional, tag = "13")]
    pub source: Option<String>,
}

/// A namespace (tree `T_NAMESPACE`), since 0.6.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct NamespaceDo {
    #[prost(string, optional, tag = "1")]
    pub namespace_id: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub namespace_name: Option<String>,
}

/// A log record's `value`: async-raft's `EntryPayload`, serde's external tagging.
#[derive(Deserialize)]
pub(crate) enum EntryPayload {
    Blank,
    Normal(NormalEntry),
    ConfigChange(serde::de::IgnoredAny),
    SnapshotPointer(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
pub(crate) struct NormalEntry {
    /// A `ClientRequest`: `{"<Variant>": ...}`; see [`one_variant`].
    pub data: Box<RawValue>,
}

/// The variant name and body of an externally tagged enum value (`{"Name": body}` or
/// `"Name"`), so that variants this tool does not read need no type.
pub(crate) fn one_variant(raw: &RawValue) -> Result<(String, Option<Box<RawValue>>), String> {
    if let Ok(name) = serde_json::from_str::<String>(raw.get()) {
        return Ok((name, None));
    }
    let map: BTreeMap<String, Box<RawValue>> =
        serde_json::from_str(raw.get()).map_err(|e| format!("not a tagged value: {e}"))?;
    let mut entries = map.into_iter();
    match (entries.next(), entries.next()) {
        (Some((name, body)), None) => Ok((name, Some(body))),
        _ => Err("not a value with exactly one variant".to_string()),
    }
}

/// `ClientRequest::ConfigSet` (`config_type` and `desc` since 0.5.x).
#[derive(Deserialize)]
pub(crate) struct ConfigSet {
    pub key: String,
    pub value: String,
    #[serde(default)]
    pub config_type: Option<String>,
    #[serde(default)]
    pub desc: Option<String>,
    pub history_id: u64,
    pub op_time: i64,
    #[serde(default)]
    pub op_user: Option<String>,
}

/// `ClientRequest::ConfigFullValue` (since 0.6): a whole config, as a snapshot holds it.
#[derive(Deserialize)]
pub(crate) struct ConfigFullValue {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// `ClientRequest::ConfigRemove`.
#[derive(Deserialize)]
pub(crate) struct ConfigRemove {
    pub key: String,
}

/// `TableManagerReq::Set` (other fields unused).
#[derive(Deserialize)]
pub(crate) struct TableSet {
    pub table_name: String,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// `TableManagerReq::Remove`.
#[derive(Deserialize)]
pub(crate) struct TableRemove {
    pub table_name: String,
    pub key: Vec<u8>,
}

/// `NamespaceRaftReq::{Set, Update, AddOnly}`'s `NamespaceParam`.
#[derive(Deserialize)]
pub(crate) struct NamespaceParam {
    pub namespace_id: String,
    #[serde(default)]
    pub namespace_name: Option<String>,
}

/// `NamespaceRaftReq::Delete`.
#[derive(Deserialize)]
pub(crate) struct NamespaceDelete {
    pub id: String,
}
