//! The Nacos 2.x gRPC protocol spoken raw against the real `tacos` binary:
//! `Payload{metadata.type, body: Any{value: JSON}}` over the unary
//! `Request/request` and the `BiRequestStream/requestBiStream` services, with
//! the generated client of the library.
//!
//! Every response is checked for the common fields (`resultCode`,
//! `errorCode`), its type and the absence of JSON nulls. A connection is one
//! tonic [`Channel`] (one HTTP/2 connection): the server ties a connection's
//! unary calls to its stream by the TCP peer address, so the stream and the
//! unary calls of one "client" share a channel. Every wait is bounded.

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{
    assert_true, free_port, grpc_payload as payload, grpc_raw_payload as raw_payload, md5_hex,
    temp_dir, NacosApi, Server,
};
use futures::channel::mpsc::{unbounded, UnboundedSender};
use serde_json::{json, Value};
use tacos::grpc::pb::bi_request_stream_client::BiRequestStreamClient;
use tacos::grpc::pb::request_client::RequestClient;
use tacos::grpc::pb::Payload;
use tempfile::TempDir;
use tonic::transport::{Channel, Endpoint};

const GROUP: &str = "DEFAULT_GROUP";
/// Bound on one unary call or on connecting.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on waiting for a push that must come.
const PUSH_BOUND: Duration = Duration::from_secs(5);
/// How long the stream must stay silent to count as "no push".
const QUIET: Duration = Duration::from_millis(1500);
/// The server re-sends an unacked push after 3 s; allow for a loaded box.
const RESEND_BOUND: Duration = Duration::from_millis(4500);
/// Message size limit the test clients accept (above tonic's 4 MiB default).
const CLIENT_MAX_MESSAGE: usize = 64 << 20;

// ---- payloads ---------------------------------------------------------------

/// A fresh request id.
fn next_request_id() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(1);
    format!("t-{}", SEQ.fetch_add(1, Ordering::Relaxed))
}

/// Where the first JSON null in `value` is (a JSON-pointer-ish path).
fn find_null(value: &Value, path: &str) -> Option<String> {
    match value {
        Value::Null => Some(if path.is_empty() {
            "/".into()
        } else {
            path.into()
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| find_null(v, &format!("{path}/{i}"))),
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| find_null(v, &format!("{path}/{k}"))),
        _ => None,
    }
}

/// Panics if `value` holds a JSON null anywhere.
fn assert_no_nulls(value: &Value) {
    if let Some(path) = find_null(value, "") {
        panic!("JSON null at {path} in {value}");
    }
}

/// A decoded message: its `metadata.type` and its JSON body.
#[derive(Debug, Clone)]
struct Msg {
    kind: String,
    body: Value,
}

impl Msg {
    fn decode(payload: Payload) -> Msg {
        let kind = payload.metadata.map(|m| m.r#type).unwrap_or_default();
        let any = payload
            .body
            .unwrap_or_else(|| panic!("a {kind:?} message without a body"));
        let body: Value = serde_json::from_slice(&any.value).unwrap_or_else(|e| {
            panic!(
                "{kind} body is not JSON ({e}): {}",
                String::from_utf8_lossy(&any.value)
            )
        });
        assert!(body.is_object(), "{kind} body is not an object: {body}");
        assert_no_nulls(&body);
        Msg { kind, body }
    }

    fn str(&self, name: &str) -> &str {
        self.body[name]
            .as_str()
            .unwrap_or_else(|| panic!("{} has no string {name:?}: {}", self.kind, self.body))
    }

    fn int(&self, name: &str) -> i64 {
        self.body[name]
            .as_i64()
            .unwrap_or_else(|| panic!("{} has no integer {name:?}: {}", self.kind, self.body))
    }

    fn result_code(&self) -> i64 {
        self.int("resultCode")
    }

    fn error_code(&self) -> i64 {
        self.int("errorCode")
    }

    /// Asserts a successful response of `kind` answering `request_id`.
    fn assert_ok(&self, kind: &str, request_id: &str) -> &Self {
        assert_eq!(self.kind, kind, "response type: {self:?}");
        assert_eq!(self.result_code(), 200, "expected success: {self:?}");
        assert_eq!(self.error_code(), 0, "expected errorCode 0: {self:?}");
        assert_eq!(self.str("requestId"), request_id, "requestId: {self:?}");
        self
    }

    /// Asserts a failed response of `kind` with `error_code`.
    fn assert_failed(&self, kind: &str, request_id: &str, error_code: i64) -> &Self {
        assert_eq!(self.kind, kind, "response type: {self:?}");
        assert_eq!(self.result_code(), 500, "expected a failure: {self:?}");
        assert_eq!(self.error_code(), error_code, "errorCode: {self:?}");
        assert_eq!(self.str("requestId"), request_id, "requestId: {self:?}");
        self
    }
}

// ---- clients ----------------------------------------------------------------

/// Starts a server on a known gRPC port.
async fn start(tmp: &TempDir) -> (Server, u16) {
    let grpc_port = free_port().to_string();
    let server = Server::start_with_args(tmp, &["--grpc-port", &grpc_port]).await;
    (server, grpc_port.parse().unwrap())
}

/// One client connection: a channel (one HTTP/2 connection) and a unary
/// client on it.
struct Conn {
    channel: Channel,
    client: RequestClient<Channel>,
}

impl Conn {
    async fn open(grpc_port: u16) -> Conn {
        let endpoint = Endpoint::from_shared(format!("http://127.0.0.1:{grpc_port}"))
            .unwrap()
            .connect_timeout(CALL_TIMEOUT);
        let channel = tokio::time::timeout(CALL_TIMEOUT, endpoint.connect())
            .await
            .expect("connecting timed out")
            .unwrap_or_else(|e| panic!("connecting to gRPC port {grpc_port}: {e:?}"));
        let client = RequestClient::new(channel.clone())
            .max_decoding_message_size(CLIENT_MAX_MESSAGE)
            .max_encoding_message_size(CLIENT_MAX_MESSAGE);
        Conn { channel, client }
    }

