//! Which version of a config a client sees: the one rule every read and
//! every listener uses (HTTP v1/v2/v3 reads, long polls, gRPC query, batch
//! listen and push).
//!
//! As Nacos 2.5+ (`GrayRuleMatchHandler`, `ConfigCacheService.getContentMd5`):
//! the first of the config's gray versions — highest priority first, then
//! by name — whose rule matches the client's labels (its IP for a `beta`
//! rule, its tag for a `tag` rule), else the formal config. A read that
//! names a tag explicitly (`tag=` on HTTP, the `tag` field of gRPC's
//! `ConfigQueryRequest`) and matches no gray finds nothing (Nacos'
//! `SpecialTagNotFoundHandler`): it never falls back to the formal version.

use std::sync::Arc;

use tacos_state::{ClientLabels, Config, ConfigKey, Gray, State};

/// The label a tag travels in: the `Vipserver-Tag` header of HTTP
/// requests (listener long polls, reads) and of gRPC batch listens, and,
/// with the `app_` prefix, a gRPC connection's setup labels.
pub const TAG_LABEL: &str = "Vipserver-Tag";

/// The setup label of a gRPC connection that carries its tag: Nacos keeps
/// only the `app_`-prefixed labels of a connection as its "app labels"
/// (`ConnectionMeta.getAppLabels`), and the tag rule looks up
/// `Vipserver-Tag` among them.
pub const CONNECTION_TAG_LABEL: &str = "app_Vipserver-Tag";

/// A client's labels from its IP and the tag it sent (blank: none).
pub fn labels(ip: &str, tag: Option<&str>) -> ClientLabels {
    ClientLabels {
        ip: ip.to_string(),
        tag: tag
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
    }
}

/// The version a client is served.
#[derive(Debug, Clone, Copy)]
pub enum Served<'a> {
    Formal(&'a Arc<Config>),
    Gray(&'a Arc<Gray>),
}

impl<'a> Served<'a> {
    pub fn content(&self) -> &'a str {
        match self {
            Served::Formal(c) => &c.content,
            Served::Gray(g) => &g.content,
        }
    }

    pub fn md5(&self) -> &'a str {
        match self {
            Served::Formal(c) => &c.md5,
            Served::Gray(g) => &g.md5,
        }
    }

    pub fn modify_time(&self) -> i64 {
        match self {
            Served::Formal(c) => c.modify_time,
            Served::Gray(g) => g.modify_time,
        }
    }

    /// Nacos' `encryptedDataKey` of the version served ("" for none).
    pub fn encrypted_data_key(&self) -> &'a str {
        match self {
            Served::Formal(c) => tacos_state::data_key_text(&c.encrypted_data_key),
            Served::Gray(g) => tacos_state::data_key_text(&g.encrypted_data_key),
        }
    }

    /// The gray served, if one is.
    pub fn gray(&self) -> Option<&'a Arc<Gray>> {
        match self {
            Served::Formal(_) => None,
            Served::Gray(g) => Some(g),
        }
    }
}

/// The gray version a client with `labels` matches, if any.
pub fn matching_gray<'a>(
    state: &'a State,
    key: &ConfigKey,
    labels: &ClientLabels,
) -> Option<&'a Arc<Gray>> {
    state.grays(key).iter().find(|g| g.serves(labels))
}

/// What a read by a client with `labels` answers. `explicit_tag`: the
/// request named its tag itself (not through a header or connection
/// label), so without a matching gray there is nothing to answer. Every
/// read counts in `tacos_config_reads_total`, a gray answer also in
/// `tacos_gray_reads_total{kind}` (reads only: listens compare md5s
/// through [`md5_for`]).
pub fn served<'a>(
    state: &'a State,
    key: &ConfigKey,
    labels: &ClientLabels,
    explicit_tag: bool,
) -> Option<Served<'a>> {
    let served = pick(state, key, labels, explicit_tag);
    // The handle is made once: the macro looks the series up on every call.
    static READS: std::sync::LazyLock<metrics::Counter> =
        std::sync::LazyLock::new(|| metrics::counter!("tacos_config_reads_total"));
    READS.increment(1);
    if let Some(Served::Gray(gray)) = &served {
        metrics::counter!("tacos_gray_reads_total", "kind" => gray.rule.kind()).increment(1);
    }
    served
}

/// The version a client with `labels` sees (see [`served`]).
fn pick<'a>(
    state: &'a State,
    key: &ConfigKey,
    labels: &ClientLabels,
    explicit_tag: bool,
) -> Option<Served<'a>> {
    if let Some(gray) = matching_gray(state, key, labels) {
        return Some(Served::Gray(gray));
    }
    if explicit_tag && labels.tag.is_some() {
        return None;
    }
    state.config(key).map(Served::Formal)
}

/// The md5 a listener with `labels` should hold for `key` ("" if there is
/// nothing for it).
pub fn md5_for<'a>(state: &'a State, key: &ConfigKey, labels: &ClientLabels) -> &'a str {
    KeyVersions::of(state, key).md5_for(labels)
}

/// A key's versions looked up once, for the md5s of many listeners (a
/// change fanned out to thousands of them): the same rule as [`md5_for`].
pub struct KeyVersions<'a> {
    grays: &'a [Arc<Gray>],
    formal: &'a str,
}

impl<'a> KeyVersions<'a> {
    pub fn of(state: &'a State, key: &ConfigKey) -> Self {
        KeyVersions {
            grays: state.grays(key),
            formal: match state.config(key) {
                Some(config) => &config.md5,
                None => "",
            },
        }
    }

    /// The md5 a listener with `labels` should hold.
    pub fn md5_for(&self, labels: &ClientLabels) -> &'a str {
        match self.grays.iter().find(|g| g.serves(labels)) {
            Some(gray) => &gray.md5,
            None => self.formal,
        }
    }
}
