//! Permissions: what a user (directly or through a role) may do on which
//! configs.
//!
//! A permission is a [`Resource`] pattern — namespace, group, dataId, each
//! `*` or a pattern where `*` matches any run of characters — with an
//! [`Access`]: read, write, or both (Nacos' `r`, `w`, `rw`). A request is
//! allowed when some permission's resource matches what it touches and its
//! access includes what it does ([`Permissions::allows`]).
//!
//! What a request touches may itself contain `*` (a list of a whole
//! namespace asks for `NS:*:*`, a fuzzy watch for its pattern). Such a
//! request is matched as Nacos matches it: its text literally, so a `*` in
//! it is only covered by a `*` of the permission — a permission covers a
//! pattern only if it covers every key the pattern could name.

use std::collections::BTreeMap;

use tacos_core::command as pb;

/// The namespace name that stands for every namespace in a permission.
pub const ALL_NAMESPACES: &str = "*";

/// What a permission allows: read, write, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    /// Write only (Nacos' `w`): publish and delete, but not read.
    Write,
    ReadWrite,
}

impl Access {
    /// Nacos' action letters: `r`, `w` or `rw`.
    pub fn parse(action: &str) -> Option<Self> {
        match action {
            "r" => Some(Access::Read),
            "w" => Some(Access::Write),
            "rw" => Some(Access::ReadWrite),
            _ => None,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Access::Read => "r",
            Access::Write => "w",
            Access::ReadWrite => "rw",
        }
    }

    /// Whether holding `self` allows doing `need` (`rw` allows both; as
    /// Nacos' `action.contains(needed)`).
    pub fn allows(self, need: Access) -> bool {
        self == Access::ReadWrite || self == need
    }

    /// What holding both `self` and `other` allows.
    pub fn union(self, other: Access) -> Access {
        if self == other {
            self
        } else {
            Access::ReadWrite
        }
    }

    pub fn to_pb(self) -> pb::Access {
        match self {
            Access::Read => pb::Access::Read,
            Access::Write => pb::Access::Write,
            Access::ReadWrite => pb::Access::ReadWrite,
        }
    }

    /// `None` for ACCESS_NONE (and unknown values).
    pub fn from_pb(value: i32) -> Option<Self> {
        match pb::Access::try_from(value) {
            Ok(pb::Access::Read) => Some(Access::Read),
            Ok(pb::Access::Write) => Some(Access::Write),
            Ok(pb::Access::ReadWrite) => Some(Access::ReadWrite),
            _ => None,
        }
    }
}

/// The configs a permission covers: a canonical namespace (or
/// [`ALL_NAMESPACES`]), a group pattern and a dataId pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Resource {
    pub namespace: String,
    pub group: String,
    pub data_id: String,
}

impl Resource {
    /// Every config of `namespace` (canonical, or `*`): what a permission
    /// of Tacos before group/dataId grants (cluster protocol 6) meant.
    pub fn namespace(namespace: &str) -> Self {
        Resource::new(namespace, "*", "*")
    }

    pub fn new(namespace: &str, group: &str, data_id: &str) -> Self {
        Resource {
            namespace: namespace.to_string(),
            group: group.to_string(),
            data_id: data_id.to_string(),
        }
    }

    /// From a command or snapshot record, where an empty group or dataId is
    /// `*` (records written before group/dataId grants have neither).
    pub fn from_record(namespace: &str, group: &str, data_id: &str) -> Self {
        let any = |s: &str| if s.is_empty() { "*" } else { s }.to_string();
        Resource {
            namespace: crate::canonical_namespace(namespace).to_string(),
            group: any(group),
            data_id: any(data_id),
        }
    }

    /// Whether this resource covers the whole namespace.
    pub fn is_namespace_wide(&self) -> bool {
        self.group == "*" && self.data_id == "*"
    }

    /// Whether this resource covers `namespace` (canonical) / `group` /
    /// `data_id`, where `*` in the request is matched literally (see the
    /// module docs).
    pub fn covers(&self, namespace: &str, group: &str, data_id: &str) -> bool {
        (self.namespace == ALL_NAMESPACES || self.namespace == namespace)
            && glob(&self.group, group)
            && glob(&self.data_id, data_id)
    }
}

impl std::fmt::Display for Resource {
    /// Nacos' spelling: `NS:GROUP:config/DATAID`, `NS:GROUP:*` when every
    /// dataId, and the public namespace as empty (`:*:*`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:", self.namespace, self.group)?;
        if self.data_id == "*" {
            f.write_str("*")
        } else {
            write!(f, "config/{}", self.data_id)
        }
    }
}

