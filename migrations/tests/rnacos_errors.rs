//! Error paths of the r-nacos reader: not a sled dir, not r-nacos, in use, corrupt entries.

mod common;

use std::fs;
use std::path::Path;

use common::{
    assert_matches_expected, close_sled, config_key_bytes, copy_fixture, history_tree_name, key,
    read_unchanged, ConfigPb,
};
use tacos_migrate::rnacos::{self, ReadError, ReadOptions};

fn strict() -> ReadOptions {
    ReadOptions::default()
}

fn lenient() -> ReadOptions {
    ReadOptions {
        skip_bad: true,
        ..ReadOptions::default()
    }
}

/// Opens a (copy of a) data dir with sled, lets `f` change it, flushes and closes it.
fn edit_with_sled(dir: &Path, f: impl FnOnce(&sled::Db)) {
    let db = sled::open(dir).expect("open copy with sled");
    f(&db);
    close_sled(db, dir);
}

fn insert(db: &sled::Db, tree: &[u8], k: &[u8], v: &[u8]) {
    db.open_tree(tree)
        .expect("open tree")
        .insert(k, v)
        .expect("insert");
}

fn encode(c: &ConfigPb) -> Vec<u8> {
    prost::Message::encode_to_vec(c)
}

const GARBAGE: &[u8] = b"\xff\xff\xff\xff\x0f not protobuf";

#[test]
fn missing_dir() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nacos_db");
    let err = rnacos::read(&missing, &strict()).expect_err("must fail");
    assert!(
        matches!(err, ReadError::NotFound { ref path } if path == &missing),
        "{err:?}"
    );
    assert!(
        !missing.exists(),
        "the reader created {}",
        missing.display()
    );
}

#[test]
fn empty_dir_is_not_a_sled_db_and_stays_empty() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = read_unchanged(tmp.path(), &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");
    assert!(err.to_string().contains("no `conf`"), "{err}");
    assert_eq!(fs::read_dir(tmp.path()).expect("read_dir").count(), 0);
}

