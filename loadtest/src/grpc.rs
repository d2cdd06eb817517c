//! A minimal Nacos 2.x gRPC client for load tests (`grpc_config`, `grpc_fanout`).
//!
//! The protocol (`proto/nacos_grpc_service.proto`, shared with the server): unary
//! `/Request/request` and bidirectional `/BiRequestStream/requestBiStream`, both carrying
//! `Payload{metadata{type, clientIp, headers}, body: Any{type_url: "", value: JSON}}`,
//! where `metadata.type` names the message class (`ConfigQueryRequest`, ...) and the body
//! is that message as UTF-8 JSON.
//!
//! A [`Client`] is one Nacos connection, as the official clients open it: one channel
//! (one HTTP/2 connection) that carries
//!
//! 1. a unary `ServerCheckRequest` (its answer names the connection id),
//! 2. the stream, whose first message is `ConnectionSetupRequest`,
//! 3. then any unary requests. `ConfigBatchListenRequest` registers keys on *this*
//!    connection (servers tie the unary call to the stream by the TCP peer address),
//!    and the server pushes `ConfigChangeNotifyRequest`s on the stream.
//!
//! A task per client reads the stream: it acks every `ConfigChangeNotifyRequest` at
//! once with a `ConfigChangeNotifyResponse` carrying the same `requestId`, answers
//! `ClientDetectionRequest` (r-nacos closes connections that stay silent for 15 s and
//! then ignore a detection), `ConnectResetRequest` and `SetupAckRequest`, and reports
//! each notification, with the instant it arrived, to whoever asked for them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Channel, Endpoint};

/// The generated Nacos gRPC types and client stubs (package-less proto, so the
/// generated file is `_.rs`).
#[allow(non_camel_case_types, clippy::all)]
pub mod pb {
    tonic::include_proto!("_");
}

use pb::bi_request_stream_client::BiRequestStreamClient;
use pb::request_client::RequestClient;
use pb::{Metadata, Payload};

/// What the client says it is in `ConnectionSetupRequest.clientVersion`.
pub const CLIENT_VERSION: &str = "tacos-loadtest";

/// Builds a payload of class `kind` whose body is `body` as JSON.
pub fn payload(kind: &str, body: &Value) -> Payload {
    Payload {
        metadata: Some(Metadata {
            r#type: kind.to_string(),
            client_ip: String::new(),
            headers: Default::default(),
        }),
        body: Some(prost_types::Any {
            type_url: String::new(),
            value: serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec()),
        }),
    }
}

/// `ServerCheckRequest` (unary, before the stream).
pub fn server_check(request_id: &str) -> Payload {
    payload(
        "ServerCheckRequest",
        &json!({ "requestId": request_id, "headers": {} }),
    )
}

/// `ConnectionSetupRequest`: the first message on the stream. It carries an (empty)
/// `abilityTable`, as the Java and Python clients' do: Java Nacos answers such a setup
/// with `SetupAckRequest` on the stream, and without it sends nothing there, so a
/// grpc-java server would not even send the stream's response headers, which the
/// stream call waits for.
pub fn connection_setup(client_version: &str, tenant: &str) -> Payload {
    payload(
        "ConnectionSetupRequest",
        &json!({
            "clientVersion": client_version,
            "abilities": {},
            "abilityTable": {},
            "tenant": tenant,
            "labels": {},
            "requestId": "",
            "headers": {},
        }),
    )
}

/// `ConfigQueryRequest` → `ConfigQueryResponse` (errorCode 300: not found).
pub fn config_query(request_id: &str, data_id: &str, group: &str, tenant: &str) -> Payload {
    payload(
        "ConfigQueryRequest",
        &json!({
            "dataId": data_id,
            "group": group,
            "tenant": tenant,
            "requestId": request_id,
            "headers": {},
        }),
    )
}

/// `ConfigPublishRequest` without `casMd5` (an unconditional write) →
/// `ConfigPublishResponse`.
pub fn config_publish(
    request_id: &str,
    data_id: &str,
    group: &str,
    tenant: &str,
    content: &str,
) -> Payload {
    payload(
        "ConfigPublishRequest",
        &json!({
            "dataId": data_id,
            "group": group,
            "tenant": tenant,
            "content": content,
            "additionMap": {},
            "requestId": request_id,
            "headers": {},
        }),
    )
}

