//! Turns a [`Source`] (what a reader found) into the records of a Tacos snapshot.
//!
//! The records are those `tacos_state::State::snapshot_records` writes, in its order:
//! counters, namespaces, configs, grays, history (in id order: each config's rows oldest
//! first), users, roles. No auth key and no audit rows: when Tacos first starts on the
//! migrated data dir its leader initializes auth itself (draws the token key and creates
//! the first admin, `nacos` by default, only if no user of that name was migrated).
//!
//! Each record goes into the state (`SnapshotLoader`, as a node loads a snapshot) as soon
//! as it is made, and each history row's strings are freed once its record is in: the
//! records are never held as a list, and the source shrinks as the state grows. What the
//! final check needs of the source stays: every key, history id and content md5.
//!
//! # What becomes what
//!
//! * Tenant `""` is the public namespace, stored as namespace `""`. Tenant `"public"` is
//!   the same namespace to Tacos (clients may say either), so its configs move to `""` too.
//! * Each registered r-nacos namespace becomes a Tacos namespace (name = the r-nacos
//!   name, or the id when empty; created now). A tenant that holds configs but was never
//!   registered gets a namespace named after its id, so its configs stay reachable; those
//!   are listed in [`Report::created_namespaces`].
//! * Each live config becomes a config with id 1, 2, ... in key order, md5 = lowercase hex
//!   md5 of the UTF-8 content, the source's type (one Nacos knows, else `text`; `text`
//!   when it has none) and description, created at its oldest history row's time (its
//!   last change if it has none), modified at its last change. Where the source has
//!   them (Java Nacos) the config also keeps its app name, tags (comma-joined), author
//!   and creation time, and its grays (beta and tag versions) move with it.
//! * Its history rows keep their order, timestamps, contents and the user who wrote them.
//!   Rows with the source's own op type (Java Nacos, whose rows mean what Tacos's mean)
//!   keep it, with their app name and IP. Otherwise each row holds the content of that
//!   version, as r-nacos shows it (Tacos's own rows for updates hold the replaced content
//!   instead, as Nacos does); the first row becomes an insert (`I`), the others updates
//!   (`U`). The source's history ids are kept when they are unique and not 0 (r-nacos's
//!   and Nacos' are global and increasing); otherwise all rows are renumbered from 1,
//!   keeping the order ([`Report::history_renumbered`]). The history of deleted configs
//!   ([`Source::deleted_history`]) moves too, with its ids unless they clash.
//! * Users keep their name, enabled flag and times (seconds → ms). A plain password is
//!   hashed with argon2id, as Tacos hashes them; a BCrypt hash is kept as it is (Tacos
//!   verifies it at login and re-hashes the password then). Roles: `0` (manager) →
//!   admin; `1` (developer) → read-write on every namespace (`*`); `2` (visitor) → read on
//!   every namespace, or, for a user an r-nacos namespace privilege limits, on each
//!   allowed namespace that exists ([`UserLine::namespaces`]; an "all but" list becomes
//!   the namespaces of now, noted). With several roles the strongest wins; no role → a
//!   user without any access. Nicknames and `extend_info` have no place in Tacos and are
//!   dropped.
//! * Named roles ([`Source::roles`], Java Nacos) become Tacos roles bound to the migrated
//!   users, with their namespace permissions.
//!
//! # Entries Tacos cannot hold
//!
//! A config whose data id, group or tenant breaks Tacos's key rules (clients could not
//! reach it), a config in tenant `"public"` that collides with the same key in `""`, a
//! namespace id Tacos does not accept, a username Tacos does not accept, a user with a
//! role code that is not `0`, `1` or `2`, a password hash that is no BCrypt hash Tacos
//! can verify, a deleted config's history under a key Tacos does not accept and a role
//! named `ROLE_ADMIN` or not a valid name stop the conversion with
//! [`ConvertError::Unsupported`]. With [`ConvertOptions::skip_bad`] they are left out
//! (with the config's history) and listed in [`Report::skipped`] instead.

use std::collections::{BTreeMap, BTreeSet};

use tacos_app::auth::password::HashForm;
use tacos_core::command as cmd;
use tacos_core::snapshot as pb;
use tacos_core::{md5_hex, validate};
use tacos_state::{Access, ConfigKey, Record, SnapshotLoader, State, ALL_NAMESPACES};

use crate::source::{self, Password, Skipped, Source};

/// The namespace id clients may use for the public namespace.
const PUBLIC_ALIAS: &str = tacos_state::PUBLIC_NAMESPACE;
/// Tacos's default `--history-limit` (rows kept per config).
const TACOS_HISTORY_LIMIT: usize = 100;
/// The config type given to a config whose source has none (r-nacos 0.4), as Nacos does.
pub const CONFIG_TYPE: &str = "text";

/// How to convert.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Leave out what Tacos cannot hold (listed in [`Report::skipped`]) instead of failing
    /// with [`ConvertError::Unsupported`].
    pub skip_bad: bool,
    /// Hash the passwords (slow on purpose: argon2id). A dry run turns it off; the users
    /// then carry an empty hash and must not be written.
    pub hash_passwords: bool,
    /// The creation time given to namespaces (r-nacos keeps none), ms since the epoch.
    pub now_ms: i64,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            skip_bad: false,
            hash_passwords: true,
            now_ms: now_ms(),
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Told how the conversion advances: one step per config, per history row and per user
/// (see [`steps`]). Every method does nothing by default.
pub trait Progress {
    /// The conversion starts; it takes `total` steps.
    fn begin(&mut self, _total: u64) {}
    /// A new phase starts: `"configs"`, `"history"` or `"users"`.
    fn phase(&mut self, _name: &'static str) {}
    /// `n` more steps are done.
    fn advance(&mut self, _n: u64) {}
    /// The conversion is over (what follows, writing, prints to stdout).
    fn finish(&mut self) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// How many steps converting `source` takes (configs + history rows + users).
pub fn steps(source: &Source) -> u64 {
    (source.configs.len() + source.history_rows() + source.users.len()) as u64
}

/// What a user may do in Tacos, from their r-nacos roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Role `0` (manager).
    Admin,
    /// Role `1` (developer, [`Access::ReadWrite`]) or `2` (visitor, [`Access::Read`]) on
    /// every namespace.
    Everywhere(Access),
    /// No role: the user can log in but may do nothing.
    Nothing,
}

impl Grant {
    /// The grant for a list of r-nacos role codes; `Err(code)` names an unknown one.
    pub fn from_roles(roles: &[String]) -> Result<Grant, String> {
        let mut grant = Grant::Nothing;
        for role in roles {
            let this = match role.as_str() {
                "0" => Grant::Admin,
                "1" => Grant::Everywhere(Access::ReadWrite),
                "2" => Grant::Everywhere(Access::Read),
                other => return Err(other.to_string()),
            };
            grant = grant.max(this);
        }
        Ok(grant)
    }

    fn rank(self) -> u8 {
        match self {
            Grant::Nothing => 0,
            // r-nacos has no write-only role; ranked under read-write.
            Grant::Everywhere(Access::Read | Access::Write) => 1,
            Grant::Everywhere(Access::ReadWrite) => 2,
            Grant::Admin => 3,
        }
    }

    fn max(self, other: Grant) -> Grant {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// For the report: `admin`, `read-write on every namespace`, ...
    pub fn describe(self) -> &'static str {
        match self {
            Grant::Admin => "admin",
            Grant::Everywhere(Access::ReadWrite) => "read-write on every namespace",
            Grant::Everywhere(Access::Read) => "read on every namespace",
            Grant::Everywhere(Access::Write) => "write on every namespace",
            Grant::Nothing => "no access (no role)",
        }
    }
}

/// A namespace the migrated data dir holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceLine {
    pub id: String,
    pub name: String,
    /// Made for a tenant that held configs but was not registered in r-nacos.
    pub created: bool,
}

