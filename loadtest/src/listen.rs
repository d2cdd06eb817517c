//! The `http_config_listen` scenario: every goose user is a Nacos v1 long-poll
//! listener, and one writer publishes while they listen; the result is the notify
//! latency, from a publish's answer to each listener's answer.
//!
//! - Before the users start, every key (`loadtest-l-0 .. keys-1`) is seeded.
//! - Listener `i` watches `--keys-per-listener` keys (`i*M .. i*M+M-1`, modulo the key
//!   count) with `POST /nacos/v1/cs/configs/listener`, form `Listening-Configs` (the md5
//!   it holds of each), header `Long-Pulling-Timeout` (`--poll-timeout-ms`). When the
//!   server answers with changed keys, the listener stamps the answer, fetches each
//!   changed key (`GET /nacos/v1/cs/configs`, what the official clients do to learn the
//!   new content and md5) and polls again with the new md5s.
//! - The writer is a task beside the users (not a goose user, so `-u` is exactly the
//!   number of listeners): once every listener started and a short settle time passed,
//!   it publishes `--publish-rate` times per second, one key after another
//!   (round-robin), each content carrying a sequence number, to `--publish-host`
//!   (default `--host`: in a cluster, publish on one node and listen on another). It
//!   stops a moment before goose's `-t` ends so the last notifications arrive in time.
//! - Each fetched content names its publish, so after the run every notification is
//!   joined with its publish: latency = listener answered - publish answered (negative
//!   when the server told the listener before the writer heard back), also from before
//!   the publish was sent. A (publish, watching listener) pair with no notification of
//!   that or a later version is **missed**.
//!
//! Goose's tables show the long polls (`listen`, each as long as it was held) and the
//! fetches (`fetch`); the notify latency is printed at the end and written as JSON with
//! `--notify-report FILE`.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use goose::prelude::*;
use serde_json::json;

use crate::latency::{round3, Summary};
use crate::nacos::{self, ListenEntry};
use crate::{access_token, pace, settings, user_state, CONFIGS_PATH, GROUP};

/// The listen scenario's own options.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(next_help_heading = "Listen scenario")]
pub struct ListenArgs {
    /// Publishes per second by the writer, round-robin over the keys
    #[arg(long, default_value_t = 10.0, value_name = "N")]
    pub publish_rate: f64,
    /// How many keys each listener watches (listener i: keys i*M .. i*M+M-1, mod --keys)
    #[arg(long, default_value_t = 1, value_name = "M")]
    pub keys_per_listener: usize,
    /// Long-Pulling-Timeout sent with each long poll, milliseconds
    #[arg(long, default_value_t = 30_000, value_name = "MS")]
    pub poll_timeout_ms: u64,
    /// Where the writer publishes (default: --host), e.g. another node of a cluster
    #[arg(long, value_name = "URL")]
    pub publish_host: Option<String>,
    /// Write the notify-latency report (JSON) here
    #[arg(long, value_name = "FILE")]
    pub notify_report: Option<PathBuf>,
}

/// What the scenario was started with.
#[derive(Debug, Clone)]
pub struct ListenConfig {
    pub args: ListenArgs,
    /// The number of listeners (goose's `-u`).
    pub listeners: usize,
    /// Goose's `-t`, if given: listeners and writer stop on their own then.
    pub run_time: Option<Duration>,
    /// `--host`.
    pub host: String,
}

/// One listener's watch list, kept in its [`crate::UserState`].
#[derive(Debug, Clone, Default)]
pub struct ListenerState {
    pub index: usize,
    pub keys: Vec<usize>,
    pub entries: Vec<ListenEntry>,
}

/// One publish by the writer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PublishRecord {
    pub seq: u64,
    pub key: usize,
    /// Before the request was sent.
    pub sent: Instant,
    /// When the answer came (`None`: it failed).
    pub answered: Option<Instant>,
}

/// A listener learned of a version of a key.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NotifyEvent {
    pub listener: usize,
    pub key: usize,
    pub seq: u64,
    /// When the long poll answered.
    pub at: Instant,
}

