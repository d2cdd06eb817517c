//! Who listens: to one config (`GET /nacos/v1/cs/configs/listener`,
//! `ConfigController.getListeners`) and what one client IP listens to
//! (`GET /nacos/v1/cs/listener`, `ListenerController`), on every member.

use super::answer::bad_request;
use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use crate::api::app_state::AppState;
use crate::api::call::Call;
use crate::api::guard::refusal;
use crate::api::listener_views;
use crate::api::params::Params;
use crate::api::render::v1_error;
use tacos_app::read::Reader;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::canonical_namespace;

/// Nacos' `GroupkeyListenserStatus` (its spelling): `collectStatus` 200
/// and a map of client IP → md5 (one config) or group key → md5 (one IP).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct GroupkeyListenserStatus {
    collect_status: u16,
    lisenters_groupkey_status: BTreeMap<String, String>,
}

/// `aggregation` (a Tacos extension, default `true`: ask every member, as
/// Nacos always does) and `all` of the listener views; a value that is no
/// boolean is 400.
pub(super) fn view_flags(params: &Params) -> Result<(bool, bool), InvalidInput> {
    let flag = |name: &'static str, default| {
        listener_views::boolean(params.get(name), default).map_err(|v| InvalidInput::Other(name, v))
    };
    Ok((flag("aggregation", true)?, flag("all", false)?))
}

/// Adds what the other members answer (unless `aggregation=false`) and
/// renders the view.
pub(super) async fn listener_view(
    app: &AppState,
    req: &HttpRequest,
    aggregation: bool,
    mut status: BTreeMap<String, String>,
) -> HttpResponse {
    if aggregation {
        for answer in listener_views::other_members::<GroupkeyListenserStatus>(app, req).await {
            status.extend(answer.lisenters_groupkey_status);
        }
    }
    HttpResponse::Ok().json(GroupkeyListenserStatus {
        collect_status: 200,
        lisenters_groupkey_status: status,
    })
}

/// `GET /nacos/v1/cs/configs/listener`: who listens to one config (`dataId`,
/// `group`: blank is `DEFAULT_GROUP`, `tenant`), client IP → md5, on every
/// member (Nacos' `ConfigController.getListeners`).
pub(super) async fn listeners_of_config(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let (data_id, group) = match (params.required("dataId"), params.required("group")) {
        (Ok(d), Ok(g)) if g.trim().is_empty() => (d, "DEFAULT_GROUP"),
        (Ok(d), Ok(g)) => (d, g),
        (Err(e), _) | (_, Err(e)) => return bad_request(e),
    };
    let key = match tacos_app::service::checked_key(params.str("tenant"), group, data_id) {
        Ok(key) => key,
        Err(e) => return bad_request(e),
    };
    let (aggregation, _) = match view_flags(&params) {
        Ok(flags) => flags,
        Err(e) => return bad_request(e),
    };
    if let Err(denied) = Reader::new(&principal).key(&key) {
        return refusal(&denied);
    }
    match listener_views::listening_to(&app, &key).await {
        Ok(status) => listener_view(&app, &req, aggregation, status).await,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `GET /nacos/v1/cs/listener?ip=`: what the client at `ip` listens to,
/// group key → md5, on every member (Nacos' `ListenerController`): the
/// public namespace's keys and those of `tenant`, or every key with
/// `all=true`; only namespaces the caller may read.
pub(super) async fn listened_by_ip(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let ip = match params.required("ip") {
        Ok(ip) => ip.trim(),
        Err(e) => return bad_request(e),
    };
    let namespace = params.str("tenant");
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    let (aggregation, all) = match view_flags(&params) {
        Ok(flags) => flags,
        Err(e) => return bad_request(e),
    };
    let shown = listener_views::KeysShown {
        namespace: canonical_namespace(namespace),
        all,
    };
    match listener_views::listened_by(&app, &principal, ip, shown).await {
        Ok(status) => listener_view(&app, &req, aggregation, status).await,
        Err(e) => v1_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