/// One key of a `ConfigBatchListenRequest`, with the md5 the client holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenContext {
    pub data_id: String,
    pub group: String,
    pub tenant: String,
    pub md5: String,
}

/// `ConfigBatchListenRequest` (`listen: false` unregisters) →
/// `ConfigChangeBatchListenResponse{changedConfigs}`.
pub fn batch_listen(request_id: &str, listen: bool, contexts: &[ListenContext]) -> Payload {
    let contexts: Vec<Value> = contexts
        .iter()
        .map(|c| {
            json!({
                "dataId": c.data_id,
                "group": c.group,
                "tenant": c.tenant,
                "md5": c.md5,
            })
        })
        .collect();
    payload(
        "ConfigBatchListenRequest",
        &json!({
            "listen": listen,
            "configListenContexts": contexts,
            "requestId": request_id,
            "headers": {},
        }),
    )
}

/// A successful response of class `kind` to a request the server pushed on the
/// stream, e.g. `ConfigChangeNotifyResponse`: the ack.
pub fn stream_response(kind: &str, request_id: &str) -> Payload {
    payload(
        kind,
        &json!({
            "requestId": request_id,
            "resultCode": 200,
            "errorCode": 0,
            "message": "",
            "success": true,
        }),
    )
}

/// A payload as received: its class and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub kind: String,
    pub body: Map<String, Value>,
}

