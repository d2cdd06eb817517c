//! The rows of the in-memory tables.

use tacos_core::ConfigKey;

/// A published config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub id: u64,
    pub content: String,
    pub md5: String,
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
    pub tags: String,
    pub create_time: i64,
    pub modify_time: i64,
    pub src_user: String,
    pub src_ip: String,
}

/// A gray (beta) release of a config to a list of client IPs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beta {
    pub content: String,
    pub md5: String,
    pub ips: Vec<String>,
    pub src_user: String,
    pub src_ip: String,
    pub modify_time: i64,
}

impl Beta {
    /// Whether a client at `ip` gets the beta.
    pub fn serves(&self, ip: &str) -> bool {
        self.ips.iter().any(|candidate| candidate == ip)
    }
}

/// What a history row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    Insert,
    Update,
    Delete,
}

impl OpType {
    /// Nacos' one-letter code.
    pub fn code(self) -> &'static str {
        match self {
            OpType::Insert => "I",
            OpType::Update => "U",
            OpType::Delete => "D",
        }
    }

    pub fn from_code(code: &str) -> Option<Self> {
        match code {
            "I" => Some(OpType::Insert),
            "U" => Some(OpType::Update),
            "D" => Some(OpType::Delete),
            _ => None,
        }
    }
}

/// One history row. As in Nacos, an insert records the new content, and an
/// update or delete records the content as it was before the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRow {
    pub id: u64,
    /// The previous row of the same config, or 0.
    pub last_id: u64,
    pub key: ConfigKey,
    pub content: String,
    pub md5: String,
    pub app_name: String,
    pub src_user: String,
    pub src_ip: String,
    pub op: OpType,
    pub created_time: i64,
    pub last_modified_time: i64,
}

/// A custom namespace (the public one is implicit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub id: String,
    pub name: String,
    pub desc: String,
    pub create_time: i64,
}