struct Shared {
    config: ListenConfig,
    launched: AtomicUsize,
    all_launched: OnceLock<Instant>,
    publishes: Mutex<Vec<PublishRecord>>,
    events: Mutex<Vec<NotifyEvent>>,
    window: Mutex<Option<(Instant, Instant)>>,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    listen_errors: AtomicU64,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

/// Sets the scenario up; call once, after [`crate::start`].
pub fn init(config: ListenConfig) -> Result<(), GooseError> {
    let args = &config.args;
    let bad = |option: &str, value: String, detail: &str| GooseError::InvalidOption {
        option: option.into(),
        value,
        detail: detail.into(),
    };
    if !(args.publish_rate.is_finite() && args.publish_rate > 0.0) {
        return Err(bad(
            "--publish-rate",
            args.publish_rate.to_string(),
            "a positive number of publishes per second",
        ));
    }
    if args.keys_per_listener == 0 {
        return Err(bad("--keys-per-listener", "0".into(), "at least 1"));
    }
    if args.poll_timeout_ms < 1000 {
        return Err(bad(
            "--poll-timeout-ms",
            args.poll_timeout_ms.to_string(),
            "at least 1000",
        ));
    }
    let _ = SHARED.set(Shared {
        config,
        launched: AtomicUsize::new(0),
        all_launched: OnceLock::new(),
        publishes: Mutex::new(Vec::new()),
        events: Mutex::new(Vec::new()),
        window: Mutex::new(None),
        writer: Mutex::new(None),
        listen_errors: AtomicU64::new(0),
    });
    Ok(())
}

fn shared() -> &'static Shared {
    SHARED
        .get()
        .expect("listen::init must run before the load test starts")
}

/// The keys listener `index` watches: `per_listener` consecutive ones from
/// `index * per_listener`, modulo `keys` (all of them when `per_listener >= keys`).
pub fn listener_keys(index: usize, keys: usize, per_listener: usize) -> Vec<usize> {
    if per_listener >= keys {
        return (0..keys).collect();
    }
    (0..per_listener)
        .map(|j| (index * per_listener + j) % keys)
        .collect()
}

/// The content the writer publishes as version `seq`: it names the sequence number, so
/// a listener that fetches it knows which publish it saw.
pub fn writer_content(seq: u64, run: u128) -> String {
    format!("loadtest notify seq={seq} run={run}")
}

/// The sequence number in a [`writer_content`], if it is one.
pub fn parse_seq(content: &str) -> Option<u64> {
    let rest = content.strip_prefix("loadtest notify seq=")?;
    let digits: &str = rest.split(' ').next()?;
    digits.parse().ok()
}

/// When the listeners and the writer stop: `-t` after the last listener started.
fn stop_at() -> Option<Instant> {
    let shared = shared();
    let run_time = shared.config.run_time?;
    shared.all_launched.get().map(|t| *t + run_time)
}