/// Whether `text` matches `pattern`, where `*` in the pattern matches any
/// run of characters (also none) and every other character itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and where in the text it started matching.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            // Let the last `*` take one more character and retry.
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// One holder's permissions: resource → access (one action per resource,
/// as the roles API writes them).
pub type Permissions = BTreeMap<Resource, Access>;

/// Whether `permissions` allow `need` on `namespace` (canonical) / `group`
/// / `data_id` (see [`Resource::covers`]).
pub fn allows(
    permissions: &Permissions,
    namespace: &str,
    group: &str,
    data_id: &str,
    need: Access,
) -> bool {
    permissions
        .iter()
        .any(|(resource, access)| access.allows(need) && resource.covers(namespace, group, data_id))
}

/// Whether `permissions` allow `need` on some config of `namespace`
/// (canonical): whether a list of it can show anything.
pub fn allows_some(permissions: &Permissions, namespace: &str, need: Access) -> bool {
    permissions.iter().any(|(resource, access)| {
        access.allows(need)
            && (resource.namespace == ALL_NAMESPACES || resource.namespace == namespace)
    })
}

/// Adds `access` on `resource` to `permissions` (union with what is held).
pub fn add(permissions: &mut Permissions, resource: &Resource, access: Access) {
    permissions
        .entry(resource.clone())
        .and_modify(|held| *held = held.union(access))
        .or_insert(access);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_stars_and_literals() {
        for (pattern, text) in [
            ("*", ""),
            ("*", "anything"),
            ("app.yaml", "app.yaml"),
            ("app*", "app"),
            ("app*", "app.yaml"),
            ("*.yaml", "app.yaml"),
            ("a*b*c", "a-b-b-c"),
            ("**", "x"),
            // A `*` in the request is a literal character only a `*` covers.
            ("*", "*"),
            ("app*", "app*"),
        ] {
            assert!(glob(pattern, text), "{pattern} ~ {text}");
        }
        for (pattern, text) in [
            ("app.yaml", "appXyaml"),
            ("app.yaml", "app.yaml2"),
            ("app", "*"),
            ("app*", "*"),
            ("a*b*c", "a-b-b-"),
            ("", "x"),
        ] {
            assert!(!glob(pattern, text), "{pattern} !~ {text}");
        }
    }

    #[test]
    fn access_is_read_write_or_both() {
        assert!(Access::ReadWrite.allows(Access::Read));
        assert!(Access::ReadWrite.allows(Access::Write));
        assert!(Access::Read.allows(Access::Read));
        assert!(!Access::Read.allows(Access::Write));
        assert!(Access::Write.allows(Access::Write));
        assert!(!Access::Write.allows(Access::Read));
        assert_eq!(Access::Read.union(Access::Write), Access::ReadWrite);
        assert_eq!(Access::Read.union(Access::Read), Access::Read);
        for code in ["r", "w", "rw"] {
            assert_eq!(Access::parse(code).unwrap().code(), code);
        }
        assert_eq!(Access::parse("wr"), None);
    }

    #[test]
    fn resources_cover_keys_and_patterns() {
        let group = Resource::new("dev", "G", "*");
        assert!(group.covers("dev", "G", "app.yaml"));
        assert!(group.covers("dev", "G", "*"));
        assert!(!group.covers("dev", "H", "app.yaml"));
        assert!(!group.covers("dev", "*", "*"));
        assert!(!group.covers("", "G", "app.yaml"));
        let everywhere = Resource::new(ALL_NAMESPACES, "*", "app*");
        assert!(everywhere.covers("prod", "X", "app.yaml"));
        assert!(everywhere.covers("", "X", "app*"));
        assert!(!everywhere.covers("", "X", "*"));
        assert_eq!(group.to_string(), "dev:G:*");
        assert_eq!(Resource::new("", "G", "a").to_string(), ":G:config/a");
        assert_eq!(
            Resource::from_record("public", "", ""),
            Resource::namespace("")
        );

        let mut held = Permissions::new();
        add(&mut held, &group, Access::Write);
        add(&mut held, &group, Access::Read);
        assert_eq!(held[&group], Access::ReadWrite);
        assert!(allows(&held, "dev", "G", "x", Access::Read));
        assert!(!allows(&held, "dev", "H", "x", Access::Read));
        assert!(allows_some(&held, "dev", Access::Read));
        assert!(!allows_some(&held, "prod", Access::Read));
    }
}
