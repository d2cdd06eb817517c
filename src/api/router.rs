//! The router: which routes each listening port serves, in which order,
//! with what each needs (the [`guard`] enforces it), and the request
//! metrics middleware. Handlers live in their surfaces' modules; nothing
//! here handles a request.

use std::sync::Arc;

use actix_web::web;

use super::app_state::AppState;
use super::guard;
use super::{admin, auth, console, health, nacos_core, nacos_v1, nacos_v2, roles, v3};

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
