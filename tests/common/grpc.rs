//! A Nacos gRPC client connection as the official SDKs open one, for
//! scripts that speak gRPC to Tacos or to Java Nacos alike
//! (tests/scenarios.rs' `grpc` and `pushes` commands).
//!
//! [`GrpcClient::connect`] sends `ServerCheckRequest`, opens the
//! bi-directional stream with a `ConnectionSetupRequest` that carries an
//! `abilityTable` (Java Nacos sends nothing on a stream whose setup lacks
//! one, not even the response headers), and waits until the server serves
//! requests of this connection. Every request the server sends on the
//! stream (a push: `ConfigChangeNotifyRequest`, ...) is kept for
//! [`GrpcClient::take_pushes`] and acknowledged at once, as the SDKs do.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc::{unbounded, UnboundedSender};
use futures::StreamExt;
use serde_json::{json, Value};
use tacos::grpc::pb::bi_request_stream_client::BiRequestStreamClient;
use tacos::grpc::pb::request_client::RequestClient;
use tacos::grpc::pb::Payload;
use tonic::transport::{Channel, Endpoint};

/// Bound on connecting, and on one call.
pub const CALL_BOUND: Duration = Duration::from_secs(8);

/// What the server sent on the stream that is not an answer: its class
/// and body.
pub type Push = (String, Value);

/// One registered gRPC connection.
pub struct GrpcClient {
    client: RequestClient<Channel>,
    _outbound: UnboundedSender<Payload>,
    pushes: Arc<Mutex<Vec<Push>>>,
    next_id: u64,
}

/// A payload of class `kind` with a JSON `body`, from 127.0.0.1.
fn payload(kind: &str, body: &Value) -> Payload {
    super::grpc_payload(kind, "127.0.0.1", body)
}

/// The class and JSON body of a payload.
pub fn parse(payload: Payload) -> Result<Push, String> {
    let kind = payload.metadata.map(|m| m.r#type).unwrap_or_default();
    let body = payload
        .body
        .ok_or_else(|| format!("{kind} without a body"))?;
    let value =
        serde_json::from_slice(&body.value).map_err(|e| format!("{kind} body is not JSON: {e}"))?;
    Ok((kind, value))
}

impl GrpcClient {
    /// Connects to the gRPC port at `host_port` and registers the
    /// connection (see the module docs).
    pub async fn connect(host_port: &str) -> Result<GrpcClient, String> {
        let channel = Endpoint::from_shared(format!("http://{host_port}"))
            .map_err(|e| e.to_string())?
            .connect_timeout(CALL_BOUND)
            .connect()
            .await
            .map_err(|e| format!("connecting to {host_port}: {e}"))?;
        let (outbound, rx) = unbounded::<Payload>();
        let setup = json!({
            "clientVersion": "Nacos-Java-Client:v2.4.0", "abilities": {}, "abilityTable": {},
            "tenant": "", "labels": {"source": "sdk", "module": "config"},
            "requestId": "", "headers": {},
        });
        outbound
            .unbounded_send(payload("ConnectionSetupRequest", &setup))
            .map_err(|e| e.to_string())?;
        let mut client = GrpcClient {
            client: RequestClient::new(channel.clone()),
            _outbound: outbound.clone(),
            pushes: Arc::default(),
            next_id: 0,
        };
        client.call("ServerCheckRequest", json!({})).await?;
        let mut inbound = tokio::time::timeout(
            CALL_BOUND,
            BiRequestStreamClient::new(channel).request_bi_stream(rx),
        )
        .await
        .map_err(|_| "the stream was not opened in time".to_string())?
        .map_err(|e| format!("opening the stream: {e}"))?
        .into_inner();
        let pushes = client.pushes.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = inbound.next().await {
                let Ok((kind, body)) = parse(message) else {
                    continue;
                };
                let ack = kind.replace("Request", "Response");
                let request_id = body["requestId"].clone();
                let _ = outbound.unbounded_send(payload(
                    &ack,
                    &json!({"requestId": request_id, "resultCode": 200, "errorCode": 0,
                        "message": "", "success": true}),
                ));
                if kind != "SetupAckRequest" {
                    pushes.lock().unwrap().push((kind, body));
                }
            }
        });
        // The setup is handled on the stream, a call on its own: wait
        // until a call of this connection is served.
        let deadline = Instant::now() + CALL_BOUND;
        loop {
            let (_, (_, reply)) = client
                .call(
                    "ConfigBatchListenRequest",
                    json!({"listen": false, "configListenContexts": []}),
                )
                .await?;
            if reply["resultCode"] == 200 {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("the connection was never registered: {reply}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A script's own calls count from 1, however many probes it took.
        client.next_id = 0;
        Ok(client)
    }

    /// One request (its `requestId` and `headers` added); the request id
    /// sent, and the class and body of the answer.
    pub async fn call(&mut self, kind: &str, mut body: Value) -> Result<(String, Push), String> {
        self.next_id += 1;
        let request_id = format!("scenario-{}", self.next_id);
        body["requestId"] = json!(request_id);
        if body.get("headers").is_none() {
            body["headers"] = json!({});
        }
        let reply = tokio::time::timeout(CALL_BOUND, self.client.request(payload(kind, &body)))
            .await
            .map_err(|_| format!("{kind} was not answered within {CALL_BOUND:?}"))?
            .map_err(|status| format!("{kind} failed: {status:?}"))?;
        Ok((request_id, parse(reply.into_inner())?))
    }

    /// The pushes received since the last call, in arrival order.
    pub fn take_pushes(&self) -> Vec<Push> {
        std::mem::take(&mut *self.pushes.lock().unwrap())
    }
}
