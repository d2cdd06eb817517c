//! Health and metrics routes.
//!
//! | route | what |
//! |---|---|
//! | `GET /health`, `/nacos/v1/console/health/readiness` | 200 while this node knows a leader (and, on a learner, serves reads: not too far behind), else 503/500; `/health` names the node's zone in `X-Tacos-Zone` |
//! | `GET /nacos/v1/console/health/liveness` | 200 while the process serves |
//! | `GET /metrics` | Prometheus text format (see [`crate::metrics`]) |

use actix_web::{web, HttpResponse};

use super::guard::{Need, Routes};
use crate::api::app_state::AppState;

pub fn routes(r: &mut Routes) {
    r.get("/health", Need::Public, health)
        .get("/nacos/v1/console/health/liveness", Need::Public, liveness)
        .get(
            "/nacos/v1/console/health/readiness",
            Need::Public,
            readiness,
        )
        .get("/metrics", Need::Public, metrics);
}

fn has_leader(app: &AppState) -> bool {
    app.node.metrics().current_leader.is_some()
}

async fn health(app: web::Data<AppState>) -> HttpResponse {
    if !has_leader(&app) {
        return HttpResponse::ServiceUnavailable().body("DOWN: no leader");
    }
    let readable = app.service.readable();
    let mut answer = match readable {
        Ok(()) => HttpResponse::Ok(),
        Err(_) => HttpResponse::ServiceUnavailable(),
    };
    // Members learn each other's zones from this probe (see core.rs).
    if let Some(zone) = &app.zone {
        answer.insert_header((ZONE_HEADER, zone.as_str()));
    }
    match readable {
        Ok(()) => answer.body("UP"),
        Err(behind) => answer.body(format!("DOWN: {behind}")),
    }
}

/// The header `/health` names this node's `--zone` in.
pub const ZONE_HEADER: &str = "X-Tacos-Zone";

async fn liveness() -> HttpResponse {
    HttpResponse::Ok().body("OK")
}

async fn readiness(app: web::Data<AppState>) -> HttpResponse {
    if !has_leader(&app) {
        return HttpResponse::InternalServerError().body("raft has no leader");
    }
    match app.service.readable() {
        Ok(()) => HttpResponse::Ok().body("OK"),
        Err(behind) => HttpResponse::InternalServerError().body(behind.to_string()),
    }
}

async fn metrics(app: web::Data<AppState>) -> HttpResponse {
    let listeners = app.hub.send(tacos_app::watch::CountListeners).await.ok();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(crate::metrics::render(&app.node, listeners, &app.data_dir))
}
