//! Login (`/nacos/v3/auth/user/login`) and the server state
//! (`/nacos/v3/admin/core/state...`).

use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use super::answer::{ok, Answer, SERVER_ERROR};
use crate::api::app_state::AppState;
use crate::api::guard::refusal;
use crate::api::params::{client_ip, Params};
use tacos_app::auth::AuthError;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LoginReply<'a> {
    access_token: &'a str,
    token_ttl: u64,
    global_admin: bool,
    username: &'a str,
}

/// `POST /nacos/v3/auth/user/login` (`username`, `password`, query or
/// form): the v1 login's answer plus `Authorization: Bearer <token>`, as
/// Nacos 3. A wrong or missing name or password is 403 `unknown user!`.
pub async fn login(req: HttpRequest, body: web::Bytes, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &body);
    let unknown = || {
        HttpResponse::Forbidden()
            .content_type("text/plain;charset=UTF-8")
            .body("unknown user!")
    };
    let filled = |name| params.get(name).filter(|v| !v.trim().is_empty());
    let (Some(username), Some(password)) = (filled("username"), filled("password")) else {
        return unknown();
    };
    match app.auth.login(username, password, &client_ip(&req)).await {
        Ok(login) => HttpResponse::Ok()
            .insert_header(("Authorization", format!("Bearer {}", login.token)))
            .json(LoginReply {
                access_token: &login.token,
                token_ttl: login.ttl,
                global_admin: login.user.admin,
                username: &login.user.username,
            }),
        Err(AuthError::WrongCredentials) => unknown(),
        Err(e) => refusal(&e),
    }
}

/// `GET /nacos/v3/admin/core/state`: Nacos' state map (every value a
/// string) of the server's modules (`core::server_state`).
pub async fn state(req: HttpRequest, app: web::Data<AppState>) -> Answer {
    let port = req.app_config().local_addr().port();
    ok(crate::api::nacos_core::server_state(&app, port, false))
}

/// `GET .../state/liveness`: the process serves.
pub async fn liveness() -> Answer {
    ok("ok")
}

/// `GET .../state/readiness`: ready while this node knows a leader; else
/// 500 (Nacos' documented meaning; its code answers 200 with code 30000).
pub async fn readiness(app: web::Data<AppState>) -> Answer {
    if app.node.metrics().current_leader.is_some() {
        ok("ok")
    } else {
        // `Result.failure(message)`: code 30000, the message, no data.
        let body = serde_json::json!({"code": SERVER_ERROR.0, "message": "raft has no leader", "data": null});
        Err(HttpResponse::InternalServerError().json(body).into())
    }
}
