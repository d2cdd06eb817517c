//! The client side of the cluster port: openraft's network (append-entries,
//! vote, snapshot chunks) and the [`Peers`] handle that forwards requests to
//! the leader. Both speak `proto/cluster.proto` over tonic.
//!
//! A connection is made lazily per peer address and reused; tonic reconnects
//! it after a failure. Every call carries the cluster token (when set) and a
//! deadline, so a dead or paused peer costs a timeout, never a hang.
//! Append-entries, the bulk of the traffic, go on one long-lived stream per
//! peer (`AppendEntries`): openraft sends one request at a time per peer
//! and waits for its answer, so answers come back in order; any failure or
//! timeout drops the stream (a late answer is never taken for the next one's)
//! and the next request opens a new one.
//!
//! A call that fails before a connection exists (refused, connect timeout)
//! certainly did not reach the peer: it is [`CallError::NotSent`], which lets
//! a forwarded write be tried again safely. After such a failure, or a
//! connection that broke under a call, the address is backed off (doubling from [`BACKOFF_FIRST`] to [`BACKOFF_MAX`], reset by
//! the next answer): calls in the meantime fail at once as `NotSent`, so a
//! partition or a dead node costs a few connection attempts a second instead
//! of one per request and heartbeat.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

use super::rpc::{
    self, pb, Forward, ForwardReply, PeerTls, RouteError, MAX_FRAME, PROTOCOL_HEADER,
    PROTOCOL_VERSION, TOKEN_HEADER,
};
use tacos_core::types::{NodeId, NodeInfo, TypeConfig};

type Client = pb::cluster_client::ClusterClient<Channel>;

/// How long a connection attempt to a peer may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long an address is left alone after the first failed connection.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(25);
/// The longest an address is left alone between connection attempts.
pub const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Clients for the other nodes, one connection per address.
#[derive(Clone)]
pub struct Peers {
    token: Option<Arc<str>>,
    local: Option<std::net::IpAddr>,
    /// TLS to the other nodes' cluster ports (mutual TLS), when on.
    tls: Option<Arc<tacos_tls::rustls::ClientConfig>>,
    clients: Arc<Mutex<HashMap<String, Client>>>,
    /// Addresses that could not be connected to, and until when to wait.
    down: Arc<Mutex<HashMap<String, Down>>>,
}

/// An address in back-off.
#[derive(Debug, Clone, Copy)]
struct Down {
    /// The wait after the latest failure.
    wait: Duration,
    until: Instant,
}

/// Why a call to a peer failed.
#[derive(Debug)]
pub enum CallError {
    /// No connection: the request certainly did not reach the peer.
    NotSent(String),
    /// The request may have reached the peer.
    Failed(tonic::Status),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotSent(why) => write!(f, "not sent: {why}"),
            CallError::Failed(status) => write!(f, "{:?}: {}", status.code(), status.message()),
        }
    }
}

/// An open `AppendEntries` stream: requests go into `tx`, their answers
/// come back in order on `answers`.
struct EntryStream {
    tx: tokio::sync::mpsc::Sender<pb::Frame>,
    answers: tonic::Streaming<pb::Frame>,
}

/// Which RPC a frame goes to.
#[derive(Clone, Copy)]
enum Method {
    Vote,
    InstallSnapshot,
    Forward,
}

impl Peers {
    /// `local`: the address outgoing connections leave from; `tls`: mutual
    /// TLS to the other nodes.
    pub fn new(
        token: Option<String>,
        local: Option<std::net::IpAddr>,
        tls: Option<&PeerTls>,
    ) -> Self {
        Peers {
            token: token.map(Arc::from),
            local,
            tls: tls.map(|t| t.client.clone()),
            clients: Arc::default(),
            down: Arc::default(),
        }
    }

    /// How much longer `addr` is backed off, if it is.
    pub fn backing_off(&self, addr: &str) -> Option<Duration> {
        let down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        down.get(addr)
            .and_then(|d| d.until.checked_duration_since(Instant::now()))
            .filter(|left| !left.is_zero())
    }

