//! Reads a live Nacos-compatible server over its HTTP open API (`--from http://HOST:PORT`,
//! or `https://HOST:PORT` with the server's CA in `--cacert` unless the system trusts it):
//! Java Nacos 1.x–3.x (with the v1 API), r-nacos, or another Tacos.
//!
//! Only `GET`s are sent, plus `POST /nacos/v1/auth/login` when credentials are given; the
//! token it answers is passed as `accessToken` on every call. The calls:
//!
//! * `GET /nacos/v1/console/namespaces`: the namespaces (`data[]` of `namespace`,
//!   `namespaceShowName`, `namespaceDesc`, `type`; the public one is `""`, or `public`
//!   on Nacos 3.x, and becomes tenant `""`); on a 404 (Nacos 3, which moved it to its
//!   console port) `GET /nacos/v3/admin/core/namespace/list`, the same list. A server
//!   that does not answer either in Nacos' shape is refused ([`ReadError::NotNacos`]).
//! * per namespace, `GET /nacos/v1/cs/configs?search=blur&dataId=&group=&tenant=NS`,
//!   paged by 100 (`pageItems`, `pagesAvailable`): which configs exist;
//! * per config, `GET /nacos/v1/cs/configs?show=all&dataId=&group=&tenant=`: content,
//!   md5, type, description, app name, tags, author, times. The md5 of the content is
//!   checked against the md5 the server reported ([`ReadError::Md5`]);
//! * per config, `GET /nacos/v1/cs/history?search=accurate&...`, paged by 100 (ids, op
//!   types, md5s, authors, times), and `GET /nacos/v1/cs/history?nid=ID&...` for each
//!   row whose content the list leaves out (Java Nacos does; Tacos lists it). Each row's
//!   content is checked against its md5 when the server gives one;
//! * `GET /nacos/v1/auth/users` (when logged in): Nacos' user list. Users move only when
//!   it shows BCrypt hashes (Tacos never does; some Java Nacos versions list them), with
//!   `GET /nacos/v1/auth/roles` for who is `ROLE_ADMIN`. Otherwise users, roles and
//!   permissions are not carried and a note says so: they must be recreated.
//!
//! A server that answers 404 on the history route (it has no Nacos history API) gives
//! configs without history, with a note.
//!
//! Rows of a gray version's history (`publishType` `gray`) are left out (counted in a
//! note); a config whose content a client's encryption plugin encrypted
//! (`encryptedDataKey`, dataId `cipher-{alg}-...`) moves as ciphertext with its key
//! (history rows with theirs), which Tacos returns as Nacos does.
//!
//! What the API cannot show is not carried and is named in [`Source::notes`]: the
//! history of deleted configs (the API finds history by a live config's key), gray
//! versions (betas, tag grays), and users without a hash.
//!
//! Configs are read four at a time (each its content, then its history).
//!
//! The reads are not one snapshot: a server that keeps changing while it is read may
//! give a config a newer history than its content; read from a quiet server.

mod client;
mod time;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::source::{Config, ConfigKey, HistoryRow, OpType, Password, ReadOptions, Source, User};

pub use client::{Client, Endpoint};

/// Page size of every listing.
pub const PAGE_SIZE: u64 = 100;

/// Why a server could not be read. Never holds the password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// No connection (refused, timed out, no such host).
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The login was refused (wrong username or password).
    #[error(
        "{url} refused the login of user {username:?} (HTTP {status}): wrong username or \
         password (--from-username, --from-password or TACOS_MIGRATE_FROM_PASSWORD)"
    )]
    LoginRefused {
        url: String,
        username: String,
        status: u16,
    },
    /// A call needs a login the migration does not have (or a user with more rights).
    #[error(
        "{url} refused {what} (HTTP {status}): give an admin's --from-username and \
         --from-password"
    )]
    Forbidden {
        url: String,
        what: String,
        status: u16,
    },
    /// The server does not answer like a Nacos server.
    #[error("{url} does not look like a Nacos-compatible server: {what} answered {answer}")]
    NotNacos {
        url: String,
        what: String,
        answer: String,
    },
    /// A call failed.
    #[error("{what} failed: HTTP {status}: {body}")]
    Status {
        what: String,
        status: u16,
        body: String,
    },
    /// An answer in an unexpected shape.
    #[error("{what}: unexpected answer: {reason}")]
    BadAnswer { what: String, reason: String },
    /// A content whose md5 is not the one the server reported.
    #[error("{what}: the content's md5 is {got}, the server reported {reported}")]
    Md5 {
        what: String,
        reported: String,
        got: String,
    },
    /// The `--cacert` file cannot be used.
    #[error("--cacert {}: {reason}", path.display())]
    CaFile {
        path: std::path::PathBuf,
        reason: String,
    },
    /// `--cacert` given for a plain `http://` server.
    #[error("--cacert is for an https:// server; {url} is read over plain http")]
    CacertWithoutTls { url: String },
}

