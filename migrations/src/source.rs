//! What every source reader produces: the data of another config server in plain structs,
//! before any Tacos rule is applied.
//!
//! A reader ([`crate::rnacos`], [`crate::rnacos_raft`], ...) fills a [`Source`] with what its
//! server would itself show: live configs (with type, description and gray versions where
//! the server has them), each config's history oldest first, users with their password in
//! the form the server keeps it ([`Password`]), registered namespaces, and what it read but
//! leaves out ([`Skipped`]) or wants the operator to know ([`Source::notes`]).
//! [`crate::convert`] turns a `Source` into Tacos snapshot records and checks them; it does
//! not know which server the data came from.
//!
//! User roles are r-nacos role codes (`"0"` manager, `"1"` developer, `"2"` visitor).
//! Java Nacos' named roles, which bind users to namespace permissions as Tacos's roles
//! do, are [`Source::roles`] (its admins are code `"0"`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

pub use tacos_state::{Access, GrayRule, OpType};

/// How to read (every reader takes these).
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Leave out entries that cannot be decoded and list them in [`Source::skipped`],
    /// instead of failing.
    pub skip_bad: bool,
    /// Where to put a temporary copy of the source, for readers that read through one
    /// (it needs about the size of the source). `None`: the system temp dir.
    pub work_dir: Option<PathBuf>,
}

/// Everything read from a source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// Live configs, sorted by [`ConfigKey`] (tenant, group, data id). Never includes the
    /// source server's internal configs.
    pub configs: Vec<Config>,
    /// History per config. Every config in [`Source::configs`] has an entry (possibly
    /// empty), and there are no others. Rows are ordered by id, oldest first; the newest
    /// row normally holds the current content.
    pub history: BTreeMap<ConfigKey, Vec<HistoryRow>>,
    /// History of configs that no longer exist (Java Nacos keeps it), by key; rows as in
    /// [`Source::history`]. Keys of live configs are not here.
    pub deleted_history: BTreeMap<ConfigKey, Vec<HistoryRow>>,
    /// Users, sorted by username.
    pub users: Vec<User>,
    /// Named roles (Java Nacos), sorted by name. r-nacos has none.
    pub roles: Vec<Role>,
    /// Registered namespaces in the order the source lists them. The public namespace
    /// (tenant `""`) is implicit and not listed.
    pub namespaces: Vec<Namespace>,
    /// What was read but is not carried over, and why.
    pub skipped: Vec<Skipped>,
    /// What the reader wants the operator to know (e.g. what it did not read and why).
    pub notes: Vec<String>,
}

impl Source {
    /// Total number of history rows (of live and deleted configs).
    pub fn history_rows(&self) -> usize {
        self.history
            .values()
            .chain(self.deleted_history.values())
            .map(Vec::len)
            .sum()
    }

    /// Tenants that hold configs but are neither public (`""`) nor in
    /// [`Source::namespaces`], sorted.
    pub fn unregistered_tenants(&self) -> Vec<String> {
        let registered: BTreeSet<&str> = self.namespaces.iter().map(|n| n.id.as_str()).collect();
        let tenants: BTreeSet<&str> = self
            .configs
            .iter()
            .map(|c| c.tenant.as_str())
            .filter(|t| !t.is_empty() && !registered.contains(t))
            .collect();
        tenants.into_iter().map(str::to_string).collect()
    }
}

/// Identifies a config. Tenant `""` is the public namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigKey {
    pub tenant: String,
    pub group: String,
    pub data_id: String,
}

impl fmt::Display for ConfigKey {
    /// `tenant/group/data_id`, with `(public)` for tenant `""`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tenant = if self.tenant.is_empty() {
            "(public)"
        } else {
            &self.tenant
        };
        write!(f, "{tenant}/{}/{}", self.group, self.data_id)
    }
}