    /// Records a failed connection to `addr`: the wait doubles up to the max.
    fn mark_down(&self, addr: &str) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let wait = match down.get(addr) {
            // Concurrent calls that all failed count as one failure.
            Some(d) if d.until > now => return,
            Some(d) => (d.wait * 2).min(BACKOFF_MAX),
            None => BACKOFF_FIRST,
        };
        down.insert(
            addr.to_string(),
            Down {
                wait,
                until: now + wait,
            },
        );
        metrics::counter!("tacos_cluster_connect_failures_total", "peer" => addr.to_string())
            .increment(1);
    }

    /// Records an answer from `addr`: no more back-off.
    fn mark_up(&self, addr: &str) {
        let mut down = self.down.lock().unwrap_or_else(|e| e.into_inner());
        if !down.is_empty() {
            down.remove(addr);
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
        let channel = match &self.tls {
            Some(tls) => endpoint
                .connect_with_connector_lazy(tacos_tls::TlsConnector::new(tls.clone(), self.local)),
            None => endpoint.connect_lazy(),
        };
        let client = Client::new(channel)
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
    ) -> Result<pb::Frame, CallError> {
        if let Some(not_sent) = self.backed_off(addr) {
            return Err(not_sent);
        }
        let status = match self.send(addr, method, frame, timeout).await {
            Ok(reply) => {
                self.mark_up(addr);
                return Ok(reply);
            }
            Err(status) => status,
        };
        Err(self.failed(addr, status))
    }

    /// The error of a call to `addr` while it is backed off (counted), if it is.
    fn backed_off(&self, addr: &str) -> Option<CallError> {
        let left = self.backing_off(addr)?;
        metrics::counter!("tacos_cluster_calls_backed_off_total", "peer" => addr.to_string())
            .increment(1);
        Some(CallError::NotSent(format!(
            "no connection to {addr}; next attempt in {} ms",
            left.as_millis().max(1)
        )))
    }

    /// Records what a failed call says about the connection to `addr`.
    fn failed(&self, addr: &str, status: tonic::Status) -> CallError {
        match failure(&status) {
            Failure::NeverSent => {
                self.mark_down(addr);
                return CallError::NotSent(format!("{addr}: {}", cause(&status)));
            }
            Failure::Broke => self.mark_down(addr),
            // An error answer still proves the connection works.
            Failure::Answered => self.mark_up(addr),
            Failure::TimedOut => {}
        }
        CallError::Failed(status)
    }

    /// Sends `frame` on the append-entries `stream` to `addr` (opening one
    /// when there is none) and waits for its answer. On any failure the
    /// stream is dropped; the back-off is the unary calls'.
    async fn call_on_stream(
        &self,
        addr: &str,
        stream: &mut Option<EntryStream>,
        frame: pb::Frame,
        timeout: Duration,
    ) -> Result<pb::Frame, CallError> {
        if let Some(not_sent) = self.backed_off(addr) {
            *stream = None;
            return Err(not_sent);
        }
        let status = match tokio::time::timeout(timeout, self.exchange(addr, stream, frame)).await {
            Ok(Ok(reply)) => {
                self.mark_up(addr);
                return Ok(reply);
            }
            Ok(Err(status)) => status,
            Err(_) => {
                *stream = None;
                return Err(CallError::Failed(tonic::Status::deadline_exceeded(
                    format!("no answer from {addr} within {} ms", timeout.as_millis()),
                )));
            }
        };
        *stream = None;
        Err(self.failed(addr, status))
    }

    /// One request and its answer on `stream`.
    async fn exchange(
        &self,
        addr: &str,
        stream: &mut Option<EntryStream>,
        frame: pb::Frame,
    ) -> Result<pb::Frame, tonic::Status> {
        let closed =
            || tonic::Status::unavailable(format!("{addr} closed the append-entries stream"));
        let open = match stream {
            Some(open) => {
                open.tx.send(frame).await.map_err(|_| closed())?;
                open
            }
            None => {
                // The first frame is queued before the call: a server may
                // hold its answer's headers until it has something to say.
                let (tx, rx) = tokio::sync::mpsc::channel(1);
                tx.try_send(frame).map_err(|_| closed())?;
                let mut request =
                    tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(rx));
                self.stamp(&mut request)?;
                let answers = self
                    .client(addr)?
                    .append_entries(request)
                    .await?
                    .into_inner();
                stream.insert(EntryStream { tx, answers })
            }
        };
        open.answers.message().await?.ok_or_else(closed)
    }

    /// Puts the protocol version and the cluster token on a request.
    fn stamp<T>(&self, request: &mut tonic::Request<T>) -> Result<(), tonic::Status> {
        request.metadata_mut().insert(
            PROTOCOL_HEADER,
            MetadataValue::from_static(PROTOCOL_VERSION),
        );
        if let Some(token) = &self.token {
            let value = MetadataValue::try_from(token.as_ref())
                .map_err(|_| tonic::Status::invalid_argument("cluster token is not ASCII"))?;
            request.metadata_mut().insert(TOKEN_HEADER, value);
        }
        Ok(())
    }

    async fn send(
        &self,
        addr: &str,
        method: Method,
        frame: pb::Frame,
        timeout: Duration,
    ) -> Result<pb::Frame, tonic::Status> {
        let mut client = self.client(addr)?;
        let mut request = tonic::Request::new(frame);
        request.set_timeout(timeout);
        self.stamp(&mut request)?;
        let reply = match method {
            Method::Vote => client.vote(request).await,
            Method::InstallSnapshot => client.install_snapshot(request).await,
            Method::Forward => client.forward(request).await,
        }?;
        Ok(reply.into_inner())
    }

    /// Sends a request to the node at `addr` (which handles it if it leads,
    /// or passes it on once). A request that never left is
    /// [`RouteError::LeaderDown`] (safe to retry); one that may have arrived
    /// is [`RouteError::Unreachable`].
    pub async fn forward(
        &self,
        addr: &str,
        forward: &Forward,
        timeout: Duration,
    ) -> Result<ForwardReply, RouteError> {
        let reply = self
            .call(addr, Method::Forward, rpc::encode(forward), timeout)
            .await
            .map_err(|error| match error {
                CallError::NotSent(why) => RouteError::LeaderDown(why),
                CallError::Failed(status) => {
                    RouteError::Unreachable(format!("{addr}: {}", status.message()))
                }
            })?;
        rpc::decode(&reply).map_err(|e| RouteError::Unreachable(format!("{addr}: {e}")))
    }
}

