//! The client side of the cluster port: openraft's network (append-entries,
//! vote, snapshot chunks) and the [`Peers`] handle that forwards requests to
//! the leader. Both speak `proto/cluster.proto` over tonic.
//!
//! A connection is made lazily per peer address and reused; tonic reconnects
//! it after a failure. Every call carries the cluster token (when set) and a
//! deadline, so a dead or paused peer costs a timeout, never a hang.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, RemoteError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use super::rpc::{self, pb, Forward, ForwardReply, RouteError, MAX_FRAME, TOKEN_HEADER};
use super::types::{NodeId, NodeInfo, TypeConfig};

type Client = pb::cluster_client::ClusterClient<Channel>;

/// How long a connection attempt to a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// Clients for the other nodes, one connection per address.
#[derive(Clone)]
pub struct Peers {
    token: Option<Arc<str>>,
    local: Option<std::net::IpAddr>,
    clients: Arc<Mutex<HashMap<String, Client>>>,
}

/// Which RPC a frame goes to.
#[derive(Clone, Copy)]
enum Method {
    AppendEntries,
    Vote,
    InstallSnapshot,
    Forward,
}

impl Peers {
    /// `local`: the address outgoing connections leave from.
    pub fn new(token: Option<String>, local: Option<std::net::IpAddr>) -> Self {
        Peers {
            token: token.map(Arc::from),
            local,
            clients: Arc::default(),
        }
    }

    fn client(&self, addr: &str) -> Result<Client, tonic::Status> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(addr) {
            return Ok(client.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| tonic::Status::invalid_argument(format!("bad peer address {addr}: {e}")))?
            .connect_timeout(CONNECT_TIMEOUT)
            .local_address(self.local)
            .tcp_nodelay(true);
        let client = Client::new(endpoint.connect_lazy())
            .max_decoding_message_size(MAX_FRAME)
            .max_encoding_message_size(MAX_FRAME);
        clients.insert(addr.to_string(), client.clone());
        Ok(client)
    }

    async fn call(
        &self,
        addr: &str,
        method: Method,
        frame: pb::Frame,
        timeout: Duration,
    ) -> Result<pb::Frame, tonic::Status> {
        let mut client = self.client(addr)?;
        let mut request = tonic::Request::new(frame);
        request.set_timeout(timeout);
        if let Some(token) = &self.token {
            let value = MetadataValue::try_from(token.as_ref())
                .map_err(|_| tonic::Status::invalid_argument("cluster token is not ASCII"))?;
            request.metadata_mut().insert(TOKEN_HEADER, value);
        }
        let reply = match method {
            Method::AppendEntries => client.append_entries(request).await,
            Method::Vote => client.vote(request).await,
            Method::InstallSnapshot => client.install_snapshot(request).await,
            Method::Forward => client.forward(request).await,
        }?;
        Ok(reply.into_inner())
    }

    /// Sends a request to the node at `addr` (which handles it if it leads,
    /// or passes it on once). Transport failures become
    /// [`RouteError::Unreachable`].
    pub async fn forward(
        &self,
        addr: &str,
        forward: &Forward,
        timeout: Duration,
    ) -> Result<ForwardReply, RouteError> {
        let reply = self
            .call(addr, Method::Forward, rpc::encode(forward), timeout)
            .await
            .map_err(|status| {
                if connection_refused(&status) {
                    RouteError::LeaderDown(addr.to_string())
                } else {
                    RouteError::Unreachable(format!("{addr}: {}", status.message()))
                }
            })?;
        rpc::decode(&reply).map_err(|e| RouteError::Unreachable(format!("{addr}: {e}")))
    }
}

/// Whether a call failed because no connection could be made (so the
/// request certainly did not reach the peer).
fn connection_refused(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            return io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        source = error.source();
    }
    false
}

impl RaftNetworkFactory<TypeConfig> for Peers {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &NodeInfo) -> Peer {
        Peer {
            peers: self.clone(),
            target,
            node: node.clone(),
        }
    }
}

/// openraft's connection to one peer.
pub struct Peer {
    peers: Peers,
    target: NodeId,
    node: NodeInfo,
}

impl Peer {
    /// Sends one Raft message; the reply is the peer's `Result` as is.
    async fn send<Resp, E>(
        &self,
        method: Method,
        frame: pb::Frame,
        option: &RPCOption,
    ) -> Result<Resp, RPCError<NodeId, NodeInfo, RaftError<NodeId, E>>>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        let reply = self
            .peers
            .call(&self.node.cluster_addr, method, frame, option.hard_ttl())
            .await
            .map_err(|status| self.transport_error(status))?;
        let result: Result<Resp, RaftError<NodeId, E>> =
            rpc::decode(&reply).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| {
            RPCError::RemoteError(RemoteError::new_with_node(
                self.target,
                self.node.clone(),
                e,
            ))
        })
    }

    fn transport_error<E: std::error::Error>(
        &self,
        status: tonic::Status,
    ) -> RPCError<NodeId, NodeInfo, E> {
        let error = std::io::Error::other(format!(
            "node {} at {}: {:?}: {}",
            self.target,
            self.node.cluster_addr,
            status.code(),
            status.message()
        ));
        match status.code() {
            // Not connected: openraft backs off before trying again.
            tonic::Code::Unavailable => RPCError::Unreachable(Unreachable::new(&error)),
            _ => RPCError::Network(NetworkError::new(&error)),
        }
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, NodeInfo, RaftError<NodeId>>> {
        let entries = rpc.entries.len() as u64;
        let frame = rpc::encode(&rpc);
        if frame.payload.len() > MAX_FRAME && entries > 1 {
            // openraft retries with fewer entries per message.
            return Err(RPCError::PayloadTooLarge(
                PayloadTooLarge::new_entries_hint(entries / 2),
            ));
        }
        self.send(Method::AppendEntries, frame, &option).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, NodeInfo, RaftError<NodeId, InstallSnapshotError>>,
    > {
        self.send(Method::InstallSnapshot, rpc::encode(&rpc), &option)
            .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, NodeInfo, RaftError<NodeId>>> {
        self.send(Method::Vote, rpc::encode(&rpc), &option).await
    }
}
