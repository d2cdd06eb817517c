//! The Nacos v1 long-polling listener (`POST /nacos/v1/cs/configs/listener`)
//! against the real `tacos` binary, spoken the way real HTTP clients speak it:
//! `Listening-Configs` is URL-encoded once (Java `URLEncoder.encode`) and then
//! form-encoded, and the reply is the URL-encoded list of changed keys plus a
//! newline (empty on timeout).
//!
//! No held request can be observed from outside, so "held" means "not
//! answered after a short while"; every wait is bounded.

mod common;

use std::time::{Duration, Instant};

use common::{java_encode, Server};
use tempfile::TempDir;
use tokio::task::JoinHandle;

const LISTENER: &str = "/nacos/v1/cs/configs/listener";
const CONFIGS: &str = "/nacos/v1/cs/configs";
const NAMESPACES: &str = "/nacos/v1/console/namespaces";
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
/// How long a held listener must stay unanswered to count as "not woken".
const QUIET: Duration = Duration::from_millis(1500);

// ---- encoding ---------------------------------------------------------------

/// Java's `URLDecoder.decode(s, "UTF-8")` (for reading replies).
fn java_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii hex");
                out.push(u8::from_str_radix(hex, 16).expect("hex escape in reply"));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).expect("utf-8 reply")
}

fn md5_hex(content: &str) -> String {
    format!("{:x}", md5::compute(content.as_bytes()))
}

/// One record of `Listening-Configs`: `dataId^2group^2md5[^2tenant]^1`.
fn record(data_id: &str, group: &str, md5: &str, tenant: Option<&str>) -> String {
    match tenant {
        Some(t) => format!("{data_id}\u{2}{group}\u{2}{md5}\u{2}{t}\u{1}"),
        None => format!("{data_id}\u{2}{group}\u{2}{md5}\u{1}"),
    }
}

/// The reply the server must give for these changed keys, in this order:
/// URL-encoded `dataId^2group[^2tenant]^1...` plus a newline.
fn reply_for(keys: &[(&str, &str, &str)]) -> String {
    let mut raw = String::new();
    for (data_id, group, tenant) in keys {
        raw.push_str(data_id);
        raw.push('\u{2}');
        raw.push_str(group);
        if !tenant.is_empty() {
            raw.push('\u{2}');
            raw.push_str(tenant);
        }
        raw.push('\u{1}');
    }
    format!("{}\n", java_encode(&raw))
}

/// The records of a listener reply as sorted `(dataId, group, tenant)`; also
/// checks the reply is exactly the Java encoding of its records plus `\n`.
fn reply_records(body: &str) -> Vec<(String, String, String)> {
    let encoded = body
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("listener reply does not end with a newline: {body:?}"));
    let raw = java_decode(encoded);
    assert_eq!(
        java_encode(&raw),
        encoded,
        "listener reply is not Java-URL-encoded: {body:?}"
    );
    assert!(
        raw.ends_with('\u{1}'),
        "reply records must end with \\x01: {raw:?}"
    );
    let mut records: Vec<(String, String, String)> = raw
        .split('\u{1}')
        .filter(|r| !r.is_empty())
        .map(|r| {
            let fields: Vec<&str> = r.split('\u{2}').collect();
            match fields.as_slice() {
                [d, g] => (d.to_string(), g.to_string(), String::new()),
                [d, g, t] => {
                    assert!(!t.is_empty(), "empty tenant echoed in {raw:?}");
                    (d.to_string(), g.to_string(), t.to_string())
                }
                _ => panic!("bad reply record {r:?} in {raw:?}"),
            }
        })
        .collect();
    records.sort();
    records
}

