//! Nacos open API v1, one file per Nacos controller (as `v3/`): configs
//! (`config`, with its export, import and clone forms in `import_export`),
//! the long poll (`long_poll`), who listens (`listeners`), history
//! (`history`), namespaces (`namespaces`). This module holds the routes
//! and what the files share: v1's refusal, its `true`, the caller.

mod answer;
mod config;
mod history;
mod import_export;
mod listeners;
mod long_poll;
mod namespaces;

use actix_web::HttpResponse;

use crate::api::call::FormCall;
use crate::api::guard::{Need, Routes};
use tacos_app::transfer::Layout;

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
