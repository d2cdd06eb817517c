//! Nacos open API v1, one file per Nacos controller (as `v3/`): configs
//! (`config`, with its export, import and clone forms in `import_export`),
//! the long poll (`long_poll`), who listens (`listeners`), history
//! (`history`), namespaces (`namespaces`). This module holds the routes
//! and what the files share: v1's refusal, its `true`, the caller.

mod config;
mod history;
mod import_export;
mod listeners;
mod long_poll;
mod namespaces;

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use crate::api::call::FormCall;
use crate::api::guard::{Need, Routes};
use crate::api::params::{client_ip, Params};
use crate::api::render::{filter_refusal, v1_error};
use tacos_app::auth::Principal;
use tacos_app::service::Caller;
use tacos_app::transfer::Layout;
use tacos_core::validate::InvalidInput;

pub fn routes(r: &mut Routes) {
    r.get("/nacos/v1/cs/configs", Need::OpenApi, get_configs)
        .post("/nacos/v1/cs/configs", Need::OpenApi, post_configs)
        .delete("/nacos/v1/cs/configs", Need::OpenApi, delete_configs)
        .post(
            "/nacos/v1/cs/configs/listener",
            Need::OpenApi,
            long_poll::listener,
        )
        .get(
            "/nacos/v1/cs/configs/listener",
            Need::OpenApi,
            listeners::listeners_of_config,
        )
        .get(
            "/nacos/v1/cs/listener",
            Need::OpenApi,
            listeners::listened_by_ip,
        )
        .get("/nacos/v1/cs/history", Need::OpenApi, history::history)
        .get(
            "/nacos/v1/cs/history/previous",
            Need::OpenApi,
            history::history_previous,
        )
        .get(
            "/nacos/v1/cs/history/configs",
            Need::OpenApi,
            history::history_configs,
        )
        .get(
            "/nacos/v1/console/namespaces",
            Need::Login,
            namespaces::list_namespaces,
        )
        .post(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            namespaces::create_namespace,
        )
        .put(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            namespaces::update_namespace,
        )
        .delete(
            "/nacos/v1/console/namespaces",
            Need::Admin,
            namespaces::delete_namespace,
        );
}

fn bad_request(error: InvalidInput) -> HttpResponse {
    filter_refusal(&error).unwrap_or_else(|| v1_error(StatusCode::BAD_REQUEST, error))
}

fn ok_true() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain;charset=UTF-8")
        .body("true")
}

fn caller(req: &HttpRequest, params: &Params, principal: &Principal) -> Caller {
    principal.caller(params.str("src_user"), client_ip(req))
}

fn no_cache(builder: &mut actix_web::HttpResponseBuilder) -> &mut actix_web::HttpResponseBuilder {
    builder
        .insert_header((header::PRAGMA, NO_CACHE))
        .insert_header((header::EXPIRES, EXPIRED))
        .insert_header((header::CACHE_CONTROL, NO_STORE))
}

/// Header values of every config read, made once (a `&str` is parsed and
/// checked on every response).
const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");
/// Nacos' `setDateHeader("Expires", 0)`: the epoch as an HTTP date.
const EXPIRED: HeaderValue = HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT");
const NO_STORE: HeaderValue = HeaderValue::from_static("no-cache,no-store");

/// Header names of a config read, made once: an `(&str, _)` pair parses
/// its name on every response.
const CONFIG_TYPE: HeaderName = HeaderName::from_static("config-type");
const CONTENT_MD5: HeaderName = HeaderName::from_static("content-md5");

// ---- `/nacos/v1/cs/configs`: one Nacos route, several operations ---------------

/// Nacos' `ConfigController` tells several operations of one path apart by
/// a parameter; each is a handler of its own, chosen here and nowhere else.
async fn get_configs(call: FormCall) -> HttpResponse {
    let params = &call.params;
    if params.get("export") == Some("true") {
        import_export::export(call, Layout::Nacos1).await
    } else if params.get("exportV2") == Some("true") {
        import_export::export(call, Layout::Nacos2).await
    } else if params.get("search").is_some() {
        config::search(call).await
    } else if params.get("beta") == Some("true") {
        config::beta(call).await
    } else if params.get("show") == Some("all") {
        config::detail(call).await
    } else {
        config::read(call).await
    }
}

async fn post_configs(call: FormCall) -> HttpResponse {
    let params = &call.params;
    if params.get("import") == Some("true") {
        import_export::import(call).await
    } else if params.get("clone") == Some("true") {
        import_export::clone(call).await
    } else {
        config::publish(call).await
    }
}

async fn delete_configs(call: FormCall) -> HttpResponse {
    let params = &call.params;
    if params.get("delType") == Some("ids") {
        config::remove_by_ids(call).await
    } else if params.get("beta") == Some("true") {
        config::stop_beta(call).await
    } else {
        config::remove(call).await
    }
}
