//! Reads an r-nacos 0.4.x data dir (sled 0.34, by default `nacos_db`) into plain structs.
//!
//! [`read`] never writes to the dir it is given: it checks that the dir holds a sled 0.34
//! database (a `conf` file naming sled 0.34 and a `db` file), copies it into a temporary dir
//! and opens the copy. sled writes when it opens a dir, and silently starts an empty
//! database when `conf` or `db` is missing, so both checks happen on the source before
//! sled sees anything. The copy is deleted when [`read`] returns.
//!
//! # Layout of an r-nacos 0.4.x data dir
//!
//! Files: `conf` (sled parameters: UTF-8 lines `segment_size: 524288`,
//! `use_compression: false`, `version: 0.34`, then a 4-byte crc32 of those lines), `db`
//! (the log, padded to the segment size), `snap.<hex>` (recovery snapshots) and `blobs/`
//! (values too large for a segment).
//!
//! Values are protobuf (proto3: an empty string, a zero or `false` is not written at all).
//! The trees this module reads:
//!
//! * `config` — one entry per live config.
//!   - key: `ConfigSerdeKey { 1: tenant string, 2: group string, 3: data_id string }`. The
//!     public namespace is tenant `""`, so its keys have no field 1. Example (dev tenant):
//!     `0a 03 "dev" 12 09 "APP_GROUP" 1a 0c "notes-19.txt"`.
//!   - value: `Config { 1: tenant, 2: group, 3: data_id, 4: content string,
//!     5: content_md5 string (never set), 6: last_time int64 (ms since the epoch),
//!     7: id int64 (never set here) }`. Tenant, group and data id repeat the key's.
//! * `config_history_<config key bytes>` — one tree per config: the tree name is the 15
//!   ASCII bytes `config_history_` followed by the raw `config` key bytes above.
//!   - key: the history id, 8 bytes, big-endian `u64` (so sled's byte order is id order,
//!     oldest first). Ids are global over all configs and handed out in blocks of 100
//!     (`table_sequence`/`config_history_id` holds the top of the reserved block).
//!   - value: the same `Config` message with field 7 = the id. The newest row is the
//!     config's current content.
//!   - Deleting a config drops its history tree. A history tree may be empty. A tree whose
//!     config is not in `config` (a crash between the two writes) is not carried over.
//! * `t_user` — key: the username (UTF-8 bytes); value: `UserDo { 1: username, 2: password
//!   (plain text in 0.4), 3: nickname, 4: gmt_create (s since the epoch, varint),
//!   5: gmt_modified (s), 6: enable bool (absent = disabled), 7: roles repeated string
//!   ("0" manager, "1" developer, "2" visitor), 8: extend_info map<string, string> }`.
//!   r-nacos creates `admin`/`admin` with role `0` at first start.
//! * Namespaces are not a tree: they are the config tenant `__INNER_SYSTEM__`, group `sys`,
//!   data id `namespaces` (with its own history), whose content is a JSON array
//!   `[{"namespaceId":"dev","namespaceName":"Development","type":"2"}, ...]`. The public
//!   namespace is implicit and not listed. That config is returned as
//!   [`Source::namespaces`], never as a config, and its history is not returned. Configs
//!   may live in a tenant that is not in the list ([`Source::unregistered_tenants`]).
//!
//! Not read: `table_sequence`, `tables`, `t_cache`, `raft_store` and `raft_logs` (the
//! raft log, JSON, every write since the first start), and sled's `__sled__default`.
//!
//! # Bad entries
//!
//! An entry that cannot be decoded (bad protobuf, a string that is not UTF-8, a history key
//! that is not 8 bytes, a value that names another config than its key, a namespace list
//! that is not JSON) stops reading with [`ReadError::Corrupt`], naming the tree and key.
//! With [`ReadOptions::skip_bad`] it is left out and listed in [`Source::skipped`] instead.
//! [`Source::skipped`] also lists, whatever `skip_bad` says, what is deliberately not
//! carried over: history trees of configs that no longer exist and other internal
//! (`__INNER_SYSTEM__`) configs.

mod dir;
mod wire;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use prost::Message;

