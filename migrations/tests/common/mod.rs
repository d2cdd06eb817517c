//! Helpers shared by the r-nacos reader tests.

#![allow(dead_code)]

pub mod gen08;
pub mod server;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;
use tacos_migrate::rnacos::{self, ConfigKey, ReadError, ReadOptions, Source};

/// The r-nacos 0.4.3 sample dir (read-only: tests never open it with sled).
/// The shared r-nacos 0.4.3 fixture: `$TACOS_SHARED/fixtures/rnacos-0.4.3`
/// if set, else the first `shared/fixtures/rnacos-0.4.3` found beside the
/// repository or one of its parents (the project keeps `shared/` next to
/// its checkout), else `/work/shared/...`.
pub fn fixture_root() -> PathBuf {
    const FIXTURE: &str = "fixtures/rnacos-0.4.3";
    if let Some(shared) = std::env::var_os("TACOS_SHARED") {
        return PathBuf::from(shared).join(FIXTURE);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("shared").join(FIXTURE))
        .find(|candidate| candidate.join("nacos_db").is_dir())
        .unwrap_or_else(|| PathBuf::from("/work/shared").join(FIXTURE))
}

/// The shared r-nacos 0.8.8 fixture (`fixtures/rnacos-0.8.8`), found like
/// [`fixture_root`]. Tests only ever open copies of its `data` dir.
pub fn fixture08_root() -> PathBuf {
    data_dir_fixture("rnacos-0.8.8")
}

/// A shared fixture holding an r-nacos 0.5+ `data` dir (`fixtures/NAME`), found like
/// [`fixture_root`].
pub fn data_dir_fixture(name: &str) -> PathBuf {
    let fixture = format!("fixtures/{name}");
    if let Some(shared) = std::env::var_os("TACOS_SHARED") {
        return PathBuf::from(shared).join(fixture);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("shared").join(&fixture))
        .find(|candidate| candidate.join("data").join("index").is_file())
        .unwrap_or_else(|| PathBuf::from("/work/shared").join(&fixture))
}

pub fn expected08() -> Value {
    expected_of(&fixture08_root())
}

/// A fixture's `expected.json`.
pub fn expected_of(root: &Path) -> Value {
    let path = root.join("expected.json");
    let text = fs::read_to_string(&path).expect("read expected.json");
    serde_json::from_str(&text).expect("parse expected.json")
}

/// Copies the 0.8.8 fixture's `data` dir into a new writable temp dir; returns (guard,
/// path of the copy).
pub fn copy_fixture08() -> (tempfile::TempDir, PathBuf) {
    copy_data_dir_fixture(&fixture08_root())
}

/// Copies a fixture's `data` dir into a new writable temp dir; returns (guard, path of
/// the copy).
pub fn copy_data_dir_fixture(root: &Path) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dst = tmp.path().join("rnacos_data");
    copy_dir(&root.join("data"), &dst);
    (tmp, dst)
}

pub fn fixture_db() -> PathBuf {
    fixture_root().join("nacos_db")
}

pub fn expected() -> Value {
    let path = fixture_root().join("expected.json");
    let text = fs::read_to_string(&path).expect("read expected.json");
    serde_json::from_str(&text).expect("parse expected.json")
}

/// Per file under `dir` (recursive): size, mtime and md5 of the bytes; plus every dir.
#[derive(Debug, PartialEq, Eq)]
pub struct DirSnapshot(BTreeMap<PathBuf, (u64, Option<SystemTime>, String)>);

pub fn snapshot(dir: &Path) -> DirSnapshot {
    fn walk(
        root: &Path,
        dir: &Path,
        out: &mut BTreeMap<PathBuf, (u64, Option<SystemTime>, String)>,
    ) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let meta = fs::symlink_metadata(&path).expect("metadata");
            let rel = path.strip_prefix(root).expect("prefix").to_path_buf();
            if meta.is_dir() {
                out.insert(rel, (0, meta.modified().ok(), "<dir>".to_string()));
                walk(root, &path, out);
            } else {
                let bytes = fs::read(&path).expect("read file");
                let md5 = format!("{:x}", md5::compute(&bytes));
                out.insert(rel, (meta.len(), meta.modified().ok(), md5));
            }
        }
    }
    let mut out = BTreeMap::new();
    if dir.is_dir() {
        let meta = fs::metadata(dir).expect("metadata");
        out.insert(
            PathBuf::new(),
            (0, meta.modified().ok(), "<dir>".to_string()),
        );
        walk(dir, dir, &mut out);
    }
    DirSnapshot(out)
}

