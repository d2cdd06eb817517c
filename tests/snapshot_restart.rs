//! Size-based snapshots on the real binary: with a tiny
//! `--snapshot-log-bytes`, publishing makes snapshot files and purges the
//! log; a restart rebuilds memory from the newest snapshot plus the log
//! after it, with every config, its history and the id counters intact.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::Server;

fn snapshot_files(data_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir.join("snapshots"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".snap"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn restart_rebuilds_memory_from_snapshot_and_log() {
    let tmp = tempfile::tempdir().unwrap();
    let args = ["--snapshot-log-bytes", "4096"];
    let mut server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();

    let mut expected = BTreeMap::new();
    for round in 0..3 {
        for i in 0..40 {
            let data_id = format!("snap-{i:02}.properties");
            let content = format!("round={round}\nkey={i}\npadding={}\n", "p".repeat(64));
            let reply = api.publish(&data_id, "DEFAULT_GROUP", "", &content).await;
            assert_eq!(reply.text().await.unwrap(), "true");
            expected.insert(data_id, content);
        }
        // Snapshots are checked for once a second.
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while snapshot_files(server.data_dir()).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let snapshots = snapshot_files(server.data_dir());
    assert!(!snapshots.is_empty(), "no snapshot was written");
    assert!(
        snapshots.len() <= 2,
        "only the newest two are kept: {snapshots:?}"
    );
    let history_before = api
        .history("snap-07.properties", "DEFAULT_GROUP", "", 1, 100)
        .await;

    // One more write after the last snapshot, so the restart needs the log too.
    let reply = api
        .publish("after-snapshot.yaml", "DEFAULT_GROUP", "", "tail: true")
        .await;
    assert_eq!(reply.text().await.unwrap(), "true");
    expected.insert("after-snapshot.yaml".into(), "tail: true".into());

    assert!(server.stop().await.success());
    let server = Server::start_with_args(&tmp, &args).await;
    let api = server.api();
    let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
    assert!(
        log.contains("loaded snapshot"),
        "memory was not rebuilt from a snapshot:\n{log}"
    );

    let found: BTreeMap<String, String> = api
        .search_all("", 500)
        .await
        .into_iter()
        .map(|c| (c.data_id, c.content))
        .collect();
    assert_eq!(found, expected);
    let history_after = api
        .history("snap-07.properties", "DEFAULT_GROUP", "", 1, 100)
        .await;
    let ids = |page: &common::Page<common::HistoryItem>| -> Vec<String> {
        page.page_items.iter().map(|h| h.id.clone()).collect()
    };
    assert_eq!(ids(&history_after), ids(&history_before));
    assert_eq!(
        history_after.page_items.len(),
        3,
        "one insert and two updates"
    );

    // The id counter came back from the snapshot: a new row gets an id above
    // all 121 rows written before the restart (ids start at 1).
    let written_before = 3 * 40 + 1;
    api.publish("snap-07.properties", "DEFAULT_GROUP", "", "round=3")
        .await;
    let newest = api
        .history("snap-07.properties", "DEFAULT_GROUP", "", 1, 1)
        .await;
    let newest_id: u64 = newest.page_items[0].id.parse().unwrap();
    assert!(
        newest_id > written_before,
        "id {newest_id} reuses an old id"
    );
}