/// The tenant r-nacos keeps its own data in.
pub const INNER_TENANT: &str = "__INNER_SYSTEM__";
/// Group of the namespace list config.
pub const NAMESPACES_GROUP: &str = "sys";
/// Data id of the namespace list config.
pub const NAMESPACES_DATA_ID: &str = "namespaces";

const CONFIG_TREE: &str = "config";
const USER_TREE: &str = "t_user";
const HISTORY_PREFIX: &[u8] = b"config_history_";

pub use crate::source::{
    role_name, Config, ConfigKey, HistoryRow, Namespace, Password, ReadOptions, Skipped, Source,
    User,
};

/// Why reading failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The path does not exist.
    #[error("{}: no such directory", path.display())]
    NotFound { path: PathBuf },
    /// The path is not a sled 0.34 data dir (not a dir, no or bad `conf`, no `db`, ...).
    #[error("{} is not a sled 0.34 data dir: {reason}", path.display())]
    NotSled { path: PathBuf, reason: String },
    /// Another process (a running r-nacos) holds the lock on the data dir.
    #[error(
        "{} is in use (another process, probably a running r-nacos, holds the lock on its \
         `db` file); stop it first",
        path.display()
    )]
    InUse { path: PathBuf },
    /// Reading the source or writing the temporary copy failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// sled could not open the copy.
    #[error("sled 0.34 could not open (a copy of) {}: {reason}", path.display())]
    Open { path: PathBuf, reason: String },
    /// A sled database, but not one written by r-nacos 0.4.x: trees it must have are
    /// missing. `found` lists the trees it has (names escaped).
    #[error(
        "{} is a sled database but not an r-nacos 0.4 data dir: it lacks the tree(s) {} \
         (it has: {})",
        path.display(),
        missing.join(", "),
        if found.is_empty() { "no trees".to_string() } else { found.join(", ") }
    )]
    NotRnacos {
        path: PathBuf,
        missing: Vec<String>,
        found: Vec<String>,
    },
    /// sled failed while reading a tree.
    #[error("sled failed reading tree `{tree}`: {source}")]
    Sled {
        tree: String,
        #[source]
        source: sled::Error,
    },
    /// An entry could not be decoded (see [`ReadOptions::skip_bad`]).
    #[error("corrupt entry in tree `{tree}`, key {key}: {reason}")]
    Corrupt {
        tree: String,
        key: String,
        reason: String,
    },
}

/// Reads the r-nacos 0.4.x data dir `from` (the dir holding `conf` and `db`, by default
/// `nacos_db`). `from` is only read; see the module docs.
pub fn read(from: &Path, options: &ReadOptions) -> Result<Source, ReadError> {
    let conf = dir::check_sled_dir(from)?;
    let tmp = match &options.work_dir {
        Some(parent) => tempfile::Builder::new()
            .prefix("tacos-migrate-")
            .tempdir_in(parent),
        None => tempfile::Builder::new().prefix("tacos-migrate-").tempdir(),
    }
    .map_err(|source| ReadError::Io {
        path: options.work_dir.clone().unwrap_or_else(std::env::temp_dir),
        source,
    })?;
    let copy = tmp.path().join("nacos_db");
    dir::copy_sled_dir(from, &copy)?;
    let db = open_copy(from, &copy, conf)?;
    let source = Reader {
        db: &db,
        skip_bad: options.skip_bad,
        skipped: Vec::new(),
    }
    .read(from)?;
    // Close sled before the temporary dir goes.
    drop(db);
    drop(tmp);
    Ok(source)
}

fn open_copy(from: &Path, copy: &Path, conf: dir::SledConf) -> Result<sled::Db, ReadError> {
    let config = sled::Config::new()
        .path(copy)
        .segment_size(conf.segment_size);
    // sled 0.34 can panic rather than fail on some garbage; report it as an error.
    let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| config.open()));
    match opened {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(e)) => Err(ReadError::Open {
            path: from.to_path_buf(),
            reason: e.to_string(),
        }),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("no message");
            Err(ReadError::Open {
                path: from.to_path_buf(),
                reason: format!("sled panicked: {msg}"),
            })
        }
    }
}