fn sorted(keys: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    let mut v: Vec<_> = keys
        .iter()
        .map(|(d, g, t)| (d.to_string(), g.to_string(), t.to_string()))
        .collect();
    v.sort();
    v
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

    async fn publish_with(
        &self,
        tenant: &str,
        data_id: &str,
        content: &str,
        headers: &[(&str, &str)],
    ) {
        let form = [
            ("dataId", data_id),
            ("group", GROUP),
            ("content", content),
            ("tenant", tenant),
        ];
        let (status, body) = self.form(CONFIGS, &form, headers).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "true"),
            "publishing {tenant:?}/{data_id}"
        );
    }

    /// Publishes in `tenant` (group `DEFAULT_GROUP`); returns the new md5.
    async fn publish(&self, tenant: &str, data_id: &str, content: &str) -> String {
        self.publish_with(tenant, data_id, content, &[]).await;
        md5_hex(content)
    }

    /// Publishes a beta of `data_id` served to `ip`.
    async fn publish_beta(&self, data_id: &str, content: &str, ip: &str) {
        self.publish_with("", data_id, content, &[("betaIps", ip)])
            .await;
    }

    async fn delete(&self, tenant: &str, data_id: &str) {
        let response = self
            .client
            .delete(self.url(CONFIGS))
            .query(&[("dataId", data_id), ("group", GROUP), ("tenant", tenant)])
            .send()
            .await
            .expect("DELETE config");
        let status = response.status().as_u16();
        let body = response.text().await.expect("reading a reply body");
        assert_eq!((status, body.as_str()), (200, "true"), "deleting {data_id}");
    }

    async fn create_namespace(&self, id: &str) {
        let form = [("customNamespaceId", id), ("namespaceName", id)];
        let (status, body) = self.form(NAMESPACES, &form, &[]).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "true"),
            "creating namespace {id}"
        );
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
        self.listen_form(&[("Listening-Configs", value.as_str())], headers)
            .await
    }

    async fn listen_form(&self, form: &[(&str, &str)], headers: &[(&str, &str)]) -> Answer {
        let (status, body) = self.form(LISTENER, form, headers).await;
        Answer {
            status,
            body,
            at: Instant::now(),
        }
    }

    /// Starts a listener request in the background.
    fn spawn_listen(
        &self,
        probe: String,
        headers: Vec<(&'static str, String)>,
    ) -> JoinHandle<Answer> {
        let me = self.clone();
        tokio::spawn(async move {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            me.listen(&probe, &headers).await
        })
    }

    /// Starts a long poll with the usual client timeout (and extra headers).
    fn spawn_hold(&self, probe: String, extra: &[(&'static str, &str)]) -> JoinHandle<Answer> {
        let mut headers = vec![("Long-Pulling-Timeout", CLIENT_TIMEOUT.to_string())];
        headers.extend(extra.iter().map(|(n, v)| (*n, v.to_string())));
        self.spawn_listen(probe, headers)
    }

    /// A listener that must be answered at once.
    async fn listen_at_once(&self, probe: &str, headers: &[(&str, &str)]) -> Answer {
        let started = Instant::now();
        let answer = tokio::time::timeout(AT_ONCE, self.listen(probe, headers))
            .await
            .unwrap_or_else(|_| {
                panic!("listener {probe:?} with {headers:?} was not answered within {AT_ONCE:?}")
            });
        eprintln!("answered at once in {:?}", started.elapsed());
        answer
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

/// Asserts a held listener stays unanswered for [`QUIET`].
async fn assert_stays_held(handle: &JoinHandle<Answer>, what: &str) {
    tokio::time::sleep(QUIET).await;
    assert_held(handle, what);
}

/// Starts a server in `tmp`.
async fn start(tmp: &TempDir) -> (Server, Nacos) {
    let server = Server::start(tmp).await;
    let nacos = Nacos::new(&server);
    (server, nacos)
}

fn temp() -> TempDir {
    tempfile::Builder::new()
        .prefix("tacos-listener-")
        .tempdir()
        .expect("creating a temp dir")
}

// ---- tests ------------------------------------------------------------------

/// Up-to-date md5s and `Long-Pulling-Timeout: 10000` → held the 10 s minimum,
/// then 200 with an empty body. Up-to-date includes md5 "" for a missing key.
#[tokio::test]
async fn held_until_timeout_with_empty_body() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "held.yaml", "a: 1").await;
    let probe = record("held.yaml", GROUP, &md5, None) + &record("missing.yaml", GROUP, "", None);

    // Below the minimum, at it, and just above it (10400 - 500 < 10000):
    // all are held 10 s. Run concurrently to keep the test short.
    let hold = |timeout: &'static str| {
        let (nacos, probe) = (nacos.clone(), probe.clone());
        async move {
            let started = Instant::now();
            let answer = tokio::time::timeout(
                Duration::from_secs(15),
                nacos.listen(&probe, &[("Long-Pulling-Timeout", timeout)]),
            )
            .await
            .unwrap_or_else(|_| panic!("Long-Pulling-Timeout {timeout}: not answered within 15 s"));
            (timeout, started.elapsed(), answer)
        }
    };
    let results = tokio::join!(hold("10000"), hold("1000"), hold("10400"));
    for (timeout, held, answer) in [results.0, results.1, results.2] {
        println!("Long-Pulling-Timeout {timeout}: held for {held:?}");
        assert_eq!(answer.status, 200, "timeout {timeout}: {answer:?}");
        assert_eq!(
            answer.body, "",
            "timeout {timeout}: a timed-out listener has an empty body"
        );
        assert!(
            held >= Duration::from_secs(9),
            "timeout {timeout}: held only {held:?}, expected about 10 s"
        );
    }
    server.stop().await;
}

/// A publish to a held key answers the listener at once with exactly that
/// key; a publish to another key does not.
#[tokio::test]
async fn wakes_on_publish_to_a_held_key_only() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let mut md5 = nacos.publish("", "wake.yaml", "v0").await;
    nacos.publish("", "other.yaml", "o0").await;

    let mut latencies = Vec::new();
    for round in 1..=5 {
        let probe =
            record("wake.yaml", GROUP, &md5, None) + &record("wake-missing.yaml", GROUP, "", None);
        let listener = nacos.spawn_hold(probe, &[]);
        tokio::time::sleep(SETTLE).await;
        assert_held(&listener, "before any publish");
        if round == 1 {
            // A different key (and a key in another group) does not wake it.
            nacos.publish("", "other.yaml", "o1").await;
            let (status, body) = nacos
                .form(
                    CONFIGS,
                    &[
                        ("dataId", "wake.yaml"),
                        ("group", "OTHER_GROUP"),
                        ("content", "x"),
                    ],
                    &[],
                )
                .await;
            assert_eq!((status, body.as_str()), (200, "true"));
            // Publishing the same content again changes no md5.
            nacos.publish("", "wake.yaml", "v0").await;
            assert_stays_held(&listener, "after a publish to another key").await;
        }
        // In the last round a second listener on the same key wakes too.
        let twin =
            (round == 5).then(|| nacos.spawn_hold(record("wake.yaml", GROUP, &md5, None), &[]));
        if twin.is_some() {
            tokio::time::sleep(SETTLE).await;
        }
        let publish_sent = Instant::now();
        md5 = nacos.publish("", "wake.yaml", &format!("v{round}")).await;
        let published = Instant::now();
        let answer = woken(listener, "publish to the held key").await;
        if let Some(twin) = twin {
            let twin = woken(twin, "second listener on the same key").await;
            assert_eq!(
                (twin.status, twin.body.as_str()),
                (200, reply_for(&[("wake.yaml", GROUP, "")]).as_str()),
                "second listener on the same key"
            );
        }
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
        assert_eq!(answer.body, reply_for(&[("wake.yaml", GROUP, "")]));
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

/// Keys whose md5 is already out of date are answered at once, all of them,
/// even with a long timeout.
#[tokio::test]
async fn answers_at_once_with_all_stale_keys() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    nacos.publish("", "app:stale-empty.yaml", "a").await;
    nacos.publish("", "stale-wrong.yaml", "b").await;
    let fresh = nacos.publish("", "fresh.yaml", "c").await;

    let probe = record("app:stale-empty.yaml", GROUP, "", None)
        + &record("fresh.yaml", GROUP, &fresh, None)
        + &record(
            "stale-wrong.yaml",
            GROUP,
            "0123456789abcdef0123456789abcdef",
            None,
        )
        + &record("not-there.yaml", GROUP, "", None)
        + &record("gone.yaml", GROUP, "deadbeefdeadbeefdeadbeefdeadbeef", None);
    let answer = nacos
        .listen_at_once(&probe, &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)])
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        reply_records(&answer.body),
        sorted(&[
            ("app:stale-empty.yaml", GROUP, ""),
            ("stale-wrong.yaml", GROUP, ""),
            ("gone.yaml", GROUP, ""),
        ]),
        "body {:?}",
        answer.body
    );

    // One stale key alone: the exact reply.
    let answer = nacos
        .listen_at_once(
            &record("stale-wrong.yaml", GROUP, "x", None),
            &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)],
        )
        .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("stale-wrong.yaml", GROUP, "")]).as_str())
    );
    // A ':' in the dataId is URL-encoded in the reply, as Java does.
    let answer = nacos
        .listen_at_once(
            &record("app:stale-empty.yaml", GROUP, "", None),
            &[("Long-Pulling-Timeout", CLIENT_TIMEOUT)],
        )
        .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, "app%3Astale-empty.yaml%02DEFAULT_GROUP%01\n")
    );
    server.stop().await;
}