/// Returns when the run ends (never without `-t`).
async fn until_stop() {
    if shared().config.run_time.is_none() {
        return std::future::pending().await;
    }
    loop {
        if let Some(stop) = stop_at() {
            tokio::time::sleep_until(stop.into()).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The quiet time after the last listener started (and before `-t` ends) in which the
/// writer does not publish: up to 1 s, a fifth of `-t` at most.
fn margin(run_time: Option<Duration>) -> Duration {
    match run_time {
        Some(t) => (t / 5).min(Duration::from_secs(1)),
        None => Duration::from_secs(1),
    }
}

/// On-start transaction of every listener: count it, and stamp when the last started.
pub async fn listener_started(user: &mut GooseUser) -> TransactionResult {
    let shared = shared();
    let n = shared.launched.fetch_add(1, Ordering::SeqCst) + 1;
    if n >= shared.config.listeners {
        let _ = shared.all_launched.set(Instant::now());
    }
    let settings = settings();
    let index = user.weighted_users_index;
    let keys = listener_keys(index, settings.keys, shared.config.args.keys_per_listener);
    let entries = keys
        .iter()
        .map(|&k| {
            let data_id = settings.data_id(k);
            let md5 = nacos::md5_hex(&settings.seed_content(&data_id));
            ListenEntry {
                data_id,
                group: GROUP.to_string(),
                md5,
                tenant: settings.tenant.clone(),
            }
        })
        .collect();
    user_state(user).listener = Some(ListenerState {
        index,
        keys,
        entries,
    });
    Ok(())
}

/// Transaction: one long poll, then a fetch of each key it names.
pub async fn listen_once(user: &mut GooseUser) -> TransactionResult {
    let shared = shared();
    pace(user).await;
    let stop = stop_at();
    if let Some(stop) = stop {
        if Instant::now() + Duration::from_millis(50) >= stop {
            // The run is over: idle until goose tells this user to exit.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Ok(());
        }
    }
    let Some(state) = user_state(user).listener.clone() else {
        return Ok(());
    };
    let token = access_token(user);
    let body = nacos::listener_form(&state.entries, token.as_deref());
    let timeout = shared.config.args.poll_timeout_ms;
    let builder = user
        .get_request_builder(&GooseMethod::Post, nacos::LISTENER_PATH)?
        .header("Content-Type", nacos::FORM_CONTENT_TYPE)
        .header(nacos::LONG_POLL_TIMEOUT_HEADER, timeout.to_string())
        .timeout(Duration::from_millis(timeout) + Duration::from_secs(10))
        .body(body);
    let request = GooseRequest::builder()
        .method(GooseMethod::Post)
        .path(nacos::LISTENER_PATH)
        .name("listen")
        .set_request_builder(builder)
        .build();
    // Cut a poll still held when the run ends (goose waits for each transaction); the
    // end is known once every listener started.
    let goose = tokio::select! {
        result = user.request(request) => result?,
        _ = until_stop() => return Ok(()),
    };
    let at = Instant::now();
    let mut request = goose.request;
    let response = match goose.response {
        Ok(response) => response,
        Err(_) => {
            shared.listen_errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Ok(());
        }
    };
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        shared.listen_errors.fetch_add(1, Ordering::Relaxed);
        // E.g. 503 (too many long polls): back off instead of spinning.
        tokio::time::sleep(Duration::from_millis(100)).await;
        return Ok(());
    }
    let changed = nacos::parse_listener_reply(&body);
    for key in changed {
        let Some(pos) = state.entries.iter().position(|e| e.data_id == key.data_id) else {
            return user.set_failure(
                "listen: the reply names a key this listener does not watch",
                &mut request,
                None,
                Some(&body),
            );
        };
        fetch(user, &state, pos, at).await?;
    }
    Ok(())
}

/// Reads key `pos` of the listener's list after a notification at `at`: records the
/// version it names and keeps the new md5 for the next poll.
async fn fetch(
    user: &mut GooseUser,
    state: &ListenerState,
    pos: usize,
    at: Instant,
) -> TransactionResult {
    let settings = settings();
    let token = access_token(user);
    let entry = &state.entries[pos];
    let path = nacos::query_path(&entry.data_id, GROUP, &settings.tenant, token.as_deref());
    let request = GooseRequest::builder()
        .method(GooseMethod::Get)
        .path(path.as_str())
        .name("fetch")
        .build();
    let goose = user.request(request).await?;
    let mut request = goose.request;
    let Ok(response) = goose.response else {
        return Ok(());
    };
    if !response.status().is_success() {
        return Ok(());
    }
    let content = match response.text().await {
        Ok(content) => content,
        Err(e) => {
            return user.set_failure(
                &format!("fetch: reading the body: {e}"),
                &mut request,
                None,
                None,
            )
        }
    };
    let md5 = nacos::md5_hex(&content);
    if let Some(listener) = user_state(user).listener.as_mut() {
        if let Some(e) = listener.entries.get_mut(pos) {
            e.md5 = md5;
        }
    }
    if let Some(seq) = parse_seq(&content) {
        if let Ok(mut events) = shared().events.lock() {
            events.push(NotifyEvent {
                listener: state.index,
                key: state.keys[pos],
                seq,
                at,
            });
        }
    }
    Ok(())
}

/// `test_start` transaction: seeds the keys, then starts the writer.
pub async fn start_listen_test(user: &mut GooseUser) -> TransactionResult {
    crate::seed_keys(user).await?;
    let shared = shared();
    let base = match &shared.config.args.publish_host {
        Some(host) => match reqwest::Url::parse(host) {
            Ok(url) => url,
            Err(e) => {
                eprintln!("--publish-host {host}: {e}; publishing to --host instead");
                user.base_url.clone()
            }
        },
        None => user.base_url.clone(),
    };
    let token = access_token(user);
    let handle = tokio::spawn(writer(base, token));
    if let Ok(mut slot) = shared.writer.lock() {
        *slot = Some(handle);
    }
    Ok(())
}

/// The writer: waits for the listeners, then publishes until shortly before the end.
async fn writer(base: reqwest::Url, token: Option<String>) {
    let shared = shared();
    let settings = settings();
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            eprintln!("writer: building an HTTP client: {e}");
            return;
        }
    };
    let url = match base.join(CONFIGS_PATH) {
        Ok(url) => url,
        Err(e) => {
            eprintln!("writer: {base}: {e}");
            return;
        }
    };
    // Wait (at most 2 minutes) until every listener started, then let their first
    // polls arrive.
    let waited = Instant::now();
    while shared.all_launched.get().is_none() && waited.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let run_time = shared.config.run_time;
    tokio::time::sleep(margin(run_time)).await;
    let end = stop_at().map(|stop| stop - margin(run_time));
    let Ok(mut limiter) =
        crate::rate::RateLimiter::with_phase(shared.config.args.publish_rate, 0.0)
    else {
        return;
    };
    let first = Instant::now();
    let run = crate::run_id();
    for seq in 0u64.. {
        limiter.wait().await;
        if end.is_some_and(|end| Instant::now() >= end) {
            break;
        }
        let key = (seq % settings.keys as u64) as usize;
        let data_id = settings.data_id(key);
        let content = writer_content(seq, run);
        let body = nacos::publish_form(
            &data_id,
            GROUP,
            &content,
            &settings.tenant,
            token.as_deref(),
        );
        let sent = Instant::now();
        let result = client
            .post(url.clone())
            .header("Content-Type", nacos::FORM_CONTENT_TYPE)
            .body(body)
            .send()
            .await;
        let answered = match result {
            Ok(response) => {
                let ok = response.status().is_success();
                let text = response.text().await.unwrap_or_default();
                (ok && text.trim() == "true").then(Instant::now)
            }
            Err(_) => None,
        };
        let last = answered.unwrap_or_else(Instant::now);
        if let Ok(mut publishes) = shared.publishes.lock() {
            publishes.push(PublishRecord {
                seq,
                key,
                sent,
                answered,
            });
        }
        if let Ok(mut window) = shared.window.lock() {
            *window = Some((first, last));
        }
    }
}