struct Reader<'a> {
    db: &'a sled::Db,
    skip_bad: bool,
    skipped: Vec<Skipped>,
}

/// What became of a `config` entry, by its raw key bytes (= history tree name suffix).
enum KeyFate {
    Live(ConfigKey),
    /// An `__INNER_SYSTEM__` config: its history is not read.
    Internal,
    /// Undecodable, skipped: its history goes too.
    Skipped,
}

/// What tree `config` holds.
struct ConfigTree {
    configs: Vec<Config>,
    /// By raw key bytes.
    fates: HashMap<Vec<u8>, KeyFate>,
    namespaces: Vec<Namespace>,
}

impl Reader<'_> {
    fn read(mut self, from: &Path) -> Result<Source, ReadError> {
        let names: BTreeSet<Vec<u8>> = self.db.tree_names().iter().map(|n| n.to_vec()).collect();
        let missing: Vec<String> = [CONFIG_TREE, USER_TREE]
            .into_iter()
            .filter(|t| !names.contains(t.as_bytes()))
            .map(str::to_string)
            .collect();
        if !missing.is_empty() {
            // sled's own default tree is always there; a fresh or garbage `db` has no other.
            let found = names
                .iter()
                .filter(|n| n.as_slice() != b"__sled__default")
                .take(20)
                .map(|n| n.escape_ascii().to_string())
                .collect();
            return Err(ReadError::NotRnacos {
                path: from.to_path_buf(),
                missing,
                found,
            });
        }

        let ConfigTree {
            configs,
            fates,
            namespaces,
        } = self.read_configs()?;
        let history = self.read_history(&names, &configs, &fates)?;
        let users = self.read_users()?;
        Ok(Source {
            configs,
            history,
            users,
            namespaces,
            skipped: self.skipped,
            ..Source::default()
        })
    }

    /// Records a bad entry, or fails if bad entries are not to be skipped.
    fn bad(&mut self, tree: String, key: String, reason: String) -> Result<(), ReadError> {
        if self.skip_bad {
            self.skipped.push(Skipped {
                what: format!("tree `{tree}`, key {key}"),
                reason,
            });
            Ok(())
        } else {
            Err(ReadError::Corrupt { tree, key, reason })
        }
    }

    fn tree(&self, name: &[u8]) -> Result<sled::Tree, ReadError> {
        self.db.open_tree(name).map_err(|source| ReadError::Sled {
            tree: show_tree_name(name),
            source,
        })
    }

    fn read_configs(&mut self) -> Result<ConfigTree, ReadError> {
        let tree = self.tree(CONFIG_TREE.as_bytes())?;
        let mut configs = Vec::new();
        let mut fates = HashMap::new();
        let mut namespaces = Vec::new();
        for entry in tree.iter() {
            let (k, v) = entry.map_err(|source| ReadError::Sled {
                tree: CONFIG_TREE.to_string(),
                source,
            })?;
            let config = match decode_config(&k, &v) {
                Ok(c) => c,
                Err(reason) => {
                    fates.insert(k.to_vec(), KeyFate::Skipped);
                    self.bad(CONFIG_TREE.to_string(), show_config_key(&k), reason)?;
                    continue;
                }
            };
            if config.tenant != INNER_TENANT {
                fates.insert(k.to_vec(), KeyFate::Live(config.key()));
                configs.push(config);
                continue;
            }
            fates.insert(k.to_vec(), KeyFate::Internal);
            if config.group == NAMESPACES_GROUP && config.data_id == NAMESPACES_DATA_ID {
                match parse_namespaces(&config.content) {
                    Ok((list, notes)) => {
                        namespaces = list;
                        self.skipped.extend(notes);
                    }
                    Err(reason) => {
                        self.bad(CONFIG_TREE.to_string(), show_config_key(&k), reason)?;
                    }
                }
            } else {
                self.skipped.push(Skipped {
                    what: format!("config {}", config.key()),
                    reason: format!(
                        "an internal r-nacos config (tenant {INNER_TENANT}) this tool \
                         does not know"
                    ),
                });
            }
        }
        configs.sort_by(|a, b| {
            (&a.tenant, &a.group, &a.data_id).cmp(&(&b.tenant, &b.group, &b.data_id))
        });
        Ok(ConfigTree {
            configs,
            fates,
            namespaces,
        })
    }

    fn read_history(
        &mut self,
        names: &BTreeSet<Vec<u8>>,
        configs: &[Config],
        fates: &HashMap<Vec<u8>, KeyFate>,
    ) -> Result<BTreeMap<ConfigKey, Vec<HistoryRow>>, ReadError> {
        let mut history: BTreeMap<ConfigKey, Vec<HistoryRow>> =
            configs.iter().map(|c| (c.key(), Vec::new())).collect();
        for name in names {
            let Some(suffix) = name.strip_prefix(HISTORY_PREFIX) else {
                continue;
            };
            let tree_name = show_tree_name(name);
            let key = match fates.get(suffix) {
                Some(KeyFate::Live(key)) => key,
                Some(KeyFate::Internal) => continue,
                fate => {
                    let tree = self.tree(name)?;
                    let reason = if matches!(fate, Some(KeyFate::Skipped)) {
                        "history of a config entry that was skipped"
                    } else {
                        "history of a config that no longer exists"
                    };
                    self.skipped.push(Skipped {
                        what: format!("tree `{tree_name}`"),
                        reason: format!("{reason} ({} rows); not carried over", tree.len()),
                    });
                    continue;
                }
            };
            let tree = self.tree(name)?;
            let mut rows = Vec::new();
            for entry in tree.iter() {
                let (k, v) = entry.map_err(|source| ReadError::Sled {
                    tree: tree_name.clone(),
                    source,
                })?;
                match decode_history_row(key, &k, &v) {
                    Ok(row) => rows.push(row),
                    Err(reason) => self.bad(tree_name.clone(), show_history_key(&k), reason)?,
                }
            }
            rows.sort_by_key(|r| r.id);
            history.insert(key.clone(), rows);
        }
        Ok(history)
    }

    fn read_users(&mut self) -> Result<Vec<User>, ReadError> {
        let tree = self.tree(USER_TREE.as_bytes())?;
        let mut users = Vec::new();
        for entry in tree.iter() {
            let (k, v) = entry.map_err(|source| ReadError::Sled {
                tree: USER_TREE.to_string(),
                source,
            })?;
            match decode_user(&k, &v) {
                Ok(user) => users.push(user),
                Err(reason) => self.bad(USER_TREE.to_string(), show_bytes(&k), reason)?,
            }
        }
        users.sort_by(|a, b| a.username.cmp(&b.username));
        Ok(users)
    }
}