/// Reads everything the API shows (see the module docs). Nothing the API
/// shows is refused, so `ReadOptions::skip_bad` changes nothing here.
pub fn read(endpoint: &Endpoint, _options: &ReadOptions) -> Result<Source, ReadError> {
    let client = Client::connect(endpoint)?;
    let mut source = Source::default();
    let mut gray_rows = 0;
    let mut no_history_api = false;

    let namespaces = client.namespaces()?;
    for ns in &namespaces {
        if !ns.id.is_empty() {
            source.namespaces.push(ns.clone());
        }
    }
    let tenants = std::iter::once(String::new()).chain(
        namespaces
            .iter()
            .map(|n| n.id.clone())
            .filter(|id| !id.is_empty()),
    );

    for tenant in tenants {
        let keys: Vec<ConfigKey> = client
            .config_keys(&tenant)?
            .into_iter()
            .map(|(group, data_id)| ConfigKey {
                tenant: tenant.clone(),
                group,
                data_id,
            })
            .collect();
        fetch_all(&client, &keys, |key, fetched| {
            no_history_api |= !fetched.history_api;
            gray_rows += fetched.gray;
            source.history.insert(key.clone(), fetched.rows);
            source.configs.push(fetched.config);
        })?;
    }
    // They came in the order they were read.
    source.configs.sort_by_key(Config::key);

    if no_history_api {
        source.notes.push(
            "history not carried: the server answers 404 on GET /nacos/v1/cs/history (it \
             serves no Nacos history API)"
                .to_string(),
        );
    }
    if gray_rows > 0 {
        source.notes.push(format!(
            "{gray_rows} gray history row(s) (publishType gray) are not carried; the \
             config's own history is"
        ));
    }
    users(&client, &mut source)?;
    source.notes.push(
        "the history of deleted configs is not carried: the HTTP API finds history by the \
         key of a live config"
            .to_string(),
    );
    source.notes.push(
        "gray versions (betas, tag grays) are not carried: the v1 HTTP API does not list \
         them; re-create them on Tacos"
            .to_string(),
    );
    Ok(source)
}

/// How many configs are read at once. One at a time, the tool and the server
/// took turns waiting on each round trip: 100,000 configs (200,000 reads) took
/// 80 s on two cores the server used only part of.
const READERS: usize = 4;

/// One config as read: its content and metadata with its history.
struct Fetched {
    config: Config,
    rows: Vec<HistoryRow>,
    /// Gray history rows left out.
    gray: usize,
    /// Whether the server serves the history route (a 404 there: no history).
    history_api: bool,
}

/// Reads `key`'s config and history; `None` when it was deleted since it
/// was listed.
fn fetch(client: &Client, key: &ConfigKey) -> Result<Option<Fetched>, ReadError> {
    let Some(config) = client.config(key)? else {
        return Ok(None);
    };
    let (rows, gray, history_api) = match client.history(key) {
        Ok((rows, gray)) => (rows, gray, true),
        // The route is not served (no history API): no history, noted once.
        Err(ReadError::Status { status: 404, .. }) => (Vec::new(), 0, false),
        Err(e) => return Err(e),
    };
    Ok(Some(Fetched {
        config,
        rows,
        gray,
        history_api,
    }))
}

