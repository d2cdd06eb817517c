//! What travels between nodes on the cluster port (`proto/cluster.proto`).
//!
//! Every call carries one [`Frame`](pb::Frame) whose payload is a postcard
//! encoding of a plain Rust value: openraft's own request and response types
//! for Raft traffic, and [`Forward`] / [`ForwardReply`] for requests a node
//! routes to the leader. postcard is compact and does not describe itself,
//! so both ends must run the same message definitions: every call carries
//! [`PROTOCOL_VERSION`] in [`PROTOCOL_HEADER`], and a node refuses a call of
//! another version before decoding anything (a mixed-version cluster fails
//! loudly instead of misreading frames).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use tacos_core::types::{LogId, NodeId, NodeInfo};
use tacos_core::Command;
use tacos_state::Response;

/// The generated tonic client and server.
pub mod pb {
    tonic::include_proto!("tacos.cluster");
}

/// Mutual TLS on the cluster port: the server side checks that a caller's
/// certificate chains to the peer CA, the client side that the callee's
/// does and is valid for the address it was called at, and presents this
/// node's certificate. The cluster token stays a second factor.
#[derive(Clone)]
pub struct PeerTls {
    pub server: std::sync::Arc<tacos_tls::rustls::ServerConfig>,
    pub client: std::sync::Arc<tacos_tls::rustls::ClientConfig>,
}

/// The metadata header that carries the cluster token.
pub const TOKEN_HEADER: &str = "x-tacos-cluster-token";

/// The metadata header that carries the sender's [`PROTOCOL_VERSION`].
pub const PROTOCOL_HEADER: &str = "x-tacos-cluster-protocol";

/// The version of the frames' encoding. Bump it with any change to a type
/// that travels in a frame (openraft's included, so also on an openraft
/// upgrade, and with a new command: a node that cannot apply an entry would
/// refuse it where the others apply it); nodes of different versions refuse
/// each other's calls. History: 1, the first; 2, adds `ImportConfigs` and the
/// role commands (and their `ApplyError`s); 3, adds `PromoteBeta`, the
/// publish's `expect` and their `ApplyError`s; 4, the gray model
/// (`PublishGray`, `StopGray`, `PromoteGray`, the gray `ApplyError`s, and
/// the beta errors gone); 5, `RehashPassword` and
/// `ApplyError::PasswordHashChanged` (migrated BCrypt passwords); 6, group
/// and dataId patterns in `SetPermission`/`SetRolePermission` and the
/// write-only `ACCESS_WRITE` (a node of 5 would read such a grant as its
/// whole namespace, or as a revoke); 7, the `encrypted_data_key` of
/// `PublishConfig` and `PublishGray` (a node of 6 would drop it); 8,
/// `keep_app_name`/`keep_tags` of `PublishConfig` (a node of 7 would clear
/// what an update without them keeps); 9, `AppendEntries` is a stream (a node of
/// 8 calls it unary).
pub const PROTOCOL_VERSION: &str = "9";

/// Largest frame accepted: a snapshot chunk or an entry batch with headroom.
pub const MAX_FRAME: usize = 96 * 1024 * 1024;

/// A request a node sends to the leader on behalf of a client or an operator.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forward {
    /// How many nodes already passed this request on; a node forwards a
    /// request at most once, so a stale view of the leader cannot loop.
    pub hops: u8,
    pub request: Request,
}

/// What a node asks of the leader.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Request {
    /// Propose a client's command; answered once committed and applied.
    Write(Box<Command>),
    /// The leader's read index (openraft's read-index check): once a node
    /// has applied up to it, a read there is linearizable.
    ReadIndex,
    /// Add a node as a learner, wait until it caught up, then make it a
    /// voter. Idempotent: a voter with the same address is answered at once.
    Join { id: NodeId, node: NodeInfo },
    /// Add a node as a learner (it starts receiving the log).
    AddLearner { id: NodeId, node: NodeInfo },
    /// Make a learner a voter.
    Promote { id: NodeId },
    /// Remove a voter or learner from the cluster.
    Remove { id: NodeId },
}