impl Reply {
    /// Reads a payload; `Err` when it has no body or the body is not a JSON object.
    pub fn parse(payload: Payload) -> Result<Reply, Error> {
        let kind = payload.metadata.map(|m| m.r#type).unwrap_or_default();
        let body = payload
            .body
            .ok_or_else(|| Error::BadReply(format!("{kind} without a body")))?;
        match serde_json::from_slice::<Value>(&body.value) {
            Ok(Value::Object(body)) => Ok(Reply { kind, body }),
            Ok(other) => Err(Error::BadReply(format!(
                "{kind} body is not an object: {other}"
            ))),
            Err(e) => Err(Error::BadReply(format!("{kind} body is not JSON: {e}"))),
        }
    }

    /// A string field ("" when absent or not a string).
    pub fn str(&self, name: &str) -> &str {
        self.body.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// An integer field (0 when absent).
    pub fn int(&self, name: &str) -> i64 {
        self.body.get(name).and_then(Value::as_i64).unwrap_or(0)
    }

    pub fn result_code(&self) -> i64 {
        self.int("resultCode")
    }

    pub fn error_code(&self) -> i64 {
        self.int("errorCode")
    }

    /// `resultCode` 200.
    pub fn is_success(&self) -> bool {
        self.result_code() == 200
    }

    /// `Ok(self)` when it succeeded and is of class `kind`; otherwise the server's
    /// answer as an [`Error::Server`].
    pub fn expect(self, kind: &str) -> Result<Reply, Error> {
        if self.is_success() && self.kind == kind {
            Ok(self)
        } else {
            Err(Error::Server {
                kind: self.kind.clone(),
                result_code: self.result_code(),
                error_code: self.error_code(),
                message: self.str("message").to_string(),
            })
        }
    }
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The channel could not be opened.
    Connect(String),
    /// No answer within the timeout.
    Timeout,
    /// The call failed at the gRPC level.
    Status(tonic::Code, String),
    /// The answer was not a readable payload.
    BadReply(String),
    /// The server answered, but not with success (or with another class).
    Server {
        kind: String,
        result_code: i64,
        error_code: i64,
        message: String,
    },
    /// A check of the answer's content failed.
    Check(String),
}

impl Error {
    /// A short label that groups like errors, for counting.
    pub fn label(&self) -> String {
        match self {
            Error::Connect(_) => "connect failed".into(),
            Error::Timeout => "timeout".into(),
            Error::Status(code, _) => format!("gRPC status {code:?}"),
            Error::BadReply(_) => "unreadable reply".into(),
            Error::Server {
                kind,
                result_code,
                error_code,
                ..
            } => format!("{kind} resultCode {result_code} errorCode {error_code}"),
            Error::Check(what) => what.clone(),
        }
    }

    /// Nacos errorCode 301: the server does not know this connection (yet).
    pub fn is_unregistered(&self) -> bool {
        matches!(
            self,
            Error::Server {
                error_code: 301,
                ..
            }
        )
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Connect(e) => write!(f, "connect failed: {e}"),
            Error::Timeout => write!(f, "no answer within the timeout"),
            Error::Status(code, message) => write!(f, "gRPC status {code:?}: {message}"),
            Error::BadReply(e) => write!(f, "unreadable reply: {e}"),
            Error::Server {
                kind,
                result_code,
                error_code,
                message,
            } => write!(
                f,
                "{kind} resultCode {result_code} errorCode {error_code}: {message}"
            ),
            Error::Check(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for Error {}

/// A request the server pushed on the stream, as it arrived.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The [`Options::tag`] of the client that received it.
    pub tag: usize,
    /// When the reader task got it off the stream (before acking it).
    pub at: Instant,
    pub kind: String,
    pub request_id: String,
    pub data_id: String,
    pub group: String,
    pub tenant: String,
}

/// What a client's stream reader saw.
#[derive(Debug, Default)]
pub struct StreamStats {
    /// `ConfigChangeNotifyRequest`s received (each acked).
    pub notifications: AtomicU64,
    /// `ClientDetectionRequest`s received (each answered).
    pub detections: AtomicU64,
    /// `ConnectResetRequest`s received.
    pub resets: AtomicU64,
    /// Anything else received on the stream.
    pub others: AtomicU64,
    /// Acks or answers that could not be sent.
    pub send_failures: AtomicU64,
    /// Whether the stream has ended.
    pub closed: AtomicBool,
    /// Why it ended, when it did.
    pub close_reason: Mutex<Option<String>>,
}

/// How a [`Client`] connects.
#[derive(Debug, Clone)]
pub struct Options {
    /// Timeout of connecting, of opening the stream and of each unary request.
    pub timeout: Duration,
    /// `ConnectionSetupRequest.clientVersion`.
    pub client_version: String,
    /// `ConnectionSetupRequest.tenant`.
    pub tenant: String,
    /// Copied into every [`Pushed`] this client reports.
    pub tag: usize,
    /// Ack `ConfigChangeNotifyRequest`s (off only to see what a server does without).
    pub ack_notifications: bool,
    /// Connect from this local address (e.g. 127.0.0.2, when one source address runs
    /// out of ports: see [`crate::fanout::sys`]); `None`: the kernel's choice.
    pub source: Option<std::net::IpAddr>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Duration::from_secs(10),
            client_version: CLIENT_VERSION.to_string(),
            tenant: String::new(),
            tag: 0,
            ack_notifications: true,
            source: None,
        }
    }
}

/// One Nacos gRPC connection: a channel with its stream set up.
pub struct Client {
    unary: RequestClient<Channel>,
    stream_tx: mpsc::Sender<Payload>,
    reader: JoinHandle<()>,
    next_id: u64,
    timeout: Duration,
    /// The connection id the server named in `ServerCheckResponse`.
    pub connection_id: String,
    /// What the stream reader saw.
    pub stats: Arc<StreamStats>,
    /// `ConfigBatchListenRequest`s re-sent because the server answered errorCode 301.
    pub listen_retries: u64,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Turns `host:port` (or a URL) into the URL tonic wants (`https://host:port` when
/// the process speaks TLS: [`crate::tls`]).
pub fn endpoint_url(host: &str) -> String {
    if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        format!("{}://{host}", crate::tls::scheme())
    }
}

/// Opens a channel (one HTTP/2 connection) to `host`, with no stream on it.
pub async fn open_channel(host: &str, timeout: Duration) -> Result<Channel, Error> {
    open_channel_from(host, timeout, None).await
}

/// As [`open_channel`], from the local address `source` when given.
pub async fn open_channel_from(
    host: &str,
    timeout: Duration,
    source: Option<std::net::IpAddr>,
) -> Result<Channel, Error> {
    // tonic is built without TLS: over TLS the connector below does the handshake
    // (rustls on ring), and tonic sees a plain `http://` URI.
    let url = endpoint_url(host);
    let tls = crate::tls::grpc();
    let url = match (&tls, url.strip_prefix("https://")) {
        (Some(_), Some(rest)) => format!("http://{rest}"),
        _ => url,
    };
    let endpoint = Endpoint::from_shared(url)
        .map_err(|e| Error::Connect(e.to_string()))?
        .connect_timeout(timeout)
        .tcp_nodelay(true);
    let connected = match (source, tls) {
        (source, Some(config)) => {
            let connector = tower::service_fn(move |uri: tonic::transport::Uri| {
                let config = config.clone();
                async move {
                    let host = uri
                        .host()
                        .ok_or_else(|| std::io::Error::other("no host in the URI"))?
                        .to_string();
                    let port = uri.port_u16().unwrap_or(443);
                    let addr = tokio::net::lookup_host((
                        host.trim_start_matches('[').trim_end_matches(']'),
                        port,
                    ))
                    .await?
                    .next()
                    .ok_or_else(|| std::io::Error::other(format!("{host}: no address")))?;
                    let stream = crate::fanout::sys::connect_from(source, addr).await?;
                    let tls = crate::tls::handshake(stream, &host, config).await?;
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
                }
            });
            tokio::time::timeout(timeout, endpoint.connect_with_connector(connector)).await
        }
        (source, None) => {
            // tonic's own connector can neither bind nor set a zero linger; this one
            // connects from `source` (when given) through `connect_from`.
            let connector = tower::service_fn(move |uri: tonic::transport::Uri| async move {
                let authority = uri
                    .authority()
                    .map(|a| a.as_str().to_string())
                    .ok_or_else(|| std::io::Error::other("no host in the URI"))?;
                let addr = tokio::net::lookup_host(&authority)
                    .await?
                    .next()
                    .ok_or_else(|| std::io::Error::other(format!("{authority}: no address")))?;
                let stream = crate::fanout::sys::connect_from(source, addr).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(stream))
            });
            tokio::time::timeout(timeout, endpoint.connect_with_connector(connector)).await
        }
    };
    connected
        .map_err(|_| Error::Timeout)?
        .map_err(|e| Error::Connect(format!("{e}: {:?}", std::error::Error::source(&e))))
}

impl Client {
    /// Opens a channel to `host` (`ip:port` of the gRPC port), checks the server, opens
    /// the stream and sends `ConnectionSetupRequest` on it. Pushed requests are sent to
    /// `pushes` when given.
    pub async fn connect(
        host: &str,
        options: &Options,
        pushes: Option<mpsc::UnboundedSender<Pushed>>,
    ) -> Result<Client, Error> {
        let channel = open_channel_from(host, options.timeout, options.source).await?;
        let mut unary = RequestClient::new(channel.clone());
        let check = call(&mut unary, server_check("0"), options.timeout)
            .await?
            .expect("ServerCheckResponse")?;
        let connection_id = check.str("connectionId").to_string();

        // The setup is queued before the call, so it is the stream's first message.
        let (stream_tx, stream_rx) = mpsc::channel::<Payload>(64);
        let setup = connection_setup(&options.client_version, &options.tenant);
        stream_tx
            .send(setup)
            .await
            .map_err(|_| Error::Connect("stream queue closed".into()))?;
        let mut bi = BiRequestStreamClient::new(channel);
        let inbound = tokio::time::timeout(
            options.timeout,
            bi.request_bi_stream(ReceiverStream::new(stream_rx)),
        )
        .await
        .map_err(|_| Error::Timeout)?
        .map_err(|s| Error::Status(s.code(), s.message().to_string()))?
        .into_inner();

        let stats = Arc::new(StreamStats::default());
        let reader = tokio::spawn(read_stream(
            inbound,
            stream_tx.clone(),
            stats.clone(),
            pushes,
            options.tag,
            options.ack_notifications,
        ));
        Ok(Client {
            unary,
            stream_tx,
            reader,
            next_id: 1,
            timeout: options.timeout,
            connection_id,
            stats,
            listen_retries: 0,
        })
    }

    /// A fresh request id on this connection.
    pub fn request_id(&mut self) -> String {
        let id = self.next_id;
        self.next_id += 1;
        id.to_string()
    }

    /// Sends one unary request; any readable answer is `Ok` (check it with
    /// [`Reply::expect`]).
    pub async fn request(&mut self, payload: Payload) -> Result<Reply, Error> {
        call(&mut self.unary, payload, self.timeout).await
    }

    /// `ConfigQueryRequest`; `Ok` only for a successful `ConfigQueryResponse`.
    pub async fn query(
        &mut self,
        data_id: &str,
        group: &str,
        tenant: &str,
    ) -> Result<Reply, Error> {
        let rid = self.request_id();
        self.request(config_query(&rid, data_id, group, tenant))
            .await?
            .expect("ConfigQueryResponse")
    }

    /// `ConfigPublishRequest`; `Ok` only for a successful `ConfigPublishResponse`.
    pub async fn publish(
        &mut self,
        data_id: &str,
        group: &str,
        tenant: &str,
        content: &str,
    ) -> Result<Reply, Error> {
        let rid = self.request_id();
        self.request(config_publish(&rid, data_id, group, tenant, content))
            .await?
            .expect("ConfigPublishResponse")
    }

    /// `ConfigBatchListenRequest{listen: true}` for `contexts` on this connection;
    /// re-sent (at most 20 times, 50 ms apart) while the server answers errorCode 301,
    /// i.e. has not registered the stream yet. Returns the keys the server reported as
    /// changed (`changedConfigs`).
    pub async fn listen(&mut self, contexts: &[ListenContext]) -> Result<Vec<Value>, Error> {
        let mut attempt = 0;
        loop {
            let rid = self.request_id();
            let reply = self
                .request(batch_listen(&rid, true, contexts))
                .await?
                .expect("ConfigChangeBatchListenResponse");
            match reply {
                Ok(reply) => {
                    let changed = match reply.body.get("changedConfigs") {
                        Some(Value::Array(list)) => list.clone(),
                        _ => Vec::new(),
                    };
                    return Ok(changed);
                }
                Err(e) if e.is_unregistered() && attempt < 20 => {
                    attempt += 1;
                    self.listen_retries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether the stream is still open.
    pub fn stream_open(&self) -> bool {
        !self.stats.closed.load(Ordering::Acquire) && !self.stream_tx.is_closed()
    }
}

/// One unary `/Request/request` call with a timeout; any readable answer is `Ok`.
pub async fn call(
    unary: &mut RequestClient<Channel>,
    payload: Payload,
    timeout: Duration,
) -> Result<Reply, Error> {
    let answer = tokio::time::timeout(timeout, unary.request(payload))
        .await
        .map_err(|_| Error::Timeout)?
        .map_err(|s| Error::Status(s.code(), s.message().to_string()))?;
    Reply::parse(answer.into_inner())
}

/// Reads the stream until it ends: acks notifications, answers detections, resets and
/// setup acks, reports what was pushed.
async fn read_stream(
    mut inbound: tonic::Streaming<Payload>,
    outbound: mpsc::Sender<Payload>,
    stats: Arc<StreamStats>,
    pushes: Option<mpsc::UnboundedSender<Pushed>>,
    tag: usize,
    ack_notifications: bool,
) {
    let reason = loop {
        let message = match inbound.message().await {
            Ok(Some(message)) => message,
            Ok(None) => break "the server ended the stream".to_string(),
            Err(status) => break format!("{:?}: {}", status.code(), status.message()),
        };
        let at = Instant::now();
        let Ok(reply) = Reply::parse(message) else {
            stats.others.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        let request_id = reply.str("requestId").to_string();
        let answer = match reply.kind.as_str() {
            "ConfigChangeNotifyRequest" => {
                stats.notifications.fetch_add(1, Ordering::Relaxed);
                ack_notifications.then_some("ConfigChangeNotifyResponse")
            }
            "ClientDetectionRequest" => {
                stats.detections.fetch_add(1, Ordering::Relaxed);
                Some("ClientDetectionResponse")
            }
            "ConnectResetRequest" => {
                stats.resets.fetch_add(1, Ordering::Relaxed);
                Some("ConnectResetResponse")
            }
            "SetupAckRequest" => Some("SetupAckResponse"),
            _ => {
                stats.others.fetch_add(1, Ordering::Relaxed);
                None
            }
        };
        if let Some(kind) = answer {
            if outbound
                .send(stream_response(kind, &request_id))
                .await
                .is_err()
            {
                stats.send_failures.fetch_add(1, Ordering::Relaxed);
            }
        }
        if let Some(pushes) = &pushes {
            let _ = pushes.send(Pushed {
                tag,
                at,
                request_id,
                data_id: reply.str("dataId").to_string(),
                group: reply.str("group").to_string(),
                tenant: reply.str("tenant").to_string(),
                kind: reply.kind,
            });
        }
    };
    *stats.close_reason.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
    stats.closed.store(true, Ordering::Release);
}

/// Opens `count` clients to `host`, at most `concurrency` connecting at a time; client
/// `i` gets tag `i`. `prepare` runs on each new client (e.g. to listen) before it counts
/// as open. Returns the clients in tag order, `Err` for those that failed.
pub async fn connect_many<F, Fut>(
    host: &str,
    count: usize,
    concurrency: usize,
    options: &Options,
    pushes: Option<mpsc::UnboundedSender<Pushed>>,
    prepare: F,
) -> Vec<Result<Client, Error>>
where
    F: Fn(Client) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Client, Error>> + Send + 'static,
{
    let semaphore = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
    let prepare = Arc::new(prepare);
    let mut tasks = tokio::task::JoinSet::new();
    for tag in 0..count {
        let semaphore = semaphore.clone();
        let prepare = prepare.clone();
        let host = host.to_string();
        let options = Options {
            tag,
            ..options.clone()
        };
        let pushes = pushes.clone();
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            let client = match Client::connect(&host, &options, pushes).await {
                Ok(client) => prepare(client).await,
                Err(e) => Err(e),
            };
            (tag, client)
        });
    }
    let mut out: Vec<Option<Result<Client, Error>>> = (0..count).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        if let Ok((tag, client)) = joined {
            out[tag] = Some(client);
        }
    }
    out.into_iter()
        .map(|c| c.unwrap_or_else(|| Err(Error::Connect("the connect task panicked".into()))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(payload: &Payload) -> Value {
        serde_json::from_slice(&payload.body.as_ref().unwrap().value).unwrap()
    }

    fn kind(payload: &Payload) -> &str {
        &payload.metadata.as_ref().unwrap().r#type
    }

    #[test]
    fn request_bodies() {
        let p = server_check("1");
        assert_eq!(kind(&p), "ServerCheckRequest");
        assert_eq!(body(&p), json!({"requestId": "1", "headers": {}}));
        assert_eq!(p.body.as_ref().unwrap().type_url, "");

        let p = connection_setup(CLIENT_VERSION, "");
        assert_eq!(kind(&p), "ConnectionSetupRequest");
        assert_eq!(
            body(&p),
            json!({"clientVersion": "tacos-loadtest", "abilities": {}, "abilityTable": {},
                   "tenant": "", "labels": {}, "requestId": "", "headers": {}})
        );

        let p = config_query("7", "d", "g", "");
        assert_eq!(kind(&p), "ConfigQueryRequest");
        assert_eq!(
            body(&p),
            json!({"dataId": "d", "group": "g", "tenant": "", "requestId": "7", "headers": {}})
        );

        let p = config_publish("8", "d", "g", "t", "c \"q\"");
        assert_eq!(kind(&p), "ConfigPublishRequest");
        let b = body(&p);
        assert_eq!(b["content"], "c \"q\"");
        assert_eq!(b["tenant"], "t");
        assert_eq!(b["additionMap"], json!({}));
        assert!(
            b.get("casMd5").is_none(),
            "an unconditional publish sends no casMd5"
        );

        let ctx = ListenContext {
            data_id: "d".into(),
            group: "g".into(),
            tenant: "".into(),
            md5: "abc".into(),
        };
        let p = batch_listen("9", true, &[ctx]);
        assert_eq!(kind(&p), "ConfigBatchListenRequest");
        assert_eq!(
            body(&p),
            json!({"listen": true, "requestId": "9", "headers": {},
                   "configListenContexts": [{"dataId": "d", "group": "g", "tenant": "", "md5": "abc"}]})
        );

        let p = stream_response("ConfigChangeNotifyResponse", "42");
        assert_eq!(kind(&p), "ConfigChangeNotifyResponse");
        assert_eq!(
            body(&p),
            json!({"requestId": "42", "resultCode": 200, "errorCode": 0, "message": "", "success": true})
        );
    }

    #[test]
    fn replies() {
        let ok = Reply::parse(payload(
            "ConfigQueryResponse",
            &json!({"resultCode": 200, "errorCode": 0, "content": "x", "md5": "m"}),
        ))
        .unwrap();
        assert!(ok.is_success());
        assert_eq!(ok.str("content"), "x");
        assert!(ok.clone().expect("ConfigQueryResponse").is_ok());
        // Success of another class is an error too (r-nacos answers ErrorResponse).
        assert!(ok.expect("ConfigPublishResponse").is_err());

        let missing = Reply::parse(payload(
            "ConfigQueryResponse",
            &json!({"resultCode": 500, "errorCode": 300, "message": "config data not exist"}),
        ))
        .unwrap();
        let e = missing.expect("ConfigQueryResponse").unwrap_err();
        assert_eq!(
            e.label(),
            "ConfigQueryResponse resultCode 500 errorCode 300"
        );
        assert!(!e.is_unregistered());

        let unregistered = Reply::parse(payload(
            "ErrorResponse",
            &json!({"resultCode": 500, "errorCode": 301, "message": "Connection is unregistered."}),
        ))
        .unwrap();
        assert!(unregistered.expect("X").unwrap_err().is_unregistered());

        let mut bad = payload("X", &json!({}));
        bad.body.as_mut().unwrap().value = b"{nope".to_vec();
        assert!(matches!(Reply::parse(bad), Err(Error::BadReply(_))));
        assert!(Reply::parse(Payload {
            metadata: None,
            body: None
        })
        .is_err());
    }

    #[test]
    fn urls() {
        assert_eq!(endpoint_url("127.0.0.1:9848"), "http://127.0.0.1:9848");
        assert_eq!(endpoint_url("http://h:1"), "http://h:1");
    }

    /// A fake server: ServerCheck, stream setup, query/publish, batch listen that ties
    /// the unary call to the stream by peer address and pushes one notification, and
    /// records the ack it gets back.
    mod fake {
        use super::super::pb;
        use super::*;
        use std::collections::HashMap;
        use std::net::SocketAddr;
        use std::pin::Pin;
        use tokio_stream::Stream;
        use tonic::{Request, Response, Status, Streaming};

        type Out = mpsc::Sender<Result<Payload, Status>>;

        #[derive(Default)]
        pub struct State {
            pub streams: Mutex<HashMap<SocketAddr, Out>>,
            pub setups: Mutex<Vec<Value>>,
            pub acks: Mutex<Vec<Reply>>,
        }

        #[derive(Clone)]
        pub struct Fake(pub Arc<State>);

        fn answer(kind: &str, rid: &str, mut fields: Value) -> Payload {
            let map = fields.as_object_mut().unwrap();
            map.insert("requestId".into(), rid.into());
            map.entry("resultCode").or_insert(200.into());
            map.entry("errorCode").or_insert(0.into());
            payload(kind, &fields)
        }

        #[tonic::async_trait]
        impl pb::request_server::Request for Fake {
            async fn request(
                &self,
                request: Request<Payload>,
            ) -> Result<Response<Payload>, Status> {
                let peer = request.remote_addr().unwrap();
                let req = Reply::parse(request.into_inner()).unwrap();
                let rid = req.str("requestId").to_string();
                let reply = match req.kind.as_str() {
                    "ServerCheckRequest" => answer(
                        "ServerCheckResponse",
                        &rid,
                        json!({"connectionId": format!("fake_{peer}")}),
                    ),
                    "ConfigQueryRequest" if req.str("dataId") == "missing" => answer(
                        "ConfigQueryResponse",
                        &rid,
                        json!({"resultCode": 500, "errorCode": 300}),
                    ),
                    "ConfigQueryRequest" => answer(
                        "ConfigQueryResponse",
                        &rid,
                        json!({"content": "v", "md5": "m"}),
                    ),
                    "ConfigPublishRequest" => answer("ConfigPublishResponse", &rid, json!({})),
                    "ConfigBatchListenRequest" => {
                        let out = self.0.streams.lock().unwrap().get(&peer).cloned();
                        match out {
                            None => answer(
                                "ErrorResponse",
                                &rid,
                                json!({"resultCode": 500, "errorCode": 301}),
                            ),
                            Some(out) => {
                                let ctx = &req.body["configListenContexts"][0];
                                let push = payload(
                                    "ConfigChangeNotifyRequest",
                                    &json!({"requestId": "p1", "dataId": ctx["dataId"],
                                            "group": ctx["group"], "tenant": ""}),
                                );
                                out.send(Ok(push)).await.unwrap();
                                answer(
                                    "ConfigChangeBatchListenResponse",
                                    &rid,
                                    json!({"changedConfigs": []}),
                                )
                            }
                        }
                    }
                    _ => answer(
                        "ErrorResponse",
                        &rid,
                        json!({"resultCode": 500, "errorCode": 302}),
                    ),
                };
                Ok(Response::new(reply))
            }
        }

        type PayloadStream = Pin<Box<dyn Stream<Item = Result<Payload, Status>> + Send>>;

        #[tonic::async_trait]
        impl pb::bi_request_stream_server::BiRequestStream for Fake {
            type requestBiStreamStream = PayloadStream;

            async fn request_bi_stream(
                &self,
                request: Request<Streaming<Payload>>,
            ) -> Result<Response<PayloadStream>, Status> {
                let peer = request.remote_addr().unwrap();
                let mut inbound = request.into_inner();
                let (tx, rx) = mpsc::channel(16);
                let state = self.0.clone();
                tokio::spawn(async move {
                    while let Ok(Some(message)) = inbound.message().await {
                        let msg = Reply::parse(message).unwrap();
                        if msg.kind == "ConnectionSetupRequest" {
                            state.setups.lock().unwrap().push(Value::Object(msg.body));
                            state.streams.lock().unwrap().insert(peer, tx.clone());
                        } else {
                            state.acks.lock().unwrap().push(msg);
                        }
                    }
                });
                Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
            }
        }
    }

    #[tokio::test]
    async fn talks_to_a_fake_server() {
        use tonic::transport::server::TcpIncoming;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(fake::State::default());
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(pb::request_server::RequestServer::new(fake::Fake(
                    state.clone(),
                )))
                .add_service(pb::bi_request_stream_server::BiRequestStreamServer::new(
                    fake::Fake(state.clone()),
                ))
                .serve_with_incoming(TcpIncoming::from(listener)),
        );

        let (tx, mut pushes) = mpsc::unbounded_channel();
        let options = Options {
            timeout: Duration::from_secs(5),
            tag: 7,
            ..Options::default()
        };
        let mut client = Client::connect(&addr.to_string(), &options, Some(tx))
            .await
            .unwrap();
        assert!(client.connection_id.starts_with("fake_127.0.0.1:"));
        let reply = client.query("k", "DEFAULT_GROUP", "").await.unwrap();
        assert_eq!(reply.str("content"), "v");
        let missing = client
            .query("missing", "DEFAULT_GROUP", "")
            .await
            .unwrap_err();
        assert!(matches!(
            missing,
            Error::Server {
                error_code: 300,
                ..
            }
        ));
        client.publish("k", "DEFAULT_GROUP", "", "x").await.unwrap();

        // The listen may race the setup; the client retries on 301 until it lands.
        let ctx = ListenContext {
            data_id: "k".into(),
            group: "DEFAULT_GROUP".into(),
            tenant: String::new(),
            md5: "m".into(),
        };
        let changed = client.listen(&[ctx]).await.unwrap();
        assert!(changed.is_empty());
        let pushed = tokio::time::timeout(Duration::from_secs(5), pushes.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pushed.tag, 7);
        assert_eq!(pushed.kind, "ConfigChangeNotifyRequest");
        assert_eq!(pushed.data_id, "k");
        assert_eq!(pushed.request_id, "p1");

        // The ack arrives on the stream with the pushed request id.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(ack) = state.acks.lock().unwrap().first() {
                assert_eq!(ack.kind, "ConfigChangeNotifyResponse");
                assert_eq!(ack.str("requestId"), "p1");
                assert!(ack.is_success());
                break;
            }
            assert!(Instant::now() < deadline, "no ack");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            state.setups.lock().unwrap()[0]["clientVersion"],
            CLIENT_VERSION
        );
        assert_eq!(client.stats.notifications.load(Ordering::Relaxed), 1);
        assert!(client.stream_open());
        drop(client);

        let many = connect_many(&addr.to_string(), 5, 2, &options, None, |c| async { Ok(c) }).await;
        assert_eq!(many.len(), 5);
        assert!(many.iter().all(|c| c.is_ok()));
        server.abort();
    }
}
