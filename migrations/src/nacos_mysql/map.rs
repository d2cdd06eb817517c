//! Turns the rows of a Java Nacos database ([`Tables`]) into a [`Source`].
//!
//! * **Namespaces.** `tenant_info` rows with `kp = '1'` (the only kp Nacos writes and
//!   reads) become namespaces with their name, description and creation time. Tenant
//!   `''` is the public namespace; 3.x's copies of it under tenant `'public'`
//!   (namespace-compatibility mode, `src_user 'nacos_namespace_migrate'`) fold into it:
//!   a `'public'` config or gray whose key also exists under `''` is dropped (a
//!   different content is noted), a history row when `''` records the same change (op,
//!   time and content); the others move to `''`.
//! * **Configs** keep content, type (NULL: `text`), description, app name, tags
//!   (`config_tags_relation` by config id, sorted, as Nacos joins them), who wrote them
//!   and when, and `encrypted_data_key`: a config a client's encryption plugin
//!   encrypted (dataId `cipher-{alg}-...`) moves as ciphertext with its key, which
//!   Tacos returns as Nacos does, so the client decrypts it as before (grays and
//!   history rows likewise).
//! * **History** (`his_config_info`, formal rows only) keeps Nacos' own rows: nid (the
//!   id), op type, content, app name, user, IP and time. Nacos and Tacos agree on what a
//!   row holds (an `I` the new content, a `U` or `D` the content before), so rows move
//!   as they are. History of deleted configs moves too. 3.x `gray` history rows are not
//!   carried (noted).
//! * **Grays**: 2.x `config_info_beta` (IPs) and `config_info_tag` (tag), or 3.x
//!   `config_info_gray` rows whose `gray_rule` JSON has type `beta` or `tag` (read from
//!   the rule, not the name), become Tacos grays named `beta` / `tag_{tag}`.
//! * **Users** keep their BCrypt hash ([`Password::Bcrypt`]; Tacos verifies it at login
//!   and re-hashes with argon2id) and `enabled` (Java Nacos never reads it; 0 becomes a
//!   disabled user).
//! * **Roles and permissions.** `ROLE_ADMIN` makes an admin. Other roles become Tacos
//!   roles of the same name, bound to the same users, with their config permissions:
//!   a whole namespace `NS:*:*` or `NS:*:config/*` (`NS` `''` or `public` is the public
//!   namespace, `*` every namespace), a group `NS:GROUP:*`, or dataIds
//!   `NS:GROUP:config/DATAID`, group and dataId with `*` wildcards; actions `r`, `w`
//!   (write-only) and `rw`. Nacos matches resources as regular expressions (`*` made
//!   `.*`); Tacos takes every other character literally (a `.` matches only a `.`), so
//!   never more than Nacos allowed.
//!
//! What Tacos cannot hold stops the migration with [`MapError::Unsupported`], or with
//! `skip_bad` is left out and listed in [`Source::skipped`]: a gray of an unknown rule
//! type or of a config that does not exist, a permission on a namespace pattern or
//! whose resource is not one of the shapes above (in Nacos a dataId part without
//! `config/` matches no config).
//! Tables Tacos has nothing for (capacity quotas, aggregates) and naming permissions
//! become [`Source::notes`].

use std::collections::{BTreeMap, BTreeSet};

use tacos_state::{
    tag_gray_name, Access, GrayRule, OpType, Resource, ALL_NAMESPACES, BETA_GRAY, BETA_PRIORITY,
    TAG_PRIORITY,
};

use super::{ConfigRow, GrayRow, GraySource, HistoryRow, Tables};
use crate::source::{
    self, ConfigKey, Gray, Names, Namespace, Password, Role, Skipped, Source, User,
};

/// Nacos' global admin role.
pub const ADMIN_ROLE: &str = "ROLE_ADMIN";
/// The namespace id 3.x uses for the public namespace besides `''`.
const PUBLIC: &str = "public";

/// How to map.
#[derive(Debug, Clone, Default)]
pub struct MapOptions {
    /// Leave out (and list) what Tacos cannot hold instead of failing.
    pub skip_bad: bool,
    /// The time given to users (Nacos keeps none), seconds since the epoch.
    pub now_s: i64,
}

/// Why the rows cannot be migrated as they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// Something Tacos cannot hold (see the module docs); `--skip-bad` leaves it out.
    #[error("{what}: {reason} (--skip-bad leaves it out and lists it)")]
    Unsupported { what: String, reason: String },
}

/// A permission resource Tacos can hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Configs: a namespace (`""` public, `*` every one), group and dataId patterns.
    Config(Resource),
    /// Only naming (service) resources, which Tacos does not have.
    Naming,
}

