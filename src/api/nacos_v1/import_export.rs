//! The export, import and clone forms of `/nacos/v1/cs/configs`
//! (`?export=true`, `?exportV2=true`, `?import=true`, `?clone=true`), on
//! the rules every generation shares (`crate::api::transfer`).

use super::answer::{bad_request, caller};

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use crate::api::call::{Call, FormCall};
use crate::api::nacos_config::export_filter;
use crate::api::params::{all_values, client_ip, multipart};
use crate::api::render::{rest_ok, v1_error, v1_service_error};
use crate::api::transfer;
use tacos_app::transfer::Layout;
use tacos_core::validate::{self, InvalidInput};

/// `GET ?export=true` (Nacos 1's zip: `.meta.yml` of app names) and
/// `?exportV2=true` (Nacos 2's `.metadata.yml`): the configs of `tenant`
/// matching `dataId`, `group` (`*` wildcards, else exact) and `appName`,
/// and `ids` when given.
pub(super) async fn export(call: FormCall, layout: Layout) -> HttpResponse {
    if let Err(refused) = super::config::opened(&call, true).await {
        return refused;
    }
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let ids = match config_ids(&req, &body) {
        Ok(ids) => ids,
        Err(e) => return bad_request(e),
    };
    let namespace = params.str("tenant");
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    let filter = export_filter(&params);
    match transfer::export(&app, &principal, namespace, filter, &ids, layout).await {
        Ok(zip) => zip,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `ids` (`1,2` or repeated), none when absent.
pub(super) fn config_ids(req: &HttpRequest, body: &[u8]) -> Result<Vec<u64>, InvalidInput> {
    let raw = all_values(req, body, "ids").unwrap_or_default();
    raw.iter()
        .map(|id| id.parse())
        .collect::<Result<_, _>>()
        .map_err(|_| InvalidInput::Other("ids", raw.join(",")))
}

/// Nacos' `RestResult` of an import or clone.
pub(super) fn transfer_answer(
    result: Result<serde_json::Map<String, serde_json::Value>, transfer::Refused>,
    message: &str,
) -> HttpResponse {
    match result {
        Ok(data) => rest_ok(Some(message), data),
        Err(transfer::Refused::Coded(coded, data)) => {
            let (code, message) = coded.v1();
            HttpResponse::Ok()
                .json(serde_json::json!({"code": code, "message": message, "data": data}))
        }
        Err(transfer::Refused::Invalid(reason)) => v1_error(StatusCode::BAD_REQUEST, reason),
        Err(transfer::Refused::Denied(response)) => *response,
        Err(transfer::Refused::Service(e)) => v1_service_error(&e),
    }
}

/// `POST ?import=true`: a zip (multipart `file`) into `namespace` with
/// `policy` (`ABORT`, `SKIP`, `OVERWRITE`), as one write.
pub(super) async fn import(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let form = match multipart(&req, &body).transpose() {
        Ok(form) => form.unwrap_or_default(),
        Err(e) => return bad_request(e),
    };
    let field = |name: &str| {
        params
            .get(name)
            .or(form.fields.get(name).map(String::as_str))
    };
    let policy = match transfer::policy(field("policy")) {
        Ok(policy) => policy,
        Err(other) => return bad_request(InvalidInput::Other("policy", other)),
    };
    let namespace = field("namespace").unwrap_or_default();
    let caller = principal.caller(field("src_user").unwrap_or_default(), client_ip(&req));
    let file = form.files.get("file").cloned();
    let result = transfer::import_zip(&app, &caller, namespace, policy, file, true).await;
    transfer_answer(result, "import success")
}

/// `POST ?clone=true&tenant=`: the configs of a JSON body
/// `[{cfgId, dataId, group}]` copied into `tenant` (required) with
/// `policy`, as one write.
pub(super) async fn clone(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body,
    }) = call;
    let namespace = match params.required("tenant") {
        Ok(namespace) => namespace,
        Err(e) => return bad_request(e),
    };
    let policy = match transfer::policy(params.get("policy")) {
        Ok(policy) => policy,
        Err(other) => return bad_request(InvalidInput::Other("policy", other)),
    };
    let targets = match transfer::clone_targets(&body, true) {
        Ok(targets) => targets,
        Err(reason) => return v1_error(StatusCode::BAD_REQUEST, reason),
    };
    let caller = caller(&req, &params, &principal);
    let result = transfer::clone(&app, &caller, namespace, policy, &targets).await;
    transfer_answer(result, "Clone Completed Successfully")
}