/// A user the migrated data dir holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLine {
    pub username: String,
    /// The r-nacos role codes.
    pub roles: Vec<String>,
    pub grant: Grant,
    pub enabled: bool,
    /// The password breaks Tacos's rule for new passwords (8 to 128 characters). It still
    /// works for logging in; it should be changed. Unknown (false) for a BCrypt hash.
    pub weak_password: bool,
    /// The source kept a BCrypt hash, carried as it is (re-hashed with argon2id at the
    /// user's first login); otherwise a plain password hashed with argon2id now.
    pub bcrypt: bool,
    /// The namespaces a developer or visitor was limited to (r-nacos namespace
    /// privileges), as Tacos namespace ids; `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
}

/// A named role the migrated data dir holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleLine {
    pub name: String,
    pub users: Vec<String>,
    /// Resource (namespace `""` public, `"*"` every namespace; group and
    /// dataId patterns) → access.
    pub permissions: tacos_state::Permissions,
}

/// What the conversion carried over, and what not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every namespace but the public one, by id.
    pub namespaces: Vec<NamespaceLine>,
    /// Ids of the namespaces created for unregistered tenants.
    pub created_namespaces: Vec<String>,
    pub configs: usize,
    pub history_rows: usize,
    /// Per namespace id (`""` = public): (configs, history rows).
    pub per_namespace: BTreeMap<String, (usize, usize)>,
    /// The history ids were not usable as they were and were renumbered.
    pub history_renumbered: bool,
    /// Gray (beta and tag) versions carried over.
    pub grays: usize,
    /// Of `history_rows`, the rows of configs that no longer exist.
    pub deleted_history: usize,
    /// Users, by name.
    pub users: Vec<UserLine>,
    /// Named roles (Java Nacos), by name.
    pub roles: Vec<RoleLine>,
    /// What was read but not carried over, and why (the reader's and the conversion's).
    pub skipped: Vec<Skipped>,
    /// Things carried over that deserve a look.
    pub notes: Vec<String>,
    /// Configs whose md5 was compared (source content vs. the converted state).
    pub md5_checked: usize,
    /// Of those, how many matched (all of them, or the conversion fails).
    pub md5_matched: usize,
}

/// The result of a conversion.
#[derive(Debug, Clone)]
pub struct Converted {
    /// What the migrated node will hold: the records of a snapshot, loaded one at a
    /// time as they were made (never held as a list: 100,000 configs x 10 history
    /// rows held as records took a gigabyte). Its own `snapshot_records` are what is
    /// written.
    pub state: State,
    pub report: Report,
}

/// Why converting failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// An entry Tacos cannot hold (see [`ConvertOptions::skip_bad`]).
    #[error("{what}: {reason} (--skip-bad leaves such entries out and lists them)")]
    Unsupported { what: String, reason: String },
    /// A password could not be hashed.
    #[error("cannot hash the password of user {username:?}: {reason}")]
    Hash { username: String, reason: String },
    /// The converted state does not hold what the source holds (a bug in this tool).
    #[error("the converted data is not consistent: {0}")]
    Inconsistent(String),
    /// Some configs' md5 differ between the source and the converted state.
    #[error("md5 check failed for {} of {checked} configs: {}", mismatched.len(), mismatched.join(", "))]
    Md5Mismatch {
        checked: usize,
        mismatched: Vec<String>,
    },
}

/// Converts `source` (see the module docs). The source is taken apart as it is
/// converted: each history row's strings are freed once its record is in the state,
/// so the two are not held whole together.
pub fn convert(
    source: Source,
    options: &ConvertOptions,
    progress: &mut dyn Progress,
) -> Result<Converted, ConvertError> {
    Ok(convert_keeping(source, options, progress, false)?.0)
}

/// [`convert`]; with `keep`, also every record in the order it was loaded (tests).
fn convert_keeping(
    source: Source,
    options: &ConvertOptions,
    progress: &mut dyn Progress,
    keep: bool,
) -> Result<(Converted, Vec<Vec<u8>>), ConvertError> {
    progress.begin(steps(&source));
    Converter {
        options,
        skipped: source.skipped.clone(),
        notes: source.notes.clone(),
        loader: SnapshotLoader::default(),
        kept: keep.then(Vec::new),
    }
    .run(source, progress)
}

/// A config on its way: the source config and its history rows (ids still the
/// source's). Its content and rows are taken out as their records are made; their
/// md5s stay for the final check.
struct Pending {
    source: source::Config,
    rows: Vec<source::HistoryRow>,
    /// The md5 of the source content (set when its record is made).
    md5: Option<md5::Digest>,
    /// The md5 of each row's content (set as their records are made).
    row_md5s: Vec<md5::Digest>,
}

impl Pending {
    fn new(source: source::Config, rows: Vec<source::HistoryRow>) -> Pending {
        Pending {
            source,
            row_md5s: vec![md5::Digest([0; 16]); rows.len()],
            rows,
            md5: None,
        }
    }
}

/// The history of a deleted config on its way, as [`Pending`] rows.
struct DeletedRows {
    key: ConfigKey,
    /// The rows' Tacos ids.
    ids: Vec<u64>,
    rows: Vec<source::HistoryRow>,
    row_md5s: Vec<md5::Digest>,
}

struct Converter<'o> {
    options: &'o ConvertOptions,
    skipped: Vec<Skipped>,
    notes: Vec<String>,
    /// Every record goes straight into the state (never held as a list).
    loader: SnapshotLoader,
    /// Every record as loaded, when asked to keep them (tests).
    kept: Option<Vec<Vec<u8>>>,
}