/// Parses a Nacos permission resource; `Err(reason)` for one Tacos cannot hold.
pub fn parse_resource(resource: &str) -> Result<Scope, String> {
    const WHOLE: [&str; 2] = [":*:*", ":*:config/*"];
    if let Some(ns) = resource.strip_suffix(":*:naming/*") {
        return namespace(ns).map(|_| Scope::Naming);
    }
    // A whole namespace first: its id may hold a `:` (a legal tenant character).
    if let Some(ns) = WHOLE
        .iter()
        .find_map(|suffix| resource.strip_suffix(suffix))
    {
        return namespace(ns).map(|ns| Scope::Config(Resource::namespace(&ns)));
    }
    let (ns, _) = resource.split_once(':').unwrap_or((resource, ""));
    namespace(ns)?;
    tacos_app::auth::roles::parse_resource(resource)
        .map(Scope::Config)
        .map_err(|e| e.to_string())
}

/// A namespace id (`""` public, `*` every one); `Err` for a pattern.
fn namespace(ns: &str) -> Result<String, String> {
    if ns == "*" {
        return Ok(ALL_NAMESPACES.to_string());
    }
    const REGEX: &[char] = &[
        '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$', '\\',
    ];
    if ns.contains(REGEX) {
        return Err(format!(
            "its namespace {ns:?} is a pattern; Tacos grants access per namespace id"
        ));
    }
    Ok(if ns == PUBLIC {
        String::new()
    } else {
        ns.to_string()
    })
}

/// Parses a Nacos action; `Err(reason)` for one Tacos cannot hold.
pub fn parse_action(action: &str) -> Result<Access, String> {
    match action {
        "r" => Ok(Access::Read),
        "rw" => Ok(Access::ReadWrite),
        "w" => Ok(Access::Write),
        other => Err(format!("unknown action {other:?}")),
    }
}

/// Maps `tables` (see the module docs), their history included.
pub fn map(tables: &Tables, options: &MapOptions) -> Result<Source, MapError> {
    let mut history = History::new(options);
    for row in &tables.history {
        history.add(row.clone())?;
    }
    map_with(tables.clone(), history, options)
}

/// Maps `tables` with their history mapped row by row as it was read
/// ([`super::read_with`]); `tables.history` is not looked at. The configs' strings
/// move into the source rather than being copied.
pub fn map_with(
    mut tables: Tables,
    history: History,
    options: &MapOptions,
) -> Result<Source, MapError> {
    let mut m = Mapper {
        options,
        skipped: tables
            .skipped
            .iter()
            .map(|s| Skipped {
                what: format!("table `{}`, {}", s.table, s.row),
                reason: s.reason.clone(),
            })
            .collect(),
        notes: Vec::new(),
    };
    m.notes.push(format!(
        "read {} from database `{}` ({}; DATETIME columns read in time zone {})",
        tables.schema, tables.database, tables.server_version, tables.time_zone
    ));
    for n in &tables.not_read {
        m.notes.push(format!(
            "table `{}` ({} row(s)) is not carried over: {}",
            n.table, n.rows, n.reason
        ));
    }
    let namespaces = m.namespaces(&tables);
    let mut configs = m.configs(&mut tables)?;
    m.grays(&tables, &mut configs)?;
    let (history, deleted_history) = m.history(history, &configs);
    let (users, roles) = m.users(&tables)?;
    Ok(Source {
        configs: configs.into_values().collect(),
        history,
        deleted_history,
        users,
        roles,
        namespaces,
        skipped: m.skipped,
        notes: m.notes,
    })
}

/// `his_config_info` rows mapped one at a time as they are read, so that a large
/// history is never held twice (as read and as mapped): formal rows by config key, in
/// the order they came, which must be nid order (the reader's).
#[derive(Debug)]
pub struct History {
    skip_bad: bool,
    rows: BTreeMap<ConfigKey, Vec<source::HistoryRow>>,
    /// Rows under tenant `'public'`, by their key in `''`: whether the same change is
    /// also under `''` is known only once every row is in.
    public: Vec<(ConfigKey, source::HistoryRow)>,
    /// 3.x gray history rows, not carried.
    gray_rows: usize,
    skipped: Vec<Skipped>,
    /// The users and IPs of the rows, shared.
    names: Names,
}

impl History {
    pub fn new(options: &MapOptions) -> History {
        History {
            skip_bad: options.skip_bad,
            rows: BTreeMap::new(),
            public: Vec::new(),
            gray_rows: 0,
            skipped: Vec::new(),
            names: Names::default(),
        }
    }