/// Reads `dir` and asserts nothing under it changed (files, sizes, mtimes, md5s).
pub fn read_unchanged(dir: &Path, options: &ReadOptions) -> Result<Source, ReadError> {
    let before = snapshot(dir);
    let result = rnacos::read(dir, options);
    let after = snapshot(dir);
    assert_eq!(before, after, "reading changed {}", dir.display());
    result
}

/// Copies the fixture into a new writable temp dir; returns (guard, path of the copy).
pub fn copy_fixture() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dst = tmp.path().join("nacos_db");
    copy_dir(&fixture_db(), &dst);
    (tmp, dst)
}

pub fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).expect("mkdir");
    for entry in fs::read_dir(src).expect("read_dir") {
        let entry = entry.expect("entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            fs::copy(entry.path(), &to).expect("copy");
            let mut perms = fs::metadata(&to).expect("metadata").permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            fs::set_permissions(&to, perms).expect("chmod");
        }
    }
}

pub fn md5_hex(s: &str) -> String {
    format!("{:x}", md5::compute(s.as_bytes()))
}

/// The protobuf encoding of an r-nacos config key (test-side, hand-written).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigKeyPb {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub group: String,
    #[prost(string, tag = "3")]
    pub data_id: String,
}

/// The protobuf encoding of an r-nacos config value / history row (test-side).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigPb {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub group: String,
    #[prost(string, tag = "3")]
    pub data_id: String,
    #[prost(string, tag = "4")]
    pub content: String,
    #[prost(int64, tag = "6")]
    pub last_time: i64,
    #[prost(int64, tag = "7")]
    pub id: i64,
}

pub fn config_key_bytes(tenant: &str, group: &str, data_id: &str) -> Vec<u8> {
    prost::Message::encode_to_vec(&ConfigKeyPb {
        tenant: tenant.to_string(),
        group: group.to_string(),
        data_id: data_id.to_string(),
    })
}

pub fn history_tree_name(tenant: &str, group: &str, data_id: &str) -> Vec<u8> {
    let mut name = b"config_history_".to_vec();
    name.extend(config_key_bytes(tenant, group, data_id));
    name
}

pub fn key(tenant: &str, group: &str, data_id: &str) -> ConfigKey {
    ConfigKey {
        tenant: tenant.to_string(),
        group: group.to_string(),
        data_id: data_id.to_string(),
    }
}

fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// Asserts that `source` holds everything expected.json lists. `extra_configs` are keys
/// a test added on purpose (they are allowed besides the expected ones).
pub fn assert_matches_expected(source: &Source, extra_configs: &[ConfigKey]) {
    let exp = expected();

    // Configs: every expected one, with the right content; nothing else.
    let configs = exp["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 30);
    assert_eq!(source.configs.len(), configs.len() + extra_configs.len());
    for c in configs {
        let k = key(s(c, "tenant"), s(c, "group"), s(c, "dataId"));
        let got = source
            .configs
            .iter()
            .find(|g| g.key() == k)
            .unwrap_or_else(|| panic!("config {k} not read"));
        assert_eq!(md5_hex(&got.content), s(c, "content_md5"), "md5 of {k}");
        assert_eq!(
            got.content.len() as u64,
            c["content_bytes"].as_u64().expect("content_bytes"),
            "size of {k}"
        );
        if let Some(content) = c["content"].as_str() {
            assert_eq!(got.content, content, "content of {k}");
        }
        // Plausible ms timestamps (the fixture was made in 2026).
        assert!(
            got.last_time_ms > 1_700_000_000_000,
            "{k}: {}",
            got.last_time_ms
        );

        // History: same count, same md5s (expected.json lists newest first).
        let rows = source
            .history
            .get(&k)
            .unwrap_or_else(|| panic!("no history entry for {k}"));
        let want: Vec<&str> = c["history_md5s"]
            .as_array()
            .expect("history_md5s")
            .iter()
            .map(|v| v.as_str().expect("md5"))
            .collect();
        assert_eq!(
            rows.len() as u64,
            c["history_min"].as_u64().expect("history_min"),
            "history rows of {k}"
        );
        let got_md5s: Vec<String> = rows.iter().rev().map(|r| md5_hex(&r.content)).collect();
        assert_eq!(got_md5s, want, "history md5s of {k}");
        // Ordered by id, timestamps kept (never going back), newest = current.
        assert!(rows.windows(2).all(|w| w[0].id < w[1].id), "{k}: {rows:?}");
        assert!(
            rows.windows(2)
                .all(|w| w[0].last_time_ms <= w[1].last_time_ms),
            "{k}: {rows:?}"
        );
        let newest = rows.last().expect("a row");
        assert_eq!(newest.content, got.content, "{k}");
        assert_eq!(newest.last_time_ms, got.last_time_ms, "{k}");
    }
    for extra in extra_configs {
        assert!(source.configs.iter().any(|c| &c.key() == extra), "{extra}");
    }
    assert_eq!(
        source.history.len(),
        source.configs.len(),
        "one history entry per config"
    );
    for c in &source.configs {
        assert!(source.history.contains_key(&c.key()), "{}", c.key());
    }
    let expected_rows = exp["counts"]["history_rows"]
        .as_u64()
        .expect("history_rows");
    let rows_of_expected: usize = configs
        .iter()
        .map(|c| source.history[&key(s(c, "tenant"), s(c, "group"), s(c, "dataId"))].len())
        .sum();
    assert_eq!(rows_of_expected as u64, expected_rows);

    // The deleted config stays deleted.
    for d in exp["deleted"].as_array().expect("deleted") {
        let k = key(s(d, "tenant"), s(d, "group"), s(d, "dataId"));
        assert!(
            !source.configs.iter().any(|c| c.key() == k),
            "{k} resurrected"
        );
        assert!(
            !source.history.contains_key(&k),
            "history of {k} resurrected"
        );
    }
    // The namespace config is not a config.
    assert!(!source
        .configs
        .iter()
        .any(|c| c.tenant == rnacos::INNER_TENANT || c.data_id == "namespaces"));

    // Namespaces.
    let want_ns: Vec<(String, String)> = exp["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .map(|n| (s(n, "id").to_string(), s(n, "name").to_string()))
        .collect();
    let got_ns: Vec<(String, String)> = source
        .namespaces
        .iter()
        .map(|n| (n.id.clone(), n.name.clone()))
        .collect();
    assert_eq!(got_ns, want_ns);
    assert!(source.unregistered_tenants().is_empty());

    // Users: alice, bob and the built-in admin.
    let mut want_users: Vec<&Value> = exp["users"].as_array().expect("users").iter().collect();
    want_users.extend(exp["builtin_users"].as_array().expect("builtin_users"));
    assert_eq!(source.users.len(), want_users.len());
    for u in want_users {
        let name = s(u, "username");
        let got = source
            .users
            .iter()
            .find(|g| g.username == name)
            .unwrap_or_else(|| panic!("user {name} not read"));
        assert_eq!(
            got.password,
            rnacos::Password::Plain(s(u, "password").to_string()),
            "password of {name}"
        );
        let roles: Vec<&str> = u["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .map(|r| r.as_str().expect("role"))
            .collect();
        assert_eq!(got.roles, roles, "roles of {name}");
        let role_names: Vec<&str> = u["role_names"]
            .as_array()
            .expect("role_names")
            .iter()
            .map(|r| r.as_str().expect("role name"))
            .collect();
        let got_names: Vec<&str> = got
            .roles
            .iter()
            .map(|r| rnacos::role_name(r).expect("known role"))
            .collect();
        assert_eq!(got_names, role_names, "role names of {name}");
        if let Some(nick) = u["nickname"].as_str() {
            assert_eq!(got.nickname, nick, "nickname of {name}");
        }
        assert!(got.enabled, "{name} enabled");
        assert!(got.gmt_create > 1_700_000_000, "{name}: seconds");
        assert!(got.gmt_create < 100_000_000_000, "{name}: seconds, not ms");
        assert!(got.gmt_modified >= got.gmt_create, "{name}");
    }
}
pub mod mariadb;

/// Flushes and closes a sled db a test opened, and waits until its lock on `dir/db` is
/// released. Dropping a `sled::Db` does not release the lock at once: sled's background
/// flusher holds its own handle and lets go of it a moment later, and a reader started
/// in between would see the dir as in use by a running r-nacos. Drop every `sled::Tree`
/// taken from `db` first: each keeps the db open.
pub fn close_sled(db: sled::Db, dir: &Path) {
    db.flush().expect("flush");
    drop(db);
    let file = fs::File::open(dir.join("db")).expect("open sled's db file");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match file.try_lock() {
            Ok(()) => return, // closing `file` releases it again
            Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            Err(e) => panic!("sled still holds {}: {e}", dir.display()),
        }
    }
}
