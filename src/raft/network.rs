//! The Raft network. This build runs single-node clusters only: there is no
//! peer to talk to, so every RPC reports the target as unreachable (openraft
//! then backs off). Inter-node gRPC arrives with clustering.

use openraft::error::{InstallSnapshotError, RPCError, RaftError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};

use super::types::{NodeId, NodeInfo, TypeConfig};

/// Creates [`NoPeer`] connections.
#[derive(Debug, Clone, Default)]
pub struct SingleNodeNetwork;

/// A connection to a peer that cannot be reached.
#[derive(Debug)]
pub struct NoPeer {
    target: NodeId,
}

impl NoPeer {
    fn unreachable<E: std::error::Error>(&self) -> RPCError<NodeId, NodeInfo, E> {
        let reason = std::io::Error::other(format!(
            "node {} is not reachable: this build runs single-node clusters only",
            self.target
        ));
        RPCError::Unreachable(Unreachable::new(&reason))
    }
}

impl RaftNetworkFactory<TypeConfig> for SingleNodeNetwork {
    type Network = NoPeer;

    async fn new_client(&mut self, target: NodeId, _node: &NodeInfo) -> NoPeer {
        NoPeer { target }
    }
}

impl RaftNetwork<TypeConfig> for NoPeer {
    async fn append_entries(
        &mut self,
        _rpc: AppendEntriesRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, NodeInfo, RaftError<NodeId>>> {
        Err(self.unreachable())
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<NodeId>,
        RPCError<NodeId, NodeInfo, RaftError<NodeId, InstallSnapshotError>>,
    > {
        Err(self.unreachable())
    }

    async fn vote(
        &mut self,
        _rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, NodeInfo, RaftError<NodeId>>> {
        Err(self.unreachable())
    }
}
