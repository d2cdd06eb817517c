//! What every handler can reach: the node, the use cases, the watch hub,
//! auth, the route policy and this node's settings that answers show.

use std::sync::Arc;

use actix::Addr;

use super::guard;
use tacos_app::auth::Auth;
use tacos_app::service::ConfigService;
use tacos_app::watch::WatchHub;
use tacos_raft::Node;

/// What every handler can reach.
pub struct AppState {
    pub node: Arc<Node>,
    pub service: ConfigService,
    pub hub: Addr<WatchHub>,
    pub max_listen_keys: usize,
    /// Where the node's files are (for size metrics).
    pub data_dir: std::path::PathBuf,
    pub auth: Arc<Auth>,
    /// What each route needs (see [`guard`]).
    pub policy: guard::Policy,
    /// This node's dashboard samples ([`crate::samples`]).
    pub samples: Arc<crate::dashboard_history::Samples>,
    /// This node's `--zone`, if any.
    pub zone: Option<String>,
    /// How to reach the other members' HTTP ports.
    pub peer_http: crate::tls::PeerHttp,
}

impl AppState {
    /// Every member but this node: id and HTTP address (what the console's
    /// cluster pages, the listener views and the health probe ask).
    pub fn other_members(&self) -> Vec<(tacos_raft::NodeId, String)> {
        let metrics = self.node.metrics();
        let membership = metrics.membership_config.membership();
        membership
            .nodes()
            .filter(|(id, _)| **id != self.node.id)
            .map(|(id, node)| (*id, node.http_addr.clone()))
            .collect()
    }
}
