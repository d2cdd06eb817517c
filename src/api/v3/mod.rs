//! Nacos 3's HTTP API (`/nacos/v3/...`), first slice: the client's config
//! read, the admin config, history and namespace routes, login, and the
//! server state. Thin adapters like the v2 routes: parse Nacos 3's
//! parameters (`namespaceId`, `groupName`, `dataId`, ...), call one use
//! case or query rule of `tacos_app`, render Nacos 3's answer: the
//! `Result {code, message, data}` envelope shared with v2 and the field
//! names of Nacos 3's models ([`model`]).
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /nacos/v3/client/cs/config` | open API | the config for this client (a beta for its IP) as `ConfigQueryResponse`; absent: 200 with code 20004 |
//! | `GET`, `POST`, `DELETE /nacos/v3/admin/cs/config` | login | one config (`ConfigDetailInfo`), publish (headers `casMd5`, `betaIps`), delete |
//! | `GET /nacos/v3/admin/cs/config/list` | login | search (`search=blur` default, `accurate`), paging: `Page<ConfigBasicInfo>` |
//! | `DELETE /nacos/v3/admin/cs/config/batch` | login | `ids`: delete configs by id |
//! | `GET /nacos/v3/admin/cs/config/export`, `POST /import`, `POST /clone` | login | a zip of configs (`.metadata.yml`), a zip into a namespace, copies of configs by id (one write each) |
//! | `GET`, `DELETE /nacos/v3/admin/cs/config/beta` | login | the beta (`ConfigGrayInfo`), stop it |
//! | `GET /nacos/v3/admin/cs/config/listener` | login | who listens (client IP → md5), on every node unless `aggregation=false` |
//! | `GET /nacos/v3/admin/cs/listener` | login | what one client IP listens to (group key → md5), on every node unless `aggregation=false` |
//! | `GET /nacos/v3/admin/cs/history` (`nid`), `/list`, `/previous` (`id`), `/configs` | login | history rows of a config, configs of a namespace |
//! | `GET /nacos/v3/admin/core/namespace` (one), `/list`, `/check` | login | namespaces the caller may read |
//! | `POST`, `PUT`, `DELETE /nacos/v3/admin/core/namespace` | admin | create, rename, delete |
//! | `POST /nacos/v3/auth/user/login` | public | `username`, `password` → token |
//! | `POST /nacos/v3/auth/user/admin` | public | the first admin: Tacos always has one (code 409) |
//! | `POST`, `DELETE /nacos/v3/auth/user`, `GET /list`, `/search` | admin | users (`auth`) |
//! | `PUT /nacos/v3/auth/user` | login | own password (admins: anyone's) |
//! | `POST`, `DELETE /nacos/v3/auth/role`, `GET /list`, `/search` | admin | role bindings |
//! | `GET`, `POST`, `DELETE /nacos/v3/auth/permission`, `GET /list` | admin | role permissions (`NAMESPACE:*:*`) |
//! | `GET /nacos/v3/admin/core/state`, `/state/liveness`, `/state/readiness` | public | server state (as Nacos: no login) |
//! | `GET /nacos/v3/admin/core/cluster/node/list` | admin | the members (`core`: shared with v1 and v2) |
//!
//! Admin routes need a login (Nacos 3 always authenticates its admin API);
//! the namespace right (read to look, write to change) is checked per
//! request as on the other routes. Errors are Nacos 3's: the parameter
//! filter's plain-text 400 for illegal or too long keys (with
//! `--param-check`, as Nacos 3 by default), then the envelope
//! with its codes (10000 missing, 20002 invalid, 20004 not found, 20005 CAS
//! conflict, 22000-22002 namespaces, 30000 server error). docs/http-api.md
//! lists where Tacos answers differently and why.

mod auth;
mod config;
mod history;
mod model;
pub(super) mod namespaces;
mod server;

use std::fmt::Display;

use actix_web::error::InternalError;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use super::guard::{Need, Routes};
use super::params::Params;
use super::render::{filter_refusal, status_of, v2_error};
use tacos_app::query::Paging;
use tacos_app::service::{checked_key, ServiceError};
use tacos_core::validate::{self, InvalidInput};
use tacos_state::{ApplyError, ConfigKey};

pub fn routes(r: &mut Routes) {
    const CONFIG: &str = "/nacos/v3/admin/cs/config";
    const NAMESPACE: &str = "/nacos/v3/admin/core/namespace";
    const USER: &str = "/nacos/v3/auth/user";
    const ROLE: &str = "/nacos/v3/auth/role";
    const PERMISSION: &str = "/nacos/v3/auth/permission";
    r.get(
        "/nacos/v3/client/cs/config",
        Need::OpenApi,
        config::client_get,
    )
    .get(CONFIG, Need::Login, config::get)
    .post(CONFIG, Need::Login, config::publish)
    .delete(CONFIG, Need::Login, config::delete)
    .get("/nacos/v3/admin/cs/config/list", Need::Login, config::list)
    .delete(
        "/nacos/v3/admin/cs/config/batch",
        Need::Login,
        config::delete_batch,
    )
    .get(
        "/nacos/v3/admin/cs/config/export",
        Need::Login,
        config::export,
    )
    .post(
        "/nacos/v3/admin/cs/config/import",
        Need::Login,
        config::import,
    )
    .post(
        "/nacos/v3/admin/cs/config/clone",
        Need::Login,
        config::clone,
    )
    .get("/nacos/v3/admin/cs/config/beta", Need::Login, config::beta)
    .delete(
        "/nacos/v3/admin/cs/config/beta",
        Need::Login,
        config::stop_beta,
    )
    .get(
        "/nacos/v3/admin/cs/config/listener",
        Need::Login,
        config::listeners,
    )
    .get(
        "/nacos/v3/admin/cs/listener",
        Need::Login,
        config::listened_by_ip,
    )
    .get("/nacos/v3/admin/cs/history", Need::Login, history::one)
    .get(
        "/nacos/v3/admin/cs/history/list",
        Need::Login,
        history::list,
    )
    .get(
        "/nacos/v3/admin/cs/history/previous",
        Need::Login,
        history::previous,
    )
    .get(
        "/nacos/v3/admin/cs/history/configs",
        Need::Login,
        history::configs,
    )
    .get(NAMESPACE, Need::Login, namespaces::one)
    .post(NAMESPACE, Need::Admin, namespaces::create)
    .put(NAMESPACE, Need::Admin, namespaces::update)
    .delete(NAMESPACE, Need::Admin, namespaces::delete)
    .get(
        "/nacos/v3/admin/core/namespace/list",
        Need::Login,
        namespaces::list,
    )
    .get(
        "/nacos/v3/admin/core/namespace/check",
        Need::Login,
        namespaces::check,
    )
    .post("/nacos/v3/auth/user/login", Need::Public, server::login)
    .post(
        "/nacos/v3/auth/user/admin",
        Need::Public,
        auth::create_admin,
    )
    .post(USER, Need::Admin, auth::create_user)
    .put(USER, Need::Login, auth::update_user)
    .delete(USER, Need::Admin, auth::delete_user)
    .get("/nacos/v3/auth/user/list", Need::Admin, auth::list_users)
    .get(
        "/nacos/v3/auth/user/search",
        Need::Admin,
        auth::search_users,
    )
    .post(ROLE, Need::Admin, auth::bind_role)
    .delete(ROLE, Need::Admin, auth::unbind_role)
    .get("/nacos/v3/auth/role/list", Need::Admin, auth::list_roles)
    .get(
        "/nacos/v3/auth/role/search",
        Need::Admin,
        auth::search_roles,
    )
    .get(PERMISSION, Need::Admin, auth::is_duplicate)
    .post(PERMISSION, Need::Admin, auth::grant)
    .delete(PERMISSION, Need::Admin, auth::revoke)
    .get(
        "/nacos/v3/auth/permission/list",
        Need::Admin,
        auth::list_permissions,
    )
    .get("/nacos/v3/admin/core/state", Need::Public, server::state)
    .get(
        "/nacos/v3/admin/core/state/liveness",
        Need::Public,
        server::liveness,
    )
    .get(
        "/nacos/v3/admin/core/state/readiness",
        Need::Public,
        server::readiness,
    );
}

// ---- answers ----------------------------------------------------------------

/// What a v3 handler answers: the success, or a refusal already rendered
/// (so helpers can refuse with `?`).
pub(super) type Answer = Refused<HttpResponse>;

/// A value, or the rendered refusal that stands in for it.
pub(super) type Refused<T> = Result<T, Refusal>;

/// A rendered refusal.
pub(super) struct Refusal(pub(super) Box<HttpResponse>);

impl From<HttpResponse> for Refusal {
    fn from(response: HttpResponse) -> Self {
        Refusal(Box::new(response))
    }
}

impl From<Refusal> for actix_web::Error {
    fn from(refusal: Refusal) -> Self {
        InternalError::from_response("refused", *refusal.0).into()
    }
}

/// One of Nacos' `ErrorCode`s: code and message.
#[derive(Debug, Clone, Copy)]
struct Code(u32, &'static str);

const PARAMETER_MISSING: Code = Code(10000, "parameter missing");
const ACCESS_DENIED: Code = Code(10001, "access denied");
const PARAMETER_VALIDATE_ERROR: Code = Code(20002, "parameter validate error");
const RESOURCE_NOT_FOUND: Code = Code(20004, "resource not found");
const RESOURCE_CONFLICT: Code = Code(20005, "resource conflict");
const ILLEGAL_NAMESPACE: Code = Code(22000, "illegal namespace");
const NAMESPACE_NOT_EXIST: Code = Code(22001, "namespace not exist");
const NAMESPACE_ALREADY_EXIST: Code = Code(22002, "namespace already exist");
const SERVER_ERROR: Code = Code(30000, "server error");

/// A success in the envelope.
fn ok(data: impl serde::Serialize) -> Answer {
    Ok(super::render::v2_ok(data))
}

/// A failure in the envelope, `data` holding the detail.
fn fail(status: StatusCode, code: Code, detail: impl Display) -> HttpResponse {
    v2_error(status, code.0, code.1, detail)
}

/// A failure in the envelope with `data: null`, as `Result.failure(code)`
/// writes it (Nacos answers these with status 200).
fn fail_without_data(status: StatusCode, code: Code) -> HttpResponse {
    HttpResponse::build(status)
        .json(serde_json::json!({"code": code.0, "message": code.1, "data": null}))
}

/// A `ConfigFormV3` field Nacos finds missing (absent or blank).
fn missing_field(name: &str) -> HttpResponse {
    fail(
        StatusCode::BAD_REQUEST,
        PARAMETER_MISSING,
        format!("Required parameter '{name}' type String is not present"),
    )
}

/// A `@RequestParam` Spring finds missing (absent, or blank for a number).
fn missing_param(name: &str, java_type: &str, blank: bool) -> HttpResponse {
    let how = if blank {
        "present but converted to null"
    } else {
        "not present"
    };
    fail(
        StatusCode::BAD_REQUEST,
        PARAMETER_MISSING,
        format!(
            "Required request parameter '{name}' for method parameter type {java_type} is {how}"
        ),
    )
}

/// A read the app refused: the guard's answer (Nacos' auth filter, before
/// its controllers), as on every surface.
impl From<tacos_app::auth::AuthError> for Refusal {
    fn from(error: tacos_app::auth::AuthError) -> Self {
        Refusal(Box::new(crate::api::guard::refusal(&error)))
    }
}

/// Bad input as Nacos 3 answers it: the parameter filter's text for keys
/// it refuses (`--param-check`), 10000 for what is missing (a blank key or
/// content is missing to Nacos), 20002 for the rest (`ParamUtils`' own
/// `invalid dataId : ...` among it).
fn invalid(error: &InvalidInput) -> HttpResponse {
    if let Some(refused) = filter_refusal(error) {
        return refused;
    }
    match error {
        InvalidInput::Missing(name) => missing_field(name),
        InvalidInput::DataId(id) if id.trim().is_empty() => missing_field("dataId"),
        InvalidInput::Group(group) if group.trim().is_empty() => missing_field("groupName"),
        InvalidInput::BlankContent => missing_field("content"),
        other => fail(StatusCode::BAD_REQUEST, PARAMETER_VALIDATE_ERROR, other),
    }
}

/// A refused config write as Nacos 3 answers it. Where Nacos has no such
/// refusal (a namespace that does not exist under `--strict-namespaces`)
/// the code is the closest of its own and the status the one v1/v2 give.
fn service_error(error: &ServiceError) -> HttpResponse {
    let status = status_of(error);
    match error {
        ServiceError::Invalid(e) => invalid(e),
        ServiceError::Rejected(ApplyError::CasMismatch) => {
            fail(StatusCode::INTERNAL_SERVER_ERROR, RESOURCE_CONFLICT, error)
        }
        ServiceError::Rejected(ApplyError::NamespaceNotFound(_)) => {
            fail(status, NAMESPACE_NOT_EXIST, error)
        }
        ServiceError::Rejected(ApplyError::NamespaceExists(id)) => fail(
            status,
            NAMESPACE_ALREADY_EXIST,
            format!("namespaceId [{id}] already exist."),
        ),
        ServiceError::Rejected(ApplyError::NamespaceNotEmpty(..)) => {
            fail(status, RESOURCE_CONFLICT, error)
        }
        ServiceError::Rejected(_) | ServiceError::AdminNotDeletable(_) => {
            fail(status, PARAMETER_VALIDATE_ERROR, error)
        }
        // What the guard answers a refusal with, on every surface (Nacos'
        // auth filter, before its controllers).
        ServiceError::Denied(e) => crate::api::guard::refusal(e),
        ServiceError::Write(_) | ServiceError::Internal(_) => fail(status, SERVER_ERROR, error),
    }
}

// ---- parameters ---------------------------------------------------------------

/// A parameter as Nacos' `StringUtils.isBlank` sees it: absent or blank is
/// `None`.
fn filled<'a>(params: &'a Params, name: &str) -> Option<&'a str> {
    params.get(name).filter(|v| !v.trim().is_empty())
}

/// Nacos' parameter filter over the config routes: the namespace
/// (`namespaceId`, else `tenant`, else `namespace`), `dataId` and the group
/// (`groupName`, else `group`), each when given, against the key rules.
fn param_filter(params: &Params) -> Refused<()> {
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
fn namespace_of(params: &Params) -> &str {
    filled(params, "namespaceId").unwrap_or("")
}

/// The config a route names, as `ConfigFormV3.validate()` reads it:
/// `groupName`, then `dataId`, must be given (`group` does not stand in
/// for `groupName`), after the parameter filter.
fn config_key(params: &Params) -> Refused<ConfigKey> {
    param_filter(params)?;
    let group = filled(params, "groupName").ok_or_else(|| missing_field("groupName"))?;
    let data_id = filled(params, "dataId").ok_or_else(|| missing_field("dataId"))?;
    Ok(checked_key(namespace_of(params), group, data_id).map_err(|e| invalid(&e))?)
}

/// A required `Long` request parameter.
fn required_id(params: &Params, name: &str) -> Refused<u64> {
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
fn not_a_number(raw: &str, java_type: &str) -> HttpResponse {
    fail(
        StatusCode::BAD_REQUEST,
        PARAMETER_VALIDATE_ERROR,
        format!(
            "Failed to convert value of type 'java.lang.String' to required type '{java_type}'; For input string: \"{raw}\""
        ),
    )
}

/// A required `String` request parameter (may be blank).
fn required_string<'a>(params: &'a Params, name: &str) -> Refused<&'a str> {
    Ok(params
        .get(name)
        .ok_or_else(|| missing_param(name, "String", false))?)
}

/// `pageNo` (default 1) and `pageSize` (default 100), Nacos 3's `PageForm`.
fn page(params: &Params) -> Refused<Paging> {
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

#[cfg(test)]
mod tests {
    use crate::api::guard::{declared, Need};

    #[test]
    fn v3_routes_need_what_nacos_3_needs() {
        let v3: Vec<_> = declared()
            .into_iter()
            .filter(|r| r.path.starts_with("/nacos/v3/"))
            .collect();
        assert!(v3.len() >= 20, "{v3:?}");
        for route in &v3 {
            let expected = if route.path.starts_with("/nacos/v3/admin/core/state")
                || route.path == "/nacos/v3/auth/user/login"
                || route.path == "/nacos/v3/auth/user/admin"
            {
                vec![Need::Public]
            } else if route.path == "/nacos/v3/auth/user"
                && route.method == actix_web::http::Method::PUT
            {
                // Own password: a login; the handler checks the rest.
                vec![Need::Login]
            } else if route.path.starts_with("/nacos/v3/auth/") {
                vec![Need::Admin]
            } else if route.path.starts_with("/nacos/v3/client/") {
                vec![Need::OpenApi]
            } else if route.path.starts_with("/nacos/v3/admin/core/namespace")
                && route.method != actix_web::http::Method::GET
            {
                vec![Need::Admin]
            } else {
                assert!(route.path.starts_with("/nacos/v3/admin/"), "{route:?}");
                vec![Need::Login, Need::Admin]
            };
            assert!(expected.contains(&route.need), "{route:?}");
        }
    }
}
