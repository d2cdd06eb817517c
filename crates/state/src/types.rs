//! The rows of the in-memory tables.

use std::sync::Arc;

use tacos_core::ConfigKey;

/// A published config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub id: u64,
    /// Shared (not copied) with the history rows that record this version.
    pub content: Arc<str>,
    pub md5: Arc<str>,
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
    pub tags: String,
    pub create_time: i64,
    pub modify_time: i64,
    pub src_user: Arc<str>,
    pub src_ip: Arc<str>,
    /// Nacos' `encryptedDataKey`: set when a client's encryption plugin
    /// (dataId `cipher-{alg}-...`) encrypted `content`; returned as given.
    /// Shared with the history rows of this version.
    pub encrypted_data_key: Option<Arc<str>>,
}

/// `encryptedDataKey` as commands and records carry it: "" is none.
pub fn data_key_of(text: &str) -> Option<Arc<str>> {
    (!text.is_empty()).then(|| text.into())
}

/// `encryptedDataKey` as answers render it: none is "".
pub fn data_key_text(key: &Option<Arc<str>>) -> &str {
    key.as_deref().unwrap_or("")
}

/// The name of the gray version a beta publish makes (Nacos'
/// `BetaGrayRule.TYPE_BETA`).
pub const BETA_GRAY: &str = "beta";

/// The name of the gray version a publish with `tag` makes: `tag_{tag}`.
pub fn tag_gray_name(tag: &str) -> String {
    format!("tag_{tag}")
}

/// Which clients a gray version serves (Nacos' `BetaGrayRule` and
/// `TagGrayRule`, format version 1.0.0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrayRule {
    /// Clients whose IP is listed (Nacos' label `ClientIp`).
    Beta { ips: Vec<String> },
    /// Clients that send this tag (Nacos' label `Vipserver-Tag`).
    Tag { tag: String },
}

/// The rule format version Nacos writes for both rule types.
pub const GRAY_RULE_VERSION: &str = "1.0.0";
/// A beta's priority (Nacos: `Integer.MAX_VALUE`).
pub const BETA_PRIORITY: i32 = i32::MAX;
/// A tag gray's priority (Nacos: `Integer.MAX_VALUE - 1`).
pub const TAG_PRIORITY: i32 = i32::MAX - 1;

/// What a client says about itself, for gray matching: its IP and, if it
/// sent one, its tag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientLabels {
    pub ip: String,
    pub tag: Option<String>,
}

impl GrayRule {
    /// The rule type as Nacos names it.
    pub fn kind(&self) -> &'static str {
        match self {
            GrayRule::Beta { .. } => "beta",
            GrayRule::Tag { .. } => "tag",
        }
    }

    /// The rule's expression as Nacos stores it (`expr`): the IPs joined
    /// with commas, or the tag.
    pub fn expr(&self) -> String {
        match self {
            GrayRule::Beta { ips } => ips.join(","),
            GrayRule::Tag { tag } => tag.clone(),
        }
    }

    /// Parses Nacos' type and expression; `None` for an unknown type.
    /// A beta's IPs are split on commas as Nacos does (`BetaGrayRule.parse`).
    pub fn parse(kind: &str, expr: &str) -> Option<GrayRule> {
        match kind {
            "beta" => Some(GrayRule::Beta {
                ips: expr.split(',').map(str::to_string).collect(),
            }),
            "tag" => Some(GrayRule::Tag {
                tag: expr.to_string(),
            }),
            _ => None,
        }
    }

    /// Whether a client with these labels is served by the rule.
    pub fn matches(&self, labels: &ClientLabels) -> bool {
        match self {
            GrayRule::Beta { ips } => ips.contains(&labels.ip),
            GrayRule::Tag { tag } => labels.tag.as_deref() == Some(tag.as_str()),
        }
    }
}

/// One gray version of a config (Nacos' `config_info_gray` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gray {
    /// `beta` or `tag_{tag}`.
    pub name: String,
    pub rule: GrayRule,
    pub priority: i32,
    pub content: Arc<str>,
    pub md5: Arc<str>,
    pub config_type: String,
    pub app_name: String,
    pub src_user: Arc<str>,
    pub src_ip: Arc<str>,
    pub create_time: i64,
    pub modify_time: i64,
    /// As in [`Config::encrypted_data_key`].
    pub encrypted_data_key: Option<Arc<str>>,
}

impl Gray {
    /// Nacos' `grayRule` column: `{"type","version","expr","priority"}`
    /// (Gson's field order of `ConfigGrayPersistInfo`).
    pub fn rule_json(&self) -> String {
        let text = |s: &str| serde_json::Value::from(s).to_string();
        format!(
            "{{\"type\":{},\"version\":{},\"expr\":{},\"priority\":{}}}",
            text(self.rule.kind()),
            text(GRAY_RULE_VERSION),
            text(&self.rule.expr()),
            self.priority
        )
    }

    /// The client IPs of a beta rule (none for another rule).
    pub fn beta_ips(&self) -> &[String] {
        match &self.rule {
            GrayRule::Beta { ips } => ips,
            GrayRule::Tag { .. } => &[],
        }
    }

    /// Whether a client with these labels is served by this gray.
    pub fn serves(&self, labels: &ClientLabels) -> bool {
        self.rule.matches(labels)
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
    /// The version's content and md5, and who made the change: shared with
    /// the config (or gray) that holds the same version, never copied, so
    /// a config and its history hold each version once.
    pub content: Arc<str>,
    pub md5: Arc<str>,
    pub app_name: String,
    pub src_user: Arc<str>,
    pub src_ip: Arc<str>,
    pub op: OpType,
    pub created_time: i64,
    pub last_modified_time: i64,
    /// The gray version this row is about, or "" for the formal config
    /// (Nacos' `gray_name`; its `publish_type` is "gray" or "formal").
    pub gray_name: String,
    /// The version's `encryptedDataKey` (see [`Config::encrypted_data_key`]).
    pub encrypted_data_key: Option<Arc<str>>,
}

/// A custom namespace (the public one is implicit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    pub id: String,
    pub name: String,
    pub desc: String,
    pub create_time: i64,
}