    /// Maps the next row (in nid order).
    pub fn add(&mut self, row: HistoryRow) -> Result<(), MapError> {
        if row.publish_type.as_deref().is_some_and(|p| p != "formal") {
            self.gray_rows += 1;
            return Ok(());
        }
        let op = row.op_type.as_deref().unwrap_or_default();
        let Some(op) = OpType::from_code(op) else {
            let what = format!(
                "history row nid {} of {}",
                row.nid,
                key(&row.tenant, &row.group, &row.data_id)
            );
            let reason = format!("unknown op type {op:?} (Nacos writes I, U, D)");
            if self.skip_bad {
                self.skipped.push(Skipped { what, reason });
                return Ok(());
            }
            return Err(MapError::Unsupported { what, reason });
        };
        let public = row.tenant == PUBLIC;
        let folded = ConfigKey {
            tenant: if public { String::new() } else { row.tenant },
            group: row.group,
            data_id: row.data_id,
        };
        let mapped = source::HistoryRow {
            id: row.nid,
            content: row.content,
            last_time_ms: row.gmt_modified_ms,
            op_user: row.src_user.map(|user| self.names.get(&user)),
            op: Some(op),
            app_name: row.app_name.unwrap_or_default(),
            src_ip: row
                .src_ip
                .filter(|ip| !ip.is_empty())
                .map(|ip| self.names.get(&ip)),
            encrypted_data_key: row.encrypted_data_key,
        };
        if public {
            self.public.push((folded, mapped));
            return Ok(());
        }
        let list = self.rows.entry(folded).or_default();
        // Grown by an eighth, not doubled: with ten rows a config, doubling left six
        // empty slots in each list (about 90 MB at 100,000 configs).
        if list.len() == list.capacity() {
            list.reserve_exact(list.len() / 8 + 1);
        }
        list.push(mapped);
        Ok(())
    }
}

struct Mapper<'o> {
    options: &'o MapOptions,
    skipped: Vec<Skipped>,
    notes: Vec<String>,
}

fn key(tenant: &str, group: &str, data_id: &str) -> ConfigKey {
    ConfigKey {
        tenant: tenant.to_string(),
        group: group.to_string(),
        data_id: data_id.to_string(),
    }
}

