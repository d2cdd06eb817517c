//! Durability across restarts of the real `tacos` binary: every write that
//! was answered 200 must be there after a restart, whether the process was
//! stopped with SIGTERM or killed with SIGKILL mid-load; and the very first
//! HTTP answer after a restart must already show all of it.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{assert_same_items, data_dir, free_port, run_to_exit, Api, Reply, Server};

/// Keys written before the restart in the SIGTERM test.
const N: usize = 300;
/// Concurrent writers.
const CONCURRENCY: usize = 16;

/// Makes values unique to this run, so nothing can pass by accident.
fn nonce() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{}-{nanos}", std::process::id())
}

/// A value unique to (`key`, `round`, run), with some variety: most are
/// short, some are multi-line non-ASCII text, some are several KiB.
fn value_for(i: usize, key: &str, round: u32, nonce: &str) -> String {
    let base = format!("{key}@{round}/{nonce}");
    match i % 50 {
        0 => format!("{base}\n{}\n{base}", "x".repeat(8 * 1024)),
        3 | 13 | 23 | 33 | 43 => {
            format!("line one {base}\nline two ✓ ünïcödé 配置\n\ttabbed {base}")
        }
        _ => base,
    }
}

/// Asserts a write was answered 200 with the write reply JSON and returns
/// its log index.
fn acknowledged(reply: &Reply, what: &str) -> u64 {
    assert_eq!(reply.status, 200, "{what} answered {reply:?}");
    let json = reply.json();
    assert!(
        json.get("Rejected").is_none(),
        "{what} was rejected: {reply:?}"
    );
    json["index"]
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: reply has no index: {reply:?}"))
}

/// PUTs every (key, value) with `CONCURRENCY` tasks; each must answer 200.
/// Returns the largest log index acknowledged.
async fn put_all_concurrently(api: &Api, pairs: Vec<(String, String)>) -> u64 {
    let mut chunks: Vec<Vec<(String, String)>> = vec![Vec::new(); CONCURRENCY];
    for (i, pair) in pairs.into_iter().enumerate() {
        chunks[i % CONCURRENCY].push(pair);
    }
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in chunks {
        let api = api.clone();
        tasks.spawn(async move {
            let mut max_index = 0;
            for (key, value) in chunk {
                let reply = api
                    .put(&key, &value)
                    .await
                    .unwrap_or_else(|e| panic!("PUT {key}: {e}"));
                max_index = max_index.max(acknowledged(&reply, &format!("PUT {key}")));
            }
            max_index
        });
    }
    let mut max_index = 0;
    while let Some(result) = tasks.join_next().await {
        max_index = max_index.max(result.expect("writer task"));
    }
    max_index
}