/// A poll answered at once because the client holds a stale md5 never
/// waits in the hub, yet the console's listeners view lists it, with the
/// md5 it held and "not in sync" (it used to be invisible).
#[tokio::test]
async fn a_poll_answered_at_once_is_listed_as_not_in_sync() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let current = nacos.publish("", "seen.yaml", "v2").await;
    let stale = md5_hex("v1");
    let answer = nacos
        .listen_at_once(
            &record("seen.yaml", GROUP, &stale, None),
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

/// The tenant is echoed exactly as sent: empty (4-field record) → no tenant
/// field, "public" → "public", a custom namespace → its id. Both for stale
/// keys (answered at once) and for held keys woken by a publish.
#[tokio::test]
async fn echoes_the_tenant_as_sent() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    nacos.create_namespace("listen-ns").await;
    let public_md5 = nacos.publish("", "t.yaml", "in public").await;
    let custom_md5 = nacos.publish("listen-ns", "t.yaml", "in custom").await;
    let timeout = [("Long-Pulling-Timeout", CLIENT_TIMEOUT)];

    // Stale → at once.
    for (tenant, expected) in [
        ("", reply_for(&[("t.yaml", GROUP, "")])),
        ("public", reply_for(&[("t.yaml", GROUP, "public")])),
        ("listen-ns", reply_for(&[("t.yaml", GROUP, "listen-ns")])),
    ] {
        let answer = nacos
            .listen_at_once(&record("t.yaml", GROUP, "stale", Some(tenant)), &timeout)
            .await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, expected.as_str()),
            "stale key in tenant {tenant:?}"
        );
    }

    // Both public spellings and the custom namespace in one request.
    let probe = record("t.yaml", GROUP, "", Some(""))
        + &record("t.yaml", GROUP, "", Some("public"))
        + &record("t.yaml", GROUP, "", Some("listen-ns"));
    let answer = nacos.listen_at_once(&probe, &timeout).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        reply_records(&answer.body),
        sorted(&[
            ("t.yaml", GROUP, ""),
            ("t.yaml", GROUP, "public"),
            ("t.yaml", GROUP, "listen-ns"),
        ]),
        "body {:?}",
        answer.body
    );

    // Held, then woken by a publish (to the canonical namespace).
    let empty = nacos.spawn_hold(record("t.yaml", GROUP, &public_md5, Some("")), &[]);
    let public = nacos.spawn_hold(record("t.yaml", GROUP, &public_md5, Some("public")), &[]);
    let custom = nacos.spawn_hold(record("t.yaml", GROUP, &custom_md5, Some("listen-ns")), &[]);
    tokio::time::sleep(SETTLE).await;
    for (h, what) in [
        (&empty, "\"\""),
        (&public, "public"),
        (&custom, "listen-ns"),
    ] {
        assert_held(h, what);
    }
    // The custom namespace's config does not wake the public listeners.
    nacos.publish("listen-ns", "t.yaml", "custom v2").await;
    let answer = woken(custom, "custom namespace publish").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("t.yaml", GROUP, "listen-ns")]).as_str())
    );
    assert_stays_held(&empty, "public listener after a custom-namespace publish").await;
    assert_held(
        &public,
        "\"public\" listener after a custom-namespace publish",
    );
    nacos.publish("public", "t.yaml", "public v2").await;
    let (empty, public) = tokio::join!(woken(empty, "\"\" tenant"), woken(public, "public"));
    assert_eq!(
        (empty.status, empty.body.as_str()),
        (200, reply_for(&[("t.yaml", GROUP, "")]).as_str()),
        "empty tenant"
    );
    assert_eq!(
        (public.status, public.body.as_str()),
        (200, reply_for(&[("t.yaml", GROUP, "public")]).as_str()),
        "tenant \"public\""
    );
    server.stop().await;
}

