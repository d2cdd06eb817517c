//! What the operator tools need of the node's settings.

use std::path::Path;

use tacos_core::types::NodeId;

/// What the operator tools need of the node's settings. The settings
/// implement it (`crate::settings`), so the tools do not know the settings
/// type, and the settings, which hold the subcommand, are the one side of
/// the arrow between them.
pub trait NodeSettings {
    /// The node's data dir.
    fn data_dir(&self) -> &Path;
    /// The node's Raft id.
    fn node_id(&self) -> NodeId;
    /// How other nodes reach this one (the cluster port).
    fn cluster_addr(&self) -> String;
    /// How clients reach this one (the HTTP port).
    fn http_addr(&self) -> String;
    /// The key-encryption key, when encryption at rest is on.
    fn kek(&self) -> anyhow::Result<Option<std::sync::Arc<tacos_store::Kek>>>;
    /// The settings' own checks (a restore makes a node of them).
    fn validate(&self) -> anyhow::Result<()>;
}
