//! HTTP routes (actix-web), by surface: Nacos v1 (`nacos_v1`), Nacos v2
//! (`nacos_v2`), health (`health`), login/users/audit (`auth`) and cluster
//! administration (`admin`). Every route declares what it needs where it is
//! registered; the [`guard`] middleware enforces it before any handler.
//!
//! Reads are served from the in-memory state on the worker thread that took
//! the request; writes go through the service layer and Raft and are
//! answered after commit and apply. Long polls are held by the watch hub.

mod admin;
mod auth;
mod call;
mod console;
pub mod guard;
mod health;
mod listeners;
mod nacos_config;
mod nacos_core;
mod nacos_v1;
mod nacos_v2;
pub mod params;
mod render;
mod roles;
mod transfer;
mod v3;

use std::sync::Arc;

use actix::Addr;
use actix_web::web;

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

/// Counts every request and times it, labelled by the matched route
/// pattern (never the raw path, which would make unbounded series).
pub async fn record_metrics(
    req: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody>,
) -> Result<actix_web::dev::ServiceResponse<impl actix_web::body::MessageBody>, actix_web::Error> {
    let started = std::time::Instant::now();
    let route = guard::matched_pattern(&req).unwrap_or("unmatched");
    let method = req.method().clone();
    let response = next.call(req).await?;
    crate::metrics::http_request(
        route,
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    Ok(response)
}

/// The read-consistency choice of a request: `consistency=linearizable` (a
/// parameter) or the `X-Tacos-Consistency: linearizable` header makes the
/// read wait for the leader's read index; `local` (the default, as in Nacos)
/// reads this node's memory at once, unless it is a learner too far behind
/// (503: [`tacos_raft::freshness`]); `stale` reads this node's memory
/// whatever its lag.
pub async fn read_barrier(
    app: &AppState,
    req: &actix_web::HttpRequest,
    params: &params::Params,
) -> Result<(), actix_web::HttpResponse> {
    let mode = match params.get("consistency") {
        Some(mode) => mode.to_string(),
        None => params::header(req, "X-Tacos-Consistency").unwrap_or_default(),
    };
    match mode.as_str() {
        "local" | "" => app.service.readable().map_err(|behind| {
            render::v1_error(actix_web::http::StatusCode::SERVICE_UNAVAILABLE, behind)
        }),
        "stale" => Ok(()),
        "linearizable" => app.node.linearizable_barrier().await.map_err(|e| {
            render::v1_error(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                format!("linearizable read failed: {e}"),
            )
        }),
        other => Err(render::v1_error(
            actix_web::http::StatusCode::BAD_REQUEST,
            format!("consistency must be local, linearizable or stale, not {other:?}"),
        )),
    }
}

/// Declares every route with what it needs (registering it too when the
/// [`guard::Routes`] has a service config).
pub fn declare(routes: &mut guard::Routes) {
    declare_part(routes, Port::All);
}

/// Which routes a listening port serves (see `--console-port`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    /// Everything (no console port).
    All,
    /// The HTTP port beside a console port: all but the console.
    Client,
    /// The console port: the console, and what its pages call (login,
    /// users, roles, permissions, admin, health), not the Nacos config API.
    Console,
}

fn declare_part(routes: &mut guard::Routes, port: Port) {
    // The Nacos config API first: actix tries routes in registration order,
    // one after another, so the routes clients call all the time come before
    // the operators' (only the console's `/console/{file:.*}` has a
    // parameter, and it comes last, so the order changes no match).
    if port != Port::Console {
        nacos_v1::routes(routes);
        nacos_v2::routes(routes);
        v3::routes(routes);
        nacos_core::routes(routes);
    }
    health::routes(routes);
    auth::routes(routes);
    roles::routes(routes);
    admin::routes(routes);
    if port != Port::Client {
        console::routes(routes);
    }
}

/// Registers the routes `port` serves. `max_body` bounds request bodies.
pub fn configure(
    app: Arc<AppState>,
    max_body: usize,
    port: Port,
) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.app_data(web::Data::from(app))
            .app_data(web::PayloadConfig::new(max_body));
        declare_part(&mut guard::Routes::new(cfg), port);
    }
}