/// `Long-Pulling-Timeout-No-Hangup: true` answers at once: empty when nothing
/// changed, the changed keys otherwise. No timeout header → at once too.
#[tokio::test]
async fn no_hangup_and_no_timeout_answer_at_once() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "nh.yaml", "x").await;
    let fresh = record("nh.yaml", GROUP, &md5, None) + &record("nh-missing.yaml", GROUP, "", None);
    let stale = record("nh.yaml", GROUP, "old", None);

    let no_hangup = [
        ("Long-Pulling-Timeout", CLIENT_TIMEOUT),
        ("Long-Pulling-Timeout-No-Hangup", "true"),
    ];
    let answer = nacos.listen_at_once(&fresh, &no_hangup).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, ""),
        "no-hangup, nothing changed"
    );
    let answer = nacos.listen_at_once(&stale, &no_hangup).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("nh.yaml", GROUP, "")]).as_str()),
        "no-hangup, changed"
    );

    let answer = nacos.listen_at_once(&fresh, &[]).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, ""),
        "no timeout, nothing changed"
    );
    let answer = nacos.listen_at_once(&stale, &[]).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("nh.yaml", GROUP, "")]).as_str()),
        "no timeout, changed"
    );
    server.stop().await;
}

/// 10,000 keys in one request are held and woken by a publish to one of
/// them (the reply names only that key); 10,001 keys → 400.
#[tokio::test]
async fn ten_thousand_keys_and_one_more() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "k-00042", "exists").await;
    let probe_of = |n: usize| -> String {
        (0..n)
            .map(|i| {
                let id = format!("k-{i:05}");
                let m = if i == 42 { md5.as_str() } else { "" };
                record(&id, GROUP, m, None)
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

    let listener = nacos.spawn_hold(probe_of(10_000), &[]);
    tokio::time::sleep(SETTLE * 2).await;
    assert_held(&listener, "10,000 up-to-date keys");
    nacos.publish("", "k-07777", "new").await;
    let published = Instant::now();
    let answer = woken(listener, "10,000 keys").await;
    eprintln!(
        "10,000 keys: notify latency {:?}",
        answer.at.saturating_duration_since(published)
    );
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("k-07777", GROUP, "")]).as_str())
    );
    assert!(nacos.health().await == 200);
    server.stop().await;
}