    /// Sends one payload and decodes the answer (checked for nulls and the
    /// common fields).
    async fn send(&mut self, payload: Payload) -> Msg {
        let kind = payload.metadata.as_ref().map(|m| m.r#type.clone());
        let reply = tokio::time::timeout(CALL_TIMEOUT, self.client.request(payload))
            .await
            .unwrap_or_else(|_| panic!("{kind:?} timed out"))
            .unwrap_or_else(|status| panic!("{kind:?} failed with a gRPC status: {status:?}"));
        let msg = Msg::decode(reply.into_inner());
        for field in ["resultCode", "errorCode"] {
            assert!(
                msg.body[field].is_i64(),
                "{kind:?} answered without {field}: {msg:?}"
            );
        }
        msg
    }

    /// Sends `body` (to which `requestId` and `headers` are added) as `kind`
    /// from `client_ip` ("" for none); returns the request id and answer.
    async fn call_from(&mut self, kind: &str, client_ip: &str, mut body: Value) -> (String, Msg) {
        let rid = next_request_id();
        body["requestId"] = json!(rid);
        if body.get("headers").is_none() {
            body["headers"] = json!({});
        }
        let msg = self.send(payload(kind, client_ip, &body)).await;
        (rid, msg)
    }

    async fn call(&mut self, kind: &str, body: Value) -> (String, Msg) {
        self.call_from(kind, "", body).await
    }

    async fn server_check(&mut self) -> String {
        let (rid, msg) = self.call("ServerCheckRequest", json!({})).await;
        msg.assert_ok("ServerCheckResponse", &rid);
        assert_eq!(
            msg.body["supportAbilityNegotiation"],
            json!(true),
            "{msg:?}"
        );
        let id = msg.str("connectionId").to_string();
        assert!(!id.is_empty(), "empty connectionId: {msg:?}");
        id
    }

    async fn query_from(&mut self, client_ip: &str, data_id: &str, tenant: &str) -> (String, Msg) {
        let body = json!({"dataId": data_id, "group": GROUP, "tenant": tenant, "tag": ""});
        let (rid, msg) = self.call_from("ConfigQueryRequest", client_ip, body).await;
        assert_eq!(msg.kind, "ConfigQueryResponse", "{msg:?}");
        assert!(
            msg.body.get("tag").is_none(),
            "ConfigQueryResponse must not carry `tag`: {msg:?}"
        );
        (rid, msg)
    }

    /// Queries a config that must exist; returns the response.
    async fn query_ok_from(&mut self, client_ip: &str, data_id: &str, tenant: &str) -> Msg {
        let (rid, msg) = self.query_from(client_ip, data_id, tenant).await;
        msg.assert_ok("ConfigQueryResponse", &rid);
        for field in ["content", "contentType", "md5", "encryptedDataKey"] {
            assert!(msg.body[field].is_string(), "{field} missing: {msg:?}");
        }
        assert!(msg.body["beta"].is_boolean(), "beta missing: {msg:?}");
        assert!(msg.int("lastModified") > 0, "lastModified: {msg:?}");
        assert_eq!(msg.str("md5"), md5_hex(msg.str("content")), "{msg:?}");
        msg
    }

    async fn query_ok(&mut self, data_id: &str, tenant: &str) -> Msg {
        self.query_ok_from("", data_id, tenant).await
    }

    /// Asserts the config does not exist (errorCode 300).
    async fn query_absent(&mut self, data_id: &str, tenant: &str) {
        let (rid, msg) = self.query_from("", data_id, tenant).await;
        msg.assert_failed("ConfigQueryResponse", &rid, 300);
    }

    async fn publish_raw(&mut self, body: Value) -> (String, Msg) {
        let (rid, msg) = self.call("ConfigPublishRequest", body).await;
        assert_eq!(msg.kind, "ConfigPublishResponse", "{msg:?}");
        (rid, msg)
    }

    /// Publishes `content` with `additionMap`, which must succeed.
    async fn publish_with(&mut self, data_id: &str, tenant: &str, content: &str, addition: Value) {
        let body = json!({
            "dataId": data_id, "group": GROUP, "tenant": tenant, "content": content,
            "additionMap": addition,
        });
        let (rid, msg) = self.publish_raw(body).await;
        msg.assert_ok("ConfigPublishResponse", &rid);
    }

    async fn publish(&mut self, data_id: &str, tenant: &str, content: &str) {
        self.publish_with(data_id, tenant, content, json!({})).await
    }

    async fn remove(&mut self, data_id: &str, tenant: &str) {
        let body = json!({"dataId": data_id, "group": GROUP, "tenant": tenant, "tag": ""});
        let (rid, msg) = self.call("ConfigRemoveRequest", body).await;
        msg.assert_ok("ConfigRemoveResponse", &rid);
    }

    /// A batch listen of `(dataId, tenant, md5)` contexts.
    async fn batch_listen(&mut self, listen: bool, keys: &[(&str, &str, &str)]) -> (String, Msg) {
        let contexts: Vec<Value> = keys
            .iter()
            .map(|(data_id, tenant, md5)| {
                json!({"dataId": data_id, "group": GROUP, "tenant": tenant, "md5": md5})
            })
            .collect();
        let body = json!({"listen": listen, "configListenContexts": contexts});
        let (rid, msg) = self.call("ConfigBatchListenRequest", body).await;
        assert_eq!(msg.kind, "ConfigChangeBatchListenResponse", "{msg:?}");
        (rid, msg)
    }

    /// A batch listen that must succeed; returns the changed `(dataId, group,
    /// tenant)`s.
    async fn listen_ok(
        &mut self,
        listen: bool,
        keys: &[(&str, &str, &str)],
    ) -> BTreeSet<(String, String, String)> {
        let (rid, msg) = self.batch_listen(listen, keys).await;
        msg.assert_ok("ConfigChangeBatchListenResponse", &rid);
        let changed = msg.body["changedConfigs"]
            .as_array()
            .unwrap_or_else(|| panic!("no changedConfigs array: {msg:?}"));
        changed
            .iter()
            .map(|c| {
                let field = |name: &str| {
                    c[name]
                        .as_str()
                        .unwrap_or_else(|| panic!("changed config without {name}: {msg:?}"))
                        .to_string()
                };
                (field("dataId"), field("group"), field("tenant"))
            })
            .collect()
    }
}

/// A connection's bi-directional stream.
struct Stream {
    outbound: UnboundedSender<Payload>,
    inbound: tonic::Streaming<Payload>,
}

impl Stream {
    /// Opens the stream on `conn`'s channel (without sending anything).
    async fn open(conn: &Conn) -> Stream {
        let (outbound, rx) = unbounded::<Payload>();
        let mut client = BiRequestStreamClient::new(conn.channel.clone())
            .max_decoding_message_size(CLIENT_MAX_MESSAGE)
            .max_encoding_message_size(CLIENT_MAX_MESSAGE);
        let response = tokio::time::timeout(CALL_TIMEOUT, client.request_bi_stream(rx))
            .await
            .expect("opening the stream timed out")
            .expect("opening the stream");
        Stream {
            outbound,
            inbound: response.into_inner(),
        }
    }

    fn send(&self, payload: Payload) {
        self.outbound
            .unbounded_send(payload)
            .expect("the stream's sender is closed");
    }

    /// Sends `ConnectionSetupRequest` as the official clients do.
    fn setup(&self) {
        let body = json!({
            "clientVersion": "Nacos-Java-Client:v2.4.0",
            "abilities": {},
            "tenant": "",
            "labels": {"source": "sdk", "AppName": "grpc-protocol-test"},
            "requestId": "",
            "headers": {},
        });
        self.send(payload("ConnectionSetupRequest", "", &body));
    }

    /// Sends `ConnectionSetupRequest` as the SDKs' config clients do: labels
    /// `module: config`, and the client's namespace as `tenant`.
    fn setup_config_client(&self, tenant: &str) {
        let body = json!({
            "clientVersion": "Nacos-Rust-Client:v0.8.3",
            "abilities": {},
            "tenant": tenant,
            "labels": {"source": "sdk", "module": "config", "AppName": "grpc-protocol-test"},
            "requestId": "",
            "headers": {},
        });
        self.send(payload("ConnectionSetupRequest", "", &body));
    }

    /// Opens the stream and sends the setup.
    async fn open_set_up(conn: &Conn) -> Stream {
        let stream = Stream::open(conn).await;
        stream.setup();
        stream
    }

    /// The next message within `within`; `None` on timeout. Panics if the
    /// stream ends or fails.
    async fn next_within(&mut self, within: Duration) -> Option<Msg> {
        match tokio::time::timeout(within, self.inbound.message()).await {
            Err(_) => None,
            Ok(Ok(Some(payload))) => Some(Msg::decode(payload)),
            Ok(Ok(None)) => panic!("the server ended the stream"),
            Ok(Err(status)) => panic!("the stream failed: {status:?}"),
        }
    }

    /// The next push, which must come within [`PUSH_BOUND`]; checked to be a
    /// well-formed `ConfigChangeNotifyRequest`.
    async fn next_push(&mut self) -> Msg {
        let push = self
            .next_within(PUSH_BOUND)
            .await
            .unwrap_or_else(|| panic!("no push within {PUSH_BOUND:?}"));
        assert_push_shape(&push);
        push
    }

    /// Asserts nothing arrives for [`QUIET`].
    async fn assert_quiet(&mut self, why: &str) {
        if let Some(msg) = self.next_within(QUIET).await {
            panic!("{why}: unexpected message on the stream: {msg:?}");
        }
    }