/// A live config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// `""` for the public namespace.
    pub tenant: String,
    pub group: String,
    pub data_id: String,
    pub content: String,
    /// Last modification, ms since the Unix epoch.
    pub last_time_ms: i64,
    /// The config type (`yaml`, `json`, ...); `None` when the source has none (Tacos then
    /// says `text`, as Nacos does).
    pub config_type: Option<String>,
    /// The description; `None` when the source has none.
    pub desc: Option<String>,
    /// Gray (beta or tag) versions. r-nacos has none.
    pub grays: Vec<Gray>,
    /// When it was created, ms since the Unix epoch; `None`: at its oldest history row
    /// (its last change if it has none).
    pub create_time_ms: Option<i64>,
    /// Java Nacos' app name; empty when none.
    pub app_name: String,
    /// Tags (Nacos' `config_tags`), sorted; empty when none.
    pub tags: Vec<String>,
    /// Who wrote the current version and from where; empty when unknown.
    pub src_user: String,
    pub src_ip: String,
    /// Java Nacos' `encrypted_data_key`: the key a client's encryption plugin
    /// encrypted `content` with (itself encrypted); carried as it is. Empty: none.
    pub encrypted_data_key: String,
}

impl Config {
    /// This config's key.
    pub fn key(&self) -> ConfigKey {
        ConfigKey {
            tenant: self.tenant.clone(),
            group: self.group.clone(),
            data_id: self.data_id.clone(),
        }
    }
}

/// A gray version of a config, in the form Tacos's state holds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gray {
    /// `beta` or `tag_{tag}` (Nacos's gray names).
    pub name: String,
    pub rule: GrayRule,
    /// The rule's priority (Nacos: beta `i32::MAX`, tag `i32::MAX - 1`).
    pub priority: i32,
    pub content: String,
    /// As the source stored it.
    pub md5: String,
    /// Java Nacos' app name; empty when none.
    pub app_name: String,
    pub src_user: String,
    pub src_ip: String,
    /// ms since the Unix epoch.
    pub create_time_ms: i64,
    /// ms since the Unix epoch.
    pub modify_time_ms: i64,
    /// As [`Config::encrypted_data_key`].
    pub encrypted_data_key: String,
}

/// One history row of a config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryRow {
    /// The source's history id (global over all configs, increasing with time).
    pub id: u64,
    pub content: String,
    /// When this version was written, ms since the Unix epoch.
    pub last_time_ms: i64,
    /// Who wrote it, when the source knows. Shared, as is `src_ip`: a source's rows name
    /// few users and hosts, and a million rows each with their own copies held 64 MB
    /// more ([`Names`]).
    pub op_user: Option<Arc<str>>,
    /// The op the source recorded, in Nacos' (and Tacos's) meaning: an insert holds the
    /// content published, an update or delete the content before the change. `None`:
    /// the row holds the content of its version (r-nacos); the first becomes an insert,
    /// the others updates.
    pub op: Option<OpType>,
    /// Java Nacos' app name at the time; empty when none.
    pub app_name: String,
    /// Where it was written from, when the source knows.
    pub src_ip: Option<Arc<str>>,
    /// As [`Config::encrypted_data_key`], of this version.
    pub encrypted_data_key: String,
}

/// Hands out one shared copy of each short string a reader meets again and again (the
/// user and IP of history rows). It remembers at most [`Names::LIMIT`] of them, so a
/// source where every row names another host costs no more than before.
#[derive(Debug, Default)]
pub struct Names(HashSet<Arc<str>>);

impl Names {
    /// How many distinct strings are remembered.
    pub const LIMIT: usize = 4096;

    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(name) = self.0.get(s) {
            return Arc::clone(name);
        }
        let name: Arc<str> = Arc::from(s);
        if self.0.len() < Self::LIMIT {
            self.0.insert(Arc::clone(&name));
        }
        name
    }
}

/// A password in the form the source keeps it. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub enum Password {
    /// Plain text (r-nacos 0.4, and r-nacos 0.5 users never re-saved since): Tacos hashes
    /// it with argon2id.
    Plain(String),
    /// A BCrypt hash (`$2a$`, `$2b$` or `$2y$`; r-nacos 0.6+ and Java Nacos): kept as it is.
    /// Tacos verifies it at login and re-hashes the password with argon2id then.
    Bcrypt(String),
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Password::Plain(_) => f.write_str("Plain(<redacted>)"),
            Password::Bcrypt(_) => f.write_str("Bcrypt(<redacted>)"),
        }
    }
}