/// Malformed `Listening-Configs` → 400, and the server keeps working.
#[tokio::test]
async fn malformed_listening_configs_are_rejected() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "ok.yaml", "fine").await;
    let timeout = [("Long-Pulling-Timeout", CLIENT_TIMEOUT)];

    let bad_probes = [
        ("two fields", "a.yaml\u{2}DEFAULT_GROUP\u{1}".to_string()),
        ("one field", "a.yaml\u{1}".to_string()),
        ("empty value", String::new()),
        ("only separators", "\u{1}\u{1}".to_string()),
        (
            "missing dataId",
            "\u{2}DEFAULT_GROUP\u{2}abc\u{1}".to_string(),
        ),
        ("missing group", "a.yaml\u{2}\u{2}abc\u{1}".to_string()),
        ("five fields", "a\u{2}b\u{2}c\u{2}d\u{2}e\u{1}".to_string()),
        (
            "good record then a bad one",
            record("ok.yaml", GROUP, &md5, None) + "b.yaml\u{2}G\u{1}",
        ),
    ];
    for (what, probe) in &bad_probes {
        for headers in [&timeout[..], &[][..]] {
            let answer = nacos.listen_at_once(probe, headers).await;
            assert_eq!(answer.status, 400, "{what} ({headers:?}): {answer:?}");
        }
    }
    // No Listening-Configs at all, and an empty form.
    for form in [&[("Other", "x")][..], &[][..]] {
        let answer = tokio::time::timeout(AT_ONCE, nacos.listen_form(form, &timeout))
            .await
            .expect("answered at once");
        assert_eq!(answer.status, 400, "form {form:?}: {answer:?}");
    }

    // Still working: healthy, answers listeners, holds and wakes them.
    assert_eq!(nacos.health().await, 200);
    let answer = nacos
        .listen_at_once(&record("ok.yaml", GROUP, "stale", None), &timeout)
        .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("ok.yaml", GROUP, "")]).as_str())
    );
    let listener = nacos.spawn_hold(record("ok.yaml", GROUP, &md5, None), &[]);
    tokio::time::sleep(SETTLE).await;
    assert_held(&listener, "valid listener after malformed ones");
    nacos.publish("", "ok.yaml", "changed").await;
    let answer = woken(listener, "after malformed requests").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("ok.yaml", GROUP, "")]).as_str())
    );
    server.stop().await;
}

