//! Durability across restarts of the real `tacos` binary, through the Nacos
//! HTTP config API: every publish or delete that was answered `true` must be
//! there after a restart, whether the process was stopped with SIGTERM or
//! killed with SIGKILL mid-load; the very first HTTP answer after a restart
//! must already show all of it; and config history survives with its ids.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{
    assert_same_items, assert_true, data_dir, free_port, header_str, md5_hex, run_to_exit,
    search_accurate_path, ConfigItem, HistoryItem, NacosApi, Reply, Server,
};

/// Configs published before the restart in the SIGTERM test.
const N: usize = 300;
/// Concurrent writers.
const CONCURRENCY: usize = 16;
/// The group of every config here.
const GROUP: &str = "DEFAULT_GROUP";
/// The namespace of every config here (public).
const TENANT: &str = "";
/// The largest page Nacos serves.
const PAGE: u64 = 500;

/// Makes contents unique to this run, so nothing can pass by accident.
fn nonce() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// A content unique to (`data_id`, `round`, run), with some variety: most
/// are short, some are multi-line non-ASCII text, some are several KiB.
fn value_for(i: usize, data_id: &str, round: u32, nonce: &str) -> String {
    let base = format!("{data_id}@{round}/{nonce}");
    match i % 50 {
        0 => format!("{base}\n{}\n{base}", "x".repeat(8 * 1024)),
        3 | 13 | 23 | 33 | 43 => {
            format!("line one {base}\nline two ✓ ünïcödé 配置\n\ttabbed {base}")
        }
        _ => base,
    }
}

fn cfg_id(i: usize) -> String {
    format!("cfg-{i:04}.yaml")
}