/// Which namespaces an r-nacos 0.6+ user may see (r-nacos's `namespace_privilege`): a
/// namespace is allowed when it is in the white list (or the white list is "all") and
/// not in the black list (nor the black list "all"). The public namespace is `public`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespacePrivilege {
    pub whitelist_is_all: bool,
    pub whitelist: Vec<String>,
    pub blacklist_is_all: bool,
    pub blacklist: Vec<String>,
}

impl NamespacePrivilege {
    /// Whether it allows every namespace.
    pub fn is_all(&self) -> bool {
        self.whitelist_is_all && !self.blacklist_is_all && self.blacklist.is_empty()
    }

    /// Whether namespace `id` (`""` or `public` for the public one) is allowed.
    pub fn allows(&self, id: &str) -> bool {
        let id = if id.is_empty() { "public" } else { id };
        let white = self.whitelist_is_all || self.whitelist.iter().any(|w| w == id);
        let black = self.blacklist_is_all || self.blacklist.iter().any(|b| b == id);
        white && !black
    }
}

/// A console user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub username: String,
    pub password: Password,
    pub nickname: String,
    /// Seconds since the Unix epoch.
    pub gmt_create: i64,
    /// Seconds since the Unix epoch.
    pub gmt_modified: i64,
    pub enabled: bool,
    /// r-nacos role codes: `"0"` manager, `"1"` developer, `"2"` visitor.
    pub roles: Vec<String>,
    /// r-nacos's free-form `extend_info` map (not carried over).
    pub extend_info: BTreeMap<String, String>,
    /// The namespaces the user is limited to; `None` = all of them.
    pub namespace_privilege: Option<NamespacePrivilege>,
}

/// The name of an r-nacos role code (`"0"` → `Some("manager")`), `None` if unknown.
pub fn role_name(code: &str) -> Option<&'static str> {
    match code {
        "0" => Some("manager"),
        "1" => Some("developer"),
        "2" => Some("visitor"),
        _ => None,
    }
}

/// A registered namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespace {
    /// The tenant id configs use.
    pub id: String,
    /// The display name (empty if the source had none).
    pub name: String,
    /// The description; empty when none.
    pub desc: String,
    /// When it was created, ms since the Unix epoch; `None`: the migration's time.
    pub create_time_ms: Option<i64>,
}

/// A named role (Java Nacos' `roles` and `permissions`): what it grants applies to every
/// user bound to it, as in Tacos.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Role {
    pub name: String,
    /// Bound usernames, sorted.
    pub users: Vec<String>,
    /// Resource (namespace `""` public, `"*"` every namespace; group and
    /// dataId patterns) → access.
    pub permissions: tacos_state::Permissions,
}

/// Something read but not carried over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// What it is: tree and key, e.g. ``tree `config`, key ...``.
    pub what: String,
    /// Why it was left out.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show_in_debug() {
        let p = Password::Bcrypt("$2b$10$secret".into());
        assert_eq!(format!("{p:?}"), "Bcrypt(<redacted>)");
        let p = Password::Plain("hunter22".into());
        assert!(!format!("{p:?}").contains("hunter22"));
    }

    #[test]
    fn names_are_shared_up_to_the_limit() {
        let mut names = Names::default();
        let a = names.get("nacos");
        assert!(Arc::ptr_eq(&a, &names.get("nacos")));
        for i in 0..Names::LIMIT {
            names.get(&i.to_string());
        }
        let late = names.get("late");
        assert_eq!(&*late, "late");
        assert!(!Arc::ptr_eq(&late, &names.get("late")), "not remembered");
        assert!(Arc::ptr_eq(&a, &names.get("nacos")), "still shared");
    }

    #[test]
    fn namespace_privilege_is_white_minus_black() {
        let p = NamespacePrivilege {
            whitelist_is_all: true,
            blacklist: vec!["prod".into()],
            ..NamespacePrivilege::default()
        };
        assert!(!p.is_all());
        assert!(p.allows("dev") && p.allows("") && !p.allows("prod"));
        let p = NamespacePrivilege {
            whitelist: vec!["public".into(), "dev".into()],
            ..NamespacePrivilege::default()
        };
        assert!(p.allows("") && p.allows("dev") && !p.allows("prod"));
    }
}
