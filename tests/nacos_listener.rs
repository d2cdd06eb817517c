//! The Nacos v1 long-polling listener (`POST /nacos/v1/cs/configs/listener`)
//! against the real `tacos` binary, spoken the way real HTTP clients speak it:
//! `Listening-Configs` is URL-encoded once (Java `URLEncoder.encode`) and then
//! form-encoded, and the reply is the URL-encoded list of changed keys plus a
//! newline (empty on timeout).
//!
//! The step-by-step cases (held until the timeout, woken by a publish or a
//! delete, answered at once, tenants, no-hangup, malformed requests, beta,
//! SIGTERM) are scenario scripts in `tests/scenarios/listener_*.txt` (run
//! by `tests/scenarios.rs`). What needs code stays here: 10,000 keys, the
//! wake latency, and the console's listeners view (an asynchronous side
//! effect that is polled for).
//!
//! No held request can be observed from outside, so "held" means "not
//! answered after a short while"; every wait is bounded.

mod common;

use std::time::{Duration, Instant};

use common::{java_encode, md5_hex, Server};
use tokio::task::JoinHandle;

const LISTENER: &str = "/nacos/v1/cs/configs/listener";
const CONFIGS: &str = "/nacos/v1/cs/configs";
const GROUP: &str = "DEFAULT_GROUP";
/// What real clients send as `Long-Pulling-Timeout`.
const CLIENT_TIMEOUT: &str = "30000";
/// How long a request that must be answered at once may take (loaded CI box).
const AT_ONCE: Duration = Duration::from_secs(3);
/// Bound on waiting for a listener that must wake up.
const WAKE_BOUND: Duration = Duration::from_secs(5);
/// Wake latency asserted (publish answered → listener answered).
const WAKE_LATENCY: Duration = Duration::from_secs(1);
/// How long a listener is given to reach the server and be held before the
/// test changes something (nothing observable tells us it is held).
const SETTLE: Duration = Duration::from_millis(600);

// ---- encoding ---------------------------------------------------------------

/// One record of `Listening-Configs`: `dataId^2group^2md5^1`.
fn record(data_id: &str, group: &str, md5: &str) -> String {
    format!("{data_id}\u{2}{group}\u{2}{md5}\u{1}")
}

/// The reply the server must give for these changed keys (public
/// namespace, sent without a tenant), in this order: URL-encoded
/// `dataId^2group^1...` plus a newline.
fn reply_for(keys: &[(&str, &str)]) -> String {
    let raw: String = keys
        .iter()
        .map(|(data_id, group)| format!("{data_id}\u{2}{group}\u{1}"))
        .collect();
    format!("{}\n", java_encode(&raw))
}

// ---- HTTP -------------------------------------------------------------------

#[derive(Clone)]
struct Nacos {
    client: reqwest::Client,
    base: String,
}

/// A listener answer and when it fully arrived.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: String,
    at: Instant,
}

impl Nacos {
    fn new(server: &Server) -> Nacos {
        let client = reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(Duration::from_secs(2))
            // Longer than the 29.5 s hold of a 30000 ms client timeout.
            .timeout(Duration::from_secs(45))
            .default_headers(common::admin_headers())
            .build()
            .expect("building the HTTP client");
        Nacos {
            client,
            base: format!("http://127.0.0.1:{}", server.port()),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn form(
        &self,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> (u16, String) {
        let mut request = self.client.post(self.url(path)).form(form);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        let status = response.status().as_u16();
        let body = response.text().await.expect("reading a reply body");
        (status, body)
    }

    /// Publishes in the public namespace (group `DEFAULT_GROUP`); returns
    /// the new md5.
    async fn publish(&self, data_id: &str, content: &str) -> String {
        let form = [
            ("dataId", data_id),
            ("group", GROUP),
            ("content", content),
            ("tenant", ""),
        ];
        let (status, body) = self.form(CONFIGS, &form, &[]).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "true"),
            "publishing {data_id}"
        );
        md5_hex(content)
    }

    async fn health(&self) -> u16 {
        self.client
            .get(self.url("/health"))
            .send()
            .await
            .expect("GET /health")
            .status()
            .as_u16()
    }

    /// A listener request with `probe` (raw records) encoded as real clients
    /// do: Java-URL-encoded once, then form-encoded.
    async fn listen(&self, probe: &str, headers: &[(&str, &str)]) -> Answer {
        let value = java_encode(probe);
        let form = [("Listening-Configs", value.as_str())];
        let (status, body) = self.form(LISTENER, &form, headers).await;
        Answer {
            status,
            body,
            at: Instant::now(),
        }
    }

    /// Starts a long poll with the usual client timeout in the background.
    fn spawn_hold(&self, probe: String) -> JoinHandle<Answer> {
        let me = self.clone();
        tokio::spawn(async move {
            me.listen(&probe, &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)])
                .await
        })
    }

    /// A listener that must be answered at once.
    async fn listen_at_once(&self, probe: &str, headers: &[(&str, &str)]) -> Answer {
        tokio::time::timeout(AT_ONCE, self.listen(probe, headers))
            .await
            .unwrap_or_else(|_| panic!("listener with {headers:?} not answered within {AT_ONCE:?}"))
    }
}

/// Waits (bounded) for a held listener that must wake.
async fn woken(handle: JoinHandle<Answer>, what: &str) -> Answer {
    tokio::time::timeout(WAKE_BOUND, handle)
        .await
        .unwrap_or_else(|_| panic!("{what}: listener not answered within {WAKE_BOUND:?}"))
        .expect("listener task")
}

