//! The rules of Nacos' list and search routes, shared by every surface that
//! lists (v1, v2, the console, the users and roles APIs): how a name filter
//! matches, which configs a search finds, and how a page is chosen.

use std::sync::Arc;

use tacos_core::validate::InvalidInput;
use tacos_core::ConfigKey;
use tacos_state::{Access, Config, HistoryRow, State};

use crate::auth::Principal;

/// The public namespace's description in Nacos' namespace lists (v1, v2
/// and v3 alike; Java Nacos 2.5 and 3.0 answer it so).
pub const PUBLIC_NAMESPACE_DESC: &str = "Default Namespace";

/// Most rows one page may ask for (as Nacos).
pub const MAX_PAGE_SIZE: u64 = 500;

/// Nacos' blur match (`search=blur`, its SQL `LIKE` of the pattern with
/// `*` made `%`): `*` matches any run of characters, and a pattern without
/// `*` matches whole names only. Nacos' console UI wraps what is typed in
/// `*` to find a part of a name; [`ConfigFilter::contains`] does that for
/// Tacos' console.
pub fn blur_match(pattern: &str, value: &str) -> bool {
    if !pattern.contains('*') {
        return value == pattern;
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
    /// Blur ([`blur_match`]) or accurate matching of dataId and group.
    pub blur: bool,
    /// With `blur`: a pattern without `*` matches a part of the name, as if
    /// wrapped in `*` (the console's search box).
    pub contains: bool,
    pub app_name: &'a str,
    pub config_type: &'a str,
    /// Every one of these tags (of the config's comma-separated tags).
    pub tags: Vec<&'a str>,
    pub content: &'a str,
}

impl ConfigFilter<'_> {
    pub fn matches(&self, key: &ConfigKey, config: &Config) -> bool {
        let name = |pattern: &str, value: &str| {
            if self.blur && self.contains && !pattern.contains('*') {
                value.contains(pattern)
            } else {
                NameMatch {
                    pattern,
                    blur: self.blur,
                }
                .matches(value)
            }
        };
        name(self.data_id, &key.data_id)
            && name(self.group, &key.group)
            && (self.app_name.is_empty() || config.app_name == self.app_name)
            && (self.config_type.is_empty() || config.config_type == self.config_type)
            && self
                .tags
                .iter()
                .all(|t| config.tags.split(',').any(|ct| ct.trim() == *t))
            && (self.content.is_empty() || config.content.contains(self.content))
    }
}

/// The configs of `namespace` (canonical) that `filter` matches and
/// `principal` may read, in key order. Lists leave out what the principal
/// may not read (Nacos instead refuses a list unless the caller may read
/// what its parameters name: see docs/auth.md).
pub fn search_configs<'a>(
    state: &'a State,
    principal: &'a Principal,
    namespace: &'a str,
    filter: ConfigFilter<'a>,
) -> impl Iterator<Item = (&'a ConfigKey, &'a Arc<Config>)> + 'a {
    readable_configs(state, principal, namespace)
        .filter(move |(key, config)| filter.matches(key, config))
}

/// The configs of `namespace` (canonical) `principal` may read, in key
/// order.
pub fn readable_configs<'a>(
    state: &'a State,
    principal: &'a Principal,
    namespace: &'a str,
) -> impl Iterator<Item = (&'a ConfigKey, &'a Arc<Config>)> + 'a {
    // One check for the whole namespace spares one per key.
    let all = principal.can_namespace(namespace, Access::Read);
    state
        .configs_in(namespace)
        .filter(move |(key, _)| all || principal.can_key(key, Access::Read))
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
    /// What the principal may do on some config here (all of them when
    /// its grant covers the namespace; namespaces where it may do nothing
    /// are left out).
    pub access: Access,
}

impl NamespaceSummary {
    pub fn is_public(&self) -> bool {
        self.id.is_empty()
    }
}