/// A beta publish for 10.9.9.9 wakes a listener whose `X-Forwarded-For` is
/// 10.9.9.9 (it now should hold the beta md5), not one from another IP.
#[tokio::test]
async fn beta_publish_wakes_only_the_beta_ip() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let normal_md5 = nacos.publish("", "beta.yaml", "normal").await;
    let probe = record("beta.yaml", GROUP, &normal_md5, None);

    let beta_client = nacos.spawn_hold(probe.clone(), &[("X-Forwarded-For", "10.9.9.9")]);
    let other_client = nacos.spawn_hold(probe.clone(), &[("X-Forwarded-For", "10.8.8.8")]);
    // Behind two proxies: the first hop is the client.
    let proxied_client = nacos.spawn_hold(
        probe.clone(),
        &[("X-Forwarded-For", "10.9.9.9, 172.16.0.1")],
    );
    tokio::time::sleep(SETTLE).await;
    assert_held(&proxied_client, "proxied beta IP before the beta publish");
    assert_held(&beta_client, "beta IP before the beta publish");
    assert_held(&other_client, "other IP before the beta publish");

    nacos
        .publish_beta("beta.yaml", "beta content", "10.9.9.9")
        .await;
    let published = Instant::now();
    let answer = woken(beta_client, "beta IP after the beta publish").await;
    eprintln!(
        "beta notify latency {:?}",
        answer.at.saturating_duration_since(published)
    );
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("beta.yaml", GROUP, "")]).as_str())
    );
    let answer = woken(proxied_client, "proxied beta IP after the beta publish").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("beta.yaml", GROUP, "")]).as_str()),
        "X-Forwarded-For: 10.9.9.9, 172.16.0.1"
    );
    assert_stays_held(&other_client, "other IP after the beta publish").await;

    // The beta IP now holds the beta md5: the normal one is stale for it,
    // the beta one is held; the other IP's view is unchanged.
    let beta_md5 = md5_hex("beta content");
    let timeout = [
        ("Long-Pulling-Timeout", CLIENT_TIMEOUT),
        ("X-Forwarded-For", "10.9.9.9"),
    ];
    let answer = nacos.listen_at_once(&probe, &timeout).await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("beta.yaml", GROUP, "")]).as_str()),
        "normal md5 from the beta IP"
    );
    let no_hangup = [
        ("Long-Pulling-Timeout", CLIENT_TIMEOUT),
        ("Long-Pulling-Timeout-No-Hangup", "true"),
        ("X-Forwarded-For", "10.9.9.9"),
    ];
    let answer = nacos
        .listen_at_once(&record("beta.yaml", GROUP, &beta_md5, None), &no_hangup)
        .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, ""),
        "beta md5 from the beta IP"
    );

    // A normal publish then wakes the other IP.
    nacos.publish("", "beta.yaml", "normal v2").await;
    let answer = woken(other_client, "other IP after a normal publish").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("beta.yaml", GROUP, "")]).as_str())
    );
    server.stop().await;
}

