//! Nacos' `HistoryController` (`/nacos/v1/cs/history`): a config's rows,
//! one row, the row before one, the configs of a namespace.

use super::answer::bad_request;

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::api::call::Call;
use crate::api::guard::refusal;
use crate::api::nacos_config::{
    history_page, history_row, key_from, namespace_configs, RowLookupError,
};
use crate::api::params::paging;
use crate::api::render::v1_error;
use tacos_app::query::HistoryLookup;
use tacos_app::read::Reader;
use tacos_core::validate::{self};

pub(super) async fn history(call: Call) -> HttpResponse {
    let Call {
        app,
        principal,
        params,
        req: _,
        ..
    } = call;
    let state = app.service.state();
    if params.get("nid").is_some() {
        return match history_row(&state, &principal, &params, HistoryLookup::This) {
            Ok(item) => HttpResponse::Ok().json(item),
            Err(e) => v1_row_error(e),
        };
    }
    let reader = Reader::new(&principal);
    if let Err(denied) = reader.named(
        params.str("tenant"),
        params.str("group"),
        params.str("dataId"),
    ) {
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
        req: _,
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
        req: _,
        ..
    } = call;
    let namespace = params.str("tenant");
    if let Err(denied) = Reader::new(&principal).list(namespace) {
        return refusal(&denied);
    }
    if let Err(e) = validate::namespace(namespace) {
        return bad_request(e);
    }
    HttpResponse::Ok().json(namespace_configs(
        &app.service.state(),
        &principal,
        namespace,
    ))
}