/// The namespaces where `principal` may read or write some config, the
/// public one first (named `public`, with `public_desc`), each with the
/// count of configs it may read.
pub fn visible_namespaces(
    state: &State,
    principal: &Principal,
    public_desc: &str,
) -> Vec<NamespaceSummary> {
    let public = NamespaceSummary {
        id: String::new(),
        name: tacos_core::PUBLIC_NAMESPACE.into(),
        desc: public_desc.into(),
        config_count: 0,
        create_time: 0,
        access: Access::Read,
    };
    let custom = state.namespaces().map(|n| NamespaceSummary {
        id: n.id.clone(),
        name: n.name.clone(),
        desc: n.desc.clone(),
        config_count: 0,
        create_time: n.create_time,
        access: Access::Read,
    });
    std::iter::once(public)
        .chain(custom)
        .filter_map(|mut n| {
            let read = principal
                .can_some(&n.id, Access::Read)
                .then_some(Access::Read);
            let write = principal
                .can_some(&n.id, Access::Write)
                .then_some(Access::Write);
            n.access = match (read, write) {
                (Some(r), Some(w)) => r.union(w),
                (one, other) => one.or(other)?,
            };
            n.config_count = readable_configs(state, principal, &n.id).count();
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

/// A history row by id, if `principal` may read its config: a row the
/// caller may not see is not found, as if it did not exist.
pub fn visible_history_row(
    state: &State,
    principal: &Principal,
    id: u64,
    lookup: HistoryLookup,
) -> Option<Arc<HistoryRow>> {
    let row = match lookup {
        HistoryLookup::This => state.history_row(id),
        HistoryLookup::Previous => state.previous_history_row(id),
    };
    row.filter(|row| principal.can_key(&row.key, Access::Read))
}

/// The live config with config id `id`, in any namespace (every config's
/// namespace exists: apply refuses a config in an unknown one and a
/// namespace removal while it holds configs).
pub fn config_with_id(state: &State, id: u64) -> Option<(&ConfigKey, &Arc<Config>)> {
    std::iter::once("")
        .chain(state.namespaces().map(|n| n.id.as_str()))
        .find_map(|namespace| state.configs_in(namespace).find(|(_, c)| c.id == id))
}

/// The live configs with these config ids (unknown ids are left out, as
/// Nacos' batch delete skips them), each once, in the order asked.
pub fn configs_with_ids(state: &State, ids: &[u64]) -> Vec<ConfigKey> {
    let mut found: Vec<ConfigKey> = Vec::new();
    for id in ids {
        if let Some((key, _)) = config_with_id(state, *id) {
            if !found.contains(key) {
                found.push(key.clone());
            }
        }
    }
    found
}

/// A history row looked up for a config named beside the id (Nacos 3's
/// history routes take `dataId`, `groupName` and `namespaceId` with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigHistoryLookup {
    /// The row with this id (`history?nid=`).
    Row(u64),
    /// The newest row of the config with this config id
    /// (`history/previous?id=`): what the config held before its last
    /// change (an insert row: what it was created with).
    LatestOfConfig(u64),
}

/// Why [`config_history_row`] found no row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigRowError {
    NotFound,
    /// The row (or config id) belongs to another config than the one named.
    OtherConfig,
}

/// A history row that must belong to `key`: a row of another config is
/// refused rather than shown (Nacos' "Please check dataId, group or
/// namespaceId"). `LatestOfConfig` finds live configs only: rows keep no
/// config id, so the id of a deleted config is not found.
pub fn config_history_row(
    state: &State,
    key: &ConfigKey,
    lookup: ConfigHistoryLookup,
) -> Result<Arc<HistoryRow>, ConfigRowError> {
    match lookup {
        ConfigHistoryLookup::Row(id) => {
            let row = state.history_row(id).ok_or(ConfigRowError::NotFound)?;
            if &row.key == key {
                Ok(row)
            } else {
                Err(ConfigRowError::OtherConfig)
            }
        }
        ConfigHistoryLookup::LatestOfConfig(id) => match state.config(key) {
            Some(config) if config.id == id => state
                .history(key)
                .next_back()
                .ok_or(ConfigRowError::NotFound),
            _ if config_with_id(state, id).is_some() => Err(ConfigRowError::OtherConfig),
            _ => Err(ConfigRowError::NotFound),
        },
    }
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

    /// Nacos 3's page form: `pageNo` and `pageSize` must be at least 1 (a
    /// refusal names the parameter and carries the value as sent); a size
    /// above [`MAX_PAGE_SIZE`] is cut to it, as Nacos 3's history list does.
    pub fn at_least_one(page_no: i64, page_size: i64) -> Result<Self, InvalidInput> {
        if page_no < 1 {
            return Err(InvalidInput::Other("pageNo", page_no.to_string()));
        }
        if page_size < 1 {
            return Err(InvalidInput::Other("pageSize", page_size.to_string()));
        }
        Ok(Paging {
            page_no: page_no as u64,
            page_size: (page_size as u64).min(MAX_PAGE_SIZE),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_and_whole_names() {
        // As Nacos' LIKE: without `*`, the whole name.
        assert!(!blur_match("app", "my-app.yaml"));
        assert!(blur_match("my-app.yaml", "my-app.yaml"));
        assert!(blur_match("*app*", "my-app.yaml"));
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
            pattern: "dev*",
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
    fn the_console_search_finds_parts_of_names() {
        let key = ConfigKey::new("", "PAY_GROUP", "order-service.yaml");
        let config = Config {
            id: 1,
            content: "x".into(),
            md5: "".into(),
            config_type: "text".into(),
            desc: String::new(),
            app_name: String::new(),
            tags: String::new(),
            create_time: 0,
            modify_time: 0,
            src_user: "".into(),
            src_ip: "".into(),
            encrypted_data_key: None,
        };
        let filter = |data_id, contains| ConfigFilter {
            data_id,
            blur: true,
            contains,
            ..Default::default()
        };
        assert!(!filter("order", false).matches(&key, &config));
        assert!(filter("order", true).matches(&key, &config));
        assert!(filter("order*", false).matches(&key, &config));
        assert!(filter("order-service.yaml", false).matches(&key, &config));
        assert!(!filter("bill", true).matches(&key, &config));
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

    fn publish(state: &mut State, namespace: &str, data_id: &str, content: &str) -> ConfigKey {
        use tacos_core::command as pb;
        let command = tacos_core::Command::of(tacos_core::Op::PublishConfig(pb::PublishConfig {
            key: Some(pb::ConfigKey {
                namespace: namespace.into(),
                group: "G".into(),
                data_id: data_id.into(),
            }),
            content: content.into(),
            md5: tacos_core::md5_hex(content),
            config_type: "text".into(),
            history_limit: 10,
            create_namespace: true,
            ..Default::default()
        }));
        state.apply(&command, &mut Vec::new());
        ConfigKey::new(namespace, "G", data_id)
    }

    #[test]
    fn configs_by_id_in_every_namespace() {
        let mut state = State::default();
        let a = publish(&mut state, "", "a", "1");
        let b = publish(&mut state, "dev", "b", "1");
        let id = |key: &ConfigKey| state.config(key).unwrap().id;
        let (id_a, id_b) = (id(&a), id(&b));
        assert_eq!(config_with_id(&state, id_b).map(|(k, _)| k), Some(&b));
        assert_eq!(
            configs_with_ids(&state, &[id_b, 999, id_a, id_b]),
            vec![b.clone(), a.clone()]
        );
        assert!(configs_with_ids(&state, &[999]).is_empty());
    }

    #[test]
    fn history_rows_must_belong_to_the_named_config() {
        let mut state = State::default();
        let a = publish(&mut state, "", "a", "v1");
        publish(&mut state, "", "a", "v2");
        let b = publish(&mut state, "", "b", "b1");
        let rows: Vec<u64> = state.history(&a).map(|r| r.id).collect();
        let row = |key, lookup| config_history_row(&state, key, lookup).map(|r| r.id);
        assert_eq!(row(&a, ConfigHistoryLookup::Row(rows[0])), Ok(rows[0]));
        assert_eq!(
            row(&b, ConfigHistoryLookup::Row(rows[0])),
            Err(ConfigRowError::OtherConfig)
        );
        assert_eq!(
            row(&a, ConfigHistoryLookup::Row(999)),
            Err(ConfigRowError::NotFound)
        );
        // Previous: by config id, the newest row (the update, holding v1).
        let (id_a, id_b) = (state.config(&a).unwrap().id, state.config(&b).unwrap().id);
        let latest = config_history_row(&state, &a, ConfigHistoryLookup::LatestOfConfig(id_a));
        assert_eq!(
            latest.map(|r| (r.id, r.content.to_string())),
            Ok((rows[1], "v1".to_string()))
        );
        assert_eq!(
            row(&a, ConfigHistoryLookup::LatestOfConfig(id_b)),
            Err(ConfigRowError::OtherConfig)
        );
        assert_eq!(
            row(&a, ConfigHistoryLookup::LatestOfConfig(999)),
            Err(ConfigRowError::NotFound)
        );
    }

    #[test]
    fn nacos3_pages_start_at_one_and_are_cut_to_500() {
        assert_eq!(
            Paging::at_least_one(2, 900).unwrap(),
            Paging {
                page_no: 2,
                page_size: 500
            }
        );
        assert_eq!(
            Paging::at_least_one(0, 10),
            Err(InvalidInput::Other("pageNo", "0".into()))
        );
        assert_eq!(
            Paging::at_least_one(1, -3),
            Err(InvalidInput::Other("pageSize", "-3".into()))
        );
    }
}
