//! The server side of the cluster port: hands Raft messages to openraft and
//! routed requests to the [`Node`]. The protocol version and the cluster
//! token (when set) are checked before any payload is decoded.

use std::sync::Arc;

use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

use super::node::Node;
use super::rpc::{
    self, pb, Forward, PeerTls, MAX_FRAME, PROTOCOL_HEADER, PROTOCOL_VERSION, TOKEN_HEADER,
};
use tacos_core::types::{NodeId, TypeConfig};

struct ClusterService {
    node: Arc<Node>,
}

fn decode<T: serde::de::DeserializeOwned>(request: &Request<pb::Frame>) -> Result<T, Status> {
    rpc::decode(request.get_ref()).map_err(|e| Status::invalid_argument(e.to_string()))
}

#[tonic::async_trait]
impl pb::cluster_server::Cluster for ClusterService {
    type AppendEntriesStream = tokio_stream::wrappers::ReceiverStream<Result<pb::Frame, Status>>;

    /// Answers each frame in turn, in the order they came: a leader sends
    /// the next request only once it has the answer to the last.
    async fn append_entries(
        &self,
        request: Request<tonic::Streaming<pb::Frame>>,
    ) -> Result<Response<Self::AppendEntriesStream>, Status> {
        let mut frames = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let node = self.node.clone();
        tokio::spawn(async move {
            loop {
                let answer = match frames.message().await {
                    Ok(Some(frame)) => {
                        match rpc::decode::<AppendEntriesRequest<TypeConfig>>(&frame) {
                            Ok(rpc) => Ok(rpc::encode(&node.raft.append_entries(rpc).await)),
                            Err(e) => Err(Status::invalid_argument(e.to_string())),
                        }
                    }
                    // The leader closed the stream, or it broke.
                    Ok(None) | Err(_) => return,
                };
                let last = answer.is_err();
                if tx.send(answer).await.is_err() || last {
                    return;
                }
            }
        });
        Ok(Response::new(tokio_stream::wrappers::ReceiverStream::new(
            rx,
        )))
    }

    async fn vote(&self, request: Request<pb::Frame>) -> Result<Response<pb::Frame>, Status> {
        let rpc: VoteRequest<NodeId> = decode(&request)?;
        let result = self.node.raft.vote(rpc).await;
        Ok(Response::new(rpc::encode(&result)))
    }

    async fn install_snapshot(
        &self,
        request: Request<pb::Frame>,
    ) -> Result<Response<pb::Frame>, Status> {
        let rpc: InstallSnapshotRequest<TypeConfig> = decode(&request)?;
        let result = self.node.raft.install_snapshot(rpc).await;
        Ok(Response::new(rpc::encode(&result)))
    }

    async fn forward(&self, request: Request<pb::Frame>) -> Result<Response<pb::Frame>, Status> {
        let forward: Forward = decode(&request)?;
        let reply = self.node.route(forward.request, forward.hops).await;
        Ok(Response::new(rpc::encode(&reply)))
    }
}

/// Refuses calls that lack the token (compared in constant time) or speak
/// another protocol version.
#[derive(Clone)]
struct CallCheck {
    token: Option<Arc<[u8]>>,
}

impl tonic::service::Interceptor for CallCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(expected) = &self.token {
            let given = request
                .metadata()
                .get(TOKEN_HEADER)
                .map(|v| v.as_bytes())
                .unwrap_or_default();
            if !bool::from(given.ct_eq(expected)) {
                return Err(Status::unauthenticated(
                    "this cluster requires the cluster token (x-tacos-cluster-token)",
                ));
            }
        }
        let version = request
            .metadata()
            .get(PROTOCOL_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if version.as_deref() != Some(PROTOCOL_VERSION) {
            return Err(Status::failed_precondition(format!(
                "cluster protocol mismatch: this node speaks version {PROTOCOL_VERSION}, the caller {}; \
                 the nodes of a cluster must run Tacos releases with the same cluster protocol",
                version.map_or_else(|| "sent none".to_string(), |v| format!("version {v:?}"))
            )));
        }
        Ok(request)
    }
}

/// Serves the cluster port on an already bound listener until the process
/// ends, over mutual TLS when `tls` is given (TLS only: a node without it
/// is refused in the handshake). Runs on the current tokio runtime.
pub fn serve(node: Arc<Node>, listener: TcpListener, token: Option<String>, tls: Option<&PeerTls>) {
    let check = CallCheck {
        token: token.map(|t| Arc::from(t.into_bytes())),
    };
    let service = pb::cluster_server::ClusterServer::new(ClusterService { node })
        .max_decoding_message_size(MAX_FRAME)
        .max_encoding_message_size(MAX_FRAME);
    let tls = tls.map(|t| (t.server.clone(), tacos_tls::Plaintext::Refuse));
    let incoming = tacos_tls::incoming(listener, tls, tacos_tls::incoming::CLUSTER_PORT);
    tokio::spawn(async move {
        let served = tonic::transport::Server::builder()
            .add_service(tonic::service::interceptor::InterceptedService::new(
                service, check,
            ))
            .serve_with_incoming(incoming)
            .await;
        if let Err(e) = served {
            tracing::error!("cluster port stopped: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use tonic::service::Interceptor;

    use super::*;

    fn call(
        token: Option<&str>,
        sent_token: Option<&str>,
        version: Option<&str>,
    ) -> Result<(), Status> {
        let mut check = CallCheck {
            token: token.map(|t| Arc::from(t.as_bytes())),
        };
        let mut request = Request::new(());
        if let Some(t) = sent_token {
            request
                .metadata_mut()
                .insert(TOKEN_HEADER, t.parse().expect("ascii"));
        }
        if let Some(v) = version {
            request
                .metadata_mut()
                .insert(PROTOCOL_HEADER, v.parse().expect("ascii"));
        }
        check.call(request).map(|_| ())
    }

    #[test]
    fn calls_of_another_protocol_version_are_refused_before_decoding() {
        assert!(call(None, None, Some(PROTOCOL_VERSION)).is_ok());
        let none = call(None, None, None).unwrap_err();
        assert_eq!(none.code(), tonic::Code::FailedPrecondition);
        assert!(none.message().contains("sent none"), "{}", none.message());
        let other = call(None, None, Some("999")).unwrap_err();
        assert_eq!(other.code(), tonic::Code::FailedPrecondition);
        assert!(
            other.message().contains("version \"999\""),
            "{}",
            other.message()
        );
    }

    #[test]
    fn the_token_is_checked_first() {
        assert!(call(Some("s3cret"), Some("s3cret"), Some(PROTOCOL_VERSION)).is_ok());
        let wrong = call(Some("s3cret"), Some("guess"), Some(PROTOCOL_VERSION)).unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
        // Without the token, nothing about the version is revealed.
        let wrong = call(Some("s3cret"), None, Some("999")).unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
    }
}