/// [`fetch`] of every key, [`READERS`] at a time, each config handed to
/// `take` as soon as it is read (in no particular order), so nothing is held
/// twice. The first error stops the others (they finish the read in hand).
fn fetch_all(
    client: &Client,
    keys: &[ConfigKey],
    mut take: impl FnMut(&ConfigKey, Fetched),
) -> Result<(), ReadError> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let (next, stop) = (&AtomicUsize::new(0), &AtomicBool::new(false));
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Fetched)>(READERS * 4);
        let workers: Vec<_> = (0..READERS.min(keys.len()))
            .map(|_| {
                let tx = tx.clone();
                scope.spawn(move || -> Result<(), ReadError> {
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(key) = keys.get(i) else { break };
                        match fetch(client, key) {
                            // Gone since it was listed: nothing to take.
                            Ok(None) => {}
                            Ok(Some(fetched)) => {
                                if tx.send((i, fetched)).is_err() {
                                    break;
                                }
                            }
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        drop(tx);
        for (i, fetched) in rx {
            take(&keys[i], fetched);
        }
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })
}

/// Users when the API shows their BCrypt hashes; else a note (and no users).
fn users(client: &Client, source: &mut Source) -> Result<(), ReadError> {
    let listed = match client.users() {
        Err(ReadError::Forbidden { status, .. }) => {
            source.notes.push(format!(
                "users, roles and permissions not read: the user list answered HTTP \
                 {status} (it needs an admin); re-create them on Tacos"
            ));
            return Ok(());
        }
        other => other?,
    };
    let Some(listed) = listed else {
        source.notes.push(
            "users, roles and permissions not read: no --from-username given (the user \
             list needs an admin); re-create them on Tacos"
                .to_string(),
        );
        return Ok(());
    };
    let hashed = !listed.is_empty()
        && listed
            .iter()
            .all(|(_, hash)| hash.as_deref().is_some_and(is_bcrypt));
    if !hashed {
        source.notes.push(format!(
            "users not carried: the API does not expose password hashes ({} user(s) \
             listed); re-create them (and their roles and permissions) on Tacos",
            listed.len()
        ));
        return Ok(());
    }
    let admins = client.admins()?;
    for (username, hash) in listed {
        let Some(hash) = hash else { continue };
        let roles = if admins.contains(&username) {
            vec!["0".to_string()]
        } else {
            Vec::new()
        };
        source.users.push(User {
            username,
            password: Password::Bcrypt(hash),
            nickname: String::new(),
            gmt_create: 0,
            gmt_modified: 0,
            enabled: true,
            roles,
            extend_info: BTreeMap::new(),
            namespace_privilege: None,
        });
    }
    source.users.sort_by(|a, b| a.username.cmp(&b.username));
    source.notes.push(
        "users carried with their BCrypt hashes; ROLE_ADMIN made admins, other roles and \
         their permissions are not carried: re-create them on Tacos"
            .to_string(),
    );
    Ok(())
}

fn is_bcrypt(hash: &str) -> bool {
    ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p)) && hash.len() == 60
}

fn md5_hex(text: &str) -> String {
    format!("{:x}", md5::compute(text.as_bytes()))
}

