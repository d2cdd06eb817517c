//! Nacos' `HistoryController` (`/nacos/v1/cs/history`): a config's rows,
//! one row, the row before one, the configs of a namespace.

use super::answer::bad_request;

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::api::call::Call;
use crate::api::guard::refusal;
use crate::api::nacos_config::{
    history_page, history_row, key_from, named_read, namespace_configs, ListError, RowLookupError,
};
use crate::api::params::paging;
use crate::api::render::v1_error;
use tacos_app::query::HistoryLookup;

pub(super) async fn history(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let state = app.service.state();
    if params.get("nid").is_some() {
        return match history_row(&state, &principal, &params, HistoryLookup::This) {
            Ok(item) => HttpResponse::Ok().json(item),
            Err(e) => v1_row_error(e),
        };
    }
    if let Err(denied) = named_read(&principal, &params, "tenant") {
        return refusal(&denied);
    }
    let result = key_from(&params, "tenant").and_then(|key| Ok((key, paging(&params, 100)?)));
    match result {
        Ok((key, (page_no, page_size))) => {
            HttpResponse::Ok().json(history_page(&state, &key, page_no, page_size))
        }
        Err(e) => bad_request(e),
    }
}

pub(super) async fn history_previous(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let state = app.service.state();
    match history_row(&state, &principal, &params, HistoryLookup::Previous) {
        Ok(item) => HttpResponse::Ok().json(item),
        Err(e) => v1_row_error(e),
    }
}

pub(super) fn v1_row_error(error: RowLookupError) -> HttpResponse {
    match error {
        RowLookupError::Invalid(e) => bad_request(e),
        RowLookupError::NotFound(message) => v1_error(StatusCode::NOT_FOUND, message),
    }
}

pub(super) async fn history_configs(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    match namespace_configs(&app.service.state(), &principal, params.str("tenant")) {
        Ok(configs) => HttpResponse::Ok().json(configs),
        Err(ListError::Denied(denied)) => refusal(&denied),
        Err(ListError::Invalid(e)) => bad_request(e),
    }
}