/// What a listen run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyStats {
    pub publishes: usize,
    pub publish_failures: usize,
    /// Milliseconds from sending a publish to its answer.
    pub publish_latency: Summary,
    /// Notifications joined with their publish.
    pub notifications: usize,
    /// (publish, watching listener) pairs expected to be notified.
    pub expected: usize,
    /// Expected pairs with no notification of that or a later version.
    pub missed: usize,
    /// Expected pairs notified only of a later version (two publishes in one poll).
    pub skipped: usize,
    /// Milliseconds from the publish's answer to the listener's answer.
    pub notify_latency: Summary,
    /// Milliseconds from before the publish was sent to the listener's answer.
    pub notify_latency_from_send: Summary,
}

fn signed_ms(later: Instant, earlier: Instant) -> f64 {
    if later >= earlier {
        (later - earlier).as_secs_f64() * 1000.0
    } else {
        -((earlier - later).as_secs_f64() * 1000.0)
    }
}

/// Joins notifications with publishes. `watchers(key)` lists the listeners of a key.
pub fn notify_stats(
    publishes: &[PublishRecord],
    events: &[NotifyEvent],
    watchers: impl Fn(usize) -> Vec<usize>,
) -> NotifyStats {
    let by_seq: HashMap<u64, &PublishRecord> = publishes.iter().map(|p| (p.seq, p)).collect();
    let mut seen: HashSet<(usize, u64)> = HashSet::new();
    // The newest version each (listener, key) learned of, and every version learned.
    let mut newest: HashMap<(usize, usize), u64> = HashMap::new();
    let (mut from_answer, mut from_send) = (Vec::new(), Vec::new());
    for e in events {
        if !seen.insert((e.listener, e.seq)) {
            continue;
        }
        let slot = newest.entry((e.listener, e.key)).or_insert(e.seq);
        *slot = (*slot).max(e.seq);
        if let Some(p) = by_seq.get(&e.seq) {
            if let Some(answered) = p.answered {
                from_answer.push(signed_ms(e.at, answered));
            }
            from_send.push(signed_ms(e.at, p.sent));
        }
    }
    let (mut expected, mut missed, mut skipped) = (0, 0, 0);
    let mut publish_ms = Vec::new();
    for p in publishes {
        let Some(answered) = p.answered else {
            continue;
        };
        publish_ms.push(signed_ms(answered, p.sent));
        for listener in watchers(p.key) {
            expected += 1;
            match newest.get(&(listener, p.key)) {
                Some(&n) if n >= p.seq => {
                    if !seen.contains(&(listener, p.seq)) {
                        skipped += 1;
                    }
                }
                _ => missed += 1,
            }
        }
    }
    NotifyStats {
        publishes: publishes.len(),
        publish_failures: publishes.iter().filter(|p| p.answered.is_none()).count(),
        publish_latency: Summary::of(&mut publish_ms),
        notifications: from_send.len(),
        expected,
        missed,
        skipped,
        notify_latency: Summary::of(&mut from_answer),
        notify_latency_from_send: Summary::of(&mut from_send),
    }
}

