//! What the v1 handlers answer alike: Nacos 1/2's plain-text refusal, its
//! `true`, the headers of a config read; and who a write is recorded as.

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use crate::api::params::{client_ip, Params};
use crate::api::render::{filter_refusal, v1_error};
use tacos_app::auth::Principal;
use tacos_app::service::Caller;
use tacos_core::validate::InvalidInput;

pub(super) fn bad_request(error: InvalidInput) -> HttpResponse {
    filter_refusal(&error).unwrap_or_else(|| v1_error(StatusCode::BAD_REQUEST, error))
}

pub(super) fn ok_true() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain;charset=UTF-8")
        .body("true")
}

pub(super) fn caller(req: &HttpRequest, params: &Params, principal: &Principal) -> Caller {
    principal.caller(params.str("src_user"), client_ip(req))
}

pub(super) fn no_cache(
    builder: &mut actix_web::HttpResponseBuilder,
) -> &mut actix_web::HttpResponseBuilder {
    builder
        .insert_header((header::PRAGMA, NO_CACHE))
        .insert_header((header::EXPIRES, EXPIRED))
        .insert_header((header::CACHE_CONTROL, NO_STORE))
}

/// Header values of every config read, made once (a `&str` is parsed and
/// checked on every response).
pub(super) const NO_CACHE: HeaderValue = HeaderValue::from_static("no-cache");
/// Nacos' `setDateHeader("Expires", 0)`: the epoch as an HTTP date.
pub(super) const EXPIRED: HeaderValue = HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT");
pub(super) const NO_STORE: HeaderValue = HeaderValue::from_static("no-cache,no-store");

/// Header names of a config read, made once: an `(&str, _)` pair parses
/// its name on every response.
pub(super) const CONFIG_TYPE: HeaderName = HeaderName::from_static("config-type");
pub(super) const CONTENT_MD5: HeaderName = HeaderName::from_static("content-md5");
