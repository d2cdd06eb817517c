//! The rules of Nacos' list and search routes, shared by every surface that
//! lists (v1, v2, the console, the users and roles APIs): how a name filter
//! matches, which configs a search finds, and how a page is chosen.

use std::sync::Arc;

use tacos_core::validate::InvalidInput;
use tacos_core::ConfigKey;
use tacos_state::{Access, Config, HistoryRow, State};

use crate::auth::Principal;

/// Most rows one page may ask for (as Nacos).
pub const MAX_PAGE_SIZE: u64 = 500;

/// Nacos' blur match: `*` matches any run of characters; a pattern without
/// a `*` matches as a substring.
pub fn blur_match(pattern: &str, value: &str) -> bool {
    if !pattern.contains('*') {
        return value.contains(pattern);
    }
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = value.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// One name filter of a list route: `search=blur` ([`blur_match`]),
/// `search=accurate` (whole names); an empty pattern matches everything.
#[derive(Debug, Clone, Copy)]
pub struct NameMatch<'a> {
    pub pattern: &'a str,
    pub blur: bool,
}

impl NameMatch<'_> {
    pub fn matches(&self, candidate: &str) -> bool {
        self.pattern.is_empty()
            || if self.blur {
                blur_match(self.pattern, candidate)
            } else {
                candidate == self.pattern
            }
    }
}

/// What a config search asks for (Nacos' `search=blur|accurate` over
/// dataId and group, plus exact app and type, required tags and a content
/// substring); an empty field asks nothing.
#[derive(Debug, Clone, Default)]
pub struct ConfigFilter<'a> {
    pub data_id: &'a str,
    pub group: &'a str,
    /// Blur (wildcards, substrings) or accurate matching of dataId and group.
    pub blur: bool,
    pub app_name: &'a str,
    pub config_type: &'a str,
    /// Every one of these tags (of the config's comma-separated tags).
    pub tags: Vec<&'a str>,
    pub content: &'a str,
}

impl ConfigFilter<'_> {
    pub fn matches(&self, key: &ConfigKey, config: &Config) -> bool {
        let name = |pattern| NameMatch {
            pattern,
            blur: self.blur,
        };
        name(self.data_id).matches(&key.data_id)
            && name(self.group).matches(&key.group)
            && (self.app_name.is_empty() || config.app_name == self.app_name)
            && (self.config_type.is_empty() || config.config_type == self.config_type)
            && self
                .tags
                .iter()
                .all(|t| config.tags.split(',').any(|ct| ct.trim() == *t))
            && (self.content.is_empty() || config.content.contains(self.content))
    }
}

/// The configs of `namespace` (canonical) that `filter` matches, in key
/// order.
pub fn search_configs<'a>(
    state: &'a State,
    namespace: &'a str,
    filter: ConfigFilter<'a>,
) -> impl Iterator<Item = (&'a ConfigKey, &'a Arc<Config>)> + 'a {
    state
        .configs_in(namespace)
        .filter(move |(key, config)| filter.matches(key, config))
}

/// A namespace as a list shows it to one principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceSummary {
    /// "" for the public namespace.
    pub id: String,
    pub name: String,
    pub desc: String,
    pub config_count: usize,
    pub create_time: i64,
    /// The principal's right here (at least read: others are left out).
    pub access: Access,
}

impl NamespaceSummary {
    pub fn is_public(&self) -> bool {
        self.id.is_empty()
    }
}

/// The namespaces `principal` may read, the public one first (named
/// `public`, with `public_desc`), each with its config count.
pub fn visible_namespaces(
    state: &State,
    principal: &Principal,
    public_desc: &str,
) -> Vec<NamespaceSummary> {
    let public = NamespaceSummary {
        id: String::new(),
        name: tacos_core::PUBLIC_NAMESPACE.into(),
        desc: public_desc.into(),
        config_count: state.configs_in("").count(),
        create_time: 0,
        access: Access::Read,
    };
    let custom = state.namespaces().map(|n| NamespaceSummary {
        id: n.id.clone(),
        name: n.name.clone(),
        desc: n.desc.clone(),
        config_count: state.configs_in(&n.id).count(),
        create_time: n.create_time,
        access: Access::Read,
    });
    std::iter::once(public)
        .chain(custom)
        .filter_map(|mut n| {
            n.access = if principal.can(&n.id, Access::ReadWrite) {
                Access::ReadWrite
            } else if principal.can(&n.id, Access::Read) {
                Access::Read
            } else {
                return None;
            };
            Some(n)
        })
        .collect()
}

/// Which history row a lookup by id means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryLookup {
    /// The row with this id (`history?nid=`).
    This,
    /// The row of the same config before it (`history/previous?id=`).
    Previous,
}

/// A history row by id, if `principal` may read its namespace: a row the
/// caller may not see is not found, as if it did not exist.
pub fn visible_history_row<'a>(
    state: &'a State,
    principal: &Principal,
    id: u64,
    lookup: HistoryLookup,
) -> Option<&'a Arc<HistoryRow>> {
    let row = match lookup {
        HistoryLookup::This => state.history_row(id),
        HistoryLookup::Previous => state.previous_history_row(id),
    };
    row.filter(|row| principal.can(&row.key.namespace, Access::Read))
}

/// A page of a list: 1-based number and size (1 to [`MAX_PAGE_SIZE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paging {
    pub page_no: u64,
    pub page_size: u64,
}

impl Paging {
    /// Page numbers below 1 mean the first page (as Nacos); a size outside
    /// 1 to 500 is refused.
    pub fn new(page_no: u64, page_size: u64) -> Result<Self, InvalidInput> {
        if page_size == 0 || page_size > MAX_PAGE_SIZE {
            return Err(InvalidInput::Other(
                "pageSize",
                format!("{page_size} (must be 1 to {MAX_PAGE_SIZE})"),
            ));
        }
        Ok(Paging {
            page_no: page_no.max(1),
            page_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_substrings() {
        assert!(blur_match("app", "my-app.yaml"));
        assert!(blur_match("*.yaml", "my-app.yaml"));
        assert!(blur_match("my*", "my-app.yaml"));
        assert!(blur_match("my*yaml", "my-app.yaml"));
        assert!(blur_match("my*app*yaml", "my-app.yaml"));
        assert!(blur_match("*", "anything"));
        assert!(!blur_match("*.json", "my-app.yaml"));
        assert!(!blur_match("x*", "my-app.yaml"));
        assert!(!blur_match("my*z*", "my-app.yaml"));
        assert!(!blur_match("ab*ab", "ab"));
    }

    #[test]
    fn name_matches_blur_accurate_and_empty() {
        let blur = NameMatch {
            pattern: "dev",
            blur: true,
        };
        assert!(blur.matches("devops") && !blur.matches("ops"));
        let exact = NameMatch {
            pattern: "dev",
            blur: false,
        };
        assert!(exact.matches("dev") && !exact.matches("devops"));
        let all = NameMatch {
            pattern: "",
            blur: false,
        };
        assert!(all.matches("anything"));
    }

    #[test]
    fn pages_are_1_to_500_rows() {
        assert_eq!(
            Paging::new(0, 10).unwrap(),
            Paging {
                page_no: 1,
                page_size: 10
            }
        );
        assert!(Paging::new(1, 0).is_err());
        assert!(Paging::new(1, 501).is_err());
        assert!(Paging::new(3, 500).is_ok());
    }
}