impl Converter<'_> {
    /// Leaves an entry out, or fails if bad entries are not to be skipped.
    fn bad(&mut self, what: String, reason: String) -> Result<(), ConvertError> {
        if self.options.skip_bad {
            self.skipped.push(Skipped { what, reason });
            Ok(())
        } else {
            Err(ConvertError::Unsupported { what, reason })
        }
    }

    /// Loads one record into the state (and keeps it, when asked).
    fn emit(&mut self, record: Record) -> Result<(), ConvertError> {
        let bytes = record.encode();
        self.loader
            .load(&bytes)
            .map_err(|e| ConvertError::Inconsistent(format!("a record does not load: {e}")))?;
        if let Some(kept) = &mut self.kept {
            kept.push(bytes);
        }
        Ok(())
    }

    fn run(
        mut self,
        mut source: Source,
        progress: &mut dyn Progress,
    ) -> Result<(Converted, Vec<Vec<u8>>), ConvertError> {
        let mut namespaces = self.namespaces(&source)?;
        progress.phase("configs");
        let source_configs = std::mem::take(&mut source.configs);
        let source_history = std::mem::take(&mut source.history);
        let registered: BTreeSet<String> = source.namespaces.iter().map(|n| n.id.clone()).collect();
        let mut configs = self.configs(
            source_configs,
            source_history,
            &registered,
            &mut namespaces,
            progress,
        )?;
        let created_namespaces: Vec<String> = namespaces
            .values()
            .filter(|n| n.created)
            .map(|n| n.id.clone())
            .collect();

        progress.phase("history");
        let ids = self.history_ids(&configs);
        let history_renumbered = ids.renumbered;
        let source_deleted = std::mem::take(&mut source.deleted_history);
        let mut deleted = self.deleted_history(source_deleted, &ids, progress)?;
        let max_history_id = ids
            .ids
            .iter()
            .flatten()
            .chain(deleted.iter().flat_map(|d| &d.ids))
            .copied()
            .max()
            .unwrap_or(0);

        // In the order the state writes its records: counters, namespaces, configs,
        // grays, history (by id), users, roles.
        self.emit(Record::Counters(pb::CountersRecord {
            next_config_id: configs.len() as u64,
            next_history_id: max_history_id,
            next_audit_id: 0,
        }))?;
        let namespace_records: Vec<Record> = namespaces
            .values()
            .map(|n| {
                Record::Namespace(pb::NamespaceRecord {
                    id: n.id.clone(),
                    name: n.name.clone(),
                    desc: n.desc.clone(),
                    create_time: n.create_time_ms.unwrap_or(self.options.now_ms),
                })
            })
            .collect();
        for record in namespace_records {
            self.emit(record)?;
        }

        let mut per_namespace: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let mut gray_records = Vec::new();
        for (n, (key, pending)) in configs.iter_mut().enumerate() {
            self.config_notes(key, pending);
            let config = &mut pending.source;
            let pb_key = cmd::ConfigKey::from(&*key);
            let create_time = config.create_time_ms.unwrap_or_else(|| {
                pending
                    .rows
                    .first()
                    .map_or(config.last_time_ms, |r| r.last_time_ms)
            });
            let config_type = config
                .config_type
                .as_deref()
                .map_or(CONFIG_TYPE, validate::config_type)
                .to_string();
            let content = std::mem::take(&mut config.content);
            let md5 = md5::compute(content.as_bytes());
            pending.md5 = Some(md5);
            self.emit(Record::Config(pb::ConfigRecord {
                key: Some(pb_key.clone()),
                id: n as u64 + 1,
                content,
                md5: format!("{md5:x}"),
                config_type: config_type.clone(),
                desc: config.desc.clone().unwrap_or_default(),
                app_name: config.app_name.clone(),
                tags: config.tags.join(","),
                create_time,
                modify_time: config.last_time_ms,
                src_user: config.src_user.clone(),
                src_ip: config.src_ip.clone(),
                encrypted_data_key: config.encrypted_data_key.clone(),
            }))?;
            // In the order the state keeps a config's grays.
            let mut grays: Vec<&source::Gray> = config.grays.iter().collect();
            grays.sort_by(|a, b| {
                (std::cmp::Reverse(a.priority), &a.name)
                    .cmp(&(std::cmp::Reverse(b.priority), &b.name))
            });
            for gray in grays {
                gray_records.push(Record::Gray(pb::GrayRecord {
                    key: Some(pb_key.clone()),
                    name: gray.name.clone(),
                    rule: Some(cmd::GrayRule {
                        r#type: gray.rule.kind().to_string(),
                        version: tacos_state::GRAY_RULE_VERSION.to_string(),
                        expr: gray.rule.expr(),
                        priority: gray.priority,
                    }),
                    content: gray.content.clone(),
                    md5: md5_hex(&gray.content),
                    config_type: config_type.clone(),
                    app_name: gray.app_name.clone(),
                    src_user: gray.src_user.clone(),
                    src_ip: gray.src_ip.clone(),
                    create_time: gray.create_time_ms,
                    modify_time: gray.modify_time_ms,
                    encrypted_data_key: gray.encrypted_data_key.clone(),
                }));
            }
            let entry = per_namespace.entry(key.namespace.clone()).or_default();
            entry.0 += 1;
            entry.1 += pending.rows.len();
            // Only its grays are checked from here on.
            pending.source = source::Config {
                grays: std::mem::take(&mut pending.source.grays),
                ..source::Config::default()
            };
        }
        let gray_count = gray_records.len();
        for record in gray_records {
            self.emit(record)?;
        }

        let long = configs
            .iter()
            .filter(|(_, p)| p.rows.len() > TACOS_HISTORY_LIMIT)
            .count();
        if long > 0 {
            self.notes.push(format!(
                "{long} config(s) have more than {TACOS_HISTORY_LIMIT} history rows (Tacos's \
                 default --history-limit): all are kept; Tacos drops the oldest rows beyond \
                 its limit at the config's next change"
            ));
        }
        for d in &deleted {
            per_namespace.entry(d.key.namespace.clone()).or_default().1 += d.ids.len();
        }

        // Every row by id, as the state lists them: (id, owner, row), the owner a live
        // config's index, or the configs' count plus a deleted key's index. Each
        // config's ids increase with its rows' order, so its rows stay oldest first.
        let mut order: Vec<(u64, u32, u32)> = Vec::new();
        for (c, row_ids) in ids.ids.iter().enumerate() {
            order.extend(
                row_ids
                    .iter()
                    .enumerate()
                    .map(|(r, &id)| (id, c as u32, r as u32)),
            );
        }
        for (d, rows) in deleted.iter().enumerate() {
            let owner = (configs.len() + d) as u32;
            order.extend(
                rows.ids
                    .iter()
                    .enumerate()
                    .map(|(r, &id)| (id, owner, r as u32)),
            );
        }
        order.sort_unstable();
        let history_rows = order.len();
        for &(id, owner, r) in &order {
            let (owner, r) = (owner as usize, r as usize);
            let (key, row, last_id, md5_slot) = if owner < configs.len() {
                let (key, pending) = &mut configs[owner];
                let last_id = if r == 0 { 0 } else { ids.ids[owner][r - 1] };
                (
                    &*key,
                    std::mem::take(&mut pending.rows[r]),
                    last_id,
                    &mut pending.row_md5s[r],
                )
            } else {
                let d = &mut deleted[owner - configs.len()];
                let last_id = if r == 0 { 0 } else { d.ids[r - 1] };
                (
                    &d.key,
                    std::mem::take(&mut d.rows[r]),
                    last_id,
                    &mut d.row_md5s[r],
                )
            };
            let op = history_op(&row, r);
            let md5 = md5::compute(row.content.as_bytes());
            *md5_slot = md5;
            let record = Record::History(pb::HistoryRecord {
                id,
                key: Some(cmd::ConfigKey::from(key)),
                content: row.content,
                md5: format!("{md5:x}"),
                app_name: row.app_name,
                src_user: row.op_user.as_deref().unwrap_or_default().to_string(),
                src_ip: row.src_ip.as_deref().unwrap_or_default().to_string(),
                op_type: op.to_string(),
                created_time: row.last_time_ms,
                last_modified_time: row.last_time_ms,
                last_id,
                // Every row is formal (gray history is not carried).
                publish_type: String::new(),
                gray_name: String::new(),
                encrypted_data_key: row.encrypted_data_key,
            });
            self.emit(record)?;
            progress.advance(1);
        }
        // The rows' strings went into the state; their husks go now.
        for (_, pending) in &mut configs {
            pending.rows = Vec::new();
        }
        for d in &mut deleted {
            d.rows = Vec::new();
        }

        progress.phase("users");
        let namespace_ids: Vec<String> = std::iter::once(String::new())
            .chain(namespaces.keys().cloned())
            .collect();
        let (user_records, users) = self.users(&source, &namespace_ids, progress)?;
        let (role_records, roles) = self.roles(&source, &users)?;
        for record in user_records.into_iter().chain(role_records) {
            self.emit(record)?;
        }

        let loader = std::mem::take(&mut self.loader);
        let state = loader.finish();
        let converted = Rows {
            configs: &configs,
            ids: &ids,
            deleted: &deleted,
            order: &order,
        };
        let (md5_checked, md5_matched) = check(&state, &converted, &namespaces, &users)?;
        check_extra(&state, &configs, &deleted, &roles)?;

        let report = Report {
            namespaces: namespaces
                .values()
                .map(|n| NamespaceLine {
                    id: n.id.clone(),
                    name: n.name.clone(),
                    created: n.created,
                })
                .collect(),
            created_namespaces,
            configs: configs.len(),
            history_rows,
            per_namespace,
            history_renumbered,
            grays: gray_count,
            deleted_history: deleted.iter().map(|d| d.ids.len()).sum(),
            users,
            roles,
            skipped: self.skipped,
            notes: self.notes,
            md5_checked,
            md5_matched,
        };
        Ok((Converted { state, report }, self.kept.unwrap_or_default()))
    }

    /// The registered namespaces Tacos can hold, by id.
    fn namespaces(
        &mut self,
        source: &Source,
    ) -> Result<BTreeMap<String, NewNamespace>, ConvertError> {
        let mut out = BTreeMap::new();
        for ns in &source.namespaces {
            if ns.id == PUBLIC_ALIAS {
                self.skipped.push(Skipped {
                    what: format!("namespace {:?} ({:?})", ns.id, ns.name),
                    reason: "Tacos's public namespace is implicit; configs of tenant \
                             \"public\" move to it"
                        .to_string(),
                });
                continue;
            }
            if let Err(e) = validate::namespace(&ns.id) {
                self.bad(
                    format!("namespace {:?} ({:?})", ns.id, ns.name),
                    format!("Tacos does not accept this namespace id ({e}); its configs are left out too"),
                )?;
                continue;
            }
            let name = if ns.name.is_empty() {
                ns.id.clone()
            } else {
                ns.name.clone()
            };
            out.insert(
                ns.id.clone(),
                NewNamespace {
                    id: ns.id.clone(),
                    name,
                    desc: ns.desc.clone(),
                    create_time_ms: ns.create_time_ms,
                    created: false,
                },
            );
        }
        Ok(out)
    }

    /// The configs Tacos can hold, by their Tacos key; creates namespaces for
    /// unregistered tenants.
    fn configs(
        &mut self,
        source_configs: Vec<source::Config>,
        mut history: BTreeMap<source::ConfigKey, Vec<source::HistoryRow>>,
        registered: &BTreeSet<String>,
        namespaces: &mut BTreeMap<String, NewNamespace>,
        progress: &mut dyn Progress,
    ) -> Result<Vec<(ConfigKey, Pending)>, ConvertError> {
        let mut out: BTreeMap<ConfigKey, Pending> = BTreeMap::new();
        for config in source_configs {
            progress.advance(1);
            let source_key = config.key();
            let rows = history.remove(&source_key).unwrap_or_default();
            let what = || {
                format!(
                    "config {source_key} (and its {} history row{})",
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" }
                )
            };
            let checked = validate::data_id(&config.data_id)
                .and_then(|()| validate::group(&config.group))
                .and_then(|()| validate::namespace(&config.tenant));
            if let Err(e) = checked {
                self.bad(
                    what(),
                    format!("Tacos does not accept this key ({e}); clients could not reach it"),
                )?;
                continue;
            }
            let key = ConfigKey::new(&config.tenant, &config.group, &config.data_id);
            if out.contains_key(&key) {
                self.bad(
                    what(),
                    format!(
                        "tenant \"public\" is the public namespace in Tacos, which already \
                         holds {}/{}",
                        key.group, key.data_id
                    ),
                )?;
                continue;
            }
            if !key.namespace.is_empty() && !namespaces.contains_key(&key.namespace) {
                if registered.contains(key.namespace.as_str()) {
                    // Its namespace entry was left out (skipped above): so is the config.
                    self.skipped.push(Skipped {
                        what: what(),
                        reason: format!("its namespace {:?} was left out", key.namespace),
                    });
                    continue;
                }
                namespaces.insert(
                    key.namespace.clone(),
                    NewNamespace {
                        id: key.namespace.clone(),
                        name: key.namespace.clone(),
                        desc: String::new(),
                        create_time_ms: None,
                        created: true,
                    },
                );
            }
            out.insert(key, Pending::new(config, rows));
        }
        Ok(out.into_iter().collect())
    }

    /// History ids per config (in the order of `configs`): r-nacos's if usable.
    fn history_ids(&mut self, configs: &[(ConfigKey, Pending)]) -> HistoryIds {
        let original: Vec<Vec<u64>> = configs
            .iter()
            .map(|(_, p)| p.rows.iter().map(|r| r.id).collect())
            .collect();
        let mut seen = BTreeSet::new();
        let usable = original.iter().all(|ids| {
            ids.windows(2).all(|w| w[0] < w[1]) && ids.iter().all(|&id| id != 0 && seen.insert(id))
        });
        if usable {
            return HistoryIds {
                ids: original,
                renumbered: false,
            };
        }
        // Renumber from 1 in (old id, config, row) order: each config's rows keep their
        // order, since the reader sorted them by id.
        let mut all: Vec<(u64, usize, usize)> = original
            .iter()
            .enumerate()
            .flat_map(|(c, ids)| ids.iter().enumerate().map(move |(r, &id)| (id, c, r)))
            .collect();
        all.sort();
        let mut ids: Vec<Vec<u64>> = original.iter().map(|r| vec![0; r.len()]).collect();
        for (new, (_, c, r)) in all.into_iter().enumerate() {
            ids[c][r] = new as u64 + 1;
        }
        self.notes.push(
            "r-nacos's history ids were not unique (or 0); all history rows were renumbered \
             from 1, keeping their order"
                .to_string(),
        );
        HistoryIds {
            ids,
            renumbered: true,
        }
    }

    fn config_notes(&mut self, key: &ConfigKey, pending: &Pending) {
        let name = || {
            source::ConfigKey {
                tenant: key.namespace.clone(),
                group: key.group.clone(),
                data_id: key.data_id.clone(),
            }
            .to_string()
        };
        if pending.source.tenant == PUBLIC_ALIAS {
            self.notes.push(format!(
                "config {} was in tenant \"public\": it is in Tacos's public namespace (\"\")",
                name()
            ));
        }
        match pending.rows.last() {
            None => self.notes.push(format!(
                "config {} has no history in the source (none is made up)",
                name()
            )),
            // Op-typed rows (Nacos) hold the content before an update: no match expected.
            Some(newest) if newest.op.is_none() && newest.content != pending.source.content => {
                self.notes.push(format!(
                    "config {}: its newest history row differs from its current content \
                     (both carried over as they are)",
                    name()
                ))
            }
            Some(_) => {}
        }
    }

    fn users(
        &mut self,
        source: &Source,
        namespace_ids: &[String],
        progress: &mut dyn Progress,
    ) -> Result<(Vec<Record>, Vec<UserLine>), ConvertError> {
        let mut records = Vec::new();
        let mut lines = Vec::new();
        // In name order, as the state writes them.
        let mut users: Vec<&source::User> = source.users.iter().collect();
        users.sort_by(|a, b| a.username.cmp(&b.username));
        for user in users {
            progress.advance(1);
            let what = || format!("user {:?}", user.username);
            if let Err(e) = tacos_app::auth::check_username(&user.username) {
                self.bad(what(), format!("Tacos does not accept this username: {e}"))?;
                continue;
            }
            let grant = match Grant::from_roles(&user.roles) {
                Ok(grant) => grant,
                Err(code) => {
                    self.bad(
                        what(),
                        format!(
                            "unknown r-nacos role {code:?} (known: 0 manager, 1 developer, \
                             2 visitor)"
                        ),
                    )?;
                    continue;
                }
            };
            let (password_hash, weak_password, bcrypt) = match &user.password {
                Password::Plain(plain) => {
                    let hash = if self.options.hash_passwords {
                        tacos_app::auth::password::hash(plain).map_err(|e| ConvertError::Hash {
                            username: user.username.clone(),
                            reason: e.to_string(),
                        })?
                    } else {
                        String::new()
                    };
                    let weak = tacos_app::auth::password::check_new(plain).is_err();
                    (hash, weak, false)
                }
                Password::Bcrypt(hash) => {
                    if tacos_app::auth::password::form(hash) != HashForm::Bcrypt {
                        self.bad(
                            what(),
                            "its password hash is not a BCrypt hash Tacos can verify \
                             ($2a$, $2b$ or $2y$, cost 4 to 31)"
                                .to_string(),
                        )?;
                        continue;
                    }
                    (hash.clone(), false, true)
                }
            };
            let limited = match (&grant, &user.namespace_privilege) {
                (Grant::Everywhere(_), Some(privilege)) if !privilege.is_all() => {
                    Some(self.allowed_namespaces(&user.username, privilege, namespace_ids))
                }
                (Grant::Admin, Some(privilege)) if !privilege.is_all() => {
                    self.notes.push(format!(
                        "user {:?} is a manager, an admin in Tacos: its r-nacos namespace \
                         limits do not apply to an admin",
                        user.username
                    ));
                    None
                }
                _ => None,
            };
            let permissions = match (grant, &limited) {
                (Grant::Everywhere(access), None) => vec![pb::PermissionRecord {
                    namespace: ALL_NAMESPACES.to_string(),
                    access: access.to_pb() as i32,
                    group: "*".to_string(),
                    data_id: "*".to_string(),
                }],
                (Grant::Everywhere(access), Some(list)) => list
                    .iter()
                    .map(|namespace| pb::PermissionRecord {
                        namespace: namespace.clone(),
                        access: access.to_pb() as i32,
                        group: "*".to_string(),
                        data_id: "*".to_string(),
                    })
                    .collect(),
                (Grant::Admin | Grant::Nothing, _) => Vec::new(),
            };
            records.push(Record::User(pb::UserRecord {
                username: user.username.clone(),
                password_hash,
                admin: grant == Grant::Admin,
                disabled: !user.enabled,
                create_time: user.gmt_create.saturating_mul(1000),
                modify_time: user.gmt_modified.saturating_mul(1000),
                generation: 0,
                permissions,
            }));
            lines.push(UserLine {
                username: user.username.clone(),
                roles: user.roles.clone(),
                grant,
                enabled: user.enabled,
                weak_password,
                bcrypt,
                namespaces: limited,
            });
        }
        Ok((records, lines))
    }
}

