//! What the v3 routes read from a request, as Nacos 3's Spring binding
//! reads it: a blank parameter is absent, keys and numbers and pages with
//! Nacos 3's own refusals.

use super::answer::{
    fail, invalid, missing_field, missing_param, Refusal, Refused, PARAMETER_VALIDATE_ERROR,
};
use crate::api::params::Params;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use tacos_app::query::Paging;
use tacos_app::service::checked_key;
use tacos_core::validate::{self, InvalidInput};
use tacos_state::ConfigKey;

/// A parameter as Nacos' `StringUtils.isBlank` sees it: absent or blank is
/// `None`.
pub(super) fn filled<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params.get(name).filter(|v| !v.trim().is_empty())
}

/// Nacos' parameter filter over the config routes: the namespace
/// (`namespaceId`, else `tenant`, else `namespace`), `dataId` and the group
/// (`groupName`, else `group`), each when given, against the key rules.
pub(super) fn param_filter(params: &Params) -> Refused<()> {
    let first = |names: &[&str]| names.iter().find_map(|name| filled(params, name));
    let refuse = |e: InvalidInput| invalid(&e);
    if let Some(namespace) = first(&["namespaceId", "tenant", "namespace"]) {
        validate::namespace(namespace).map_err(refuse)?;
    }
    if let Some(data_id) = filled(params, "dataId") {
        validate::data_id(data_id).map_err(refuse)?;
    }
    if let Some(group) = first(&["groupName", "group"]) {
        validate::group(group).map_err(refuse)?;
    }
    Ok(())
}

/// `namespaceId`; blank is the public namespace (`NamespaceUtil`).
pub(super) fn namespace_of(params: &Params) -> &str {
    filled(params, "namespaceId").unwrap_or("")
}

/// The config a route names, as `ConfigFormV3.validate()` reads it:
/// `groupName`, then `dataId`, must be given (`group` does not stand in
/// for `groupName`), after the parameter filter.
pub(super) fn config_key(params: &Params) -> Refused<ConfigKey> {
    param_filter(params)?;
    let group = filled(params, "groupName").ok_or_else(|| missing_field("groupName"))?;
    let data_id = filled(params, "dataId").ok_or_else(|| missing_field("dataId"))?;
    Ok(checked_key(namespace_of(params), group, data_id).map_err(|e| invalid(&e))?)
}

/// A required `Long` request parameter.
pub(super) fn required_id(params: &Params, name: &str) -> Refused<u64> {
    let raw = params
        .get(name)
        .ok_or_else(|| missing_param(name, "Long", false))?;
    if raw.trim().is_empty() {
        return Err(missing_param(name, "Long", true).into());
    }
    Ok(raw
        .trim()
        .parse()
        .map_err(|_| not_a_number(raw, "java.lang.Long"))?)
}

/// Spring's conversion failure for a number parameter.
pub(super) fn not_a_number(raw: &str, java_type: &str) -> HttpResponse {
    fail(
        StatusCode::BAD_REQUEST,
        PARAMETER_VALIDATE_ERROR,
        format!(
            "Failed to convert value of type 'java.lang.String' to required type '{java_type}'; For input string: \"{raw}\""
        ),
    )
}

/// A required `String` request parameter (may be blank).
pub(super) fn required_string<'a>(params: &'a Params, name: &str) -> Refused<&'a str> {
    Ok(params
        .get(name)
        .ok_or_else(|| missing_param(name, "String", false))?)
}

/// `pageNo` (default 1) and `pageSize` (default 100), Nacos 3's `PageForm`.
pub(super) fn page(params: &Params) -> Refused<Paging> {
    let number = |name: &str, default: i64| match filled(params, name) {
        None => Ok(default),
        Some(raw) => raw
            .trim()
            .parse::<i64>()
            .map_err(|_| Refusal::from(not_a_number(raw, "int"))),
    };
    let paging = Paging::at_least_one(number("pageNo", 1)?, number("pageSize", 100)?);
    Ok(paging.map_err(|e| match e {
        InvalidInput::Other(name, current) => fail(
            StatusCode::BAD_REQUEST,
            PARAMETER_VALIDATE_ERROR,
            format!("Required parameter '{name}' should be positive integer, current is {current}"),
        ),
        other => invalid(&other),
    })?)
}
