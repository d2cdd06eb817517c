//! The protobuf messages r-nacos 0.4.x stores in sled, written by hand with `prost` derive.
//!
//! Field numbers and wire types are those r-nacos 0.4.3 writes (see the layout in the parent
//! module's docs). proto3: an empty string, a zero or `false` is absent on the wire, so a
//! missing field decodes to its default. Unknown fields are skipped by prost. prost rejects a
//! `string` field that is not UTF-8, so every `String` here is valid UTF-8 once decoded.
//!
//! Integers that r-nacos writes as varints are declared `int64`: a varint decodes the same
//! whether the writer declared it `int64`, `uint32` or `uint64`, as long as it fits.

/// Key of tree `config` and the suffix of the `config_history_*` tree names.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ConfigSerdeKey {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub group: String,
    #[prost(string, tag = "3")]
    pub data_id: String,
}

/// Value of tree `config` (fields 5 and 7 unset) and of the history trees (field 7 set).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ConfigValue {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub group: String,
    #[prost(string, tag = "3")]
    pub data_id: String,
    #[prost(string, tag = "4")]
    pub content: String,
    #[prost(string, tag = "5")]
    pub content_md5: String,
    #[prost(int64, tag = "6")]
    pub last_time: i64,
    #[prost(int64, tag = "7")]
    pub id: i64,
}

/// Value of tree `t_user`: r-nacos kept the message and added fields after
/// 0.4 (a 0.4 value decodes with them empty), so one definition serves both.
pub(crate) use crate::rnacos_raft::wire::UserDo;

/// One element of the namespace list (JSON, the content of the config
/// `__INNER_SYSTEM__`/`sys`/`namespaces`).
#[derive(Debug, serde::Deserialize)]
pub(crate) struct NamespaceJson {
    #[serde(rename = "namespaceId", default)]
    pub namespace_id: Option<String>,
    #[serde(rename = "namespaceName", default)]
    pub namespace_name: Option<String>,
}