/// A JSON field as text: strings as they are, numbers written out, null/absent `None`.
fn field(v: &Value, name: &str) -> Option<String> {
    match &v[name] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A non-empty text field.
fn nonempty(v: &Value, name: &str) -> Option<String> {
    field(v, name).filter(|s| !s.is_empty())
}

/// Builds a [`Config`] from a `show=all` answer.
fn config_from(key: &ConfigKey, v: &Value, what: &str) -> Result<Config, ReadError> {
    let content = field(v, "content").ok_or_else(|| ReadError::BadAnswer {
        what: what.to_string(),
        reason: "no content".to_string(),
    })?;
    let got = md5_hex(&content);
    if let Some(reported) = nonempty(v, "md5") {
        if reported != got {
            return Err(ReadError::Md5 {
                what: what.to_string(),
                reported,
                got,
            });
        }
    }
    let ms = |name: &str| -> Result<Option<i64>, ReadError> {
        match &v[name] {
            Value::Null => Ok(None),
            other => time::millis(other)
                .map(Some)
                .map_err(|reason| ReadError::BadAnswer {
                    what: format!("{what}: {name}"),
                    reason,
                }),
        }
    };
    let modify = ms("modifyTime")?;
    let create = ms("createTime")?;
    let mut tags: Vec<String> = field(v, "configTags")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    tags.sort();
    tags.dedup();
    Ok(Config {
        tenant: key.tenant.clone(),
        group: key.group.clone(),
        data_id: key.data_id.clone(),
        content,
        last_time_ms: modify.or(create).unwrap_or(0),
        config_type: nonempty(v, "type"),
        desc: nonempty(v, "desc"),
        grays: Vec::new(),
        create_time_ms: create.filter(|&t| t > 0),
        app_name: field(v, "appName").unwrap_or_default(),
        tags,
        src_user: field(v, "createUser").unwrap_or_default(),
        src_ip: field(v, "createIp").unwrap_or_default(),
        // Ciphertext of a client's encryption plugin, carried with its key.
        encrypted_data_key: field(v, "encryptedDataKey").unwrap_or_default(),
    })
}

/// Builds a [`HistoryRow`] from a history item (list row or `nid` detail) and its
/// content.
fn history_from(v: &Value, content: String, what: &str) -> Result<HistoryRow, ReadError> {
    let bad = |reason: String| ReadError::BadAnswer {
        what: what.to_string(),
        reason,
    };
    let id: u64 = field(v, "id")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| bad(format!("no numeric id in {v}")))?;
    if let Some(reported) = nonempty(v, "md5") {
        let got = md5_hex(&content);
        if reported != got {
            return Err(ReadError::Md5 {
                what: what.to_string(),
                reported,
                got,
            });
        }
    }
    let op = match field(v, "opType") {
        Some(code) => Some(
            OpType::from_code(code.trim())
                .ok_or_else(|| bad(format!("unknown opType {code:?}")))?,
        ),
        None => None,
    };
    let time = match (&v["lastModifiedTime"], &v["createdTime"]) {
        (Value::Null, Value::Null) => 0,
        (Value::Null, t) | (t, _) => time::millis(t).map_err(bad)?,
    };
    Ok(HistoryRow {
        id,
        content,
        last_time_ms: time,
        op_user: nonempty(v, "srcUser").map(Into::into),
        op,
        app_name: field(v, "appName").unwrap_or_default(),
        src_ip: nonempty(v, "srcIp").map(Into::into),
        encrypted_data_key: field(v, "encryptedDataKey").unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key() -> ConfigKey {
        ConfigKey {
            tenant: "dev".into(),
            group: "G".into(),
            data_id: "a.yaml".into(),
        }
    }

    #[test]
    fn a_config_keeps_its_metadata_and_its_md5_is_checked() {
        let v = json!({
            "content": "a: 1", "md5": md5_hex("a: 1"), "type": "yaml", "desc": "",
            "appName": "shop", "configTags": "b, a", "createUser": "ann",
            "createTime": 1000, "modifyTime": "2000",
        });
        let c = config_from(&key(), &v, "c").expect("config");
        assert_eq!(c.config_type.as_deref(), Some("yaml"));
        assert_eq!(c.desc, None);
        assert_eq!(c.tags, ["a", "b"]);
        assert_eq!((c.create_time_ms, c.last_time_ms), (Some(1000), 2000));
        let bad = json!({"content": "a: 1", "md5": md5_hex("a: 2")});
        assert!(matches!(
            config_from(&key(), &bad, "c"),
            Err(ReadError::Md5 { .. })
        ));
    }

    #[test]
    fn a_history_row_keeps_id_op_and_time() {
        let v = json!({
            "id": "42", "opType": "U  ", "md5": md5_hex("x"), "srcUser": "ann",
            "lastModifiedTime": "2024-05-06T11:08:12.000+00:00",
        });
        let row = history_from(&v, "x".into(), "h").expect("row");
        assert_eq!(row.id, 42);
        assert_eq!(row.op, Some(OpType::Update));
        assert_eq!(row.op_user.as_deref(), Some("ann"));
        assert_eq!(row.last_time_ms, 1_714_993_692_000);
        assert!(history_from(&json!({"id": "x"}), "x".into(), "h").is_err());
        let wrong = json!({"id": 1, "md5": md5_hex("y")});
        assert!(matches!(
            history_from(&wrong, "x".into(), "h"),
            Err(ReadError::Md5 { .. })
        ));
    }

    #[test]
    fn the_endpoint_never_shows_the_password() {
        let e = Endpoint::new(
            "http://h:8848/nacos/",
            Some("nacos".into()),
            Some("pw-123".into()),
        );
        assert_eq!(e.url, "http://h:8848");
        assert!(!format!("{e:?} {e}").contains("pw-123"));
        assert!(is_bcrypt(
            "$2a$10$EuWPZHzz32dJN7jexM34MOeYirDdFAZm2kuWj7VEOJhhZkDrxfvUu"
        ));
        assert!(!is_bcrypt("plain"));
    }
}
