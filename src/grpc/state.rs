//! What the gRPC handlers reach: the use cases, the watch hub, the
//! connections and auth.

use std::sync::Arc;

use actix::Addr;

use super::connection::Connections;
use tacos_app::service::ConfigService;
use tacos_app::watch::WatchHub;

/// What the gRPC handlers reach.
pub struct GrpcState {
    pub service: ConfigService,
    pub hub: Addr<WatchHub>,
    pub connections: Arc<Connections>,
    pub max_listen_keys: usize,
    pub auth: Arc<tacos_app::auth::Auth>,
}