/// Publishes every (dataId, content) with `CONCURRENCY` tasks; each must
/// answer 200 `true`.
async fn publish_all_concurrently(api: &NacosApi, pairs: Vec<(String, String)>) {
    let mut chunks: Vec<Vec<(String, String)>> = vec![Vec::new(); CONCURRENCY];
    for (i, pair) in pairs.into_iter().enumerate() {
        chunks[i % CONCURRENCY].push(pair);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in chunks {
        let api = api.clone();
        tasks.spawn(async move {
            for (data_id, content) in chunk {
                let response = api.publish(&data_id, GROUP, TENANT, &content).await;
                assert_true(response, &format!("publish {data_id}")).await;
            }
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("writer task");
    }
}

/// Checks a full listing of the public namespace against `expected`
/// (dataId → content): same dataIds, exact contents, every md5 the md5 of
/// its content, all in `DEFAULT_GROUP`. Returns the listing as a map.
fn check_listing(
    items: &[ConfigItem],
    expected: &BTreeMap<String, String>,
    what: &str,
) -> BTreeMap<String, ConfigItem> {
    let mut by_id = BTreeMap::new();
    for item in items {
        assert_eq!(item.group, GROUP, "{what}: unexpected group in {item:?}");
        assert_eq!(item.tenant, TENANT, "{what}: unexpected tenant in {item:?}");
        assert_eq!(
            item.md5,
            md5_hex(&item.content),
            "{what}: md5 of {} does not match its content",
            item.data_id
        );
        let previous = by_id.insert(item.data_id.clone(), item.clone());
        assert!(previous.is_none(), "{what}: {} listed twice", item.data_id);
    }
    let contents: BTreeMap<String, String> = by_id
        .iter()
        .map(|(k, v)| (k.clone(), v.content.clone()))
        .collect();
    assert_same_items(&contents, expected, what);
    by_id
}

/// Restarts on the same data dir and checks that the FIRST answer to a
/// `search=accurate` listing is 200 and, with the pages after it, holds
/// exactly `expected`. Returns the server and the listing.
async fn restart_and_expect(
    tmp: &tempfile::TempDir,
    expected: &BTreeMap<String, String>,
    what: &str,
) -> (Server, BTreeMap<String, ConfigItem>) {
    let probe = search_accurate_path(TENANT, 1, PAGE);
    let (server, first) = Server::start_probing(tmp, &probe).await;
    assert_eq!(
        first.status, 200,
        "{what}: the first answer after restart was not 200: {first:?}"
    );
    let first = first.page::<ConfigItem>();
    let items = server.api().rest_of_search(TENANT, first, PAGE).await;
    let listing = check_listing(&items, expected, what);
    (server, listing)
}

/// GETs `data_id` and checks the body, `Content-MD5` and `Config-Type`.
async fn expect_config(
    api: &NacosApi,
    data_id: &str,
    content: &str,
    config_type: &str,
    what: &str,
) {
    let (status, body, headers) = api.get(data_id, GROUP, TENANT).await;
    assert_eq!(
        status, 200,
        "{what}: GET {data_id} answered {status}: {body}"
    );
    assert_eq!(body, content, "{what}: GET {data_id} body");
    assert_eq!(
        header_str(&headers, "Content-MD5"),
        md5_hex(content),
        "{what}: GET {data_id} Content-MD5 (headers {headers:?})"
    );
    assert_eq!(
        header_str(&headers, "Config-Type"),
        config_type,
        "{what}: GET {data_id} Config-Type (headers {headers:?})"
    );
}

/// GETs `data_id` and checks it is not there (404 `config data not exist`).
async fn expect_missing(api: &NacosApi, data_id: &str, what: &str) {
    let (status, body, _) = api.get(data_id, GROUP, TENANT).await;
    assert_eq!(
        (status.as_u16(), body.as_str()),
        (404, "config data not exist\n"),
        "{what}: deleted {data_id} came back"
    );
}

/// Every history row of `data_id`, newest first (one page of 100).
async fn history_of(api: &NacosApi, data_id: &str) -> Vec<HistoryItem> {
    let page = api.history(data_id, GROUP, TENANT, 1, 100).await;
    assert_eq!(
        page.total_count,
        page.page_items.len(),
        "history of {data_id} has more than one page: {page:?}"
    );
    page.page_items
}

/// The history of every dataId in `data_ids`.
async fn all_history(
    api: &NacosApi,
    data_ids: &BTreeSet<String>,
) -> BTreeMap<String, Vec<HistoryItem>> {
    let mut all = BTreeMap::new();
    for data_id in data_ids {
        all.insert(data_id.clone(), history_of(api, data_id).await);
    }
    all
}

/// History rows in short, for messages: (id, lastId, opType, md5, time).
fn brief(rows: &[HistoryItem]) -> Vec<(&str, i64, &str, &str, &str)> {
    rows.iter()
        .map(|r| {
            (
                r.id.as_str(),
                r.last_id,
                r.op_type.as_str(),
                r.md5.as_str(),
                r.last_modified_time.as_str(),
            )
        })
        .collect()
}

/// The op types of history rows, newest first, e.g. `"DUI"`.
fn op_types(rows: &[HistoryItem]) -> String {
    rows.iter().map(|r| r.op_type.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_after_sigterm_keeps_every_acknowledged_write() {
    let tmp = common::temp_dir();
    let nonce = nonce();
    let mut server = Server::start(&tmp).await;
    let api = server.api();

    // N fresh configs, concurrently.
    let mut expected = BTreeMap::new();
    let pairs: Vec<(String, String)> = (0..N)
        .map(|i| {
            let data_id = cfg_id(i);
            let content = value_for(i, &data_id, 0, &nonce);
            (data_id, content)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    publish_all_concurrently(&api, pairs).await;

    // Overwrite every 7th config (concurrently, as type yaml with an app
    // name), then delete every 11th (some of them overwritten just before),
    // delete a config that never existed, and delete-then-recreate one.
    let mut tasks = tokio::task::JoinSet::new();
    for i in (0..N).step_by(7) {
        let data_id = cfg_id(i);
        let content = value_for(i + 1, &data_id, 1, &nonce);
        expected.insert(data_id.clone(), content.clone());
        let api = api.clone();
        tasks.spawn(async move {
            let form = [
                ("dataId", data_id.as_str()),
                ("group", GROUP),
                ("content", content.as_str()),
                ("tenant", TENANT),
                ("type", "yaml"),
                ("appName", "restart-test"),
            ];
            let response = api.publish_with(&form, &[]).await;
            assert_true(response, &format!("overwrite {data_id}")).await;
        });
    }
    while let Some(result) = tasks.join_next().await {
        result.expect("overwrite task");
    }
    let deleted: Vec<usize> = (0..N).step_by(11).collect();
    for &i in &deleted {
        let data_id = cfg_id(i);
        let response = api.delete(&data_id, GROUP, TENANT).await;
        assert_true(response, &format!("delete {data_id}")).await;
        expected.remove(&data_id);
    }
    let never = "never-existed.yaml";
    assert_true(
        api.delete(never, GROUP, TENANT).await,
        "delete never-existed",
    )
    .await;
    let reborn = 22; // deleted above (22 = 2 * 11)
    assert!(!expected.contains_key(&cfg_id(reborn)));
    assert_true(
        api.publish(&cfg_id(reborn), GROUP, TENANT, "born again")
            .await,
        "publish reborn",
    )
    .await;
    expected.insert(cfg_id(reborn), "born again".to_owned());
    let config_type = |data_id: &str| {
        let i: usize = data_id[4..8].parse().unwrap();
        if i.is_multiple_of(7) && i != reborn {
            "yaml"
        } else {
            "text"
        }
    };

    // Sanity: the live server agrees before the restart.
    let before = api.search_accurate(TENANT, 1, PAGE).await;
    assert_eq!(before.pages_available, 1, "{before:?}");
    let listing_before = check_listing(&before.page_items, &expected, "before restart");

    // History of everything touched, as Nacos records it (newest first):
    // an insert, an update for an overwrite, a delete, and another insert
    // for the reborn config.
    let mut touched: BTreeSet<String> = (0..N).map(cfg_id).collect();
    touched.insert(never.to_owned());
    let history_before = all_history(&api, &touched).await;
    for (data_id, rows) in &history_before {
        let ops = if data_id == never {
            String::new()
        } else {
            let i: usize = data_id[4..8].parse().unwrap();
            let mut ops = String::from("I");
            if i.is_multiple_of(7) {
                ops.push('U');
            }
            if i.is_multiple_of(11) {
                ops.push('D');
            }
            if i == reborn {
                ops.push('I');
            }
            ops.chars().rev().collect()
        };
        assert_eq!(
            op_types(rows),
            ops,
            "history of {data_id}: {:?}",
            brief(rows)
        );
    }
    let ids_before: Vec<u64> = history_before
        .values()
        .flatten()
        .map(HistoryItem::id_number)
        .collect();
    let distinct: BTreeSet<u64> = ids_before.iter().copied().collect();
    assert_eq!(distinct.len(), ids_before.len(), "history ids repeat");
    let max_id_before = *distinct.last().expect("some history");

    let status = server.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        server.log()
    );

    let (mut server, listing) = restart_and_expect(&tmp, &expected, "after SIGTERM restart").await;
    let changed: Vec<(&ConfigItem, &ConfigItem)> = listing_before
        .iter()
        .filter_map(|(data_id, before)| match listing.get(data_id) {
            Some(after) if after != before => Some((before, after)),
            _ => None,
        })
        .take(5)
        .collect();
    assert!(
        changed.is_empty(),
        "configs (ids, md5s, types, app names) changed across the restart, \
         (before, after) (first 5): {:?}",
        changed
            .iter()
            .map(|(b, a)| {
                let short = |c: &ConfigItem| {
                    (
                        c.id.clone(),
                        c.md5.clone(),
                        c.config_type.clone(),
                        c.app_name.clone(),
                    )
                };
                (b.data_id.as_str(), short(b), short(a))
            })
            .collect::<Vec<_>>()
    );
    for item in listing.values() {
        assert_eq!(
            item.config_type,
            config_type(&item.data_id),
            "type of {}",
            item.data_id
        );
    }
    let api = server.api();
    for &i in deleted.iter().filter(|i| **i != reborn) {
        expect_missing(&api, &cfg_id(i), "after restart").await;
    }
    expect_missing(&api, never, "after restart").await;
    // Headers on a sample: plain, overwritten, large, non-ASCII, reborn.
    let sample = [1, 3, 7, 13, 14, 22, 50, 77 + 1, 100, 149, 203, 299];
    for i in sample {
        let data_id = cfg_id(i);
        let content = &expected[&data_id];
        expect_config(
            &api,
            &data_id,
            content,
            config_type(&data_id),
            "after restart",
        )
        .await;
    }

    // History survives as it was.
    let history_after = all_history(&api, &touched).await;
    assert_eq!(history_after.len(), history_before.len());
    for (data_id, rows) in &history_before {
        let after = &history_after[data_id];
        assert!(
            after == rows,
            "history of {data_id} changed across the restart:\nbefore {:?}\nafter  {:?}",
            brief(rows),
            brief(after)
        );
    }

    // New history ids continue above the old ones rather than being reused.
    let fresh = "after-restart.yaml";
    assert_true(
        api.publish(fresh, GROUP, TENANT, "after restart").await,
        "publish after restart",
    )
    .await;
    let rows = history_of(&api, fresh).await;
    assert_eq!(op_types(&rows), "I", "{:?}", brief(&rows));
    let fresh_id = rows[0].id_number();
    assert!(
        fresh_id > max_id_before,
        "a publish after restart got history id {fresh_id}, not above {max_id_before} from before"
    );
    let overwritten = cfg_id(1);
    assert_true(
        api.publish(&overwritten, GROUP, TENANT, "overwritten after restart")
            .await,
        "overwrite after restart",
    )
    .await;
    let rows = history_of(&api, &overwritten).await;
    assert_eq!(op_types(&rows), "UI", "{:?}", brief(&rows));
    assert!(
        rows[0].id_number() > fresh_id,
        "history ids went backwards: {:?}",
        brief(&rows)
    );
    assert!(
        rows[1..] == history_before[&overwritten][..],
        "older history of {overwritten} changed: {:?}",
        brief(&rows)
    );
    assert_eq!(
        rows[0].md5,
        md5_hex(&expected[&overwritten]),
        "an update row records the replaced content"
    );
    expect_config(
        &api,
        &overwritten,
        "overwritten after restart",
        "text",
        "after restart",
    )
    .await;

    let status = server.stop().await;
    assert!(
        status.success(),
        "second SIGTERM exit was {status}; log:\n{}",
        server.log()
    );
}

/// One operation of a background writer.
#[derive(Debug, Clone)]
enum Op {
    Publish(String, String),
    Delete(String),
}

/// What one background writer sent, in order. Writes are sequential per
/// writer, so the first `acked` ops were answered 200 `true` and at most one
/// more (the last in `ops`) was in flight when the server died.
#[derive(Debug, Default)]
struct WriterLog {
    ops: Vec<Op>,
    acked: usize,
    failures: Vec<String>,
}

/// Background writer `writer`'s `seq`-th operation: new configs,
/// overwrites, deletes and a hot config overwritten again and again, all
/// under the writer's own dataId prefix.
fn background_op(writer: usize, seq: usize, nonce: &str) -> Op {
    let data_id = |n: usize| format!("w{writer}-{n:05}.yaml");
    let content = |data_id: &str| value_for(seq, data_id, seq as u32, nonce);
    match seq % 8 {
        3 => {
            let data_id = data_id(seq - 2);
            let content = content(&data_id);
            Op::Publish(data_id, content)
        }
        5 => Op::Delete(data_id(seq - 4)),
        6 | 7 => {
            let data_id = format!("w{writer}-hot.yaml");
            let content = content(&data_id);
            Op::Publish(data_id, content)
        }
        _ => {
            let data_id = data_id(seq);
            let content = content(&data_id);
            Op::Publish(data_id, content)
        }
    }
}

fn apply(ops: &[Op]) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for op in ops {
        match op {
            Op::Publish(data_id, content) => {
                state.insert(data_id.clone(), content.clone());
            }
            Op::Delete(data_id) => {
                state.remove(data_id);
            }
        }
    }
    state
}

async fn background_writer(
    api: NacosApi,
    writer: usize,
    nonce: String,
    log: Arc<Mutex<WriterLog>>,
) {
    for seq in 0.. {
        let op = background_op(writer, seq, &nonce);
        log.lock().unwrap().ops.push(op.clone());
        let result = match &op {
            Op::Publish(data_id, content) => api.try_publish(data_id, GROUP, TENANT, content).await,
            Op::Delete(data_id) => api.try_delete(data_id, GROUP, TENANT).await,
        };
        // The server is gone (killed) when either step fails: stop.
        let Ok(response) = result else { return };
        let Ok(reply) = Reply::read(response).await else {
            return;
        };
        if reply.status == 200 && reply.body == "true" {
            log.lock().unwrap().acked += 1;
        } else {
            log.lock()
                .unwrap()
                .failures
                .push(format!("{op:?} answered {reply:?}"));
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_after_kill9_keeps_every_acknowledged_write() {
    const WRITERS: usize = 8;
    const ACKED_BEFORE_KILL: usize = 400;
    let tmp = common::temp_dir();
    let nonce = nonce();
    let mut server = Server::start(&tmp).await;
    let api = server.api();

    // Acknowledged base data: publishes, overwrites and deletes.
    let mut expected = BTreeMap::new();
    let base_id = |i: usize| format!("base-{i:03}.yaml");
    let pairs: Vec<(String, String)> = (0..100)
        .map(|i| {
            let data_id = base_id(i);
            let content = value_for(i, &data_id, 0, &nonce);
            (data_id, content)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    publish_all_concurrently(&api, pairs).await;
    for i in (0..100).step_by(3) {
        let data_id = base_id(i);
        let content = value_for(i + 1, &data_id, 1, &nonce);
        assert_true(
            api.publish(&data_id, GROUP, TENANT, &content).await,
            "overwrite",
        )
        .await;
        expected.insert(data_id, content);
    }
    for i in (0..100).step_by(5) {
        let data_id = base_id(i);
        assert_true(api.delete(&data_id, GROUP, TENANT).await, "delete").await;
        expected.remove(&data_id);
    }

    // Background writers, killed mid-flight.
    let logs: Vec<Arc<Mutex<WriterLog>>> = (0..WRITERS).map(|_| Arc::default()).collect();
    let mut writers = tokio::task::JoinSet::new();
    for (writer, log) in logs.iter().enumerate() {
        writers.spawn(background_writer(
            api.clone(),
            writer,
            nonce.clone(),
            log.clone(),
        ));
    }
    let acked = || logs.iter().map(|l| l.lock().unwrap().acked).sum::<usize>();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked() < ACKED_BEFORE_KILL {
        assert!(
            Instant::now() < deadline,
            "only {} background writes acknowledged in 60 s",
            acked()
        );
        assert!(
            server.is_running(),
            "tacos died under load; log:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let status = server.kill9();
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "tacos had already exited ({status}) before the kill; log:\n{}",
        server.log()
    );
    let joined = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(result) = writers.join_next().await {
            result.expect("background writer");
        }
    })
    .await;
    assert!(
        joined.is_ok(),
        "background writers did not stop after the kill"
    );

    // Restart: the first answer must hold the base data exactly, and for
    // each writer its acknowledged ops, plus or minus its one op in flight.
    let probe = search_accurate_path(TENANT, 1, PAGE);
    let (mut server, first) = Server::start_probing(&tmp, &probe).await;
    assert_eq!(
        first.status, 200,
        "the first answer after kill -9 was not 200: {first:?}"
    );
    let api = server.api();
    let items = api.rest_of_search(TENANT, first.page(), PAGE).await;
    let mut recovered = BTreeMap::new();
    for item in &items {
        assert_eq!((item.group.as_str(), item.tenant.as_str()), (GROUP, TENANT));
        assert_eq!(
            item.md5,
            md5_hex(&item.content),
            "md5 of {} after kill -9",
            item.data_id
        );
        recovered.insert(item.data_id.clone(), item.content.clone());
    }
    assert_eq!(recovered.len(), items.len(), "a dataId is listed twice");
    let base: BTreeMap<String, String> = recovered
        .iter()
        .filter(|(k, _)| !k.starts_with('w'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_same_items(&base, &expected, "base data after kill -9");
    let mut total_acked = 0;
    let mut in_flight_kept = 0;
    let mut hot = BTreeMap::new();
    for (writer, log) in logs.iter().enumerate() {
        let log = log.lock().unwrap();
        assert!(
            log.failures.is_empty(),
            "writer {writer}: {:?}",
            log.failures
        );
        assert!(log.ops.len() <= log.acked + 1);
        total_acked += log.acked;
        let prefix = format!("w{writer}-");
        let actual: BTreeMap<String, String> = recovered
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        hot.extend(
            actual
                .iter()
                .filter(|(k, _)| k.ends_with("-hot.yaml"))
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        let acked_state = apply(&log.ops[..log.acked]);
        if actual == acked_state {
            continue;
        }
        let with_in_flight = apply(&log.ops);
        if log.ops.len() > log.acked && actual == with_in_flight {
            in_flight_kept += 1;
            continue;
        }
        // Neither: show the diff against the acknowledged state.
        assert_same_items(
            &actual,
            &acked_state,
            &format!(
                "writer {writer} after kill -9 ({} acked, in flight: {:?})",
                log.acked,
                log.ops.get(log.acked)
            ),
        );
    }
    eprintln!(
        "kill -9: {total_acked} background writes acknowledged before the kill; \
         {in_flight_kept} of {WRITERS} in-flight writes were kept; {} configs recovered",
        recovered.len()
    );
    let unexpected: Vec<&String> = recovered
        .keys()
        .filter(|k| !k.starts_with("base-") && !k.starts_with('w'))
        .collect();
    assert!(unexpected.is_empty(), "unexpected dataIds: {unexpected:?}");
    // Small pages add up to the same listing.
    let paged = api.search_all(TENANT, 37).await;
    assert_eq!(
        paged, items,
        "37-config pages differ from one 500-config page"
    );
    // Single reads agree with the listing, headers included.
    for (data_id, content) in hot.iter().chain(base.iter().take(10)) {
        expect_config(&api, data_id, content, "text", "after kill -9").await;
    }

    // The recovered node keeps working: more publishes, a clean stop, and
    // everything is still there after another restart.
    let mut expected = recovered;
    let pairs: Vec<(String, String)> = (0..50)
        .map(|i| {
            let data_id = format!("after-{i:02}.yaml");
            let content = value_for(i, &data_id, 2, &nonce);
            (data_id, content)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    publish_all_concurrently(&api, pairs).await;
    let status = server.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        server.log()
    );
    let (mut server, _) = restart_and_expect(&tmp, &expected, "after the second restart").await;
    let status = server.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        server.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_process_on_same_data_dir_is_refused() {
    let tmp = common::temp_dir();
    let mut first = Server::start(&tmp).await;
    let api = first.api();
    assert_true(
        api.publish("before.yaml", GROUP, TENANT, "1").await,
        "publish before",
    )
    .await;

    let port = free_port().to_string();
    let args: Vec<OsString> = vec![
        "--data-dir".into(),
        data_dir(&tmp).into(),
        "--http-port".into(),
        port.clone().into(),
    ];
    let log_dir = tmp.path().to_owned();
    let second = tokio::task::spawn_blocking(move || run_to_exit(&log_dir, &args, &[]))
        .await
        .unwrap();
    assert!(
        !second.status.success(),
        "a second process on the same data dir was not refused: {second:?}"
    );
    for needle in ["is in use", "locked by another process"] {
        assert!(
            second.stderr.contains(needle),
            "stderr of the refused process lacks {needle:?}: {second:?}"
        );
    }
    assert!(
        second.stderr.contains(&format!("pid {}", first.pid())),
        "stderr does not name the holder's pid {}: {second:?}",
        first.pid()
    );
    // The refused process did not clobber the holder's pid in the lock file.
    let lock = std::fs::read_to_string(data_dir(&tmp).join("LOCK")).unwrap();
    assert_eq!(lock.trim(), first.pid().to_string());

    // The first one is unaffected.
    assert!(
        first.is_running(),
        "the first process died; log:\n{}",
        first.log()
    );
    assert_eq!(api.health().await.unwrap().status, 200);
    assert_true(
        api.publish("after.yaml", GROUP, TENANT, "2").await,
        "publish after",
    )
    .await;
    expect_config(&api, "before.yaml", "1", "text", "while refused").await;
    expect_config(&api, "after.yaml", "2", "text", "while refused").await;

    // Once it stops, the dir is free again and nothing was lost.
    let status = first.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        first.log()
    );
    let expected = BTreeMap::from([
        ("before.yaml".to_owned(), "1".to_owned()),
        ("after.yaml".to_owned(), "2".to_owned()),
    ]);
    let (mut again, _) = restart_and_expect(&tmp, &expected, "after the refused start").await;
    assert!(again.stop().await.success());
}

/// A bad-settings case: flags, environment, and the setting the error must name.
type BadCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    &'static str,
);

#[test]
fn bad_settings_are_refused() {
    let tmp = common::temp_dir();
    let cases: &[BadCase] = &[
        (&["--node-id", "0"], &[], "node-id"),
        (&[], &[("TACOS_NODE_ID", "0")], "node-id"),
        (&["--http-workers", "0"], &[], "http-workers"),
        (&["--max-content-size", "0"], &[], "max-content-size"),
        (&["--max-content-size", "33554433"], &[], "max-content-size"),
        (&["--segment-size", "10"], &[], "segment-size"),
        (&["--snapshot-entries", "0"], &[], "snapshot-entries"),
        (&["--http-port", "99999"], &[], "http-port"),
        (&["--history-limit", "0"], &[], "history-limit"),
        (&["--history-limit", "10001"], &[], "history-limit"),
        (&[], &[("TACOS_HISTORY_LIMIT", "0")], "history-limit"),
        (&["--max-listen-keys", "0"], &[], "max-listen-keys"),
        (&["--max-long-polls", "0"], &[], "max-long-polls"),
    ];
    for (i, (flags, envs, name)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("data-{i}"));
        let port = free_port().to_string();
        let mut args: Vec<OsString> = vec![
            "--data-dir".into(),
            dir.clone().into(),
            "--http-port".into(),
            port.into(),
        ];
        args.extend(flags.iter().map(OsString::from));
        let exited = run_to_exit(tmp.path(), &args, envs);
        let case = format!("flags {flags:?} env {envs:?}");
        assert!(!exited.status.success(), "{case} was accepted: {exited:?}");
        assert!(
            exited.status.code().is_some(),
            "{case}: exited by a signal, not an error: {exited:?}"
        );
        assert!(
            exited.stderr.contains(name),
            "{case}: stderr does not name {name}: {exited:?}"
        );
        // Settings are checked before anything starts.
        assert!(!dir.exists(), "{case}: the data dir was created anyway");
    }
}