impl Mapper<'_> {
    /// Records something Tacos cannot hold: an error, or with skip_bad a skipped entry.
    fn bad(&mut self, what: String, reason: String) -> Result<(), MapError> {
        if self.options.skip_bad {
            self.skipped.push(Skipped { what, reason });
            Ok(())
        } else {
            Err(MapError::Unsupported { what, reason })
        }
    }

    fn namespaces(&mut self, tables: &Tables) -> Vec<Namespace> {
        let mut out = Vec::new();
        for t in &tables.tenants {
            if t.kp != "1" {
                self.notes.push(format!(
                    "tenant_info row {} (tenant {:?}) has kp {:?}; Nacos lists only kp '1': \
                     not carried over",
                    t.id, t.tenant_id, t.kp
                ));
                continue;
            }
            if t.tenant_id.is_empty() || t.tenant_id == PUBLIC {
                // The public namespace exists in Tacos without a row.
                continue;
            }
            out.push(Namespace {
                id: t.tenant_id.clone(),
                name: t.tenant_name.clone().unwrap_or_default(),
                desc: t.tenant_desc.clone().unwrap_or_default(),
                create_time_ms: Some(t.gmt_create_ms),
            });
        }
        out
    }

    /// Live configs by key (with `'public'` folded into `''`). Takes the rows apart:
    /// their strings move into the configs.
    fn configs(
        &mut self,
        tables: &mut Tables,
    ) -> Result<BTreeMap<ConfigKey, source::Config>, MapError> {
        let mut tags: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for t in &tables.tags {
            tags.entry(t.config_id)
                .or_default()
                .push(t.tag_name.clone());
        }
        let mut out: BTreeMap<ConfigKey, source::Config> = BTreeMap::new();
        let mut unused_columns = BTreeSet::new();
        // '' rows first, then the 'public' copies (rare: set aside).
        let mut public_copies = Vec::new();
        for row in std::mem::take(&mut tables.configs) {
            if row.tenant == PUBLIC {
                public_copies.push(row);
            } else {
                self.config(row, &tags, &mut out, &mut unused_columns);
            }
        }
        for row in public_copies {
            self.config(row, &tags, &mut out, &mut unused_columns);
        }
        for column in unused_columns {
            self.notes.push(format!(
                "config_info.{column} is set on some configs; Nacos never reads it and Tacos \
                 has no place for it: not carried over"
            ));
        }
        Ok(out)
    }

    /// Adds one `config_info` row to `out`, unless its `''` twin is there.
    fn config(
        &mut self,
        row: ConfigRow,
        tags: &BTreeMap<i64, Vec<String>>,
        out: &mut BTreeMap<ConfigKey, source::Config>,
        unused_columns: &mut BTreeSet<&'static str>,
    ) {
        for (column, value) in [
            ("c_use", &row.c_use),
            ("effect", &row.effect),
            ("c_schema", &row.c_schema),
        ] {
            if value.as_deref().is_some_and(|v| !v.is_empty()) {
                unused_columns.insert(column);
            }
        }
        let tenant = if row.tenant == PUBLIC {
            ""
        } else {
            &row.tenant
        };
        let folded = key(tenant, &row.group, &row.data_id);
        if let Some(existing) = out.get(&folded) {
            if existing.content != row.content {
                let k = key(&row.tenant, &row.group, &row.data_id);
                self.notes.push(format!(
                    "config {k} differs from its public-namespace twin {folded} (Nacos 3 \
                     keeps the two in step); the '' one is carried over"
                ));
            }
            return;
        }
        let mut row_tags = tags.get(&row.id).cloned().unwrap_or_default();
        row_tags.sort();
        row_tags.dedup();
        let stored_md5 = row
            .md5
            .as_deref()
            .filter(|md5| !md5.eq_ignore_ascii_case(&tacos_core::md5_hex(&row.content)))
            .map(str::to_string);
        out.insert(
            folded.clone(),
            source::Config {
                tenant: folded.tenant.clone(),
                group: folded.group.clone(),
                data_id: folded.data_id.clone(),
                content: row.content,
                last_time_ms: row.gmt_modified_ms,
                create_time_ms: Some(row.gmt_create_ms),
                config_type: row.config_type.filter(|t| !t.is_empty()),
                desc: row.desc,
                app_name: row.app_name.unwrap_or_default(),
                tags: row_tags,
                src_user: row.src_user.unwrap_or_default(),
                src_ip: row.src_ip.unwrap_or_default(),
                // Ciphertext of a client's encryption plugin: carried with
                // its key, as Nacos serves it (see docs/security.md).
                encrypted_data_key: row.encrypted_data_key,
                grays: Vec::new(),
            },
        );
        if let Some(md5) = stored_md5 {
            self.notes.push(format!(
                "config {folded}: the stored md5 {md5} is not the md5 of its content; \
                 Tacos computes it anew"
            ));
        }
    }

    fn grays(
        &mut self,
        tables: &Tables,
        configs: &mut BTreeMap<ConfigKey, source::Config>,
    ) -> Result<(), MapError> {
        let (public_copies, rows): (Vec<&GrayRow>, Vec<&GrayRow>) =
            tables.grays.iter().partition(|g| g.tenant == PUBLIC);
        for row in rows.into_iter().chain(public_copies) {
            let k = key(&row.tenant, &row.group, &row.data_id);
            let what = || format!("gray row {} of {k} (table `{}`)", row.id, row.table());
            let (rule, priority, stored_name) = match &row.source {
                GraySource::Beta { beta_ips } => (
                    GrayRule::parse("beta", beta_ips.as_deref().unwrap_or_default()),
                    BETA_PRIORITY,
                    None,
                ),
                GraySource::Tag { tag_id } => (GrayRule::parse("tag", tag_id), TAG_PRIORITY, None),
                GraySource::Gray {
                    gray_name,
                    gray_rule,
                } => match parse_gray_rule(gray_rule) {
                    Ok((kind, expr, priority)) => (
                        GrayRule::parse(&kind, &expr),
                        priority.unwrap_or(if kind == "beta" {
                            BETA_PRIORITY
                        } else {
                            TAG_PRIORITY
                        }),
                        Some(gray_name.as_str()),
                    ),
                    Err(reason) => {
                        self.bad(what(), reason)?;
                        continue;
                    }
                },
            };
            let Some(rule) = rule else {
                self.bad(
                    what(),
                    "its rule type is neither beta nor tag; Tacos serves only those".to_string(),
                )?;
                continue;
            };
            let name = match &rule {
                GrayRule::Beta { .. } => BETA_GRAY.to_string(),
                GrayRule::Tag { tag } => tag_gray_name(tag),
            };
            if let Some(stored) = stored_name {
                if stored != name {
                    self.notes.push(format!(
                        "{} is named {stored:?}; Tacos names it {name:?} after its rule",
                        what()
                    ));
                }
            }
            let tenant = if row.tenant == PUBLIC {
                ""
            } else {
                &row.tenant
            };
            let folded = key(tenant, &row.group, &row.data_id);
            let Some(config) = configs.get_mut(&folded) else {
                self.bad(
                    what(),
                    "its config does not exist (Nacos serves no gray without one)".to_string(),
                )?;
                continue;
            };
            if let Some(existing) = config.grays.iter().find(|g| g.name == name) {
                if existing.content != row.content {
                    self.notes.push(format!(
                        "{} differs from its public-namespace twin; the '' one is carried over",
                        what()
                    ));
                }
                continue;
            }
            config.grays.push(Gray {
                name,
                rule,
                priority,
                content: row.content.clone(),
                md5: row
                    .md5
                    .clone()
                    .unwrap_or_else(|| tacos_core::md5_hex(&row.content)),
                app_name: row.app_name.clone().unwrap_or_default(),
                src_user: row.src_user.clone().unwrap_or_default(),
                src_ip: row.src_ip.clone().unwrap_or_default(),
                create_time_ms: row.gmt_create_ms,
                modify_time_ms: row.gmt_modified_ms,
                encrypted_data_key: row.encrypted_data_key.clone(),
            });
        }
        Ok(())
    }

    /// History of live configs (every live config has an entry) and of deleted ones,
    /// with the rows under tenant `'public'` folded into `''`.
    #[allow(clippy::type_complexity)]
    fn history(
        &mut self,
        history: History,
        configs: &BTreeMap<ConfigKey, source::Config>,
    ) -> (
        BTreeMap<ConfigKey, Vec<source::HistoryRow>>,
        BTreeMap<ConfigKey, Vec<source::HistoryRow>>,
    ) {
        let History {
            mut rows,
            public,
            gray_rows,
            skipped,
            ..
        } = history;
        self.skipped.extend(skipped);
        let public_twins = public.len();
        // 3.x writes none for its copies; if a Nacos did, the '' row of the same change
        // (same op, time and content) is the one kept. Decided before any moves in.
        let moved: Vec<(ConfigKey, source::HistoryRow)> = public
            .into_iter()
            .filter(|(key, row)| {
                !rows.get(key).is_some_and(|list| {
                    list.iter().any(|r| {
                        r.op == row.op
                            && r.last_time_ms == row.last_time_ms
                            && r.content == row.content
                    })
                })
            })
            .collect();
        let mut touched = BTreeSet::new();
        for (key, row) in moved {
            rows.entry(key.clone()).or_default().push(row);
            touched.insert(key);
        }
        for key in touched {
            if let Some(list) = rows.get_mut(&key) {
                list.sort_by_key(|r| r.id);
            }
        }
        let mut live: BTreeMap<ConfigKey, Vec<source::HistoryRow>> =
            configs.keys().map(|k| (k.clone(), Vec::new())).collect();
        let mut deleted: BTreeMap<ConfigKey, Vec<source::HistoryRow>> = BTreeMap::new();
        for (key, list) in rows {
            match live.get_mut(&key) {
                Some(slot) => *slot = list,
                None => {
                    deleted.insert(key, list);
                }
            }
        }
        if gray_rows > 0 {
            self.notes.push(format!(
                "{gray_rows} gray history row(s) of his_config_info (publish_type 'gray') are \
                 not carried over; the config history is"
            ));
        }
        if public_twins > 0 {
            self.notes.push(format!(
                "{public_twins} history row(s) under tenant 'public' were folded into the \
                 public namespace"
            ));
        }
        (live, deleted)
    }

    /// Users, and the named roles with their permissions.
    fn users(&mut self, tables: &Tables) -> Result<(Vec<User>, Vec<Role>), MapError> {
        let known: BTreeSet<&str> = tables.users.iter().map(|u| u.username.as_str()).collect();
        let mut roles: BTreeMap<&str, Role> = BTreeMap::new();
        let mut admins: BTreeSet<&str> = BTreeSet::new();
        for r in &tables.roles {
            if !known.contains(r.username.as_str()) {
                self.notes.push(format!(
                    "role {:?} is bound to {:?}, who is not a user: the binding is not \
                     carried over",
                    r.role, r.username
                ));
                continue;
            }
            if r.role == ADMIN_ROLE {
                admins.insert(&r.username);
                continue;
            }
            let role = roles.entry(&r.role).or_insert_with(|| Role {
                name: r.role.clone(),
                ..Role::default()
            });
            role.users.push(r.username.clone());
        }
        for p in &tables.permissions {
            let what = || {
                format!(
                    "permission ({:?}, {:?}, {:?})",
                    p.role, p.resource, p.action
                )
            };
            if p.role == ADMIN_ROLE {
                self.notes.push(format!(
                    "{} is not carried over: admins may do everything in Tacos",
                    what()
                ));
                continue;
            }
            let scope = match parse_resource(&p.resource) {
                Ok(Scope::Naming) => {
                    self.notes.push(format!(
                        "{} is about naming (services), which Tacos does not have: not \
                         carried over",
                        what()
                    ));
                    continue;
                }
                Ok(scope) => scope,
                Err(reason) => {
                    self.bad(what(), reason)?;
                    continue;
                }
            };
            let access = match parse_action(&p.action) {
                Ok(access) => access,
                Err(reason) => {
                    self.bad(what(), reason)?;
                    continue;
                }
            };
            let Scope::Config(resource) = scope else {
                continue;
            };
            let role = roles.entry(&p.role).or_insert_with(|| Role {
                name: p.role.clone(),
                ..Role::default()
            });
            // Nacos rows of one resource add up (`r` and `w` rows: `rw`).
            tacos_state::permission_add(&mut role.permissions, &resource, access);
        }
        let mut users: Vec<User> = tables
            .users
            .iter()
            .map(|u| User {
                username: u.username.clone(),
                password: Password::Bcrypt(u.password.clone()),
                nickname: String::new(),
                gmt_create: self.options.now_s,
                gmt_modified: self.options.now_s,
                enabled: u.enabled,
                // "0" (manager) is Tacos's admin; other rights come from the roles.
                roles: if admins.contains(u.username.as_str()) {
                    vec!["0".to_string()]
                } else {
                    Vec::new()
                },
                extend_info: BTreeMap::new(),
                namespace_privilege: None,
            })
            .collect();
        // By name as the model says (the database's collation may order otherwise).
        users.sort_by(|a, b| a.username.cmp(&b.username));
        let roles = roles
            .into_values()
            .map(|mut r| {
                r.users.sort();
                r.users.dedup();
                r
            })
            .collect();
        Ok((users, roles))
    }
}