/// Restarts on the same data dir and checks that the FIRST answer to
/// `GET /tacos/v1/kv` is 200 and holds exactly `expected`. Returns the server.
async fn restart_and_expect(
    tmp: &tempfile::TempDir,
    expected: &BTreeMap<String, String>,
    what: &str,
) -> (Server, BTreeMap<String, String>) {
    let (server, first) = Server::start_probing(tmp, "/tacos/v1/kv").await;
    assert_eq!(
        first.status, 200,
        "{what}: the first answer after restart was not 200: {first:?}"
    );
    let listing = first.listing();
    assert_eq!(
        listing.count,
        listing.items.len(),
        "{what}: count disagrees with items"
    );
    assert_same_items(&listing.items, expected, what);
    (server, listing.items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn restart_after_sigterm_keeps_every_acknowledged_write() {
    let tmp = common::temp_dir();
    let nonce = nonce();
    let mut server = Server::start(&tmp).await;
    let api = server.api();

    // N fresh keys, concurrently.
    let mut expected = BTreeMap::new();
    let pairs: Vec<(String, String)> = (0..N)
        .map(|i| {
            let key = format!("key-{i:04}");
            let value = value_for(i, &key, 0, &nonce);
            (key, value)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    let mut max_index = put_all_concurrently(&api, pairs).await;

    // Overwrite every 7th key (concurrently), then delete every 11th key
    // (some of them overwritten just before), delete a key that never
    // existed, and delete-then-recreate one key.
    let overwrites: Vec<(String, String)> = (0..N)
        .step_by(7)
        .map(|i| {
            let key = format!("key-{i:04}");
            let value = value_for(i + 1, &key, 1, &nonce);
            (key, value)
        })
        .collect();
    expected.extend(overwrites.iter().cloned());
    max_index = max_index.max(put_all_concurrently(&api, overwrites).await);
    for i in (0..N).step_by(11) {
        let key = format!("key-{i:04}");
        let reply = api.delete(&key).await.unwrap();
        max_index = max_index.max(acknowledged(&reply, &format!("DELETE {key}")));
        assert_eq!(reply.json()["Removed"]["existed"], true, "{reply:?}");
        expected.remove(&key);
    }
    let reply = api.delete("never-existed").await.unwrap();
    max_index = max_index.max(acknowledged(&reply, "DELETE never-existed"));
    let reborn = "key-0022"; // deleted above (22 = 2 * 11)
    assert!(!expected.contains_key(reborn));
    let reply = api.put(reborn, "born again").await.unwrap();
    max_index = max_index.max(acknowledged(&reply, "PUT reborn"));
    expected.insert(reborn.to_owned(), "born again".to_owned());

    // Sanity: the live server agrees before the restart.
    assert_same_items(&api.list().await.items, &expected, "before restart");

    let status = server.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        server.log()
    );

    let (mut server, _) = restart_and_expect(&tmp, &expected, "after SIGTERM restart").await;
    let api = server.api();
    for i in (0..N).step_by(11).filter(|i| *i != 22) {
        let reply = api.get(&format!("key-{i:04}")).await.unwrap();
        assert_eq!(reply.status, 404, "deleted key-{i:04} came back: {reply:?}");
    }
    let reply = api.get("key-0007").await.unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body, expected["key-0007"],
        "overwrite did not survive"
    );

    // The log continues where it left off rather than starting over.
    let reply = api.put("after-restart", "1").await.unwrap();
    let index = acknowledged(&reply, "PUT after restart");
    assert!(
        index > max_index,
        "a write after restart got log index {index}, not above {max_index} from before"
    );
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
    Put(String, String),
    Delete(String),
}

/// What one background writer sent, in order. Writes are sequential per
/// writer, so the first `acked` ops were answered 200 and at most one more
/// (the last in `ops`) was in flight when the server died.
#[derive(Debug, Default)]
struct WriterLog {
    ops: Vec<Op>,
    acked: usize,
    failures: Vec<String>,
}

/// Background writer `writer`'s `seq`-th operation: new keys, overwrites,
/// deletes and a hot key overwritten again and again, all under the
/// writer's own key prefix.
fn background_op(writer: usize, seq: usize, nonce: &str) -> Op {
    let key = |n: usize| format!("w{writer}-{n:05}");
    let value = |key: &str| value_for(seq, key, seq as u32, nonce);
    match seq % 8 {
        3 => {
            let key = key(seq - 2);
            let value = value(&key);
            Op::Put(key, value)
        }
        5 => Op::Delete(key(seq - 4)),
        6 | 7 => {
            let key = format!("w{writer}-hot");
            let value = value(&key);
            Op::Put(key, value)
        }
        _ => {
            let key = key(seq);
            let value = value(&key);
            Op::Put(key, value)
        }
    }
}

fn apply(ops: &[Op]) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for op in ops {
        match op {
            Op::Put(key, value) => {
                state.insert(key.clone(), value.clone());
            }
            Op::Delete(key) => {
                state.remove(key);
            }
        }
    }
    state
}

async fn background_writer(api: Api, writer: usize, nonce: String, log: Arc<Mutex<WriterLog>>) {
    for seq in 0.. {
        let op = background_op(writer, seq, &nonce);
        log.lock().unwrap().ops.push(op.clone());
        let result = match &op {
            Op::Put(key, value) => api.put(key, value).await,
            Op::Delete(key) => api.delete(key).await,
        };
        match result {
            Ok(reply) if reply.status == 200 => log.lock().unwrap().acked += 1,
            Ok(reply) => {
                log.lock()
                    .unwrap()
                    .failures
                    .push(format!("{op:?} answered {reply:?}"));
                return;
            }
            // The server is gone (killed): stop.
            Err(_) => return,
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

    // Acknowledged base data: puts, overwrites and deletes.
    let mut expected = BTreeMap::new();
    let pairs: Vec<(String, String)> = (0..100)
        .map(|i| {
            let key = format!("base-{i:03}");
            let value = value_for(i, &key, 0, &nonce);
            (key, value)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    put_all_concurrently(&api, pairs).await;
    for i in (0..100).step_by(3) {
        let key = format!("base-{i:03}");
        let value = value_for(i + 1, &key, 1, &nonce);
        acknowledged(&api.put(&key, &value).await.unwrap(), "overwrite");
        expected.insert(key, value);
    }
    for i in (0..100).step_by(5) {
        let key = format!("base-{i:03}");
        acknowledged(&api.delete(&key).await.unwrap(), "delete");
        expected.remove(&key);
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
    let (mut server, first) = Server::start_probing(&tmp, "/tacos/v1/kv").await;
    assert_eq!(
        first.status, 200,
        "the first answer after kill -9 was not 200: {first:?}"
    );
    let listing = first.listing();
    assert_eq!(listing.count, listing.items.len());
    let recovered = listing.items;
    let base: BTreeMap<String, String> = recovered
        .iter()
        .filter(|(k, _)| !k.starts_with('w'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_same_items(&base, &expected, "base data after kill -9");
    let mut total_acked = 0;
    let mut in_flight_kept = 0;
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
         {in_flight_kept} of {WRITERS} in-flight writes were kept"
    );
    let unexpected: Vec<&String> = recovered
        .keys()
        .filter(|k| !k.starts_with("base-") && !k.starts_with('w'))
        .collect();
    assert!(unexpected.is_empty(), "unexpected keys: {unexpected:?}");

    // The recovered node keeps working: more writes, a clean stop, and
    // everything is still there after another restart.
    let api = server.api();
    let mut expected = recovered;
    let pairs: Vec<(String, String)> = (0..50)
        .map(|i| {
            let key = format!("after-{i:02}");
            let value = value_for(i, &key, 2, &nonce);
            (key, value)
        })
        .collect();
    expected.extend(pairs.iter().cloned());
    put_all_concurrently(&api, pairs).await;
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
    acknowledged(&api.put("before", "1").await.unwrap(), "PUT before");

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
    acknowledged(&api.put("after", "2").await.unwrap(), "PUT after");
    assert_eq!(api.get("before").await.unwrap().body, "1");
    assert_eq!(api.get("after").await.unwrap().body, "2");

    // Once it stops, the dir is free again and nothing was lost.
    let status = first.stop().await;
    assert!(
        status.success(),
        "SIGTERM exit was {status}; log:\n{}",
        first.log()
    );
    let expected = BTreeMap::from([
        ("before".to_owned(), "1".to_owned()),
        ("after".to_owned(), "2".to_owned()),
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