    /// Acknowledges a push as the clients do.
    fn ack(&self, push: &Msg) {
        let body = json!({
            "requestId": push.str("requestId"),
            "resultCode": 200,
            "errorCode": 0,
            "message": "",
            "success": true,
        });
        self.send(payload("ConfigChangeNotifyResponse", "", &body));
    }
}

fn assert_push_shape(push: &Msg) {
    assert_eq!(push.kind, "ConfigChangeNotifyRequest", "{push:?}");
    assert!(!push.str("requestId").is_empty(), "{push:?}");
    assert!(push.body["headers"].is_object(), "headers: {push:?}");
    for field in ["dataId", "group", "tenant"] {
        assert!(push.body[field].is_string(), "{field}: {push:?}");
    }
}

/// A push's key: (dataId, group, tenant).
fn push_key(push: &Msg) -> (String, String, String) {
    (
        push.str("dataId").into(),
        push.str("group").into(),
        push.str("tenant").into(),
    )
}

fn key(data_id: &str, tenant: &str) -> (String, String, String) {
    (data_id.into(), GROUP.into(), tenant.into())
}

/// A push's request id as a number (the server numbers them).
fn push_number(push: &Msg) -> u64 {
    push.str("requestId")
        .parse()
        .unwrap_or_else(|_| panic!("push requestId is not a number: {push:?}"))
}

/// HTTP GET of a config: (status, body, Content-MD5, Config-Type).
async fn http_get(api: &NacosApi, data_id: &str, tenant: &str) -> (u16, String, String, String) {
    let (status, body, headers) = api.get(data_id, GROUP, tenant).await;
    (
        status.as_u16(),
        body,
        common::header_str(&headers, "Content-MD5").to_string(),
        common::header_str(&headers, "Config-Type").to_string(),
    )
}

// ---- tests ------------------------------------------------------------------

#[test]
fn the_null_walk_finds_nested_nulls() {
    assert_eq!(find_null(&json!({"a": [1, {"b": "x"}]}), ""), None);
    assert_eq!(
        find_null(&json!({"a": [1, {"b": null}]}), "").as_deref(),
        Some("/a/1/b")
    );
    assert_eq!(find_null(&Value::Null, "").as_deref(), Some("/"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_check_health_and_setup_in_any_order() {
    let tmp = temp_dir();
    let (_server, grpc) = start(&tmp).await;
    let mut conn = Conn::open(grpc).await;

    // Before any stream.
    let id = conn.server_check().await;
    assert!(
        id.contains("127.0.0.1"),
        "the connection id names the peer: {id}"
    );
    assert_eq!(
        conn.server_check().await,
        id,
        "one channel, one connection id"
    );
    let (rid, health) = conn.call("HealthCheckRequest", json!({})).await;
    health.assert_ok("HealthCheckResponse", &rid);

    // Setup after the server check; the stream stays open and silent.
    let mut stream = Stream::open_set_up(&conn).await;
    assert!(
        stream
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "the server sent something unasked after the setup"
    );
    // Server check after the setup: same connection, and it is registered.
    assert_eq!(conn.server_check().await, id, "the id changed after setup");
    let (rid, health) = conn.call("HealthCheckRequest", json!({})).await;
    health.assert_ok("HealthCheckResponse", &rid);
    assert!(conn.listen_ok(true, &[("k", "", "")]).await.is_empty());

    // Another channel is another connection.
    let mut other = Conn::open(grpc).await;
    let other_id = other.server_check().await;
    assert_ne!(other_id, id, "two channels share a connection id");
    // Its setup comes first, then the server check.
    let _other_stream = Stream::open_set_up(&other).await;
    assert_eq!(other.server_check().await, other_id);
    assert!(other.listen_ok(true, &[("k", "", "")]).await.is_empty());
    // The first stream is unaffected.
    assert!(stream
        .next_within(Duration::from_millis(200))
        .await
        .is_none());

    // Ending the stream unregisters the connection (bounded wait: the server
    // notices the end asynchronously); a new stream on the same channel
    // registers it again under the same id.
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let (rid, msg) = conn.batch_listen(true, &[("k", "", "")]).await;
        if msg.result_code() == 500 {
            msg.assert_failed("ConfigChangeBatchListenResponse", &rid, 301);
            break;
        }
        msg.assert_ok("ConfigChangeBatchListenResponse", &rid);
        assert!(
            Instant::now() < deadline,
            "still registered 3 s after its stream ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _stream = Stream::open_set_up(&conn).await;
    assert!(conn.listen_ok(true, &[("k", "", "")]).await.is_empty());
    assert_eq!(conn.server_check().await, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_publish_remove_round_trip_and_http_agree() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let mut conn = Conn::open(grpc).await;
    let data_id = "grpc.round-trip";

    conn.query_absent(data_id, "").await;

    // gRPC publish, read over gRPC and HTTP.
    let content = "a: 1\nb: [x, y]\nunicode: \u{00e9}\u{4e2d}\n";
    let addition = json!({
        "type": "yaml", "desc": "round trip", "appName": "grpc-test",
        "config_tags": "t1,t2", "src_user": "tester", "betaIps": "",
    });
    conn.publish_with(data_id, "", content, addition).await;
    let got = conn.query_ok(data_id, "").await;
    assert_eq!(got.str("content"), content);
    assert_eq!(got.str("md5"), md5_hex(content));
    assert_eq!(got.str("contentType"), "yaml");
    assert_eq!(got.str("encryptedDataKey"), "");
    assert_eq!(got.body["beta"], json!(false));
    let (status, body, md5, config_type) = http_get(&api, data_id, "").await;
    assert_eq!(status, 200, "HTTP GET after gRPC publish: {body}");
    assert_eq!(body, content);
    assert_eq!(md5, md5_hex(content));
    assert_eq!(config_type, "yaml");

    // HTTP publish, read over gRPC.
    let content2 = "a: 2\n";
    let form = [
        ("dataId", data_id),
        ("group", GROUP),
        ("tenant", ""),
        ("content", content2),
        ("type", "properties"),
    ];
    assert_true(api.publish_with(&form, &[]).await, "HTTP publish").await;
    let got = conn.query_ok(data_id, "").await;
    assert_eq!(got.str("content"), content2);
    assert_eq!(got.str("md5"), md5_hex(content2));
    assert_eq!(got.str("contentType"), "properties");
    let (_, _, md5, config_type) = http_get(&api, data_id, "").await;
    assert_eq!(
        (md5.as_str(), config_type.as_str()),
        (got.str("md5"), "properties")
    );

    // gRPC remove: gone for both.
    conn.remove(data_id, "").await;
    conn.query_absent(data_id, "").await;
    let (status, body, _, _) = http_get(&api, data_id, "").await;
    assert_eq!(status, 404, "HTTP GET after gRPC remove: {body}");
    // Removing what is absent succeeds.
    conn.remove(data_id, "").await;
    conn.remove("grpc.never-existed", "").await;

    // HTTP delete is seen over gRPC too.
    conn.publish(data_id, "", "again").await;
    assert_eq!(conn.query_ok(data_id, "").await.str("content"), "again");
    assert_true(api.delete(data_id, GROUP, "").await, "HTTP delete").await;
    conn.query_absent(data_id, "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_and_public_tenant_are_one_namespace_echoed_as_sent() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let mut conn = Conn::open(grpc).await;

    conn.publish("ns.a", "public", "a1").await;
    assert_eq!(conn.query_ok("ns.a", "").await.str("content"), "a1");
    assert_eq!(conn.query_ok("ns.a", "public").await.str("content"), "a1");
    conn.publish("ns.b", "", "b1").await;
    assert_eq!(conn.query_ok("ns.b", "public").await.str("content"), "b1");
    for tenant in ["", "public"] {
        assert_eq!(http_get(&api, "ns.a", tenant).await.1, "a1", "{tenant:?}");
        assert_eq!(http_get(&api, "ns.b", tenant).await.1, "b1", "{tenant:?}");
    }

    let mut stream = Stream::open_set_up(&conn).await;
    let changed = conn
        .listen_ok(true, &[("ns.a", "public", ""), ("ns.b", "", "")])
        .await;
    let expected: BTreeSet<_> = [key("ns.a", "public"), key("ns.b", "")].into();
    assert_eq!(changed, expected, "changedConfigs echo each tenant as sent");
    // Current md5s, either spelling: nothing changed.
    let a1 = md5_hex("a1");
    let b1 = md5_hex("b1");
    let changed = conn
        .listen_ok(true, &[("ns.a", "public", &a1), ("ns.b", "", &b1)])
        .await;
    assert!(changed.is_empty(), "{changed:?}");
    // The hub hears of applied changes after the write is answered: on a
    // loaded machine it may hear of a1 or b1 only after the listens above
    // registered, and then notify them (harmless: the client finds its md5
    // current). Such late notices come before the changes below, and echo
    // the listened spelling too.
    while let Some(late) = stream.next_within(QUIET).await {
        assert_push_shape(&late);
        assert!(
            [key("ns.a", "public"), key("ns.b", "")].contains(&push_key(&late)),
            "{late:?}"
        );
        stream.ack(&late);
    }

    // Pushes echo the listened spelling whichever spelling changed it.
    assert_true(api.publish("ns.a", GROUP, "", "a2").await, "publish a2").await;
    let push = stream.next_push().await;
    assert_eq!(push_key(&push), key("ns.a", "public"), "{push:?}");
    stream.ack(&push);
    assert_true(
        api.publish("ns.b", GROUP, "public", "b2").await,
        "publish b2",
    )
    .await;
    let push = stream.next_push().await;
    assert_eq!(push_key(&push), key("ns.b", ""), "{push:?}");
    stream.ack(&push);
    stream.assert_quiet("after both pushes were acked").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beta_is_served_by_client_ip() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let mut conn = Conn::open(grpc).await;
    let beta_ip = "10.9.9.9";

    // Beta published over HTTP.
    let data_id = "beta.http";
    assert_true(api.publish(data_id, GROUP, "", "normal").await, "publish").await;
    let form = [
        ("dataId", data_id),
        ("group", GROUP),
        ("tenant", ""),
        ("content", "beta content"),
    ];
    let beta = api.publish_with(&form, &[("betaIps", beta_ip)]).await;
    assert_true(beta, "HTTP beta publish").await;
    let got = conn.query_ok_from(beta_ip, data_id, "").await;
    assert_eq!(got.str("content"), "beta content", "{got:?}");
    assert_eq!(got.body["beta"], json!(true), "{got:?}");
    for ip in ["10.1.1.1", ""] {
        let got = conn.query_ok_from(ip, data_id, "").await;
        assert_eq!(got.str("content"), "normal", "client ip {ip:?}: {got:?}");
        assert_eq!(got.body["beta"], json!(false), "client ip {ip:?}: {got:?}");
    }

    // Beta published over gRPC (additionMap betaIps, two IPs).
    let data_id = "beta.grpc";
    conn.publish(data_id, "", "normal 2").await;
    let addition = json!({"betaIps": format!("{beta_ip}, 10.8.8.8")});
    conn.publish_with(data_id, "", "beta 2", addition).await;
    for ip in [beta_ip, "10.8.8.8"] {
        let got = conn.query_ok_from(ip, data_id, "").await;
        assert_eq!(got.str("content"), "beta 2", "client ip {ip:?}: {got:?}");
        assert_eq!(got.body["beta"], json!(true), "{got:?}");
    }
    let got = conn.query_ok_from("10.7.7.7", data_id, "").await;
    assert_eq!(got.str("content"), "normal 2", "{got:?}");
    assert_eq!(got.body["beta"], json!(false), "{got:?}");
    // HTTP from 127.0.0.1 (not a beta IP) sees the normal content.
    assert_eq!(http_get(&api, data_id, "").await.1, "normal 2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_publish_checks_the_md5() {
    let tmp = temp_dir();
    let (_server, grpc) = start(&tmp).await;
    let mut conn = Conn::open(grpc).await;
    let data_id = "cas.key";
    conn.publish(data_id, "", "v1").await;

    let publish = |cas: String, content: &str| {
        json!({
            "dataId": data_id, "group": GROUP, "tenant": "", "content": content,
            "casMd5": cas, "additionMap": {},
        })
    };
    let (rid, msg) = conn.publish_raw(publish(md5_hex("wrong"), "v2")).await;
    assert_eq!(msg.str("requestId"), rid);
    assert_eq!(msg.result_code(), 500, "a CAS mismatch must fail: {msg:?}");
    assert_ne!(msg.error_code(), 0, "{msg:?}");
    assert_eq!(conn.query_ok(data_id, "").await.str("content"), "v1");

    let (rid, msg) = conn.publish_raw(publish(md5_hex("v1"), "v2")).await;
    msg.assert_ok("ConfigPublishResponse", &rid);
    assert_eq!(conn.query_ok(data_id, "").await.str("content"), "v2");

    // The old md5 no longer matches.
    let (_, msg) = conn.publish_raw(publish(md5_hex("v1"), "v3")).await;
    assert_eq!(msg.result_code(), 500, "a stale CAS must fail: {msg:?}");
    assert_eq!(conn.query_ok(data_id, "").await.str("content"), "v2");
}

/// Gray release by tag over gRPC, in the frames the Java client sends: a
/// publish with `additionMap.tag` makes the gray `tag_{tag}`; a query gets
/// it by its `tag` field (answered with `tag`, URL-encoded, as Nacos'
/// `ConfigQueryRequestHandler`) or, without one, by the connection's setup
/// label `app_Vipserver-Tag`; a batch listen is compared with the gray's md5
/// for a connection it serves (also by the request's `Vipserver-Tag`
/// header); a change to the gray is pushed only to the connections it
/// serves, and its removal moves them back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gray_by_tag_is_served_listened_and_pushed_by_label() {
    let tmp = temp_dir();
    let (_server, grpc) = start(&tmp).await;
    let mut admin = Conn::open(grpc).await;
    let data_id = "tagged.key";
    admin.publish(data_id, "", "formal").await;
    admin
        .publish_with(data_id, "", "canary", json!({"tag": "canary"}))
        .await;

    let query = |tag: &str| json!({"dataId": data_id, "group": GROUP, "tenant": "", "tag": tag});
    let (rid, msg) = admin.call("ConfigQueryRequest", query("canary")).await;
    msg.assert_ok("ConfigQueryResponse", &rid);
    assert_eq!(
        (msg.str("content"), msg.str("tag"), &msg.body["beta"]),
        ("canary", "canary", &json!(false)),
        "{msg:?}"
    );
    assert_eq!(admin.query_ok(data_id, "").await.str("content"), "formal");
    // A tag asked for with no gray of it: not found, the tag echoed.
    let (rid, msg) = admin.call("ConfigQueryRequest", query("green")).await;
    msg.assert_failed("ConfigQueryResponse", &rid, 300);
    assert_eq!(msg.str("tag"), "green", "{msg:?}");

    // A connection labelled with the tag at setup, and a plain one.
    let mut tagged = Conn::open(grpc).await;
    let mut tagged_stream = Stream::open(&tagged).await;
    let setup = json!({
        "clientVersion": "Nacos-Java-Client:v3.0.0",
        "abilities": {},
        "tenant": "",
        // No `module: config`: such a connection would also be told of the
        // key's recent changes until it listens (a Tacos extension).
        "labels": {"source": "sdk", "app_Vipserver-Tag": "canary"},
        "requestId": "",
        "headers": {},
    });
    tagged_stream.send(payload("ConnectionSetupRequest", "", &setup));
    // The setup travels on the stream, the query on its own call: wait
    // until the node has seen the setup.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (_, msg) = tagged.call("ConfigQueryRequest", query("")).await;
        if msg.str("content") == "canary" {
            assert_eq!(msg.str("tag"), "canary", "{msg:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the setup label was not used: {msg:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut plain = Conn::open(grpc).await;
    let mut plain_stream = Stream::open_set_up(&plain).await;

    // Listens: each connection is compared with its own version.
    let canary_md5 = md5_hex("canary");
    let formal_md5 = md5_hex("formal");
    assert!(tagged
        .listen_ok(true, &[(data_id, "", &canary_md5)])
        .await
        .is_empty());
    assert!(plain
        .listen_ok(true, &[(data_id, "", &formal_md5)])
        .await
        .is_empty());
    // The request's Vipserver-Tag header counts too (Nacos'
    // ConfigChangeBatchListenRequestHandler): the formal md5 is stale then.
    let body = json!({
        "listen": false,
        "configListenContexts": [{"dataId": data_id, "group": GROUP, "tenant": "", "md5": formal_md5}],
        "headers": {"Vipserver-Tag": "canary"},
    });
    let (rid, msg) = plain.call("ConfigBatchListenRequest", body.clone()).await;
    msg.assert_ok("ConfigChangeBatchListenResponse", &rid);
    let mut listen_tagged = body;
    listen_tagged["listen"] = json!(true);
    let mut other = Conn::open(grpc).await;
    let _other_stream = Stream::open_set_up(&other).await;
    let (rid, msg) = other.call("ConfigBatchListenRequest", listen_tagged).await;
    msg.assert_ok("ConfigChangeBatchListenResponse", &rid);
    assert_eq!(
        msg.body["changedConfigs"][0]["dataId"],
        json!(data_id),
        "{msg:?}"
    );
    // The plain connection listens again (the unlisten above dropped it).
    assert!(plain
        .listen_ok(true, &[(data_id, "", &formal_md5)])
        .await
        .is_empty());

    // A new gray version: pushed to the tagged connection only.
    admin
        .publish_with(data_id, "", "canary 2", json!({"tag": "canary"}))
        .await;
    let push = tagged_stream.next_push().await;
    assert_eq!(push_key(&push), key(data_id, ""), "{push:?}");
    tagged_stream.ack(&push);
    plain_stream
        .assert_quiet("a gray change for another tag")
        .await;

    // A formal change: pushed to the plain connection only.
    admin.publish(data_id, "", "formal 2").await;
    let push = plain_stream.next_push().await;
    plain_stream.ack(&push);
    tagged_stream
        .assert_quiet("a formal change under a gray")
        .await;

    // The gray removed (ConfigRemoveRequest with the tag): its connection
    // is told and reads the formal version again; the config stays.
    let (rid, msg) = admin.call("ConfigRemoveRequest", query("canary")).await;
    msg.assert_ok("ConfigRemoveResponse", &rid);
    let push = tagged_stream.next_push().await;
    tagged_stream.ack(&push);
    plain_stream.assert_quiet("a gray removed").await;
    let (_, msg) = tagged.call("ConfigQueryRequest", query("")).await;
    assert_eq!(msg.str("content"), "formal 2", "{msg:?}");
    assert!(msg.body.get("tag").is_none(), "{msg:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_are_acked_resent_and_stop_after_unlisten() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let data_id = "push.key";
    assert_true(api.publish(data_id, GROUP, "", "v0").await, "publish v0").await;

    let mut conn = Conn::open(grpc).await;
    let mut stream = Stream::open_set_up(&conn).await;
    // Listening with the current md5: nothing changed; a stale md5: changed.
    let changed = conn.listen_ok(true, &[(data_id, "", &md5_hex("v0"))]).await;
    assert!(changed.is_empty(), "{changed:?}");
    let stale = conn.listen_ok(true, &[(data_id, "", "0")]).await;
    assert_eq!(stale, [key(data_id, "")].into());
    let changed = conn.listen_ok(true, &[(data_id, "", &md5_hex("v0"))]).await;
    assert!(changed.is_empty(), "{changed:?}");
    stream.assert_quiet("nothing changed yet").await;

    // Acked pushes, numbered upwards.
    let mut last = 0;
    for content in ["v1", "v2", "v3"] {
        let published = Instant::now();
        assert_true(api.publish(data_id, GROUP, "", content).await, content).await;
        let push = stream.next_push().await;
        assert_eq!(push_key(&push), key(data_id, ""), "{push:?}");
        assert!(
            published.elapsed() < Duration::from_secs(2),
            "push took {:?}",
            published.elapsed()
        );
        let number = push_number(&push);
        assert!(
            number > last,
            "push ids not increasing: {last} then {push:?}"
        );
        last = number;
        stream.ack(&push);
        // The push is acked before the next change, so one push each.
        let got = conn.query_ok(data_id, "").await;
        assert_eq!(got.str("content"), content);
    }
    stream.assert_quiet("every push was acked").await;

    // An unacked push is re-sent with a new id.
    assert_true(api.publish(data_id, GROUP, "", "v4").await, "v4").await;
    let first = stream.next_push().await;
    let first_seen = Instant::now();
    assert_eq!(push_key(&first), key(data_id, ""));
    let again = stream
        .next_within(RESEND_BOUND)
        .await
        .unwrap_or_else(|| panic!("no re-send within {RESEND_BOUND:?} of {first:?}"));
    let waited = first_seen.elapsed();
    assert_push_shape(&again);
    assert_eq!(push_key(&again), key(data_id, ""));
    assert_ne!(again.str("requestId"), first.str("requestId"), "{again:?}");
    assert!(
        push_number(&again) > push_number(&first),
        "{first:?} {again:?}"
    );
    assert!(
        waited >= Duration::from_millis(2500),
        "re-sent after only {waited:?} (ack timeout is 3 s)"
    );
    // A late ack of the first one is harmless; acking the re-send ends it.
    stream.ack(&first);
    stream.ack(&again);
    stream.assert_quiet("the re-send was acked").await;

    // listen:false unregisters the key: no more pushes.
    let changed = conn.listen_ok(false, &[(data_id, "", "")]).await;
    assert!(changed.is_empty(), "{changed:?}");
    assert_true(api.publish(data_id, GROUP, "", "v5").await, "v5").await;
    stream.assert_quiet("the key was unlistened").await;
    // The connection still works, and listening again re-arms pushes.
    conn.server_check().await;
    let changed = conn.listen_ok(true, &[(data_id, "", &md5_hex("v5"))]).await;
    assert!(changed.is_empty(), "{changed:?}");
    assert_true(api.publish(data_id, GROUP, "", "v6").await, "v6").await;
    let push = stream.next_push().await;
    assert!(push_number(&push) > push_number(&again));
    stream.ack(&push);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_have_codes_and_leave_the_connection_usable() {
    let tmp = temp_dir();
    let (_server, grpc) = start(&tmp).await;
    let mut conn = Conn::open(grpc).await;
    let id = conn.server_check().await;

    // Batch listen before the stream is open: unregistered.
    let (rid, msg) = conn.batch_listen(true, &[("k", "", "")]).await;
    msg.assert_failed("ConfigChangeBatchListenResponse", &rid, 301);
    assert_eq!(conn.server_check().await, id);

    // Unknown request type.
    let (rid, msg) = conn.call("NoSuchRequest", json!({})).await;
    msg.assert_failed("ErrorResponse", &rid, 302);
    assert!(!msg.str("message").is_empty(), "{msg:?}");
    assert_eq!(conn.server_check().await, id);

    // A body that is not JSON, a JSON body that is not an object, no body.
    for (what, value) in [
        ("garbage", Some(b"\x00not json{".to_vec())),
        ("JSON array", Some(b"[1,2]".to_vec())),
        ("empty", Some(Vec::new())),
        ("no body", None),
    ] {
        let msg = conn
            .send(raw_payload("ConfigQueryRequest", "", value))
            .await;
        assert_eq!(msg.kind, "ErrorResponse", "{what}: {msg:?}");
        assert_eq!(msg.result_code(), 500, "{what}: {msg:?}");
        assert_eq!(msg.error_code(), 502, "{what}: {msg:?}");
        assert_eq!(conn.server_check().await, id, "after {what}");
    }
    // No metadata at all.
    let msg = conn
        .send(Payload {
            metadata: None,
            body: None,
        })
        .await;
    assert_eq!(
        (msg.kind.as_str(), msg.error_code()),
        ("ErrorResponse", 502)
    );
    assert_eq!(conn.server_check().await, id);

    // An invalid dataId: a failure that is not "not found".
    let (rid, msg) = conn.query_from("", "bad id!", "").await;
    assert_eq!(msg.str("requestId"), rid);
    assert_eq!(msg.result_code(), 500, "{msg:?}");
    assert_ne!(
        msg.error_code(),
        300,
        "an invalid dataId is not 'not found': {msg:?}"
    );
    assert_ne!(msg.error_code(), 0, "{msg:?}");
    assert!(!msg.str("message").is_empty(), "{msg:?}");
    assert_eq!(conn.server_check().await, id);
    // ... in a publish too.
    let body = json!({"dataId": "bad id!", "group": GROUP, "tenant": "", "content": "x"});
    let (rid, msg) = conn.publish_raw(body).await;
    assert_eq!(msg.str("requestId"), rid);
    assert_eq!(msg.result_code(), 500, "{msg:?}");
    assert!(!msg.str("message").is_empty(), "{msg:?}");
    // ... and in a listen (the stream now open).
    let _stream = Stream::open_set_up(&conn).await;
    let (rid, msg) = conn.batch_listen(true, &[("bad id!", "", "")]).await;
    assert_eq!(msg.str("requestId"), rid);
    assert_eq!(msg.result_code(), 500, "{msg:?}");
    assert_ne!(msg.error_code(), 301, "{msg:?}");

    // Still usable for real work.
    assert_eq!(conn.server_check().await, id);
    conn.publish("after.errors", "", "fine").await;
    assert_eq!(
        conn.query_ok("after.errors", "").await.str("content"),
        "fine"
    );
    assert!(
        conn.listen_ok(true, &[("after.errors", "", "")])
            .await
            .len()
            == 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_content_over_grpc() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let mut conn = Conn::open(grpc).await;
    let data_id = "large.content";

    // 5 MiB of varied ASCII (above tonic's 4 MiB default message limit).
    let line = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-+=\n";
    let size = 5 << 20;
    let mut content = String::with_capacity(size + line.len());
    let mut n = 0u64;
    while content.len() < size {
        content.push_str(&format!("{n:08}:"));
        content.push_str(line);
        n += 1;
    }
    content.truncate(size);
    assert_eq!(content.len(), 5 << 20);

    conn.publish(data_id, "", &content).await;
    let got = conn.query_ok(data_id, "").await;
    assert_eq!(got.str("content").len(), content.len());
    assert!(
        got.str("content") == content,
        "the large content came back changed"
    );
    assert_eq!(got.str("md5"), md5_hex(&content));
    let (status, body, md5, _) = http_get(&api, data_id, "").await;
    assert_eq!(status, 200);
    assert_eq!(md5, md5_hex(&content));
    assert!(body == content, "HTTP sees different large content");
}

/// A config connection that has not listened yet (the Rust SDK after a
/// reconnect, until its periodic listen) hears every change in its
/// namespace, and at setup the ones made just before; its first listen
/// narrows that to the keys it listens to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_connection_hears_its_namespace_until_it_listens() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    // Made while the client was away: replayed at setup.
    assert_true(api.publish("before", GROUP, "ns1", "b1").await, "before").await;
    assert_true(
        api.publish("elsewhere", GROUP, "ns2", "e1").await,
        "elsewhere",
    )
    .await;

    let mut conn = Conn::open(grpc).await;
    let mut stream = Stream::open(&conn).await;
    stream.setup_config_client("ns1");
    let push = stream.next_push().await;
    assert_eq!(push_key(&push), key("before", "ns1"), "{push:?}");
    stream.ack(&push);
    stream.assert_quiet("only its namespace is replayed").await;

    // A change in its namespace is pushed, one in another is not.
    assert_true(api.publish("after", GROUP, "ns1", "a1").await, "after").await;
    let push = stream.next_push().await;
    assert_eq!(push_key(&push), key("after", "ns1"), "{push:?}");
    stream.ack(&push);
    assert_true(api.publish("elsewhere", GROUP, "ns2", "e2").await, "e2").await;
    stream.assert_quiet("a change in another namespace").await;

    // Its first listen: only the listened key from then on.
    let changed = conn
        .listen_ok(true, &[("after", "ns1", &md5_hex("a1"))])
        .await;
    assert!(changed.is_empty(), "{changed:?}");
    assert_true(api.publish("before", GROUP, "ns1", "b2").await, "b2").await;
    stream.assert_quiet("a key it does not listen to").await;
    assert_true(api.publish("after", GROUP, "ns1", "a2").await, "a2").await;
    let push = stream.next_push().await;
    assert_eq!(push_key(&push), key("after", "ns1"), "{push:?}");
    stream.ack(&push);
    stream.assert_quiet("after the listened key's push").await;

    // A client that is not a config client (no `module: config` label)
    // gets nothing unasked.
    let other = Conn::open(grpc).await;
    let mut plain = Stream::open_set_up(&other).await;
    assert_true(api.publish("after", GROUP, "", "p1").await, "p1").await;
    plain.assert_quiet("not a config client").await;

    let metrics = api.get_path("/metrics").await.expect("GET /metrics");
    let pushed = metrics
        .body
        .lines()
        .find_map(|l| l.strip_prefix("tacos_grpc_unlistened_pushes_total "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no unlistened push counter in:\n{}", metrics.body));
    assert!(pushed >= 2.0, "counted {pushed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlistened_pushes_can_be_turned_off() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(
        &tmp,
        &["--grpc-port", &grpc_arg, "--unlistened-push-seconds", "0"],
    )
    .await;
    let api = server.api();
    assert_true(api.publish("before", GROUP, "", "b1").await, "before").await;
    let conn = Conn::open(grpc).await;
    let mut stream = Stream::open(&conn).await;
    stream.setup_config_client("");
    assert_true(api.publish("after", GROUP, "", "a1").await, "after").await;
    stream.assert_quiet("the window is off").await;
}

/// SIGTERM asks every set-up connection to move to another node
/// (`ConnectResetRequest` without a `serverIp`, so the client picks the next
/// server of its own list), the gRPC port refuses new connections from then
/// on, and the process still exits 0 within a bound when a client never
/// answers and keeps its connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_asks_clients_to_move_and_exits_when_one_stays() {
    const EXIT_BOUND: Duration = Duration::from_secs(20);
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let mut server =
        Server::start_with_args(&tmp, &["--grpc-port", &grpc_arg, "--drain-seconds", "2"]).await;
    // Two clients: `leaving` answers and closes, as the Java client does once
    // it has connected elsewhere; `staying` ignores the request, as the Rust
    // and Python clients do.
    let mut leaving = Conn::open(grpc).await;
    let mut leaving_stream = Stream::open_set_up(&leaving).await;
    leaving.listen_ok(true, &[("k", "", "")]).await;
    let mut staying = Conn::open(grpc).await;
    let mut staying_stream = Stream::open_set_up(&staying).await;
    staying.listen_ok(true, &[("k", "", "")]).await;

    let stopping = Instant::now();
    let (status, _kept) = tokio::join!(server.stop(), async {
        let reset = leaving_stream
            .next_within(PUSH_BOUND)
            .await
            .unwrap_or_else(|| panic!("no ConnectResetRequest within {PUSH_BOUND:?}"));
        assert_reset_shape(&reset);
        // The port is closed before anyone is asked to move.
        let refused = tokio::net::TcpStream::connect(("127.0.0.1", grpc)).await;
        assert!(
            refused.is_err(),
            "the gRPC port still accepts connections while stopping"
        );
        let body = json!({
            "requestId": reset.str("requestId"),
            "resultCode": 200, "errorCode": 0, "message": "", "success": true,
        });
        leaving_stream.send(payload("ConnectResetResponse", "", &body));
        drop(leaving_stream);
        drop(leaving);
        let reset = staying_stream
            .next_within(PUSH_BOUND)
            .await
            .unwrap_or_else(|| panic!("no ConnectResetRequest within {PUSH_BOUND:?}"));
        assert_reset_shape(&reset);
        // Never answered; the stream and channel stay open until the end.
        (staying_stream, staying)
    });
    assert!(
        status.success(),
        "exit status {status}; log:\n{}",
        server.log()
    );
    assert!(
        stopping.elapsed() < EXIT_BOUND,
        "took {:?} to stop",
        stopping.elapsed()
    );
    let log = server.log();
    assert!(log.contains("gRPC clients moved"), "log:\n{log}");
}

fn assert_reset_shape(reset: &Msg) {
    assert_eq!(reset.kind, "ConnectResetRequest", "{reset:?}");
    assert!(!reset.str("requestId").is_empty(), "{reset:?}");
    assert_eq!(reset.str("module"), "internal", "{reset:?}");
    assert!(reset.body["headers"].is_object(), "headers: {reset:?}");
    assert!(
        reset.body.get("serverIp").is_none(),
        "no redirect to a given node: {reset:?}"
    );
}

// ---- fuzzy watch (Nacos 3) ------------------------------------------------------

const SYNC: &str = "ConfigFuzzyWatchSyncRequest";
const NOTICE: &str = "ConfigFuzzyWatchChangeNotifyRequest";

/// A config's Nacos group key in the public namespace of [`GROUP`].
fn gk(data_id: &str) -> String {
    format!("{data_id}+{GROUP}+public")
}

impl Conn {
    /// A `ConfigFuzzyWatchRequest` as the Java client sends it (Jackson
    /// writes `isInitializing()` as `initializing`).
    async fn fuzzy_watch(
        &mut self,
        pattern: &str,
        watch_type: &str,
        received: &[String],
        initializing: bool,
    ) -> (String, Msg) {
        let body = json!({
            "groupKeyPattern": pattern,
            "watchType": watch_type,
            "receivedGroupKeys": received,
            "initializing": initializing,
            "module": "config",
        });
        let (rid, msg) = self.call("ConfigFuzzyWatchRequest", body).await;
        assert_eq!(msg.kind, "ConfigFuzzyWatchResponse", "{msg:?}");
        (rid, msg)
    }

    /// A first watch of `pattern`, which must succeed.
    async fn fuzzy_watch_ok(&mut self, pattern: &str) {
        let (rid, msg) = self.fuzzy_watch(pattern, "WATCH", &[], true).await;
        msg.assert_ok("ConfigFuzzyWatchResponse", &rid);
    }
}

impl Stream {
    /// The next fuzzy watch push, of `kind`, checked for its common shape.
    async fn next_fuzzy(&mut self, kind: &str) -> Msg {
        let push = self
            .next_within(PUSH_BOUND)
            .await
            .unwrap_or_else(|| panic!("no {kind} within {PUSH_BOUND:?}"));
        assert_eq!(push.kind, kind, "{push:?}");
        assert!(!push.str("requestId").is_empty(), "{push:?}");
        assert!(push.body["headers"].is_object(), "headers: {push:?}");
        assert_eq!(push.str("module"), "config", "{push:?}");
        push
    }

    /// The next sync message: its (syncType, currentBatch, totalBatch) and
    /// contexts as (groupKey, changedType), sorted.
    async fn next_sync(&mut self, pattern: &str) -> ((String, i64, i64), Vec<(String, String)>) {
        let sync = self.next_fuzzy(SYNC).await;
        assert_eq!(sync.str("groupKeyPattern"), pattern, "{sync:?}");
        let mut contexts: Vec<(String, String)> = sync.body["contexts"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|c| {
                        let field =
                            |n: &str| c[n].as_str().unwrap_or_else(|| panic!("{n}: {sync:?}"));
                        (
                            field("groupKey").to_string(),
                            field("changedType").to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        contexts.sort();
        self.ack(&sync);
        let head = (
            sync.str("syncType").to_string(),
            sync.int("currentBatch"),
            sync.int("totalBatch"),
        );
        (head, contexts)
    }

    /// The next change notice, acked: (groupKey, changeType).
    async fn next_notice(&mut self) -> (String, String) {
        let notice = self.next_fuzzy(NOTICE).await;
        self.ack(&notice);
        (
            notice.str("groupKey").to_string(),
            notice.str("changeType").to_string(),
        )
    }

    /// Acks the finish of an initial set, which must come next.
    async fn expect_finish(&mut self, pattern: &str) {
        let finish = self.next_fuzzy(SYNC).await;
        assert_eq!(
            finish.str("syncType"),
            "FINISH_FUZZY_WATCH_INIT_NOTIFY",
            "{finish:?}"
        );
        assert_eq!(finish.str("groupKeyPattern"), pattern, "{finish:?}");
        assert!(finish.body.get("contexts").is_none(), "{finish:?}");
        assert_eq!(
            (finish.int("currentBatch"), finish.int("totalBatch")),
            (0, 0)
        );
        self.ack(&finish);
    }
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, t)| (k.to_string(), t.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_watch_gets_the_set_then_adds_and_removes_in_order() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    for (data_id, content) in [("app-a", "a1"), ("app-b", "b1"), ("other", "o1")] {
        assert_true(api.publish(data_id, GROUP, "", content).await, data_id).await;
    }
    let pattern = format!("public>>{GROUP}>>app-*");

    let mut conn = Conn::open(grpc).await;
    let mut stream = Stream::open_set_up(&conn).await;
    conn.fuzzy_watch_ok(&pattern).await;
    // The initial set: the configs that match already, in one batch.
    let (head, contexts) = stream.next_sync(&pattern).await;
    assert_eq!(head, ("FUZZY_WATCH_INIT_NOTIFY".into(), 1, 1));
    assert_eq!(
        contexts,
        pairs(&[(&gk("app-a"), "ADD_CONFIG"), (&gk("app-b"), "ADD_CONFIG")])
    );
    // Its finish, once the batch was acked.
    stream.expect_finish(&pattern).await;

    // An add, a change of contents, a key that does not match, a remove:
    // the add and the remove come, in that order (Nacos' fuzzy watch is
    // about which keys exist; contents are for ordinary listens).
    assert_true(api.publish("app-c", GROUP, "", "c1").await, "add").await;
    assert_true(api.publish("app-a", GROUP, "", "a2").await, "change").await;
    assert_true(api.publish("other", GROUP, "", "o2").await, "no match").await;
    conn.remove("app-b", "").await;
    assert_eq!(
        stream.next_notice().await,
        (gk("app-c"), "CONFIG_CHANGED".into())
    );
    assert_eq!(
        stream.next_notice().await,
        (gk("app-b"), "DELETE_CONFIG".into())
    );
    stream
        .assert_quiet("a content change and a key off the pattern")
        .await;

    // An unacked notice is sent again with a new id.
    assert_true(api.publish("app-d", GROUP, "", "d1").await, "add d").await;
    let first = stream.next_fuzzy(NOTICE).await;
    let again = stream
        .next_within(RESEND_BOUND)
        .await
        .unwrap_or_else(|| panic!("no re-send of {first:?}"));
    assert_eq!(again.kind, NOTICE);
    assert_eq!(again.str("groupKey"), gk("app-d"));
    assert_ne!(again.str("requestId"), first.str("requestId"));
    stream.ack(&again);
    stream.assert_quiet("the re-send was acked").await;

    // Cancelled: nothing more.
    let (rid, msg) = conn.fuzzy_watch(&pattern, "CANCEL_WATCH", &[], false).await;
    msg.assert_ok("ConfigFuzzyWatchResponse", &rid);
    assert_true(api.publish("app-e", GROUP, "", "e1").await, "after cancel").await;
    assert!(api.delete("app-c", GROUP, "").await.status().is_success());
    stream.assert_quiet("the pattern was cancelled").await;

    let listeners = api.get_path("/tacos/v1/admin/listeners").await.unwrap();
    assert!(
        listeners.body.contains("\"fuzzyWatches\":0"),
        "{}",
        listeners.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_watch_diffs_what_the_client_holds_and_batches_by_20() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    for data_id in ["d-a", "d-b"] {
        assert_true(api.publish(data_id, GROUP, "", "1").await, data_id).await;
    }
    let mut conn = Conn::open(grpc).await;
    let mut stream = Stream::open_set_up(&conn).await;
    let pattern = format!(">>{GROUP}>>d-*");

    // A re-sync from a client that holds d-a and a key that is gone.
    let held = [gk("d-a"), gk("d-gone")];
    let (rid, msg) = conn.fuzzy_watch(&pattern, "WATCH", &held, false).await;
    msg.assert_ok("ConfigFuzzyWatchResponse", &rid);
    let (head, contexts) = stream.next_sync(&pattern).await;
    assert_eq!(head, ("FUZZY_WATCH_DIFF_SYNC_NOTIFY".into(), 1, 1));
    assert_eq!(
        contexts,
        pairs(&[(&gk("d-b"), "ADD_CONFIG"), (&gk("d-gone"), "DELETE_CONFIG")])
    );
    stream.assert_quiet("a re-sync has no finish").await;
    // In step: nothing at all.
    let (rid, msg) = conn
        .fuzzy_watch(&pattern, "WATCH", &[gk("d-a"), gk("d-b")], false)
        .await;
    msg.assert_ok("ConfigFuzzyWatchResponse", &rid);
    stream.assert_quiet("the client is in step").await;
    // Initializing with nothing to send: the finish alone.
    let none = format!("public>>{GROUP}>>nothing*");
    conn.fuzzy_watch_ok(&none).await;
    stream.expect_finish(&none).await;

    // 45 matching keys: batches of 20, 20 and 5; the finish only after
    // every batch was acked.
    for i in 0..45 {
        let data_id = format!("many-{i:02}");
        assert_true(api.publish(&data_id, GROUP, "", "1").await, &data_id).await;
    }
    let many = format!("public>>{GROUP}>>many-*");
    conn.fuzzy_watch_ok(&many).await;
    let mut seen = Vec::new();
    let mut batches = Vec::new();
    for _ in 0..3 {
        let sync = stream.next_fuzzy(SYNC).await;
        assert_eq!(sync.str("syncType"), "FUZZY_WATCH_INIT_NOTIFY", "{sync:?}");
        assert_eq!(sync.int("totalBatch"), 3);
        batches.push(sync.int("currentBatch"));
        let contexts = sync.body["contexts"].as_array().unwrap();
        seen.extend(
            contexts
                .iter()
                .map(|c| c["groupKey"].as_str().unwrap().to_string()),
        );
        assert!(contexts.len() <= 20, "{sync:?}");
        // The last batch stays unacked for now.
        if batches.len() < 3 {
            stream.ack(&sync);
        } else {
            let unacked = sync;
            if let Some(early) = stream.next_within(Duration::from_millis(1000)).await {
                // Only the re-send of the unacked batch may come (3 s).
                panic!("the finish must wait for every batch's ack: {early:?}");
            }
            stream.ack(&unacked);
        }
    }
    assert_eq!(batches, [1, 2, 3]);
    seen.sort();
    let expected: Vec<String> = (0..45).map(|i| gk(&format!("many-{i:02}"))).collect();
    assert_eq!(seen, expected);
    stream.expect_finish(&many).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_watch_limits_and_refusals() {
    let tmp = temp_dir();
    let grpc = free_port();
    let grpc_arg = grpc.to_string();
    let server = Server::start_with_args(
        &tmp,
        &[
            "--grpc-port",
            &grpc_arg,
            "--fuzzy-watch-max-patterns",
            "2",
            "--fuzzy-watch-max-matched",
            "3",
        ],
    )
    .await;
    let api = server.api();
    for i in 0..5 {
        let data_id = format!("k{i}");
        assert_true(api.publish(&data_id, GROUP, "", "1").await, &data_id).await;
    }

    // No stream yet: 301, as a batch listen.
    let mut conn = Conn::open(grpc).await;
    let (rid, msg) = conn.fuzzy_watch("public>>G>>a*", "WATCH", &[], true).await;
    msg.assert_failed("ConfigFuzzyWatchResponse", &rid, 301);
    let mut stream = Stream::open_set_up(&conn).await;
    // A pattern that is not namespace>>group>>dataId: 400.
    for bad in ["", "G>>*", "public>>G>>"] {
        let (rid, msg) = conn.fuzzy_watch(bad, "WATCH", &[], true).await;
        msg.assert_failed("ConfigFuzzyWatchResponse", &rid, 400);
    }

    // Two patterns per connection; a third is refused with Nacos' code,
    // and registers nothing; watching one it has again is fine.
    for pattern in ["public>>G>>a*", "public>>G>>b*", "public>>G>>a*"] {
        conn.fuzzy_watch_ok(pattern).await;
        stream.expect_finish(pattern).await;
    }
    let (rid, msg) = conn.fuzzy_watch("public>>G>>c*", "WATCH", &[], true).await;
    msg.assert_failed("ConfigFuzzyWatchResponse", &rid, 50310);
    assert!(
        msg.str("message")
            .starts_with("fuzzy watch pattern over limit"),
        "{msg:?}"
    );
    stream.assert_quiet("a refused pattern gets no sync").await;
    // After a cancel there is room again.
    let (rid, msg) = conn
        .fuzzy_watch("public>>G>>b*", "CANCEL_WATCH", &[], false)
        .await;
    msg.assert_ok("ConfigFuzzyWatchResponse", &rid);
    conn.fuzzy_watch_ok("public>>G>>c*").await;
    stream.expect_finish("public>>G>>c*").await;

    // The limit is per connection: another one watches a pattern matching
    // five configs, past the matched limit of 3: answered 50311, and synced
    // all the same with three of them.
    let mut other = Conn::open(grpc).await;
    let mut other_stream = Stream::open_set_up(&other).await;
    let pattern = format!("public>>{GROUP}>>k*");
    let (rid, msg) = other.fuzzy_watch(&pattern, "WATCH", &[], true).await;
    msg.assert_failed("ConfigFuzzyWatchResponse", &rid, 50311);
    assert!(
        msg.str("message")
            .starts_with("fuzzy watch pattern matched count over limit"),
        "{msg:?}"
    );
    let (head, contexts) = other_stream.next_sync(&pattern).await;
    assert_eq!(head, ("FUZZY_WATCH_INIT_NOTIFY".into(), 1, 1));
    assert_eq!(contexts.len(), 3, "{contexts:?}");
    other_stream.expect_finish(&pattern).await;
    // Past the limit a new key is not notified.
    assert_true(api.publish("k9", GROUP, "", "1").await, "k9").await;
    other_stream.assert_quiet("the pattern's set is full").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzy_watch_hears_changes_made_through_another_node() {
    let cluster = common::cluster::Cluster::start(3, &[]).await;
    let leader = cluster.wait_for_leader(Duration::from_secs(30)).await;
    let watcher = (0..3).find(|&i| i != leader).unwrap();
    let writer = (0..3).find(|&i| i != leader && i != watcher).unwrap();
    cluster.publish(leader, "x-1", "1").await;
    // The leader answered once it applied x-1; the watcher's node may not
    // have yet, and its initial set is what it has applied.
    cluster.wait_converged().await;

    let mut conn = Conn::open(cluster.grpc_port(watcher)).await;
    let mut stream = Stream::open_set_up(&conn).await;
    let pattern = format!("public>>{GROUP}>>x-*");
    conn.fuzzy_watch_ok(&pattern).await;
    let (_, contexts) = stream.next_sync(&pattern).await;
    assert_eq!(contexts, pairs(&[(&gk("x-1"), "ADD_CONFIG")]));
    stream.expect_finish(&pattern).await;

    // Created through another follower (forwarded to the leader), deleted
    // through the leader: both reach the watcher's node by the log.
    cluster.publish(writer, "x-2", "1").await;
    assert_eq!(
        stream.next_notice().await,
        (gk("x-2"), "CONFIG_CHANGED".into())
    );
    let deleted = cluster.api(leader).delete("x-1", GROUP, "").await;
    assert!(deleted.status().is_success());
    assert_eq!(
        stream.next_notice().await,
        (gk("x-1"), "DELETE_CONFIG".into())
    );
}

// ---- the console's listener view of gRPC listeners ---------------------------------

/// The console's listener view names the version each gRPC listener holds
/// and should hold, by the IP and tag it listened with: a beta client, a
/// tagged one, a plain one in sync, a plain one on the tag's md5 and one on
/// an old md5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_view_names_each_grpc_listeners_version() {
    let tmp = temp_dir();
    let (server, grpc) = start(&tmp).await;
    let api = server.api();
    let data_id = "versions.key";
    let mut admin = Conn::open(grpc).await;
    admin.publish(data_id, "", "formal").await;
    admin
        .publish_with(data_id, "", "canary", json!({"tag": "canary"}))
        .await;
    admin
        .publish_with(data_id, "", "beta", json!({"betaIps": "10.9.9.9"}))
        .await;

    // (client IP, Vipserver-Tag header, md5 held) → (version, expected).
    let cases = [
        ("10.9.9.9", "", md5_hex("beta"), Some("beta"), "beta"),
        (
            "",
            "canary",
            md5_hex("canary"),
            Some("tag_canary"),
            "tag_canary",
        ),
        ("", "", md5_hex("formal"), Some("formal"), "formal"),
        ("", "", md5_hex("canary"), Some("tag_canary"), "formal"),
        ("", "", md5_hex("old"), None, "formal"),
    ];
    let mut expected = BTreeSet::new();
    // Kept open until the view was read.
    let (mut conns, mut streams) = (Vec::new(), Vec::new());
    for (ip, tag, md5, holds, should) in &cases {
        let mut conn = Conn::open(grpc).await;
        let id = conn.server_check().await;
        let port = id.rsplit('_').next().unwrap().to_string();
        streams.push(Stream::open_set_up(&conn).await);
        let body = json!({
            "listen": true,
            "configListenContexts": [{"dataId": data_id, "group": GROUP, "tenant": "", "md5": md5}],
            "headers": if tag.is_empty() { json!({}) } else { json!({"Vipserver-Tag": tag}) },
        });
        // Set-up happens on the stream: retry until the listen is taken.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (rid, msg) = conn
                .call_from("ConfigBatchListenRequest", ip, body.clone())
                .await;
            if msg.error_code() == 0 {
                msg.assert_ok("ConfigChangeBatchListenResponse", &rid);
                break;
            }
            assert!(Instant::now() < deadline, "listen never taken: {msg:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        expected.insert((
            port,
            holds.map(str::to_string),
            should.to_string(),
            holds == &Some(*should),
        ));
        conns.push(conn);
    }

    let path = format!(
        "/tacos/api/console/config/listeners?namespace=&group={GROUP}&dataId={data_id}&local=true"
    );
    let reply = api.get_path(&path).await.expect("listeners view");
    assert_eq!(reply.status, 200, "{}", reply.body);
    let view: Value = serde_json::from_str(&reply.body).unwrap();
    let listed: BTreeSet<(String, Option<String>, String, bool)> = view["listeners"]
        .as_array()
        .unwrap_or_else(|| panic!("no listeners: {view}"))
        .iter()
        .filter(|row| row["protocol"] == "grpc")
        .map(|row| {
            let client = row["client"].as_str().unwrap();
            let port = client.rsplit(':').next().unwrap().to_string();
            (
                port,
                row["version"].as_str().map(str::to_string),
                row["expectedVersion"].as_str().unwrap().to_string(),
                row["inSync"]
                    .as_bool()
                    .unwrap_or_else(|| panic!("inSync is not a boolean: {row}")),
            )
        })
        .collect();
    assert_eq!(listed, expected, "{view}");
    drop((conns, streams));
}

/// Ability negotiation as Nacos 2.3+: a setup that carries an
/// `abilityTable` (Java, Python) is answered on the stream with
/// `SetupAckRequest` naming `fuzzyWatch` (what the Java client checks before
/// it fuzzy-watches); a setup without one (Rust, older clients) gets
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setup_with_an_ability_table_gets_the_servers_abilities() {
    let tmp = temp_dir();
    let (_server, grpc) = start(&tmp).await;
    let mut conn = Conn::open(grpc).await;
    conn.server_check().await;
    let mut stream = Stream::open(&conn).await;
    let setup = json!({
        "clientVersion": "Nacos-Java-Client:v3.0.3",
        "abilityTable": {"fuzzyWatch": true},
        "tenant": "",
        "labels": {"source": "sdk", "module": "config"},
        "requestId": "",
        "headers": {},
        "module": "internal",
    });
    stream.send(payload("ConnectionSetupRequest", "", &setup));
    let ack = stream
        .next_within(PUSH_BOUND)
        .await
        .expect("no SetupAckRequest");
    assert_eq!(ack.kind, "SetupAckRequest", "{ack:?}");
    assert_eq!(ack.str("module"), "internal", "{ack:?}");
    assert_eq!(
        ack.body["abilityTable"],
        json!({"fuzzyWatch": true}),
        "{ack:?}"
    );
    // The connection works as any other.
    conn.fuzzy_watch_ok("public>>G>>*").await;
    stream.expect_finish("public>>G>>*").await;

    let other = Conn::open(grpc).await;
    let mut plain = Stream::open_set_up(&other).await;
    plain.assert_quiet("a setup without an ability table").await;
}

/// `--grpc-connection-target 2` with four set-up connections: the two
/// oldest are asked to move (`ConnectResetRequest`) and, ignoring it, have
/// their streams ended (`UNAVAILABLE`) a grace period later; the two newest
/// hear nothing and stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_over_its_connection_target_moves_the_oldest_clients() {
    let tmp = temp_dir();
    let grpc_port = free_port();
    let port = grpc_port.to_string();
    let server = Server::start_with_args(
        &tmp,
        &["--grpc-port", &port, "--grpc-connection-target", "2"],
    )
    .await;
    let mut conns = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..4 {
        let conn = Conn::open(grpc_port).await;
        streams.push(Stream::open_set_up(&conn).await);
        conns.push(conn);
        // Opened one after the other: the first ones are the oldest.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Within two balance rounds and the grace period: a reset, then the end.
    let bound = Duration::from_secs(20);
    for (i, stream) in streams.iter_mut().take(2).enumerate() {
        let deadline = tokio::time::Instant::now() + bound;
        let mut reset = false;
        let ended = loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(left, stream.inbound.message()).await {
                Err(_) => panic!("connection {i}: its stream was not ended within {bound:?}"),
                Ok(Ok(Some(payload))) => {
                    let msg = Msg::decode(payload);
                    assert_eq!(msg.kind, "ConnectResetRequest", "connection {i}: {msg:?}");
                    assert_eq!(msg.str("module"), "internal", "{msg:?}");
                    reset = true;
                }
                Ok(Ok(None)) => break None,
                Ok(Err(status)) => break Some(status),
            }
        };
        assert!(reset, "connection {i} was not asked to move first");
        if let Some(status) = ended {
            assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
        }
    }
    // The moved clients go (as an SDK reconnects elsewhere); the two
    // within the target hear nothing through two more balance rounds.
    drop(streams.drain(..2));
    drop(conns.drain(..2));
    let quiet_until = tokio::time::Instant::now() + Duration::from_secs(11);
    for stream in streams.iter_mut() {
        let left = quiet_until.saturating_duration_since(tokio::time::Instant::now());
        if let Some(msg) = stream.next_within(left).await {
            panic!("a connection within the target got {msg:?}");
        }
    }
    drop(server);
}