/// `config_info_gray.gray_rule`: `{"type","version","expr","priority"}` (Nacos'
/// `ConfigGrayPersistInfo`) → (type, expr, priority).
pub fn parse_gray_rule(json: &str) -> Result<(String, String, Option<i32>), String> {
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("its gray_rule is not JSON ({e})"))?;
    let text = |field: &str| {
        value
            .get(field)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let kind = text("type").ok_or("its gray_rule has no \"type\"")?;
    let expr = text("expr").ok_or("its gray_rule has no \"expr\"")?;
    let priority = value
        .get("priority")
        .and_then(serde_json::Value::as_i64)
        .and_then(|p| i32::try_from(p).ok());
    Ok((kind, expr, priority))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nacos_mysql::{PermissionRow, RoleRow, Schema, TagRow, TenantRow, UserRow};

    fn config(id: i64, tenant: &str, data_id: &str, content: &str) -> ConfigRow {
        ConfigRow {
            id,
            tenant: tenant.into(),
            group: "G".into(),
            data_id: data_id.into(),
            content: content.into(),
            md5: Some(tacos_core::md5_hex(content)),
            config_type: Some("yaml".into()),
            desc: None,
            app_name: Some(String::new()),
            c_use: None,
            effect: None,
            c_schema: None,
            encrypted_data_key: String::new(),
            src_user: Some("nacos".into()),
            src_ip: Some("10.0.0.1".into()),
            gmt_create_ms: 1_000,
            gmt_modified_ms: 2_000,
        }
    }

    fn history(nid: u64, tenant: &str, data_id: &str, op: &str, content: &str) -> HistoryRow {
        HistoryRow {
            nid,
            id: 0,
            tenant: tenant.into(),
            group: "G".into(),
            data_id: data_id.into(),
            app_name: Some(String::new()),
            content: content.into(),
            md5: Some(tacos_core::md5_hex(content)),
            src_user: Some("nacos".into()),
            src_ip: Some("10.0.0.1".into()),
            op_type: Some(op.into()),
            encrypted_data_key: String::new(),
            publish_type: Some("formal".into()),
            gray_name: None,
            ext_info: None,
            gmt_create_ms: nid as i64,
            gmt_modified_ms: nid as i64,
        }
    }

    fn gray(id: i64, tenant: &str, rule: &str) -> GrayRow {
        GrayRow {
            id,
            source: GraySource::Gray {
                gray_name: "beta".into(),
                gray_rule: rule.into(),
            },
            tenant: tenant.into(),
            group: "G".into(),
            data_id: "a.yaml".into(),
            content: "beta".into(),
            md5: None,
            app_name: None,
            encrypted_data_key: String::new(),
            src_user: None,
            src_ip: None,
            gmt_create_ms: 1,
            gmt_modified_ms: 2,
        }
    }

    /// A 3.x database: a public config and its 'public' copy (gray too), a deleted
    /// config's history (with a 'public' copy of one row), an encrypted config (a
    /// client's encryption plugin), roles.
    fn tables() -> Tables {
        let beta = r#"{"type":"beta","version":"1.0.0","expr":"10.0.0.7","priority":2147483647}"#;
        let mut secret = config(4, "dev", "secret.yaml", "x");
        secret.encrypted_data_key = "k".into();
        Tables {
            schema: Schema::V3,
            server_version: "test".into(),
            database: "nacos".into(),
            time_zone: "+00:00".into(),
            configs: vec![
                config(1, "", "a.yaml", "a"),
                config(2, "public", "a.yaml", "a"),
                config(3, "public", "only-public.yaml", "p"),
                secret,
            ],
            history: vec![
                history(10, "", "a.yaml", "I", "a"),
                history(11, "", "gone.yaml", "I", "g"),
                // The same change as nid 11, copied under 'public'.
                HistoryRow {
                    gmt_create_ms: 11,
                    gmt_modified_ms: 11,
                    ..history(12, "public", "gone.yaml", "I", "g")
                },
                history(13, "", "gone.yaml", "D", "g"),
                history(14, "dev", "secret.yaml", "I", "x"),
            ],
            grays: vec![
                gray(1, "", beta),
                gray(2, "public", beta),
                gray(3, "", r#"{"type":"ip-range","expr":"x"}"#),
            ],
            tags: vec![TagRow {
                nid: 1,
                config_id: 1,
                tag_name: "t".into(),
                tag_type: None,
                tenant: String::new(),
                group: "G".into(),
                data_id: "a.yaml".into(),
            }],
            tenants: vec![TenantRow {
                id: 1,
                kp: "1".into(),
                tenant_id: "dev".into(),
                tenant_name: Some("Dev".into()),
                tenant_desc: Some("d".into()),
                create_source: Some("nacos".into()),
                gmt_create_ms: 5,
                gmt_modified_ms: 6,
            }],
            users: vec![
                UserRow {
                    username: "nacos".into(),
                    password: "$2a$10$x".into(),
                    enabled: true,
                },
                UserRow {
                    username: "alice".into(),
                    password: "$2a$10$y".into(),
                    enabled: false,
                },
            ],
            roles: vec![
                RoleRow {
                    username: "nacos".into(),
                    role: ADMIN_ROLE.into(),
                },
                RoleRow {
                    username: "alice".into(),
                    role: "devs".into(),
                },
            ],
            permissions: vec![
                PermissionRow {
                    role: "devs".into(),
                    resource: "dev:*:*".into(),
                    action: "r".into(),
                },
                PermissionRow {
                    role: "devs".into(),
                    resource: "dev:*:config/*".into(),
                    action: "rw".into(),
                },
                PermissionRow {
                    role: "devs".into(),
                    resource: ":*:*".into(),
                    action: "w".into(),
                },
                PermissionRow {
                    role: "devs".into(),
                    resource: "dev:G:config/app-*".into(),
                    action: "r".into(),
                },
                PermissionRow {
                    role: "devs".into(),
                    resource: "dev:G:app.yaml".into(),
                    action: "r".into(),
                },
            ],
            not_read: Vec::new(),
            skipped: Vec::new(),
        }
    }

    #[test]
    fn stops_on_what_tacos_cannot_hold_unless_skip_bad() {
        let err = map(&tables(), &MapOptions::default()).expect_err("unknown gray rule");
        assert!(err.to_string().contains("gray row 3"), "{err}");
        let source = map(
            &tables(),
            &MapOptions {
                skip_bad: true,
                now_s: 7,
            },
        )
        .expect("with skip_bad");
        let skipped: Vec<&str> = source.skipped.iter().map(|s| s.what.as_str()).collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(skipped[0].contains("gray row 3"));
        assert!(
            skipped[1].contains("dev:G:app.yaml"),
            "no config/: matches nothing"
        );

        // 'public' folds into '': one a.yaml (the '' row, with its tag), the
        // public-only config moved; one beta. The config a client's encryption
        // plugin encrypted moves with its key, and so does its history.
        let keys: Vec<String> = source.configs.iter().map(|c| c.key().to_string()).collect();
        assert_eq!(
            keys,
            [
                "(public)/G/a.yaml",
                "(public)/G/only-public.yaml",
                "dev/G/secret.yaml"
            ]
        );
        let secret = &source.configs[2];
        assert_eq!(secret.encrypted_data_key, "k");
        assert_eq!(source.history[&secret.key()].len(), 1);
        let a = &source.configs[0];
        assert_eq!(a.tags, ["t"]);
        assert_eq!(a.config_type.as_deref(), Some("yaml"));
        assert_eq!(a.create_time_ms, Some(1_000));
        assert_eq!(a.grays.len(), 1);
        assert_eq!(
            a.grays[0].rule,
            GrayRule::Beta {
                ips: vec!["10.0.0.7".into()]
            }
        );
        // The deleted config's history, its 'public' copy row dropped.
        assert_eq!(source.history[&a.key()].len(), 1);
        let gone: Vec<(u64, Option<OpType>)> = source
            .deleted_history
            .values()
            .flatten()
            .map(|r| (r.id, r.op))
            .collect();
        assert_eq!(
            gone,
            [(11, Some(OpType::Insert)), (13, Some(OpType::Delete))]
        );
        assert_eq!(source.deleted_history.len(), 1);

        // Users: nacos admin, alice disabled with role devs (r and rw on dev: rw; w
        // on public; r on some dataIds of group G of dev).
        let names: Vec<(&str, &[String], bool)> = source
            .users
            .iter()
            .map(|u| (u.username.as_str(), u.roles.as_slice(), u.enabled))
            .collect();
        assert_eq!(
            names,
            [
                ("alice", &[][..], false),
                ("nacos", &["0".to_string()][..], true)
            ]
        );
        assert!(matches!(source.users[0].password, Password::Bcrypt(_)));
        assert_eq!(source.roles.len(), 1);
        assert_eq!(source.roles[0].users, ["alice"]);
        assert_eq!(
            source.roles[0].permissions,
            [
                (Resource::namespace("dev"), Access::ReadWrite),
                (Resource::namespace(""), Access::Write),
                (Resource::new("dev", "G", "app-*"), Access::Read),
            ]
            .into()
        );
        assert_eq!(source.namespaces[0].desc, "d");
        assert_eq!(source.namespaces[0].create_time_ms, Some(5));
    }

    /// A 'public' copy may come before or after its '' row; a 'public' row with no
    /// twin moves to '' in nid order among the '' rows.
    #[test]
    fn public_history_rows_fold_whatever_their_order() {
        let mut t = tables();
        t.grays.truncate(2);
        t.permissions.truncate(4);
        t.history = vec![
            // A copy of nid 21 that comes first.
            HistoryRow {
                gmt_create_ms: 21,
                gmt_modified_ms: 21,
                ..history(20, "public", "a.yaml", "U", "a0")
            },
            history(21, "", "a.yaml", "U", "a0"),
            // Only under 'public': moves in between 21 and 23.
            history(22, "public", "a.yaml", "U", "a1"),
            history(23, "", "a.yaml", "U", "a2"),
            // Same op and time as nid 23 but another content: not a copy.
            HistoryRow {
                gmt_create_ms: 23,
                gmt_modified_ms: 23,
                ..history(24, "public", "a.yaml", "U", "other")
            },
        ];
        let source = map(&t, &MapOptions::default()).expect("maps");
        let rows: Vec<(u64, &str)> = source.history[&key("", "G", "a.yaml")]
            .iter()
            .map(|r| (r.id, r.content.as_str()))
            .collect();
        assert_eq!(rows, [(21, "a0"), (22, "a1"), (23, "a2"), (24, "other")]);
        assert!(
            source
                .notes
                .iter()
                .any(|n| n.starts_with("3 history row(s)")),
            "{:?}",
            source.notes
        );
    }

    #[test]
    fn resources_tacos_can_hold() {
        let config = |ns: &str, g: &str, d: &str| Ok(Scope::Config(Resource::new(ns, g, d)));
        assert_eq!(parse_resource("dev:*:*"), config("dev", "*", "*"));
        assert_eq!(parse_resource(":*:*"), config("", "*", "*"));
        assert_eq!(parse_resource("public:*:*"), config("", "*", "*"));
        assert_eq!(parse_resource("*:*:*"), config("*", "*", "*"));
        assert_eq!(
            parse_resource("a:b.c:*:config/*"),
            config("a:b.c", "*", "*")
        );
        assert_eq!(parse_resource("dev:*:naming/*"), Ok(Scope::Naming));
        assert_eq!(
            parse_resource("dev:DEFAULT_GROUP:config/app-*"),
            config("dev", "DEFAULT_GROUP", "app-*")
        );
        assert_eq!(
            parse_resource("dev:*:config/a.yaml"),
            config("dev", "*", "a.yaml")
        );
        assert_eq!(parse_resource("dev:G:*"), config("dev", "G", "*"));
        for bad in ["dev*:*:*", "d[e]v:*:*", "dev", "dev:G:a.yaml", "dev:G+:*"] {
            assert!(parse_resource(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_action("r"), Ok(Access::Read));
        assert_eq!(parse_action("rw"), Ok(Access::ReadWrite));
        assert_eq!(parse_action("w"), Ok(Access::Write));
    }

    #[test]
    fn gray_rules_are_read_from_the_json() {
        let (kind, expr, priority) = parse_gray_rule(
            r#"{"type":"beta","version":"1.0.0","expr":"1.2.3.4,5.6.7.8","priority":2147483647}"#,
        )
        .expect("beta");
        assert_eq!(
            (kind.as_str(), expr.as_str(), priority),
            ("beta", "1.2.3.4,5.6.7.8", Some(i32::MAX))
        );
        assert!(parse_gray_rule("not json").is_err());
        assert!(parse_gray_rule(r#"{"expr":"x"}"#).is_err());
    }
}