/// Asserts a background listener is still held (not answered).
fn assert_held(handle: &JoinHandle<Answer>, what: &str) {
    assert!(
        !handle.is_finished(),
        "{what}: listener was answered but should still be held"
    );
}

/// Starts a server in `tmp`.
async fn start(tmp: &tempfile::TempDir) -> (Server, Nacos) {
    let server = Server::start(tmp).await;
    let nacos = Nacos::new(&server);
    (server, nacos)
}

// ---- tests ------------------------------------------------------------------

/// A publish to a held key answers the listener within a second of the
/// publish's `true` (five rounds; the behaviour itself, with the keys that
/// must not wake it, is `tests/scenarios/listener_wake.txt`).
#[tokio::test]
async fn wake_latency_after_a_publish() {
    let tmp = common::temp_dir();
    let (mut server, nacos) = start(&tmp).await;
    let mut md5 = nacos.publish("wake.yaml", "v0").await;

    let mut latencies = Vec::new();
    for round in 1..=5 {
        let probe = record("wake.yaml", GROUP, &md5) + &record("wake-missing.yaml", GROUP, "");
        let listener = nacos.spawn_hold(probe);
        tokio::time::sleep(SETTLE).await;
        assert_held(&listener, "before the publish");
        let publish_sent = Instant::now();
        md5 = nacos.publish("wake.yaml", &format!("v{round}")).await;
        let published = Instant::now();
        let answer = woken(listener, "publish to the held key").await;
        // The listener is often answered before the publish's `true` reaches
        // us (the hub wakes it as soon as the change is applied): then the
        // latency from `true` is zero; also report the publish round trip.
        let latency = answer.at.saturating_duration_since(published);
        let from_sent = answer.at.saturating_duration_since(publish_sent);
        println!(
            "round {round}: notify latency {latency:?} after the publish's `true` \
             ({from_sent:?} after the publish was sent; publish took {:?})",
            published - publish_sent
        );
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.body, reply_for(&[("wake.yaml", GROUP)]));
        assert!(
            latency < WAKE_LATENCY,
            "listener answered {latency:?} after the publish's `true`"
        );
        latencies.push(from_sent);
    }
    latencies.sort();
    println!(
        "publish sent -> listener answered over {} rounds: min {:?}, median {:?}, max {:?}",
        latencies.len(),
        latencies[0],
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    server.stop().await;
}

/// A poll answered at once because the client holds a stale md5 never
/// waits in the hub, yet the console's listeners view lists it, with the
/// md5 it held and "not in sync" (it used to be invisible).
#[tokio::test]
async fn a_poll_answered_at_once_is_listed_as_not_in_sync() {
    let tmp = common::temp_dir();
    let (mut server, nacos) = start(&tmp).await;
    let current = nacos.publish("seen.yaml", "v2").await;
    let stale = md5_hex("v1");
    let answer = nacos
        .listen_at_once(
            &record("seen.yaml", GROUP, &stale),
            &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)],
        )
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");

    let url = nacos
        .url("/tacos/api/console/config/listeners?namespace=&group=DEFAULT_GROUP&dataId=seen.yaml");
    let deadline = Instant::now() + WAKE_BOUND;
    let listed = loop {
        let body: serde_json::Value = nacos
            .client
            .get(&url)
            .send()
            .await
            .expect("listeners view")
            .json()
            .await
            .expect("listeners JSON");
        let rows = body["listeners"].as_array().cloned().unwrap_or_default();
        if !rows.is_empty() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(listed.len(), 1, "{listed:?}");
    let row = &listed[0];
    assert_eq!(row["protocol"], "http", "{row}");
    assert_eq!(row["md5"], stale.as_str(), "{row}");
    assert_eq!(row["inSync"], false, "{row}");
    assert_eq!(row["state"], "between-polls", "{row}");
    assert_ne!(stale, current);
    server.stop().await;
}

/// 10,000 keys in one request are held and woken by a publish to one of
/// them (the reply names only that key); 10,001 keys → 400.
#[tokio::test]
async fn ten_thousand_keys_and_one_more() {
    let tmp = common::temp_dir();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("k-00042", "exists").await;
    let probe_of = |n: usize| -> String {
        (0..n)
            .map(|i| {
                let id = format!("k-{i:05}");
                let m = if i == 42 { md5.as_str() } else { "" };
                record(&id, GROUP, m)
            })
            .collect()
    };

    let too_many = nacos
        .listen_at_once(
            &probe_of(10_001),
            &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)],
        )
        .await;
    assert_eq!(too_many.status, 400, "10,001 keys: {too_many:?}");

    let listener = nacos.spawn_hold(probe_of(10_000));
    tokio::time::sleep(SETTLE * 2).await;
    assert_held(&listener, "10,000 up-to-date keys");
    nacos.publish("k-07777", "new").await;
    let published = Instant::now();
    let answer = woken(listener, "10,000 keys").await;
    eprintln!(
        "10,000 keys: notify latency {:?}",
        answer.at.saturating_duration_since(published)
    );
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("k-07777", GROUP)]).as_str())
    );
    assert!(nacos.health().await == 200);
    server.stop().await;
}

#[test]
fn encoding_helpers_match_java() {
    assert_eq!(java_encode("a.b-c*d_e"), "a.b-c*d_e");
    assert_eq!(java_encode("a b\u{2}c\u{1}"), "a+b%02c%01");
    assert_eq!(java_encode("配"), "%E9%85%8D");
    assert_eq!(reply_for(&[("d", "g")]), "d%02g%01\n");
}