/// Deleting a config wakes its listener with that key.
#[tokio::test]
async fn delete_wakes_the_listener() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "doomed.yaml", "bye").await;
    nacos.create_namespace("del-ns").await;
    let ns_md5 = nacos.publish("del-ns", "doomed.yaml", "bye too").await;

    let listener = nacos.spawn_hold(record("doomed.yaml", GROUP, &md5, None), &[]);
    let ns_listener = nacos.spawn_hold(record("doomed.yaml", GROUP, &ns_md5, Some("del-ns")), &[]);
    tokio::time::sleep(SETTLE).await;
    assert_held(&listener, "before the delete");
    assert_held(&ns_listener, "before the delete");

    nacos.delete("", "doomed.yaml").await;
    let answer = woken(listener, "after the delete").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("doomed.yaml", GROUP, "")]).as_str())
    );
    assert_stays_held(&ns_listener, "other namespace after the delete").await;
    nacos.delete("del-ns", "doomed.yaml").await;
    let answer = woken(ns_listener, "after the namespaced delete").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("doomed.yaml", GROUP, "del-ns")]).as_str())
    );

    // Deleted: md5 "" is now up to date (held), anything else is stale.
    let no_hangup = [
        ("Long-Pulling-Timeout", CLIENT_TIMEOUT),
        ("Long-Pulling-Timeout-No-Hangup", "true"),
    ];
    let answer = nacos
        .listen_at_once(&record("doomed.yaml", GROUP, "", None), &no_hangup)
        .await;
    assert_eq!((answer.status, answer.body.as_str()), (200, ""));
    let answer = nacos
        .listen_at_once(&record("doomed.yaml", GROUP, &md5, None), &no_hangup)
        .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, reply_for(&[("doomed.yaml", GROUP, "")]).as_str())
    );
    server.stop().await;
}

/// SIGTERM answers held listeners at once with "no change" (200, empty).
#[tokio::test]
async fn sigterm_releases_held_listeners() {
    let tmp = temp();
    let (mut server, nacos) = start(&tmp).await;
    let md5 = nacos.publish("", "bye.yaml", "x").await;
    let listener = nacos.spawn_hold(record("bye.yaml", GROUP, &md5, None), &[]);
    tokio::time::sleep(SETTLE).await;
    assert_held(&listener, "before SIGTERM");
    let stopping = Instant::now();
    server.stop().await;
    let answer = woken(listener, "SIGTERM").await;
    println!(
        "held listener released {:?} after SIGTERM",
        answer.at.saturating_duration_since(stopping)
    );
    assert_eq!((answer.status, answer.body.as_str()), (200, ""));
}

#[test]
fn encoding_helpers_match_java() {
    assert_eq!(java_encode("a.b-c*d_e"), "a.b-c*d_e");
    assert_eq!(java_encode("a b\u{2}c\u{1}"), "a+b%02c%01");
    assert_eq!(java_encode("配"), "%E9%85%8D");
    assert_eq!(java_decode("a+b%02c%01"), "a b\u{2}c\u{1}");
    assert_eq!(java_decode("%E9%85%8D%"), "配%");
    assert_eq!(reply_for(&[("d", "g", "public")]), "d%02g%02public%01\n");
}