/// `test_stop` transaction: waits for the writer, prints the notify latency and writes
/// the JSON report.
pub async fn finish_listen_test(_user: &mut GooseUser) -> TransactionResult {
    let shared = shared();
    let handle = shared.writer.lock().ok().and_then(|mut h| h.take());
    if let Some(handle) = handle {
        if !handle.is_finished() {
            // Without -t the writer runs until here.
            handle.abort();
        }
        let _ = handle.await;
    }
    let publishes = shared
        .publishes
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default();
    let events = shared.events.lock().map(|e| e.clone()).unwrap_or_default();
    let window = shared.window.lock().ok().and_then(|w| *w);
    let settings = settings();
    let listeners = shared
        .launched
        .load(Ordering::SeqCst)
        .min(shared.config.listeners);
    let per = shared.config.args.keys_per_listener;
    let mut watchers_of: Vec<Vec<usize>> = vec![Vec::new(); settings.keys];
    for l in 0..listeners {
        for k in listener_keys(l, settings.keys, per) {
            watchers_of[k].push(l);
        }
    }
    let stats = notify_stats(&publishes, &events, |k| {
        watchers_of.get(k).cloned().unwrap_or_default()
    });
    let window_s = window
        .map(|(a, b)| (b - a).as_secs_f64())
        .unwrap_or(0.0)
        .max(0.001);
    let throughput = stats.notifications as f64 / window_s;
    let publish_rate = stats.publishes as f64 / window_s;
    let n = &stats.notify_latency;
    println!();
    println!("=== notify latency: publish answered -> listener answered ===");
    println!(
        "| listeners | publishes | publish/s | notifications | notify/s | missed | skipped | p50 ms | p90 ms | p99 ms | max ms |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {listeners} | {} | {publish_rate:.1} | {} | {throughput:.1} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
        stats.publishes, stats.notifications, stats.missed, stats.skipped, n.p50, n.p90, n.p99, n.max
    );
    if let Some(path) = &shared.config.args.notify_report {
        let report = json!({
            "tool": "http_config_listen",
            "host": shared.config.host,
            "publish_host": shared.config.args.publish_host,
            "listeners": listeners,
            "keys": settings.keys,
            "keys_per_listener": per,
            "publish_rate_target": shared.config.args.publish_rate,
            "poll_timeout_ms": shared.config.args.poll_timeout_ms,
            "window_s": round3(window_s),
            "publishes": stats.publishes,
            "publish_failures": stats.publish_failures,
            "publish_rate": round3(publish_rate),
            "publish_latency": stats.publish_latency.to_json(),
            "notifications": stats.notifications,
            "notifications_per_s": round3(throughput),
            "expected_notifications": stats.expected,
            "missed": stats.missed,
            "skipped": stats.skipped,
            "listen_errors": shared.listen_errors.load(Ordering::Relaxed),
            "notify_latency": stats.notify_latency.to_json(),
            "notify_latency_from_send": stats.notify_latency_from_send.to_json(),
        });
        if let Err(e) = crate::latency::write_report(path, &report) {
            eprintln!("{e}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_get_consecutive_keys() {
        assert_eq!(listener_keys(0, 10, 1), vec![0]);
        assert_eq!(listener_keys(13, 10, 1), vec![3]);
        assert_eq!(listener_keys(2, 10, 3), vec![6, 7, 8]);
        assert_eq!(listener_keys(3, 10, 3), vec![9, 0, 1]);
        assert_eq!(listener_keys(5, 4, 4), vec![0, 1, 2, 3]);
        assert_eq!(listener_keys(5, 4, 9), vec![0, 1, 2, 3]);
    }

    #[test]
    fn contents_name_their_publish() {
        let c = writer_content(42, 1_700_000_000_000);
        assert_eq!(c, "loadtest notify seq=42 run=1700000000000");
        assert_eq!(parse_seq(&c), Some(42));
        assert_eq!(parse_seq("loadtest seed loadtest-l-0"), None);
        assert_eq!(parse_seq("loadtest notify seq=x"), None);
    }

    #[test]
    fn joins_notifications_with_publishes() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let publishes = vec![
            PublishRecord {
                seq: 0,
                key: 0,
                sent: ms(0),
                answered: Some(ms(2)),
            },
            PublishRecord {
                seq: 1,
                key: 1,
                sent: ms(100),
                answered: Some(ms(104)),
            },
            PublishRecord {
                seq: 2,
                key: 0,
                sent: ms(200),
                answered: None,
            },
            PublishRecord {
                seq: 3,
                key: 0,
                sent: ms(300),
                answered: Some(ms(301)),
            },
        ];
        // Key 0 is watched by listeners 0 and 1, key 1 by listener 2.
        let watchers = |k: usize| if k == 0 { vec![0, 1] } else { vec![2] };
        let events = vec![
            // Listener 0 hears of seq 0 one ms before the writer got its answer.
            NotifyEvent {
                listener: 0,
                key: 0,
                seq: 0,
                at: ms(1),
            },
            // Listener 1 hears of it 3 ms after; a duplicate is ignored.
            NotifyEvent {
                listener: 1,
                key: 0,
                seq: 0,
                at: ms(5),
            },
            NotifyEvent {
                listener: 1,
                key: 0,
                seq: 0,
                at: ms(9),
            },
            // Listener 2 never hears of seq 1: missed.
            // Seq 3: listener 0 hears of it, listener 1 does not.
            NotifyEvent {
                listener: 0,
                key: 0,
                seq: 3,
                at: ms(311),
            },
        ];
        let s = notify_stats(&publishes, &events, watchers);
        assert_eq!(s.publishes, 4);
        assert_eq!(s.publish_failures, 1);
        assert_eq!(s.notifications, 3);
        // seq 0: 2 listeners, seq 1: 1, seq 3: 2 (seq 2 failed, not expected).
        assert_eq!(s.expected, 5);
        assert_eq!(s.missed, 2);
        assert_eq!(s.skipped, 0);
        assert_eq!(s.notify_latency.min, -1.0);
        assert_eq!(s.notify_latency.max, 10.0);
        assert_eq!(s.notify_latency.p50, 3.0);
        assert_eq!(s.notify_latency_from_send.min, 1.0);
        assert_eq!(s.publish_latency.max, 4.0);
    }

    #[test]
    fn a_later_version_covers_an_earlier_one() {
        let t0 = Instant::now();
        let p = |seq, at| PublishRecord {
            seq,
            key: 0,
            sent: t0 + Duration::from_millis(at),
            answered: Some(t0 + Duration::from_millis(at + 1)),
        };
        let publishes = vec![p(0, 0), p(1, 2)];
        // The listener was fetching when seq 1 came and saw only it.
        let events = vec![NotifyEvent {
            listener: 0,
            key: 0,
            seq: 1,
            at: t0 + Duration::from_millis(5),
        }];
        let s = notify_stats(&publishes, &events, |_| vec![0]);
        assert_eq!(s.expected, 2);
        assert_eq!(s.missed, 0);
        assert_eq!(s.skipped, 1);
        assert_eq!(s.notifications, 1);
    }
}