/// The leader's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ForwardReply {
    Written {
        log_id: LogId,
        response: Response,
    },
    ReadIndex {
        index: u64,
    },
    /// A membership request is done; the membership as of `log_id`.
    Membership {
        log_id: Option<LogId>,
        voters: Vec<NodeId>,
        learners: Vec<NodeId>,
    },
    Failed(RouteError),
}

/// Why a routed request failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum RouteError {
    #[error("no leader is available right now; retry shortly")]
    NoLeader,
    #[error("node {leader} is the leader now; this node is not")]
    NotLeader { leader: NodeId },
    #[error("the leader could not be reached: {0}")]
    Unreachable(String),
    /// No connection could be made, so the request was never delivered.
    #[error("the leader is down (no connection to {0}); retry shortly")]
    LeaderDown(String),
    #[error(
        "leadership changed while the request was in flight; it may or may not have been applied"
    )]
    LeaderChanged,
    #[error("the node stopped and cannot take writes: {0}")]
    Stopped(String),
    #[error("{0}")]
    Membership(String),
}

/// A payload that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("undecodable cluster message: {0}")]
pub struct DecodeError(#[from] postcard::Error);

/// Encodes a value into a frame.
pub fn encode<T: Serialize>(value: &T) -> pb::Frame {
    // Serializing plain in-memory values into a Vec cannot fail.
    let payload = postcard::to_stdvec(value).unwrap_or_default();
    pb::Frame { payload }
}

/// Decodes a frame's payload.
pub fn decode<T: DeserializeOwned>(frame: &pb::Frame) -> Result<T, DecodeError> {
    Ok(postcard::from_bytes(&frame.payload)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};
    use openraft::{CommittedLeaderId, EntryPayload, Membership};
    use std::collections::{BTreeMap, BTreeSet};
    use tacos_core::types::{Entry, TypeConfig, Vote};
    use tacos_core::{command, Batch, Op};

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    #[test]
    fn raft_messages_round_trip() {
        let publish = Command::of(Op::PublishConfig(command::PublishConfig {
            key: Some(command::ConfigKey {
                namespace: "ns".into(),
                group: "G".into(),
                data_id: "d".into(),
            }),
            content: "配置=1".into(),
            ..Default::default()
        }));
        let nodes = BTreeMap::from([(1, NodeInfo::default()), (2, NodeInfo::default())]);
        let membership = Membership::new(vec![BTreeSet::from([1, 2])], nodes);
        let request = AppendEntriesRequest::<TypeConfig> {
            vote: Vote::new_committed(3, 1),
            prev_log_id: Some(log_id(2, 9)),
            entries: vec![
                Entry {
                    log_id: log_id(3, 10),
                    payload: EntryPayload::Blank,
                },
                Entry {
                    log_id: log_id(3, 11),
                    payload: EntryPayload::Normal(std::sync::Arc::new(Batch::from(
                        publish.clone(),
                    ))),
                },
                Entry {
                    log_id: log_id(3, 12),
                    payload: EntryPayload::Membership(membership),
                },
            ],
            leader_commit: Some(log_id(3, 10)),
        };
        let back: AppendEntriesRequest<TypeConfig> = decode(&encode(&request)).unwrap();
        assert_eq!(back.vote, request.vote);
        assert_eq!(back.entries, request.entries);
        assert_eq!(back.leader_commit, request.leader_commit);

        let response = AppendEntriesResponse::<NodeId>::HigherVote(Vote::new(4, 2));
        let back: AppendEntriesResponse<NodeId> = decode(&encode(&response)).unwrap();
        assert_eq!(back, response);

        let forward = Forward {
            hops: 1,
            request: Request::Write(Box::new(publish)),
        };
        let back: Forward = decode(&encode(&forward)).unwrap();
        assert!(matches!(back.request, Request::Write(c) if c.op.is_some()));
    }

    #[test]
    fn garbage_is_refused_not_panicked_on() {
        for bytes in [vec![], vec![0xff; 3], vec![9, 200, 200, 200, 200, 200, 1]] {
            let frame = pb::Frame { payload: bytes };
            assert!(decode::<Forward>(&frame).is_err());
            assert!(decode::<AppendEntriesRequest<TypeConfig>>(&frame).is_err());
        }
    }
}
