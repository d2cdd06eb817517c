//! The server's engine: the Raft node. A write is routed to the leader,
//! committed by a quorum (fsynced), applied, and answered once this node
//! has applied it too (so the caller reads its own write here).

use std::sync::Arc;

use tacos_core::Command;
use tacos_raft::freshness::Behind;
use tacos_raft::node::Node;
use tacos_state::State;

use super::{Engine, Written};

impl Engine for Node {
    fn write(&self, command: Command) -> Written<'_> {
        Box::pin(async move {
            Node::write(self, command)
                .await
                .map(|(_, response)| response)
        })
    }

    fn state(&self) -> Arc<State> {
        Node::state(self)
    }

    fn readable(&self) -> Result<(), Behind> {
        self.check_fresh()
    }
}
