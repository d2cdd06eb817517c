//! The Nacos 2.x gRPC API (`proto/nacos_grpc_service.proto`) on the gRPC
//! port (HTTP port + 1000 by default): the services `Request` (unary) and
//! `BiRequestStream` (a connection's stream, for setup and server push).
//!
//! | request type | answer |
//! |---|---|
//! | `ServerCheckRequest` | `ServerCheckResponse{connectionId, supportAbilityNegotiation:true}` (before or after the stream is set up; a setup with an `abilityTable` is answered on the stream with `SetupAckRequest`, see [`connection`]) |
//! | `HealthCheckRequest` | `HealthCheckResponse` |
//! | `ClientDetectionRequest` | `ClientDetectionResponse` |
//! | `ConfigQueryRequest` | `ConfigQueryResponse` (beta-aware; not found: errorCode 300) |
//! | `ConfigPublishRequest` | `ConfigPublishResponse` (additionMap: type, desc, appName, config_tags, src_user, betaIps; casMd5) |
//! | `ConfigRemoveRequest` | `ConfigRemoveResponse` |
//! | `ConfigBatchListenRequest` | `ConfigChangeBatchListenResponse{changedConfigs}`; registers the keys on the connection |
//! | `ConfigFuzzyWatchRequest` | `ConfigFuzzyWatchResponse`; watches (or stops watching) a group key pattern on the connection ([`tacos_app::watch::fuzzy`]) |
//! | anything else | `ErrorResponse` errorCode 302; an unparsable payload: errorCode 502 |
//!
//! On the stream the client sends `ConnectionSetupRequest` and acks; the
//! server pushes `ConfigChangeNotifyRequest`, the fuzzy watch's
//! `ConfigFuzzyWatchSyncRequest` and `ConfigFuzzyWatchChangeNotifyRequest`,
//! and `ConnectResetRequest` when the node stops (see [`connection`]). HTTP/2 keepalive pings close
//! connections whose client vanished.

mod state;

pub use state::GrpcState;
pub mod codec;
pub mod config;
pub mod connection;
pub mod payload;

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use serde_json::json;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status, Streaming};

use payload::{code, Incoming};
use tacos_app::auth::{Credentials, Principal};

/// The generated Nacos gRPC types and services (package-less proto).
#[allow(non_camel_case_types, clippy::all)]
pub mod pb {
    tonic::include_proto!("_");
}

/// How often an idle client connection is pinged, and how long the answer
/// may take before the connection is closed.
const KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(20);
const KEEPALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Request types with handlers (metric labels).
const KNOWN_TYPES: &[&str] = &[
    "ServerCheckRequest",
    "HealthCheckRequest",
    "ClientDetectionRequest",
    "ConfigQueryRequest",
    "ConfigPublishRequest",
    "ConfigRemoveRequest",
    "ConfigBatchListenRequest",
    "ConfigFuzzyWatchRequest",
];

/// Metric handles of one request type, registered once (a lookup per
/// request would hash the labels every time).
struct RequestMetrics {
    ok: metrics::Counter,
    error: metrics::Counter,
    duration: metrics::Histogram,
}

impl RequestMetrics {
    /// The handles for `kind` (unknown types share the label `other`).
    fn of(kind: &str) -> &'static RequestMetrics {
        static ALL: std::sync::OnceLock<std::collections::HashMap<&'static str, RequestMetrics>> =
            std::sync::OnceLock::new();
        let all = ALL.get_or_init(|| {
            KNOWN_TYPES
                .iter()
                .chain(std::iter::once(&"other"))
                .map(|&kind| {
                    let handles = RequestMetrics {
                        ok: metrics::counter!("tacos_grpc_requests_total", "type" => kind, "result" => "ok"),
                        error: metrics::counter!("tacos_grpc_requests_total", "type" => kind, "result" => "error"),
                        duration: metrics::histogram!("tacos_grpc_request_duration_seconds", "type" => kind),
                    };
                    (kind, handles)
                })
                .collect()
        });
        all.get(kind).unwrap_or_else(|| &all["other"])
    }

    fn record(&self, ok: bool, seconds: f64) {
        if ok { &self.ok } else { &self.error }.increment(1);
        self.duration.record(seconds);
    }
}