impl Converter<'_> {
    /// The namespaces (of `existing`, sorted, `""` = public) an r-nacos namespace
    /// privilege allows. Tacos grants per namespace and has no "all but": a privilege of
    /// every namespace but some is granted on the namespaces that exist now (noted).
    fn allowed_namespaces(
        &mut self,
        username: &str,
        privilege: &source::NamespacePrivilege,
        existing: &[String],
    ) -> Vec<String> {
        let mut allowed: Vec<String> = existing
            .iter()
            .filter(|id| privilege.allows(id))
            .cloned()
            .collect();
        allowed.sort();
        if privilege.whitelist_is_all {
            self.notes.push(format!(
                "user {username:?} could see every namespace but {}: Tacos cannot say \
                 \"all but\", so it is granted the {} namespace(s) that exist now; grant it \
                 namespaces created later by hand",
                if privilege.blacklist_is_all {
                    "none".to_string()
                } else {
                    privilege.blacklist.join(", ")
                },
                allowed.len()
            ));
        }
        let unknown: Vec<&str> = privilege
            .whitelist
            .iter()
            .map(String::as_str)
            .filter(|id| *id != PUBLIC_ALIAS && !existing.iter().any(|e| e == id))
            .collect();
        if !unknown.is_empty() {
            self.notes.push(format!(
                "user {username:?} was allowed namespace(s) that do not exist: {} (not granted)",
                unknown.join(", ")
            ));
        }
        allowed
    }
}

