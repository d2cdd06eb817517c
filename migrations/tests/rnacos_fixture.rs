//! Reads the real r-nacos 0.4.3 sample dir and checks it against expected.json.

mod common;

use common::{assert_matches_expected, fixture_db, key, read_unchanged, snapshot};
use tacos_migrate::rnacos::ReadOptions;

#[test]
fn reads_everything_in_the_fixture_and_leaves_it_unchanged() {
    let before = snapshot(&fixture_db());
    let source = read_unchanged(&fixture_db(), &ReadOptions::default()).expect("read fixture");
    assert_matches_expected(&source, &[]);
    assert!(source.skipped.is_empty(), "{:?}", source.skipped);
    assert_eq!(source.history_rows(), 42);
    // Also with skip_bad: nothing to skip, same result.
    let again = read_unchanged(
        &fixture_db(),
        &ReadOptions {
            skip_bad: true,
            ..ReadOptions::default()
        },
    )
    .expect("read fixture");
    assert_eq!(source, again);
    // No file was written, not even sled's `blobs/` or a new snapshot.
    assert_eq!(before, snapshot(&fixture_db()));
}

#[test]
fn configs_and_users_are_sorted_and_namespaces_keep_their_order() {
    let source = read_unchanged(&fixture_db(), &ReadOptions::default()).expect("read fixture");
    let keys: Vec<_> = source.configs.iter().map(|c| c.key()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    let names: Vec<&str> = source.users.iter().map(|u| u.username.as_str()).collect();
    assert_eq!(names, ["admin", "alice", "bob"]);
    let ns: Vec<&str> = source.namespaces.iter().map(|n| n.id.as_str()).collect();
    assert_eq!(ns, ["dev", "prod"]);
    // A config updated twice: 3 rows, oldest first, with their own timestamps.
    let rows = &source.history[&key("", "DEFAULT_GROUP", "app-1.properties")];
    assert_eq!(rows.len(), 3);
    assert!(rows[0].content.ends_with("app.env=public\n"));
    assert!(rows[1].content.ends_with("# revision 2\n"));
    assert!(rows[2].content.ends_with("# revision 3\n"));
    assert!(rows[0].last_time_ms < rows[2].last_time_ms);
}

#[test]
fn user_debug_output_hides_the_password() {
    let source = read_unchanged(&fixture_db(), &ReadOptions::default()).expect("read fixture");
    let shown = format!("{:?}", source.users);
    assert!(shown.contains("alice"));
    assert!(!shown.contains("alice-pass-1"), "{shown}");
}

#[test]
fn work_dir_option_puts_the_copy_there_and_cleans_it_up() {
    let work = tempfile::tempdir().expect("tempdir");
    let source = read_unchanged(
        &fixture_db(),
        &ReadOptions {
            skip_bad: false,
            work_dir: Some(work.path().to_path_buf()),
        },
    )
    .expect("read fixture");
    assert_eq!(source.configs.len(), 30);
    let left: Vec<_> = std::fs::read_dir(work.path()).expect("read_dir").collect();
    assert!(left.is_empty(), "temporary copy left behind: {left:?}");
}

#[test]
fn dry_run_binary_prints_counts_and_no_passwords() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tacos-migrate"))
        .arg("--from")
        .arg(fixture_db())
        .arg("--dry-run")
        .output()
        .expect("run tacos-migrate");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "configs:      30",
        "history rows: 42",
        "users:        3",
        "namespaces:   2",
        "\"dev\"  name \"Development\"",
        "public (\"\"): 10 configs",
        "\"alice\"",
        "1 (developer)",
        "2 (visitor)",
        "0 (manager)",
        "Skipped: nothing",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
    for secret in ["alice-pass-1", "bob-pass-2"] {
        assert!(!stdout.contains(secret), "password shown:\n{stdout}");
    }
}