/// How a call failed, read from the local error behind its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// Before any connection existed (refused, timed out or unroutable
    /// while connecting): the request certainly did not reach the peer.
    NeverSent,
    /// The connection broke under the call: the request may have arrived.
    Broke,
    /// Our own deadline passed: says nothing about the connection.
    TimedOut,
    /// The peer answered with an error status (it has no local source).
    Answered,
}

/// What went wrong at the bottom of a failed call (tonic's own message is
/// only "transport error"): e.g. the peer's certificate refused.
fn cause(status: &tonic::Status) -> String {
    let mut text = status.message().to_string();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(error) = source {
        text = error.to_string();
        source = error.source();
    }
    text
}

fn failure(status: &tonic::Status) -> Failure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    if source.is_none() {
        return Failure::Answered;
    }
    while let Some(error) = source {
        if error.is::<tonic::ConnectError>() {
            return Failure::NeverSent;
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return Failure::NeverSent;
            }
        }
        if error.is::<tonic::TimeoutExpired>() {
            return Failure::TimedOut;
        }
        source = error.source();
    }
    Failure::Broke
}

impl RaftNetworkFactory<TypeConfig> for Peers {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &NodeInfo) -> Peer {
        Peer {
            peers: self.clone(),
            target,
            node: node.clone(),
            stream: None,
        }
    }
}