struct NewNamespace {
    id: String,
    name: String,
    desc: String,
    create_time_ms: Option<i64>,
    created: bool,
}

struct HistoryIds {
    /// Per config (in key order), per row.
    ids: Vec<Vec<u64>>,
    renumbered: bool,
}

/// The op type Tacos records for the `i`th row of a config: the source's own (Nacos'
/// meaning is Tacos's), else an insert first and updates after.
fn history_op(row: &source::HistoryRow, i: usize) -> &'static str {
    match row.op {
        Some(op) => op.code(),
        None if i == 0 => "I",
        None => "U",
    }
}

impl Converter<'_> {
    /// The history of deleted configs Tacos can hold. Ids are the source's when they do
    /// not clash with the live configs' (and are not 0), else numbered after them.
    fn deleted_history(
        &mut self,
        source_deleted: BTreeMap<source::ConfigKey, Vec<source::HistoryRow>>,
        live: &HistoryIds,
        progress: &mut dyn Progress,
    ) -> Result<Vec<DeletedRows>, ConvertError> {
        let mut used: BTreeSet<u64> = live.ids.iter().flatten().copied().collect();
        let mut kept: Vec<(ConfigKey, Vec<source::HistoryRow>)> = Vec::new();
        for (source_key, rows) in source_deleted {
            progress.advance(rows.len() as u64);
            let what = || {
                format!(
                    "history of deleted config {source_key} ({} row{})",
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" }
                )
            };
            let checked = validate::data_id(&source_key.data_id)
                .and_then(|()| validate::group(&source_key.group))
                .and_then(|()| validate::namespace(&source_key.tenant));
            if let Err(e) = checked {
                self.bad(what(), format!("Tacos does not accept this key ({e})"))?;
                continue;
            }
            let key = ConfigKey::new(&source_key.tenant, &source_key.group, &source_key.data_id);
            if kept.iter().any(|(k, _)| *k == key) {
                self.bad(
                    what(),
                    "tenant \"public\" is the public namespace in Tacos, which already holds \
                     the history of this key"
                        .to_string(),
                )?;
                continue;
            }
            kept.push((key, rows));
        }
        let own_ids_usable = !live.renumbered
            && kept.iter().all(|(_, rows)| {
                rows.windows(2).all(|w| w[0].id < w[1].id)
                    && rows.iter().all(|r| r.id != 0 && used.insert(r.id))
            });
        let mut next = live.ids.iter().flatten().copied().max().unwrap_or(0);
        if !own_ids_usable && !kept.is_empty() {
            self.notes.push(
                "the history ids of deleted configs clashed with others (or were 0); they \
                 were numbered after the live configs' rows, keeping their order"
                    .to_string(),
            );
        }
        Ok(kept
            .into_iter()
            .map(|(key, rows)| {
                let ids = rows
                    .iter()
                    .map(|row| {
                        if own_ids_usable {
                            row.id
                        } else {
                            next += 1;
                            next
                        }
                    })
                    .collect();
                DeletedRows {
                    key,
                    ids,
                    row_md5s: vec![md5::Digest([0; 16]); rows.len()],
                    rows,
                }
            })
            .collect())
    }

    /// The named roles Tacos can hold, bound to the converted users only.
    fn roles(
        &mut self,
        source: &Source,
        users: &[UserLine],
    ) -> Result<(Vec<Record>, Vec<RoleLine>), ConvertError> {
        let mut records = Vec::new();
        let mut lines = Vec::new();
        let mut roles: Vec<&source::Role> = source.roles.iter().collect();
        roles.sort_by(|a, b| a.name.cmp(&b.name));
        for role in roles {
            let what = || format!("role {:?}", role.name);
            if role.name == tacos_state::ADMIN_ROLE {
                self.bad(
                    what(),
                    "Tacos reserves this name for its admins (they are admin users)".to_string(),
                )?;
                continue;
            }
            if let Err(e) = tacos_app::auth::check_role(&role.name) {
                self.bad(
                    what(),
                    format!("Tacos does not accept this role name ({e})"),
                )?;
                continue;
            }
            let mut bound = Vec::new();
            for username in &role.users {
                if users.iter().any(|u| &u.username == username) {
                    bound.push(username.clone());
                } else {
                    self.notes.push(format!(
                        "role {:?}: its user {username:?} was not carried over, nor is the binding",
                        role.name
                    ));
                }
            }
            bound.sort();
            bound.dedup();
            if bound.is_empty() && role.permissions.is_empty() {
                continue;
            }
            records.push(Record::Role(pb::RoleRecord {
                role: role.name.clone(),
                usernames: bound.clone(),
                permissions: role
                    .permissions
                    .iter()
                    .map(|(resource, access)| pb::PermissionRecord {
                        namespace: resource.namespace.clone(),
                        access: access.to_pb() as i32,
                        group: resource.group.clone(),
                        data_id: resource.data_id.clone(),
                    })
                    .collect(),
            }));
            lines.push(RoleLine {
                name: role.name.clone(),
                users: bound,
                permissions: role.permissions.clone(),
            });
        }
        Ok((records, lines))
    }
}

