//! Nacos open API v2: the same operations as v1 with `namespaceId` and the
//! `{code, message, data}` envelope; and Nacos 2's namespace console API
//! (`/nacos/v2/console/namespace`, `/list`: login to read, admin to
//! change), whose handlers are shared with v3 (`v3::namespaces`).

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use super::guard::{Need, Routes};
use super::nacos_config::{
    history_page, history_row, key_from, named_read, namespace_configs, publish_request, search,
    ListError, RowLookupError,
};
use super::params::paging;
use super::params::{client_ip, header, read_labels};
use super::render::{v2_error, v2_ok, v2_service_error};
use super::v3::namespaces;
use crate::api::call::{Call, FormCall};
use crate::api::guard::refusal;
use tacos_app::query::HistoryLookup;
use tacos_app::read::Reader;
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;

pub fn routes(r: &mut Routes) {
    r.get("/nacos/v2/cs/config", Need::OpenApi, get_config)
        .post("/nacos/v2/cs/config", Need::OpenApi, publish_config)
        .delete("/nacos/v2/cs/config", Need::OpenApi, delete_config)
        .get(
            "/nacos/v2/cs/config/searchDetail",
            Need::OpenApi,
            search_config,
        )
        .get("/nacos/v2/cs/history/list", Need::OpenApi, history_list)
        .get("/nacos/v2/cs/history", Need::OpenApi, history_one)
        .get(
            "/nacos/v2/cs/history/previous",
            Need::OpenApi,
            history_previous,
        )
        .get(
            "/nacos/v2/cs/history/configs",
            Need::OpenApi,
            history_configs,
        );
    // Nacos 2's NamespaceControllerV2: the v3 namespace handlers with
    // Nacos 2's answers.
    const NAMESPACE: &str = "/nacos/v2/console/namespace";
    r.get(NAMESPACE, Need::Login, namespaces::one)
        .post(NAMESPACE, Need::Admin, namespaces::create)
        .put(NAMESPACE, Need::Admin, namespaces::update)
        .delete(NAMESPACE, Need::Admin, namespaces::delete)
        .get(
            "/nacos/v2/console/namespace/list",
            Need::Login,
            namespaces::list,
        );
}

fn invalid(error: InvalidInput) -> HttpResponse {
    v2_service_error(&ServiceError::Invalid(error))
}

fn not_found(detail: impl std::fmt::Display) -> HttpResponse {
    v2_error(StatusCode::NOT_FOUND, 20004, "resource not found", detail)
}

async fn get_config(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    if let Err(denied) = named_read(&principal, &params, "namespaceId") {
        return refusal(&denied);
    }
    let key = match key_from(&params, "namespaceId") {
        Ok(key) => key,
        Err(e) => return invalid(e),
    };
    if let Err(response) = crate::api::consistency::read_barrier(&app, &req, &params).await {
        return response;
    }
    let state = app.service.state();
    let (labels, explicit_tag) = read_labels(&req, &params, !state.grays(&key).is_empty());
    match tacos_app::gray_match::served(&state, &key, &labels, explicit_tag) {
        Some(served) => v2_ok(served.content()),
        None => not_found("config data not exist"),
    }
}

async fn search_config(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    if let Err(denied) = Reader::new(&principal).list(params.str("namespaceId")) {
        return refusal(&denied);
    }
    let mode = params.get("search").unwrap_or("blur");
    match search(
        &app.service.state(),
        &principal,
        &params,
        mode,
        "namespaceId",
    ) {
        Ok(page) => v2_ok(page),
        Err(e) => invalid(e),
    }
}

async fn publish_config(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let beta_ips = header(&req, "betaIps").or_else(|| params.get("betaIps").map(str::to_string));
    let cas_md5 = header(&req, "casMd5").or_else(|| params.get("casMd5").map(str::to_string));
    let request = match publish_request(&params, "namespaceId", beta_ips, cas_md5) {
        Ok(r) => r,
        Err(e) => return invalid(e),
    };
    let caller = principal.caller(params.any(&["srcUser", "src_user"]), client_ip(&req));
    match app.service.publish(request, &caller).await {
        Ok(_) => v2_ok(true),
        Err(e) => v2_service_error(&e),
    }
}

async fn delete_config(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let (data_id, group) = match (params.required("dataId"), params.required("group")) {
        (Ok(d), Ok(g)) => (d, g),
        (Err(e), _) | (_, Err(e)) => return invalid(e),
    };
    let caller = principal.caller(params.any(&["srcUser", "src_user"]), client_ip(&req));
    match app
        .service
        .remove(
            params.str("namespaceId"),
            group,
            data_id,
            params.str("tag"),
            &caller,
        )
        .await
    {
        Ok(_) => v2_ok(true),
        Err(e) => v2_service_error(&e),
    }
}

async fn history_list(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    if let Err(denied) = named_read(&principal, &params, "namespaceId") {
        return refusal(&denied);
    }
    match key_from(&params, "namespaceId").and_then(|k| Ok((k, paging(&params, 100)?))) {
        Ok((key, (page_no, page_size))) => {
            v2_ok(history_page(&app.service.state(), &key, page_no, page_size))
        }
        Err(e) => invalid(e),
    }
}

async fn history_one(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    match history_row(
        &app.service.state(),
        &principal,
        &params,
        HistoryLookup::This,
    ) {
        Ok(item) => v2_ok(item),
        Err(RowLookupError::Invalid(e)) => invalid(e),
        Err(RowLookupError::NotFound(message)) => not_found(message),
    }
}

async fn history_previous(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    match history_row(
        &app.service.state(),
        &principal,
        &params,
        HistoryLookup::Previous,
    ) {
        Ok(item) => v2_ok(item),
        Err(RowLookupError::Invalid(e)) => invalid(e),
        Err(RowLookupError::NotFound(message)) => not_found(message),
    }
}

async fn history_configs(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    match namespace_configs(&app.service.state(), &principal, params.str("namespaceId")) {
        Ok(configs) => v2_ok(configs),
        Err(ListError::Denied(denied)) => refusal(&denied),
        Err(ListError::Invalid(e)) => invalid(e),
    }
}