/// openraft's connection to one peer.
pub struct Peer {
    peers: Peers,
    target: NodeId,
    node: NodeInfo,
    /// The append-entries stream, once opened.
    stream: Option<EntryStream>,
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
            .map_err(|error| self.transport_error(error))?;
        self.answer(reply)
    }

    /// The peer's `Result` in `reply`, as is.
    #[allow(clippy::result_large_err)] // openraft's own error type, as its network API returns it
    fn answer<Resp, E>(
        &self,
        reply: pb::Frame,
    ) -> Result<Resp, RPCError<NodeId, NodeInfo, RaftError<NodeId, E>>>
    where
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
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
        error: CallError,
    ) -> RPCError<NodeId, NodeInfo, E> {
        let unreachable = match &error {
            CallError::NotSent(_) => true,
            CallError::Failed(status) => status.code() == tonic::Code::Unavailable,
        };
        let error = std::io::Error::other(format!(
            "node {} at {}: {error}",
            self.target, self.node.cluster_addr
        ));
        if unreachable {
            // Not connected: openraft backs off before trying again.
            RPCError::Unreachable(Unreachable::new(&error))
        } else {
            RPCError::Network(NetworkError::new(&error))
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
        let reply = self
            .peers
            .call_on_stream(
                &self.node.cluster_addr,
                &mut self.stream,
                frame,
                option.hard_ttl(),
            )
            .await
            .map_err(|error| self.transport_error(error))?;
        self.answer(reply)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::Request;

    fn read_index() -> Forward {
        Forward {
            hops: 1,
            request: Request::ReadIndex,
        }
    }

    /// An address nothing listens on.
    fn closed_port() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        drop(listener);
        addr
    }

    /// A local peer that never answers: it accepts connections and drops
    /// them at once (`hold` false) or keeps them open in silence.
    async fn silent_peer(hold: bool) -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                if hold {
                    held.push(stream);
                }
            }
        });
        (addr, task)
    }

    /// A cluster port served by [`FakePeer`], at the address returned.
    async fn fake_peer() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(pb::cluster_server::ClusterServer::new(FakePeer))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        addr
    }

    /// Answers come back in order on one stream; an answer that comes after
    /// its request timed out is never taken for the next request's (the
    /// stream is dropped and the next request opens another).
    #[tokio::test]
    async fn a_late_answer_on_the_stream_is_never_taken_for_the_next() {
        let peers = Peers::new(None, None, None);
        let addr = fake_peer().await;
        let mut stream = None;
        let frame = |delay: u8, tag: u8| pb::Frame {
            payload: vec![delay, tag],
        };
        let timeout = Duration::from_millis(300);
        for tag in 1..=3 {
            let reply = peers
                .call_on_stream(&addr, &mut stream, frame(0, tag), timeout)
                .await
                .expect("answered");
            assert_eq!(reply.payload, [0, tag]);
        }
        assert!(stream.is_some(), "one stream for all three");
        let late = peers
            .call_on_stream(&addr, &mut stream, frame(5, 4), timeout)
            .await;
        assert!(
            matches!(&late, Err(CallError::Failed(s)) if s.code() == tonic::Code::DeadlineExceeded),
            "{late:?}"
        );
        assert!(stream.is_none(), "dropped with its late answer");
        tokio::time::sleep(Duration::from_millis(600)).await;
        let next = peers
            .call_on_stream(&addr, &mut stream, frame(0, 5), timeout)
            .await
            .expect("answered");
        assert_eq!(next.payload, [0, 5]);
        assert!(
            peers.backing_off(&addr).is_none(),
            "a timeout is not a failed connection"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_sent_and_backs_the_address_off() {
        let peers = Peers::new(None, None, None);
        let addr = closed_port();
        let first = peers
            .forward(&addr, &read_index(), Duration::from_secs(2))
            .await;
        assert!(
            matches!(&first, Err(RouteError::LeaderDown(_))),
            "{first:?}"
        );
        let left = peers.backing_off(&addr).expect("backed off");
        assert!(left <= BACKOFF_FIRST, "{left:?}");

        // Within the back-off the call fails at once, still as never sent.
        let second = peers
            .forward(&addr, &read_index(), Duration::from_secs(2))
            .await;
        match &second {
            Err(RouteError::LeaderDown(why)) => assert!(why.contains("next attempt"), "{why}"),
            other => panic!("{other:?}"),
        }

        // Each failure after a wait doubles it, up to the max.
        let mut waits = Vec::new();
        for _ in 0..7 {
            while let Some(left) = peers.backing_off(&addr) {
                tokio::time::sleep(left).await;
            }
            let _ = peers
                .forward(&addr, &read_index(), Duration::from_secs(2))
                .await;
            let down = peers.down.lock().unwrap_or_else(|e| e.into_inner());
            waits.push(down.get(&addr).map(|d| d.wait).expect("down"));
        }
        assert_eq!(waits[0], BACKOFF_FIRST * 2, "{waits:?}");
        assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
        assert_eq!(waits.last(), Some(&BACKOFF_MAX), "{waits:?}");

        // An answer ends the back-off.
        peers.mark_up(&addr);
        assert_eq!(peers.backing_off(&addr), None);
    }

    #[tokio::test]
    async fn a_connect_timeout_is_not_sent() {
        // A listener whose accept queue is full drops new SYNs, like a
        // partitioned peer: the connection attempt times out.
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("addr"))
            .expect("bind");
        let listener = socket.listen(0).expect("listen");
        let addr = listener.local_addr().expect("addr");
        let mut fillers = Vec::new();
        for _ in 0..3 {
            fillers.push(tokio::spawn(tokio::net::TcpStream::connect(addr)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;

        let peers = Peers::new(None, None, None);
        let reply = peers
            .forward(&addr.to_string(), &read_index(), Duration::from_secs(5))
            .await;
        assert!(
            matches!(&reply, Err(RouteError::LeaderDown(_))),
            "{reply:?}"
        );
        for filler in fillers {
            filler.abort();
        }
        drop(listener);
    }

    #[tokio::test]
    async fn a_connection_closed_after_it_was_made_may_have_been_delivered() {
        // A peer that accepts and then hangs up (a proxy cutting a link):
        // the request may have left, so the answer is ambiguous.
        let (addr, acceptor) = silent_peer(false).await;
        let peers = Peers::new(None, None, None);
        let reply = peers
            .forward(&addr, &read_index(), Duration::from_secs(2))
            .await;
        assert!(
            matches!(&reply, Err(RouteError::Unreachable(_))),
            "{reply:?}"
        );
        // The broken connection still backs the address off; a call in the
        // meantime is not sent at all.
        assert!(peers.backing_off(&addr).is_some());
        let reply = peers
            .forward(&addr, &read_index(), Duration::from_secs(2))
            .await;
        assert!(
            matches!(&reply, Err(RouteError::LeaderDown(_))),
            "{reply:?}"
        );
        acceptor.abort();
    }

    #[tokio::test]
    async fn a_peer_that_does_not_answer_in_time_is_not_backed_off() {
        // Our own deadline passing says nothing about the connection (a slow
        // leader under load): no back-off, and the answer is ambiguous.
        let (addr, holder) = silent_peer(true).await;
        let peers = Peers::new(None, None, None);
        let reply = peers
            .forward(&addr, &read_index(), Duration::from_millis(300))
            .await;
        assert!(
            matches!(&reply, Err(RouteError::Unreachable(_))),
            "{reply:?}"
        );
        assert_eq!(peers.backing_off(&addr), None);
        holder.abort();
    }

    /// A cluster service whose `AppendEntries` stream answers each frame
    /// with its own payload, after as many times 100 ms as its first byte
    /// says, and which refuses every other call with an error status.
    struct FakePeer;

    #[tonic::async_trait]
    impl pb::cluster_server::Cluster for FakePeer {
        type AppendEntriesStream =
            tokio_stream::wrappers::ReceiverStream<Result<pb::Frame, tonic::Status>>;

        async fn append_entries(
            &self,
            request: tonic::Request<tonic::Streaming<pb::Frame>>,
        ) -> Result<tonic::Response<Self::AppendEntriesStream>, tonic::Status> {
            let mut frames = request.into_inner();
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tokio::spawn(async move {
                while let Ok(Some(frame)) = frames.message().await {
                    let delay = u64::from(frame.payload.first().copied().unwrap_or(0));
                    tokio::time::sleep(Duration::from_millis(100 * delay)).await;
                    if tx.send(Ok(frame)).await.is_err() {
                        return;
                    }
                }
            });
            Ok(tonic::Response::new(
                tokio_stream::wrappers::ReceiverStream::new(rx),
            ))
        }
        async fn vote(
            &self,
            _: tonic::Request<pb::Frame>,
        ) -> Result<tonic::Response<pb::Frame>, tonic::Status> {
            Err(tonic::Status::failed_precondition("refused"))
        }
        async fn install_snapshot(
            &self,
            _: tonic::Request<pb::Frame>,
        ) -> Result<tonic::Response<pb::Frame>, tonic::Status> {
            Err(tonic::Status::failed_precondition("refused"))
        }
        async fn forward(
            &self,
            _: tonic::Request<pb::Frame>,
        ) -> Result<tonic::Response<pb::Frame>, tonic::Status> {
            Err(tonic::Status::failed_precondition("refused"))
        }
    }

    #[tokio::test]
    async fn an_error_answer_ends_the_back_off() {
        let addr = fake_peer().await;
        let peers = Peers::new(None, None, None);
        // As if the peer had been unreachable twice.
        peers.mark_down(&addr);
        peers
            .down
            .lock()
            .expect("lock")
            .get_mut(&addr)
            .expect("down")
            .until = Instant::now();
        peers.mark_down(&addr);
        while let Some(left) = peers.backing_off(&addr) {
            tokio::time::sleep(left).await;
        }
        let reply = peers
            .forward(&addr, &read_index(), Duration::from_secs(5))
            .await;
        match &reply {
            Err(RouteError::Unreachable(why)) => assert!(why.contains("refused"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(
            peers.down.lock().expect("lock").get(&addr).is_none(),
            "an answer, even an error, resets the back-off"
        );
    }
}