/// Checks what [`check`] does not: grays, the history of deleted configs and roles.
fn check_extra(
    state: &State,
    configs: &[(ConfigKey, Pending)],
    deleted: &[DeletedRows],
    roles: &[RoleLine],
) -> Result<(), ConvertError> {
    let bad = |what: String| Err(ConvertError::Inconsistent(what));
    for (key, pending) in configs {
        let grays = state.grays(key);
        if grays.len() != pending.source.grays.len() {
            return bad(format!(
                "config {key}: {} grays converted, the state holds {}",
                pending.source.grays.len(),
                grays.len()
            ));
        }
        for gray in &pending.source.grays {
            match state.gray(key, &gray.name) {
                Some(g) if *g.md5 == md5_hex(&gray.content) && g.rule == gray.rule => {}
                _ => return bad(format!("config {key}: gray {:?} differs", gray.name)),
            }
        }
    }
    for d in deleted {
        let held: Vec<_> = state.history(&d.key).collect();
        if held.len() != d.row_md5s.len()
            || held
                .iter()
                .zip(&d.ids)
                .zip(&d.row_md5s)
                .any(|((h, id), md5)| h.id != *id || *h.md5 != format!("{md5:x}"))
        {
            return bad(format!("the history of deleted config {} differs", d.key));
        }
    }
    if state.roles().count() != roles.len() {
        return bad(format!(
            "{} roles converted, the state holds {}",
            roles.len(),
            state.roles().count()
        ));
    }
    for line in roles {
        let Some(role) = state.role(&line.name) else {
            return bad(format!("role {:?} is missing", line.name));
        };
        let users: Vec<&String> = role.users.iter().collect();
        if users != line.users.iter().collect::<Vec<_>>() || role.permissions != line.permissions {
            return bad(format!("role {:?} differs", line.name));
        }
    }
    Ok(())
}

/// What was converted, for the final check.
struct Rows<'a> {
    configs: &'a [(ConfigKey, Pending)],
    ids: &'a HistoryIds,
    deleted: &'a [DeletedRows],
    /// Every history row as (id, owner, row) in id order (see `Converter::run`).
    order: &'a [(u64, u32, u32)],
}

impl Rows<'_> {
    /// The key, md5 and previous id of the `r`th row of `owner`.
    fn row(&self, owner: u32, r: u32) -> (&ConfigKey, md5::Digest, u64) {
        let (owner, r) = (owner as usize, r as usize);
        let (key, ids, md5s) = match self.configs.get(owner) {
            Some((key, pending)) => (key, &self.ids.ids[owner], &pending.row_md5s),
            None => {
                let d = &self.deleted[owner - self.configs.len()];
                (&d.key, &d.ids, &d.row_md5s)
            }
        };
        let last_id = if r == 0 { 0 } else { ids[r - 1] };
        (key, md5s[r], last_id)
    }
}

