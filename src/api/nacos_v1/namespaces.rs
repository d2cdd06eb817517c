//! Nacos' `NamespaceController` (`/nacos/v1/console/namespaces`): list
//! (login), create, update, delete (admin).

use super::answer::{bad_request, caller, ok_true};

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::api::call::{Call, FormCall};
use crate::api::render::{rest_ok, v1_error, v1_service_error};
use tacos_app::auth::Principal;
use tacos_app::query::{visible_namespaces, PUBLIC_NAMESPACE_DESC};
use tacos_app::service::ServiceError;
use tacos_state::{canonical_namespace, State};

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct NamespaceItem {
    namespace: String,
    namespace_show_name: String,
    namespace_desc: String,
    quota: u32,
    config_count: usize,
    #[serde(rename = "type")]
    kind: u8,
}

/// The namespaces `principal` may read, public first.
pub(super) fn namespace_items(state: &State, principal: &Principal) -> Vec<NamespaceItem> {
    visible_namespaces(state, principal, PUBLIC_NAMESPACE_DESC)
        .into_iter()
        .map(|n| NamespaceItem {
            kind: if n.is_public() { 0 } else { 2 },
            namespace: n.id,
            namespace_show_name: n.name,
            namespace_desc: n.desc,
            quota: 200,
            config_count: n.config_count,
        })
        .collect()
}

pub(super) async fn list_namespaces(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let state = app.service.state();
    let items = namespace_items(&state, &principal);
    if params.get("show") == Some("all") {
        let id = canonical_namespace(params.str("namespaceId"));
        return match items.into_iter().find(|n| n.namespace == id) {
            Some(item) => HttpResponse::Ok().json(item),
            None => v1_error(StatusCode::NOT_FOUND, format!("namespace not exist: {id}")),
        };
    }
    rest_ok(None, items)
}

pub(super) fn namespace_result(result: Result<(), ServiceError>) -> HttpResponse {
    match result {
        Ok(()) => ok_true(),
        Err(e) => v1_service_error(&e),
    }
}

pub(super) async fn create_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let result = app
        .service
        .create_namespace(
            params.str("customNamespaceId"),
            params.str("namespaceName"),
            params.str("namespaceDesc"),
            &caller,
        )
        .await;
    namespace_result(result.map(|_| ()))
}

pub(super) async fn update_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let id = match params.required("namespace") {
        Ok(id) => id,
        Err(e) => return bad_request(e),
    };
    let result = app
        .service
        .update_namespace(
            id,
            params.str("namespaceShowName"),
            params.str("namespaceDesc"),
            &caller,
        )
        .await;
    namespace_result(result)
}

pub(super) async fn delete_namespace(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let caller = caller(&req, &params, &principal);
    let id = match params.required("namespaceId") {
        Ok(id) => id,
        Err(e) => return bad_request(e),
    };
    namespace_result(app.service.remove_namespace(id, &caller).await)
}