fn decode_config(k: &[u8], v: &[u8]) -> Result<Config, String> {
    let key =
        wire::ConfigSerdeKey::decode(k).map_err(|e| format!("key is not a config key: {e}"))?;
    let value = wire::ConfigValue::decode(v).map_err(|e| format!("value is not a config: {e}"))?;
    if key.data_id.is_empty() || key.group.is_empty() {
        return Err("key has an empty group or data id".to_string());
    }
    if (&key.tenant, &key.group, &key.data_id) != (&value.tenant, &value.group, &value.data_id) {
        return Err(format!(
            "value is for another config ({}/{}/{})",
            value.tenant, value.group, value.data_id
        ));
    }
    Ok(Config {
        tenant: value.tenant,
        group: value.group,
        data_id: value.data_id,
        content: value.content,
        last_time_ms: value.last_time,
        // r-nacos 0.4 has no types, descriptions or grays.
        config_type: None,
        desc: None,
        grays: Vec::new(),
        create_time_ms: None,
        app_name: String::new(),
        tags: Vec::new(),
        src_user: String::new(),
        src_ip: String::new(),
        encrypted_data_key: String::new(),
    })
}

fn decode_history_row(config: &ConfigKey, k: &[u8], v: &[u8]) -> Result<HistoryRow, String> {
    let id: [u8; 8] = k.try_into().map_err(|_| {
        format!(
            "history key is {} bytes, expected 8 (a big-endian id)",
            k.len()
        )
    })?;
    let id = u64::from_be_bytes(id);
    let value =
        wire::ConfigValue::decode(v).map_err(|e| format!("value is not a history row: {e}"))?;
    if (&value.tenant, &value.group, &value.data_id)
        != (&config.tenant, &config.group, &config.data_id)
    {
        return Err(format!(
            "row is for another config ({}/{}/{})",
            value.tenant, value.group, value.data_id
        ));
    }
    // r-nacos 0.4.3 always sets field 7 to the key's id; tolerate it missing.
    if value.id != 0 && u64::try_from(value.id).ok() != Some(id) {
        return Err(format!("row says id {}, its key says {id}", value.id));
    }
    Ok(HistoryRow {
        id,
        content: value.content,
        last_time_ms: value.last_time,
        // r-nacos 0.4 does not record who wrote a version.
        op_user: None,
        op: None,
        app_name: String::new(),
        src_ip: None,
        encrypted_data_key: String::new(),
    })
}