#[test]
fn a_file_is_not_a_sled_db() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("db");
    fs::write(&file, b"hello").expect("write");
    let err = rnacos::read(&file, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn dir_of_random_files_is_not_a_sled_db() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    };
    // Random names...
    let a = tmp.path().join("a");
    fs::create_dir(&a).expect("mkdir");
    for name in ["data.bin", "notes.txt", "x"] {
        fs::write(a.join(name), random(4096)).expect("write");
    }
    let err = read_unchanged(&a, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");

    // ...and random bytes under sled's file names.
    let b = tmp.path().join("b");
    fs::create_dir(&b).expect("mkdir");
    fs::write(b.join("conf"), random(64)).expect("write");
    fs::write(b.join("db"), random(100_000)).expect("write");
    let err = read_unchanged(&b, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");
    assert!(err.to_string().contains("conf"), "{err}");

    // A `conf` too short to count (sled would start a fresh db over it).
    let c = tmp.path().join("c");
    fs::create_dir(&c).expect("mkdir");
    fs::write(c.join("conf"), b"12345678").expect("write");
    fs::write(c.join("db"), random(1000)).expect("write");
    let err = read_unchanged(&c, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");

    // A real sled `conf` but no `db`: sled would start a fresh database.
    let d = tmp.path().join("d");
    fs::create_dir(&d).expect("mkdir");
    fs::copy(common::fixture_db().join("conf"), d.join("conf")).expect("copy conf");
    let err = read_unchanged(&d, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");
    assert!(err.to_string().contains("no `db`"), "{err}");

    // A real `conf` with a random `db`: sled 0.34 opens it as an empty database.
    let e = tmp.path().join("e");
    fs::create_dir(&e).expect("mkdir");
    fs::copy(common::fixture_db().join("conf"), e.join("conf")).expect("copy conf");
    fs::write(e.join("db"), random(100_000)).expect("write");
    let err = read_unchanged(&e, &strict()).expect_err("must fail");
    assert!(
        matches!(err, ReadError::NotRnacos { .. } | ReadError::Open { .. }),
        "{err:?}"
    );
}

#[test]
fn other_sled_version_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut conf = b"segment_size: 524288\nuse_compression: false\nversion: 0.31\n".to_vec();
    conf.extend([0, 0, 0, 0]);
    fs::write(tmp.path().join("conf"), conf).expect("write");
    fs::write(tmp.path().join("db"), b"").expect("write");
    let err = read_unchanged(tmp.path(), &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::NotSled { .. }), "{err:?}");
    assert!(err.to_string().contains("sled 0.31"), "{err}");
}

#[test]
fn sled_db_with_unrelated_trees_is_not_rnacos() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("other_db");
    edit_with_sled(&dir, |db| {
        insert(db, b"users", b"k", b"v");
        insert(db, b"orders", b"1", b"{}");
        db.insert(b"default-key", b"x".as_slice()).expect("insert");
    });
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    match &err {
        ReadError::NotRnacos { missing, found, .. } => {
            assert_eq!(missing, &["config", "t_user"]);
            assert!(found.contains(&"users".to_string()), "{found:?}");
            assert!(found.contains(&"orders".to_string()), "{found:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("not an r-nacos 0.4 data dir"),
        "{err}"
    );
}

#[test]
fn dir_held_by_a_running_server_is_in_use() {
    let (_tmp, dir) = copy_fixture();
    // sled takes an exclusive lock on `db`, as a running r-nacos does.
    let db = sled::open(&dir).expect("open copy");
    let err = rnacos::read(&dir, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::InUse { .. }), "{err:?}");
    assert!(err.to_string().contains("in use"), "{err}");
    close_sled(db, &dir);
    // Once it is closed the dir reads fine.
    let source = read_unchanged(&dir, &strict()).expect("read after close");
    assert_matches_expected(&source, &[]);
}

#[test]
fn corrupt_config_value_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    let bad_key = config_key_bytes("dev", "APP_GROUP", "broken.txt");
    edit_with_sled(&dir, |db| insert(db, b"config", &bad_key, GARBAGE));

    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    match &err {
        ReadError::Corrupt { tree, key, reason } => {
            assert_eq!(tree, "config");
            assert!(key.contains("dev/APP_GROUP/broken.txt"), "{key}");
            assert!(reason.contains("not a config"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("`config`") && msg.contains("broken.txt"),
        "{msg}"
    );

    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert!(
        source.skipped[0].what.contains("broken.txt"),
        "{:?}",
        source.skipped
    );
    assert!(
        source.skipped[0].what.contains("`config`"),
        "{:?}",
        source.skipped
    );
    assert_matches_expected(&source, &[]);
}

#[test]
fn corrupt_config_key_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    // A valid value under a key that is not a ConfigSerdeKey.
    let value = encode(&ConfigPb {
        tenant: "dev".into(),
        group: "G".into(),
        data_id: "d".into(),
        content: "x".into(),
        last_time: 1,
        id: 0,
    });
    edit_with_sled(&dir, |db| {
        insert(db, b"config", b"\xff\xfegarbage-key", &value)
    });
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    assert!(
        matches!(&err, ReadError::Corrupt { tree, key, .. } if tree == "config" && key.contains("garbage-key")),
        "{err:?}"
    );
    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert_matches_expected(&source, &[]);
}

#[test]
fn corrupt_history_row_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    let tree = history_tree_name("", "DEFAULT_GROUP", "app-1.properties");
    edit_with_sled(&dir, |db| insert(db, &tree, &99u64.to_be_bytes(), GARBAGE));

    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    match &err {
        ReadError::Corrupt { tree, key, reason } => {
            assert!(tree.starts_with("config_history_"), "{tree}");
            assert!(
                tree.contains("(public)/DEFAULT_GROUP/app-1.properties"),
                "{tree}"
            );
            assert_eq!(key, "id 99");
            assert!(reason.contains("not a history row"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert!(source.skipped[0].what.contains("app-1.properties"));
    assert!(source.skipped[0].what.contains("id 99"));
    // The good rows of that config are all there.
    assert_matches_expected(&source, &[]);
}

#[test]
fn bad_history_key_length_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    let tree = history_tree_name("dev", "APP_GROUP", "app-16.properties");
    let row = encode(&ConfigPb {
        tenant: "dev".into(),
        group: "APP_GROUP".into(),
        data_id: "app-16.properties".into(),
        content: "x".into(),
        last_time: 1,
        id: 7,
    });
    edit_with_sled(&dir, |db| insert(db, &tree, b"abc", &row));
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    match &err {
        ReadError::Corrupt { tree, reason, .. } => {
            assert!(tree.contains("dev/APP_GROUP/app-16.properties"), "{tree}");
            assert!(reason.contains("3 bytes"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert_matches_expected(&source, &[]);
}

#[test]
fn non_utf8_user_field_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    // UserDo{1: "carol", 2: bytes ff fe} — the password is not UTF-8.
    let value = b"\x0a\x05carol\x12\x02\xff\xfe";
    edit_with_sled(&dir, |db| insert(db, b"t_user", b"carol", value));
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    match &err {
        ReadError::Corrupt { tree, key, reason } => {
            assert_eq!(tree, "t_user");
            assert!(key.contains("carol"), "{key}");
            assert!(reason.contains("UTF-8"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert_matches_expected(&source, &[]);
}

#[test]
fn corrupt_namespace_list_fails_or_is_skipped() {
    let (_tmp, dir) = copy_fixture();
    let ns = |content: &str| {
        encode(&ConfigPb {
            tenant: rnacos::INNER_TENANT.into(),
            group: "sys".into(),
            data_id: "namespaces".into(),
            content: content.into(),
            last_time: 1,
            id: 0,
        })
    };
    let k = config_key_bytes(rnacos::INNER_TENANT, "sys", "namespaces");
    edit_with_sled(&dir, |db| insert(db, b"config", &k, &ns("not json")));
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    assert!(
        matches!(&err, ReadError::Corrupt { tree, key, reason }
            if tree == "config" && key.contains("namespaces") && reason.contains("JSON")),
        "{err:?}"
    );
    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert!(source.namespaces.is_empty());
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    // Configs of dev and prod still come through; their tenants are now unregistered.
    assert_eq!(source.configs.len(), 30);
    assert_eq!(source.unregistered_tenants(), ["dev", "prod"]);
}

#[test]
fn orphan_and_empty_history_trees() {
    let (_tmp, dir) = copy_fixture();
    // A history tree left behind for the deleted config must not bring it back, and a
    // new config with an empty history tree reads with no rows.
    let deleted = history_tree_name("", "APP_GROUP", "notes-8.txt");
    let row = encode(&ConfigPb {
        tenant: String::new(),
        group: "APP_GROUP".into(),
        data_id: "notes-8.txt".into(),
        content: "deleted".into(),
        last_time: 1_700_000_000_000,
        id: 90,
    });
    let fresh = encode(&ConfigPb {
        tenant: "prod".into(),
        group: "DEFAULT_GROUP".into(),
        data_id: "fresh.txt".into(),
        content: "fresh".into(),
        last_time: 1_700_000_000_000,
        id: 0,
    });
    edit_with_sled(&dir, |db| {
        insert(db, &deleted, &90u64.to_be_bytes(), &row);
        insert(
            db,
            b"config",
            &config_key_bytes("prod", "DEFAULT_GROUP", "fresh.txt"),
            &fresh,
        );
        db.open_tree(history_tree_name("prod", "DEFAULT_GROUP", "fresh.txt"))
            .expect("open empty tree");
    });
    // Not corrupt: reads without skip_bad; the orphan is listed as skipped.
    let source = read_unchanged(&dir, &strict()).expect("read");
    let fresh_key = key("prod", "DEFAULT_GROUP", "fresh.txt");
    assert_matches_expected(&source, std::slice::from_ref(&fresh_key));
    assert_eq!(source.history[&fresh_key], []);
    assert_eq!(source.skipped.len(), 1, "{:?}", source.skipped);
    assert!(source.skipped[0].what.contains("notes-8.txt"));
    assert!(source.skipped[0].reason.contains("no longer exists"));
}

#[test]
fn skip_bad_lists_every_bad_entry_and_keeps_the_rest() {
    let (_tmp, dir) = copy_fixture();
    let bad_key = config_key_bytes("dev", "APP_GROUP", "broken.txt");
    let broken_history = history_tree_name("dev", "APP_GROUP", "broken.txt");
    let good_history = history_tree_name("prod", "APP_GROUP", "app-26.properties");
    edit_with_sled(&dir, |db| {
        insert(db, b"config", &bad_key, GARBAGE);
        // The history of the undecodable config goes with it.
        insert(db, &broken_history, &5u64.to_be_bytes(), GARBAGE);
        insert(db, &good_history, &98u64.to_be_bytes(), GARBAGE);
        insert(db, &good_history, b"short", GARBAGE);
        insert(db, b"t_user", b"mallory", GARBAGE);
    });
    let err = read_unchanged(&dir, &strict()).expect_err("must fail");
    assert!(matches!(err, ReadError::Corrupt { .. }), "{err:?}");
    let source = read_unchanged(&dir, &lenient()).expect("skip_bad reads");
    assert_eq!(source.skipped.len(), 5, "{:#?}", source.skipped);
    let all = format!("{:?}", source.skipped);
    for want in ["broken.txt", "id 98", "short", "mallory", "was skipped"] {
        assert!(all.contains(want), "{want} not in {all}");
    }
    assert_matches_expected(&source, &[]);
}