/// Checks the loaded state against the source and Tacos's invariants; returns the md5
/// check's (checked, matched).
fn check(
    state: &State,
    rows: &Rows<'_>,
    namespaces: &BTreeMap<String, NewNamespace>,
    users: &[UserLine],
) -> Result<(usize, usize), ConvertError> {
    let bad = |what: String| Err(ConvertError::Inconsistent(what));
    let configs = rows.configs;
    if state.config_count() != configs.len() {
        return bad(format!(
            "{} configs converted, the state holds {}",
            configs.len(),
            state.config_count()
        ));
    }
    let state_namespaces: BTreeSet<&str> = state.namespaces().map(|n| n.id.as_str()).collect();
    let wanted: BTreeSet<&str> = namespaces.keys().map(String::as_str).collect();
    if state_namespaces != wanted {
        return bad(format!(
            "namespaces {wanted:?} converted, the state holds {state_namespaces:?}"
        ));
    }
    let mut mismatched = Vec::new();
    let mut config_ids = BTreeSet::new();
    for ((key, pending), source_ids) in configs.iter().zip(&rows.ids.ids) {
        let Some(config) = state.config(key) else {
            return bad(format!("config {key} is missing"));
        };
        if !state.has_namespace(&key.namespace) {
            return bad(format!(
                "config {key} is in a namespace that does not exist"
            ));
        }
        if !config_ids.insert(config.id) || config.id == 0 {
            return bad(format!("config {key} has a duplicate id {}", config.id));
        }
        let want = pending
            .md5
            .map(|md5| format!("{md5:x}"))
            .unwrap_or_default();
        if *config.md5 != want || md5_hex(&config.content) != want {
            mismatched.push(key.to_string());
        }
        let held = state.history_ids(key);
        if held.len() != source_ids.len() {
            return bad(format!(
                "config {key}: {} history rows converted, the state holds {}",
                source_ids.len(),
                held.len()
            ));
        }
        if *held != **source_ids {
            return bad(format!("config {key}: its history rows are out of order"));
        }
    }
    // Every row the state holds, in id order (each chunk decoded once), against every
    // row converted, in id order: its id, key, md5 and the id before it.
    let mut held = state.history_rows();
    for &(id, owner, r) in rows.order {
        let (key, md5, last_id) = rows.row(owner, r);
        let Some(row) = held.next() else {
            return bad(format!("config {key}: history row {id} is missing"));
        };
        if row.id != id || row.key != *key || row.last_id != last_id {
            return bad(format!("config {key}: history row {id} is out of order"));
        }
        if *row.md5 != format!("{md5:x}") {
            return bad(format!("config {key}: history row {id} differs"));
        }
    }
    if let Some(row) = held.next() {
        return bad(format!(
            "the state holds a history row {} not converted",
            row.id
        ));
    }
    if !mismatched.is_empty() {
        return Err(ConvertError::Md5Mismatch {
            checked: configs.len(),
            mismatched,
        });
    }
    let state_users = state.users().count();
    if state_users != users.len() {
        return bad(format!(
            "{} users converted, the state holds {state_users}",
            users.len()
        ));
    }
    for line in users {
        let Some(user) = state.user(&line.username) else {
            return bad(format!("user {:?} is missing", line.username));
        };
        let access = match line.grant {
            Grant::Admin => Some(Access::ReadWrite),
            Grant::Everywhere(access) => Some(access),
            Grant::Nothing => None,
        };
        let rights_match = match &line.namespaces {
            None => user.namespace_access("any-namespace") == access,
            Some(list) => {
                list.iter().all(|ns| user.namespace_access(ns) == access)
                    && user.permissions.len() == list.len()
            }
        };
        if user.admin != (line.grant == Grant::Admin)
            || !rights_match
            || user.enabled != line.enabled
        {
            return bad(format!(
                "user {:?} does not have the rights its roles give",
                line.username
            ));
        }
    }
    if state.auth_key().is_some() {
        return bad("the state holds an auth key".to_string());
    }
    Ok((configs.len(), configs.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Config, GrayRule, HistoryRow, Namespace, OpType, Password, User};

    fn config(tenant: &str, group: &str, data_id: &str, content: &str, t: i64) -> Config {
        Config {
            tenant: tenant.into(),
            group: group.into(),
            data_id: data_id.into(),
            content: content.into(),
            last_time_ms: t,
            config_type: None,
            desc: None,
            grays: Vec::new(),
            create_time_ms: None,
            app_name: String::new(),
            tags: Vec::new(),
            src_user: String::new(),
            src_ip: String::new(),
            encrypted_data_key: String::new(),
        }
    }

    fn row(id: u64, content: &str, t: i64) -> HistoryRow {
        HistoryRow {
            id,
            content: content.into(),
            last_time_ms: t,
            op_user: None,
            op: None,
            app_name: String::new(),
            src_ip: None,
            encrypted_data_key: String::new(),
        }
    }

    fn user(name: &str, password: &str, roles: &[&str], enabled: bool) -> User {
        User {
            username: name.into(),
            password: Password::Plain(password.into()),
            nickname: String::new(),
            gmt_create: 1_700_000_000,
            gmt_modified: 1_700_000_100,
            enabled,
            roles: roles.iter().map(|r| r.to_string()).collect(),
            extend_info: BTreeMap::new(),
            namespace_privilege: None,
        }
    }

    /// Builds a source; `history` pairs each config (by index) with its rows.
    fn source(configs: Vec<(Config, Vec<HistoryRow>)>, users: Vec<User>) -> Source {
        let mut s = Source {
            namespaces: vec![Namespace {
                id: "dev".into(),
                name: "Development".into(),
                desc: String::new(),
                create_time_ms: None,
            }],
            users,
            ..Source::default()
        };
        for (c, rows) in configs {
            s.history.insert(c.key(), rows);
            s.configs.push(c);
        }
        s.configs.sort_by_key(|c| c.key());
        s
    }

    fn options(skip_bad: bool) -> ConvertOptions {
        ConvertOptions {
            skip_bad,
            hash_passwords: false,
            now_ms: 1_800_000_000_000,
        }
    }

    fn sample() -> Source {
        source(
            vec![
                (
                    config("", "DEFAULT_GROUP", "a.yaml", "v: 3", 300),
                    vec![
                        row(5, "v: 1", 100),
                        row(40, "v: 2", 200),
                        row(41, "v: 3", 300),
                    ],
                ),
                (
                    config("dev", "APP_GROUP", "b.txt", "dev b", 150),
                    vec![row(7, "dev b", 150)],
                ),
                (config("ghost", "G", "c.json", "{}", 50), vec![]),
            ],
            vec![
                user("alice", "alice-pass-1", &["1"], true),
                user("bob", "bob-pass-2", &["2"], true),
                user("root", "admin", &["0", "2"], true),
                user("nobody", "nobody-pass", &[], false),
            ],
        )
    }

    #[test]
    fn records_come_in_snapshot_order_and_keep_history() {
        let (converted, records) =
            convert_keeping(sample(), &options(false), &mut NoProgress, true).unwrap();
        let kinds: Vec<&str> = records
            .iter()
            .map(|r| match Record::decode(r).expect("a record") {
                Record::Counters(_) => "counters",
                Record::Namespace(_) => "namespace",
                Record::Config(_) => "config",
                Record::Gray(_) => "gray",
                Record::History(_) => "history",
                Record::User(_) => "user",
                Record::Role(_) => "role",
                Record::Audit(_) => "audit",
            })
            .collect();
        let mut expected = vec!["counters", "namespace", "namespace"];
        expected.extend(["config"; 3]);
        expected.extend(["history"; 4]);
        expected.extend(["user"; 4]);
        assert_eq!(kinds, expected);

        // Records re-encode exactly as the loaded state writes them.
        let state: Vec<Vec<u8>> = converted.state.snapshot_records().collect();
        assert_eq!(records, state);

        let Some(Record::Counters(counters)) = Record::decode(&records[0]) else {
            panic!("counters first")
        };
        assert_eq!(counters.next_config_id, 3);
        assert_eq!(counters.next_history_id, 41);
        assert_eq!(counters.next_audit_id, 0);

        let key = ConfigKey::new("", "DEFAULT_GROUP", "a.yaml");
        let c = converted.state.config(&key).unwrap();
        assert_eq!(*c.md5, md5_hex("v: 3"));
        assert_eq!(c.config_type, "text");
        assert_eq!((c.create_time, c.modify_time), (100, 300));
        let rows: Vec<_> = converted.state.history(&key).collect();
        let got: Vec<(u64, u64, &str, &str, i64)> = rows
            .iter()
            .map(|r| {
                (
                    r.id,
                    r.last_id,
                    r.op.code(),
                    r.content.as_ref(),
                    r.created_time,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (5, 0, "I", "v: 1", 100),
                (40, 5, "U", "v: 2", 200),
                (41, 40, "U", "v: 3", 300)
            ]
        );
        assert!(rows.iter().all(|r| *r.md5 == md5_hex(&r.content)));

        // A config without history: created at its last change, noted.
        let ghost = converted
            .state
            .config(&ConfigKey::new("ghost", "G", "c.json"))
            .unwrap();
        assert_eq!((ghost.create_time, ghost.modify_time), (50, 50));
        let r = &converted.report;
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("ghost/G/c.json has no history")));
        assert_eq!((r.configs, r.history_rows), (3, 4));
        assert_eq!((r.md5_checked, r.md5_matched), (3, 3));
        assert!(!r.history_renumbered);
        assert!(r.skipped.is_empty());
    }

    #[test]
    fn unregistered_tenants_get_a_namespace() {
        let converted = convert(sample(), &options(false), &mut NoProgress).unwrap();
        let r = &converted.report;
        assert_eq!(r.created_namespaces, ["ghost"]);
        let ns: Vec<(&str, &str, bool)> = r
            .namespaces
            .iter()
            .map(|n| (n.id.as_str(), n.name.as_str(), n.created))
            .collect();
        assert_eq!(
            ns,
            [("dev", "Development", false), ("ghost", "ghost", true)]
        );
        assert!(converted.state.has_namespace("ghost"));
        assert_eq!(
            r.per_namespace.get("ghost"),
            Some(&(1, 0)),
            "{:?}",
            r.per_namespace
        );
        let created = converted
            .state
            .namespaces()
            .find(|n| n.id == "ghost")
            .unwrap();
        assert_eq!(created.create_time, 1_800_000_000_000);
    }

    #[test]
    fn roles_map_to_rights_and_disabled_users_stay_disabled() {
        let converted = convert(sample(), &options(false), &mut NoProgress).unwrap();
        let state = &converted.state;
        let alice = state.user("alice").unwrap();
        assert!(!alice.admin && alice.enabled);
        assert_eq!(alice.namespace_access("dev"), Some(Access::ReadWrite));
        assert_eq!(alice.namespace_access(""), Some(Access::ReadWrite));
        let bob = state.user("bob").unwrap();
        assert_eq!(bob.namespace_access("anything"), Some(Access::Read));
        let root = state.user("root").unwrap();
        assert!(root.admin, "role 0 wins over 2");
        assert!(root.permissions.is_empty());
        let nobody = state.user("nobody").unwrap();
        assert!(!nobody.enabled);
        assert_eq!(nobody.namespace_access("dev"), None);
        assert_eq!(
            (nobody.create_time, nobody.modify_time),
            (1_700_000_000_000, 1_700_000_100_000)
        );
        let weak: Vec<&str> = converted
            .report
            .users
            .iter()
            .filter(|u| u.weak_password)
            .map(|u| u.username.as_str())
            .collect();
        assert_eq!(weak, ["root"]);
        assert!(state.auth_key().is_none());
    }

    #[test]
    fn passwords_are_hashed_so_they_verify() {
        let s = source(vec![], vec![user("alice", "alice-pass-1", &["1"], true)]);
        let converted = convert(
            s.clone(),
            &ConvertOptions {
                hash_passwords: true,
                ..options(false)
            },
            &mut NoProgress,
        )
        .unwrap();
        let hash = &converted.state.user("alice").unwrap().password_hash;
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(!hash.contains("alice-pass-1"));
        assert!(tacos_app::auth::password::verify("alice-pass-1", hash));
        assert!(!tacos_app::auth::password::verify("alice-pass-2", hash));
    }

    #[test]
    fn grant_takes_the_strongest_role_and_names_an_unknown_one() {
        let roles = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(Grant::from_roles(&roles(&[])), Ok(Grant::Nothing));
        assert_eq!(
            Grant::from_roles(&roles(&["2", "1"])),
            Ok(Grant::Everywhere(Access::ReadWrite))
        );
        assert_eq!(Grant::from_roles(&roles(&["1", "0"])), Ok(Grant::Admin));
        assert_eq!(Grant::from_roles(&roles(&["1", "9"])), Err("9".to_string()));
    }

    #[test]
    fn unusable_history_ids_are_renumbered_in_order() {
        let s = source(
            vec![
                (
                    config("", "G", "a", "a2", 20),
                    vec![row(3, "a1", 10), row(8, "a2", 20)],
                ),
                (
                    config("", "G", "b", "b2", 25),
                    vec![row(3, "b1", 12), row(5, "b2", 25)],
                ),
            ],
            vec![],
        );
        let converted = convert(s.clone(), &options(false), &mut NoProgress).unwrap();
        assert!(converted.report.history_renumbered);
        let ids = |k: &str| -> Vec<(u64, u64, String)> {
            converted
                .state
                .history(&ConfigKey::new("", "G", k))
                .map(|r| (r.id, r.last_id, r.content.to_string()))
                .collect()
        };
        // Old (id, config, row) order: a/3, b/3, b/5, a/8.
        assert_eq!(ids("a"), [(1, 0, "a1".into()), (4, 1, "a2".into())]);
        assert_eq!(ids("b"), [(2, 0, "b1".into()), (3, 2, "b2".into())]);
        let Some(Record::Counters(c)) = converted
            .state
            .snapshot_records()
            .next()
            .as_deref()
            .and_then(Record::decode)
        else {
            panic!()
        };
        assert_eq!(c.next_history_id, 4);
    }

    #[test]
    fn keys_tacos_refuses_stop_or_are_skipped_with_their_history() {
        let s = source(
            vec![
                (config("", "G", "ok", "x", 1), vec![row(1, "x", 1)]),
                (config("", "G", "bad id", "y", 2), vec![row(2, "y", 2)]),
            ],
            vec![],
        );
        let err = convert(s.clone(), &options(false), &mut NoProgress).unwrap_err();
        assert!(
            matches!(&err, ConvertError::Unsupported { what, .. } if what.contains("bad id")),
            "{err}"
        );
        assert!(err.to_string().contains("--skip-bad"), "{err}");
        let converted = convert(s.clone(), &options(true), &mut NoProgress).unwrap();
        assert_eq!(converted.report.configs, 1);
        assert_eq!(converted.report.history_rows, 1);
        assert_eq!(converted.report.skipped.len(), 1);
        assert!(converted.report.skipped[0].what.contains("1 history row"));
        assert_eq!(converted.report.md5_checked, 1);
    }

    #[test]
    fn unknown_roles_and_bad_usernames_stop_or_are_skipped() {
        let s = source(
            vec![],
            vec![
                user("alice", "alice-pass-1", &["1"], true),
                user("carol", "carol-pass-3", &["7"], true),
                user("bad name", "x-pass-1234", &["1"], true),
            ],
        );
        let err = convert(s.clone(), &options(false), &mut NoProgress).unwrap_err();
        assert!(matches!(err, ConvertError::Unsupported { .. }), "{err}");
        let converted = convert(s.clone(), &options(true), &mut NoProgress).unwrap();
        let names: Vec<&str> = converted
            .report
            .users
            .iter()
            .map(|u| u.username.as_str())
            .collect();
        assert_eq!(names, ["alice"]);
        let skipped: Vec<&str> = converted
            .report
            .skipped
            .iter()
            .map(|s| s.what.as_str())
            .collect();
        assert_eq!(skipped, ["user \"bad name\"", "user \"carol\""]);
        assert!(converted.report.skipped[1]
            .reason
            .contains("unknown r-nacos role \"7\""));
    }

    #[test]
    fn tenant_public_is_the_public_namespace() {
        let alone = source(
            vec![(config("public", "G", "p", "p", 1), vec![row(1, "p", 1)])],
            vec![],
        );
        let converted = convert(alone.clone(), &options(false), &mut NoProgress).unwrap();
        assert!(converted
            .state
            .config(&ConfigKey::new("", "G", "p"))
            .is_some());
        assert!(converted.report.created_namespaces.is_empty());
        assert!(converted
            .report
            .notes
            .iter()
            .any(|n| n.contains("tenant \"public\"")));

        let clash = source(
            vec![
                (config("", "G", "p", "one", 1), vec![row(1, "one", 1)]),
                (config("public", "G", "p", "two", 2), vec![row(2, "two", 2)]),
            ],
            vec![],
        );
        let err = convert(clash.clone(), &options(false), &mut NoProgress).unwrap_err();
        assert!(matches!(err, ConvertError::Unsupported { .. }), "{err}");
        let converted = convert(clash.clone(), &options(true), &mut NoProgress).unwrap();
        let kept = converted
            .state
            .config(&ConfigKey::new("", "G", "p"))
            .unwrap();
        assert_eq!(&*kept.content, "one");
        assert_eq!(converted.report.skipped.len(), 1);
    }

    #[test]
    fn progress_hears_every_step() {
        #[derive(Default)]
        struct Count {
            total: u64,
            done: u64,
            phases: Vec<&'static str>,
        }
        impl Progress for Count {
            fn begin(&mut self, total: u64) {
                self.total = total;
            }
            fn phase(&mut self, name: &'static str) {
                self.phases.push(name);
            }
            fn advance(&mut self, n: u64) {
                self.done += n;
            }
        }
        let s = sample();
        let mut count = Count::default();
        convert(s.clone(), &options(false), &mut count).unwrap();
        assert_eq!(count.total, 3 + 4 + 4);
        assert_eq!(count.done, count.total);
        assert_eq!(count.phases, ["configs", "history", "users"]);
    }

    /// A Java Nacos shaped source: op-typed history, grays, a deleted config's history,
    /// named roles; records still come in the state's own order.
    #[test]
    fn nacos_grays_roles_and_deleted_history_load_in_snapshot_order() {
        let mut source = sample();
        let key = source.configs[0].key();
        let config = &mut source.configs[0];
        config.app_name = "gateway".into();
        config.tags = vec!["a".into(), "b".into()];
        for (name, rule, priority) in [
            (
                "tag_canary",
                GrayRule::Tag {
                    tag: "canary".into(),
                },
                i32::MAX - 1,
            ),
            (
                "beta",
                GrayRule::Beta {
                    ips: vec!["10.0.0.1".into()],
                },
                i32::MAX,
            ),
        ] {
            config.grays.push(source::Gray {
                name: name.into(),
                rule,
                priority,
                content: format!("{name} content"),
                md5: String::new(),
                app_name: String::new(),
                src_user: "nacos".into(),
                src_ip: "10.0.0.9".into(),
                create_time_ms: 10,
                modify_time_ms: 20,
                encrypted_data_key: String::new(),
            });
        }
        let rows = source.history.get_mut(&key).unwrap();
        rows[1].op = Some(OpType::Update);
        // Deleted, sorting between the live keys' history.
        let mut gone = row(3, "gone v1", 90);
        gone.op = Some(OpType::Insert);
        let mut gone_d = row(4, "gone v1", 95);
        gone_d.op = Some(OpType::Delete);
        source.deleted_history.insert(
            source::ConfigKey {
                tenant: "dev".into(),
                group: "APP_GROUP".into(),
                data_id: "a-gone.txt".into(),
            },
            vec![gone, gone_d],
        );
        source.roles = vec![source::Role {
            name: "dev-rw".into(),
            users: vec!["nobody".into(), "not-a-user".into()],
            permissions: [(tacos_state::Resource::namespace("dev"), Access::ReadWrite)].into(),
        }];
        let (converted, ours) =
            convert_keeping(source.clone(), &options(false), &mut NoProgress, true).unwrap();
        let state: Vec<Vec<u8>> = converted.state.snapshot_records().collect();
        assert_eq!(ours, state);

        let tacos_key = ConfigKey::new("", "DEFAULT_GROUP", "a.yaml");
        let names: Vec<&str> = converted
            .state
            .grays(&tacos_key)
            .iter()
            .map(|g| g.name.as_str())
            .collect();
        assert_eq!(names, ["beta", "tag_canary"]);
        let ops: Vec<&str> = converted
            .state
            .history(&tacos_key)
            .map(|r| r.op.code())
            .collect();
        assert_eq!(ops, ["I", "U", "U"]);
        let gone_key = ConfigKey::new("dev", "APP_GROUP", "a-gone.txt");
        assert!(converted.state.config(&gone_key).is_none());
        let ops: Vec<(u64, &str)> = converted
            .state
            .history(&gone_key)
            .map(|r| (r.id, r.op.code()))
            .collect();
        assert_eq!(ops, [(3, "I"), (4, "D")]);
        let role = converted.state.role("dev-rw").expect("role");
        assert_eq!(role.users.iter().collect::<Vec<_>>(), ["nobody"]);
        assert_eq!(
            converted
                .state
                .user_with_roles("nobody")
                .unwrap()
                .namespace_access("dev"),
            Some(Access::ReadWrite)
        );
        let report = &converted.report;
        assert_eq!((report.grays, report.deleted_history), (2, 2));
        assert!(report.notes.iter().any(|n| n.contains("not-a-user")));
        assert_eq!(
            converted.state.config(&tacos_key).unwrap().tags,
            "a,b".to_string()
        );
    }
}