/// Who sent a config request: anyone when open-API auth is off; otherwise
/// the user its `accessToken` header (or `username`/`password` headers)
/// proves.
async fn principal(
    app: &GrpcState,
    req: &Incoming,
    client_ip: &str,
) -> Result<Principal, tacos_app::auth::AuthError> {
    if !app.auth.open_api_auth() {
        return Ok(Principal::Open);
    }
    let header = |name| {
        req.header(name)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let credentials = Credentials {
        token: header("accessToken"),
        username: header("username"),
        password: header("password"),
    };
    app.auth
        .authenticate(&credentials, client_ip)
        .await
        .map(Principal::User)
}

#[derive(Clone)]
struct Api(Arc<GrpcState>);

/// Answers one unary request.
pub async fn handle(
    app: &GrpcState,
    payload: pb::Payload,
    peer: Option<std::net::SocketAddr>,
) -> payload::Reply {
    let req = match Incoming::parse(payload) {
        Ok(req) => req,
        Err(e) => {
            return payload::error(
                "",
                code::BAD_REQUEST_PAYLOAD,
                &format!("Invalid request: {e}"),
            );
        }
    };
    let client_ip = if req.client_ip.is_empty() {
        peer.map(|p| p.ip().to_string()).unwrap_or_default()
    } else {
        req.client_ip.clone()
    };
    let rid = req.request_id();
    tracing::debug!(kind = %req.kind, ?peer, "gRPC request");
    let principal = if req.kind.starts_with("Config") {
        match principal(app, &req, &client_ip).await {
            Ok(principal) => principal,
            Err(e) => return payload::error(&rid, code::NO_RIGHT, &e.to_string()),
        }
    } else {
        Principal::Open
    };
    match req.kind.as_str() {
        "ServerCheckRequest" => {
            let connection_id = peer
                .map(|p| app.connections.connection_id(p))
                .unwrap_or_default();
            payload::ok(
                "ServerCheckResponse",
                &rid,
                json!({ "connectionId": connection_id, "supportAbilityNegotiation": true }),
            )
        }
        // While the node drains, a health check fails (not with a 3xx,
        // which clients take as "retry later"): a client asked to move
        // (`ConnectResetRequest` without an address) checks its current
        // connection first, and the Go SDK stays where the check passes.
        "HealthCheckRequest" if app.connections.is_stopping() => payload::error(
            &rid,
            code::SERVER_ERROR,
            "server is stopping, move to another server",
        ),
        "HealthCheckRequest" => payload::ok("HealthCheckResponse", &rid, json!({})),
        "ClientDetectionRequest" => payload::ok("ClientDetectionResponse", &rid, json!({})),
        "ConfigQueryRequest" => config::query(app, &req, &client_ip, peer, &principal),
        "ConfigPublishRequest" => config::publish(app, &req, &client_ip, &principal).await,
        "ConfigRemoveRequest" => config::remove(app, &req, &client_ip, &principal).await,
        "ConfigBatchListenRequest" => {
            config::batch_listen(app, &req, &client_ip, peer, &principal).await
        }
        "ConfigFuzzyWatchRequest" => config::fuzzy_watch(app, &req, peer, &principal).await,
        other => {
            // Nacos' words; the class is in the log, not the answer.
            tracing::debug!(
                class = other,
                "a gRPC request of a class Tacos has no handler for"
            );
            payload::error(&rid, code::NO_HANDLER, "RequestHandler Not Found")
        }
    }
}

#[tonic::async_trait]
impl pb::request_server::Request for Api {
    async fn request(
        &self,
        request: Request<pb::Payload>,
    ) -> Result<Response<pb::Payload>, Status> {
        let peer = request.remote_addr();
        let started = std::time::Instant::now();
        let payload = request.into_inner();
        let metrics =
            RequestMetrics::of(payload.metadata.as_ref().map_or("", |m| m.r#type.as_str()));
        let reply = handle(&self.0, payload, peer).await;
        metrics.record(reply.ok, started.elapsed().as_secs_f64());
        Ok(Response::new(reply.payload))
    }
}

type PayloadStream = Pin<Box<dyn Stream<Item = Result<pb::Payload, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl pb::bi_request_stream_server::BiRequestStream for Api {
    type requestBiStreamStream = PayloadStream;

    async fn request_bi_stream(
        &self,
        request: Request<Streaming<pb::Payload>>,
    ) -> Result<Response<PayloadStream>, Status> {
        let peer = request
            .remote_addr()
            .ok_or_else(|| Status::failed_precondition("no peer address"))?;
        let (conn, outbound) = self.0.connections.open(peer);
        tokio::spawn(connection::push_changes(conn.clone()));
        tokio::spawn(connection::push_fuzzy(conn.clone()));
        tokio::spawn(connection::read_stream(
            conn,
            request.into_inner(),
            self.0.connections.clone(),
            self.0.hub.clone(),
        ));
        let stream = futures::stream::unfold(outbound, |mut rx| async move {
            rx.recv().await.map(|message| (*message, rx))
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

/// Serves the gRPC port on an already bound listener, on the current tokio
/// runtime, until the process ends. `max_message` bounds a message's size.
/// Once the node stops ([`connection::drain`]) the listener is closed:
/// new connections are refused while the open ones are still served.
pub fn serve(
    state: Arc<GrpcState>,
    listener: TcpListener,
    max_message: usize,
    tls: Option<(Arc<tacos_tls::rustls::ServerConfig>, tacos_tls::Plaintext)>,
) {
    let connections = state.connections.clone();
    let api = Api(state);
    // When the incoming stream ends, tonic leaves its accept loop and drops
    // the stream, and with it the listening socket; connections already
    // accepted run on in their own tasks.
    let incoming = tacos_tls::incoming(listener, tls, "grpc").take_until(connections.stopped());
    tokio::spawn(async move {
        // HTTP/2 pings find clients that vanished without closing their
        // connection; their stream then ends and their listens are dropped.
        let served = tonic::transport::Server::builder()
            .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
            .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
            .add_service(
                pb::request_server::RequestServer::new(api.clone())
                    .max_decoding_message_size(max_message)
                    .max_encoding_message_size(max_message),
            )
            .add_service(
                pb::bi_request_stream_server::BiRequestStreamServer::new(api)
                    .max_decoding_message_size(max_message)
                    .max_encoding_message_size(max_message),
            )
            .serve_with_incoming(incoming)
            .await;
        connections.set_port_closed();
        match served {
            Ok(()) => tracing::info!("gRPC port closed to new connections"),
            Err(e) => tracing::error!("gRPC port stopped: {e}"),
        }
    });
}