fn decode_user(k: &[u8], v: &[u8]) -> Result<User, String> {
    let name = std::str::from_utf8(k).map_err(|_| "username key is not UTF-8".to_string())?;
    let user = wire::UserDo::decode(v).map_err(|e| format!("value is not a user: {e}"))?;
    if user.username != name {
        return Err(format!("value is for user {:?}", user.username));
    }
    if name.is_empty() {
        return Err("empty username".to_string());
    }
    Ok(User {
        username: user.username,
        password: Password::Plain(user.password),
        nickname: user.nickname,
        gmt_create: user.gmt_create,
        gmt_modified: user.gmt_modified,
        enabled: user.enable,
        roles: user.roles,
        extend_info: user.extend_info,
        namespace_privilege: None,
    })
}

/// Parses the namespace list. Returns the namespaces and notes on entries left out.
pub(crate) fn parse_namespaces(content: &str) -> Result<(Vec<Namespace>, Vec<Skipped>), String> {
    let list: Vec<wire::NamespaceJson> = serde_json::from_str(content)
        .map_err(|e| format!("namespace list is not a JSON array of namespaces: {e}"))?;
    let mut namespaces: Vec<Namespace> = Vec::new();
    let mut notes = Vec::new();
    for ns in list {
        let id = ns.namespace_id.unwrap_or_default();
        let name = ns.namespace_name.unwrap_or_default();
        if id.is_empty() {
            notes.push(Skipped {
                what: format!("namespace {name:?} with an empty id"),
                reason: "the public namespace is implicit".to_string(),
            });
        } else if namespaces.iter().any(|n| n.id == id) {
            notes.push(Skipped {
                what: format!("namespace {id:?} ({name:?})"),
                reason: "listed twice; the first entry is kept".to_string(),
            });
        } else {
            namespaces.push(Namespace {
                id,
                name,
                desc: String::new(),
                create_time_ms: None,
            });
        }
    }
    Ok((namespaces, notes))
}

/// Escaped bytes, e.g. `"\n\x03dev"`.
fn show_bytes(b: &[u8]) -> String {
    format!("\"{}\"", b.escape_ascii())
}

/// A `config` key as `tenant/group/data_id` when it decodes, else its escaped bytes.
fn show_config_key(k: &[u8]) -> String {
    match wire::ConfigSerdeKey::decode(k) {
        Ok(key) if !key.data_id.is_empty() => {
            let key = ConfigKey {
                tenant: key.tenant,
                group: key.group,
                data_id: key.data_id,
            };
            format!("{key} ({})", show_bytes(k))
        }
        _ => show_bytes(k),
    }
}

fn show_history_key(k: &[u8]) -> String {
    match <[u8; 8]>::try_from(k) {
        Ok(id) => format!("id {}", u64::from_be_bytes(id)),
        Err(_) => format!("{} ({} bytes)", show_bytes(k), k.len()),
    }
}

/// A tree name; history trees as `config_history_` + the config key, readable.
fn show_tree_name(name: &[u8]) -> String {
    match name.strip_prefix(HISTORY_PREFIX) {
        Some(suffix) => format!("config_history_ of {}", show_config_key(suffix)),
        None => name.escape_ascii().to_string(),
    }
}
