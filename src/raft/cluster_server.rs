//! The server side of the cluster port: hands Raft messages to openraft and
//! routed requests to the [`Node`]. The cluster token, when set, is checked
//! before any payload is decoded.

use std::sync::Arc;

use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use super::node::Node;
use super::rpc::{self, pb, Forward, MAX_FRAME, TOKEN_HEADER};
use super::types::{NodeId, TypeConfig};

struct ClusterService {
    node: Arc<Node>,
}

fn decode<T: serde::de::DeserializeOwned>(request: &Request<pb::Frame>) -> Result<T, Status> {
    rpc::decode(request.get_ref()).map_err(|e| Status::invalid_argument(e.to_string()))
}

#[tonic::async_trait]
impl pb::cluster_server::Cluster for ClusterService {
    async fn append_entries(
        &self,
        request: Request<pb::Frame>,
    ) -> Result<Response<pb::Frame>, Status> {
        let rpc: AppendEntriesRequest<TypeConfig> = decode(&request)?;
        let result = self.node.raft.append_entries(rpc).await;
        Ok(Response::new(rpc::encode(&result)))
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

/// Refuses calls that lack the token (compared in constant time).
#[derive(Clone)]
struct TokenCheck {
    token: Option<Arc<[u8]>>,
}

impl tonic::service::Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.token else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get(TOKEN_HEADER)
            .map(|v| v.as_bytes())
            .unwrap_or_default();
        if bool::from(given.ct_eq(expected)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "this cluster requires the cluster token (x-tacos-cluster-token)",
            ))
        }
    }
}

/// Serves the cluster port on an already bound listener until the process
/// ends. Runs on the current tokio runtime.
pub fn serve(node: Arc<Node>, listener: TcpListener, token: Option<String>) {
    let check = TokenCheck {
        token: token.map(|t| Arc::from(t.into_bytes())),
    };
    let service = pb::cluster_server::ClusterServer::new(ClusterService { node })
        .max_decoding_message_size(MAX_FRAME)
        .max_encoding_message_size(MAX_FRAME);
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
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
