//! HTTP routes (actix-web), by surface: Nacos v1 (`nacos_v1`), Nacos v2
//! (`nacos_v2`), health and admin (`health`).
//!
//! Reads are served from the in-memory state on the worker thread that took
//! the request; writes go through the service layer and Raft and are
//! answered after commit and apply. Long polls are held by the watch hub.

mod health;
mod nacos_v1;
mod nacos_v2;
pub mod params;
mod render;

use std::sync::Arc;

use actix::Addr;
use actix_web::web;

use crate::raft::Node;
use crate::service::ConfigService;
use crate::watch::WatchHub;

/// What every handler can reach.
pub struct AppState {
    pub node: Arc<Node>,
    pub service: ConfigService,
    pub hub: Addr<WatchHub>,
    pub max_listen_keys: usize,
}

/// Registers every route. `max_body` bounds request bodies.
pub fn configure(app: Arc<AppState>, max_body: usize) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.app_data(web::Data::from(app))
            .app_data(web::PayloadConfig::new(max_body));
        health::routes(cfg);
        nacos_v1::routes(cfg);
        nacos_v2::routes(cfg);
    }
}
