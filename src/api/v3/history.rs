//! History (`/nacos/v3/admin/cs/history...`): a config's rows, one row,
//! the row before the current version, and the configs of a namespace.
//!
//! As everywhere in Tacos (and Nacos) an insert row holds the content it
//! inserted, an update or delete row the content before the change. Nacos 3
//! names the config beside a row id: a row of another config is refused
//! (403, code 10001), not shown.

use crate::api::call::Call;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use super::answer::{fail, invalid, ok, Answer, ACCESS_DENIED, RESOURCE_NOT_FOUND};
use super::model::{ConfigBasicInfo, ConfigHistoryBasicInfo, ConfigHistoryDetailInfo};
use super::params::{config_key, page, param_filter, required_id, required_string};
use crate::api::app_state::AppState;
use crate::api::params::Params;
use crate::api::render::Page;
use tacos_app::query::{config_history_row, ConfigHistoryLookup, ConfigRowError};
use tacos_app::read::Reader;
use tacos_core::validate;
use tacos_state::canonical_namespace;

/// `GET /list`: the config's rows, newest first (`pageSize` cut to 500).
pub async fn list(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let key = config_key(&params)?;
    let paging = page(&params)?;
    Reader::new(&principal).key(&key)?;
    let state = app.service.state();
    let rows = state.history(&key);
    let total = rows.len();
    let page = rows
        .rev()
        .skip(Page::<ConfigHistoryBasicInfo>::skipped(
            paging.page_no,
            paging.page_size,
        ))
        .take(paging.page_size as usize)
        .map(|row| ConfigHistoryBasicInfo::of(&row))
        .collect();
    ok(Page::window(page, total, paging.page_no, paging.page_size))
}

/// `GET ?nid=`: one row of the named config.
pub async fn one(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    param_filter(&params)?;
    let nid = required_id(&params, "nid")?;
    row(
        &app,
        &principal,
        &params,
        ConfigHistoryLookup::Row(nid),
        || format!("certain config history for nid = {nid} not exist"),
    )
}

/// `GET /previous?id=`: `id` is the config's id (as in Nacos, whose
/// history rows carry it); the answer is the config's newest row, which
/// holds the version before the current one.
pub async fn previous(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    param_filter(&params)?;
    let id = required_id(&params, "id")?;
    row(
        &app,
        &principal,
        &params,
        ConfigHistoryLookup::LatestOfConfig(id),
        || format!("previous config history for id = {id} not exist"),
    )
}

fn row(
    app: &AppState,
    principal: &tacos_app::auth::Principal,
    params: &Params,
    lookup: ConfigHistoryLookup,
    not_found: impl FnOnce() -> String,
) -> Answer {
    let key = config_key(params)?;
    Reader::new(principal).key(&key)?;
    let state = app.service.state();
    match config_history_row(&state, &key, lookup) {
        Ok(row) => ok(ConfigHistoryDetailInfo::of(&row)),
        Err(ConfigRowError::NotFound) => {
            Err(fail(StatusCode::NOT_FOUND, RESOURCE_NOT_FOUND, not_found()).into())
        }
        Err(ConfigRowError::OtherConfig) => Err(refused_other_config().into()),
    }
}

fn refused_other_config() -> HttpResponse {
    fail(
        StatusCode::FORBIDDEN,
        ACCESS_DENIED,
        "Please check dataId, group or namespaceId.",
    )
}

/// `GET /configs?namespaceId=`: the configs of a namespace.
pub async fn configs(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    param_filter(&params)?;
    let namespace = required_string(&params, "namespaceId")?.trim();
    validate::namespace(namespace).map_err(|e| invalid(&e))?;
    Reader::new(&principal).list(namespace)?;
    let state = app.service.state();
    let items: Vec<ConfigBasicInfo> =
        tacos_app::query::readable_configs(&state, &principal, canonical_namespace(namespace))
            .map(|(key, config)| ConfigBasicInfo::of(key, config))
            .collect();
    ok(items)
}
