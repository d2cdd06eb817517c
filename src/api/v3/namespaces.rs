//! Namespaces (`/nacos/v3/admin/core/namespace...`): list, one, exists,
//! and (admins) create, rename, delete.
//!
//! Reads show the namespaces the caller may read (as every Tacos list
//! does); the public one is `public`, type 0, first.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};

use super::model::Namespace;
use super::{
    fail, ok, required_string, service_error, Answer, Refusal, Refused, ILLEGAL_NAMESPACE,
    NAMESPACE_ALREADY_EXIST, NAMESPACE_NOT_EXIST, PARAMETER_MISSING,
};
use crate::api::guard::Authed;
use crate::api::params::{client_ip, Params};
use crate::api::AppState;
use tacos_app::auth::Principal;
use tacos_app::query::visible_namespaces;
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_state::{canonical_namespace, ApplyError};

/// The description Nacos 3 gives the public namespace.
const PUBLIC_DESC: &str = "Default Namespace";

fn visible(app: &AppState, principal: &Principal) -> Vec<Namespace> {
    visible_namespaces(&app.service.state(), principal, PUBLIC_DESC)
        .into_iter()
        .map(Namespace::of)
        .collect()
}

pub async fn list(app: web::Data<AppState>, Authed(principal): Authed) -> Answer {
    ok(visible(&app, &principal))
}

/// `GET ?namespaceId=`: one namespace; 404 (code 22001) when it does not
/// exist or the caller may not read it.
pub async fn one(req: HttpRequest, app: web::Data<AppState>, Authed(principal): Authed) -> Answer {
    let params = Params::parse(&req, &[]);
    let id = required_string(&params, "namespaceId")?;
    let wanted = canonical_namespace(id.trim());
    visible(&app, &principal)
        .into_iter()
        .find(|n| canonical_namespace(&n.namespace) == wanted)
        .map_or_else(|| Err(not_exist(id).into()), ok)
}

fn not_exist(id: &str) -> HttpResponse {
    fail(
        StatusCode::NOT_FOUND,
        NAMESPACE_NOT_EXIST,
        format!("namespaceId [ {id} ] not exist"),
    )
}

/// `GET /check?namespaceId=`: how many custom namespaces have this id (0
/// or 1; `public` is not a custom namespace: 0, as in Nacos).
pub async fn check(
    req: HttpRequest,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &[]);
    let id = required_string(&params, "namespaceId")?;
    let count = visible(&app, &principal)
        .iter()
        .filter(|n| n.kind != 0 && n.namespace == id)
        .count();
    ok(count)
}

/// `NamespaceForm.validate()`: `namespaceId` and `namespaceName` must be
/// sent (the id may be blank: create generates one).
fn form(params: &Params) -> Refused<(&str, &str)> {
    let present = |name: &str| {
        params.get(name).ok_or_else(|| {
            Refusal::from(fail(
                StatusCode::BAD_REQUEST,
                PARAMETER_MISSING,
                format!("required parameter '{name}' is missing"),
            ))
        })
    };
    Ok((present("namespaceId")?, present("namespaceName")?))
}

/// A refused namespace write with Nacos 3's codes and messages (the rules
/// are the service's).
fn refused(error: &ServiceError, id: &str, name: &str) -> HttpResponse {
    let illegal = |detail: String| fail(StatusCode::BAD_REQUEST, ILLEGAL_NAMESPACE, detail);
    match error {
        ServiceError::Invalid(InvalidInput::NamespaceTooLong) => {
            illegal("too long namespaceId, over 128".into())
        }
        ServiceError::Invalid(InvalidInput::Namespace | InvalidInput::Other("namespaceId", _)) => {
            illegal(format!("namespaceId [{}] mismatch the pattern", id.trim()))
        }
        ServiceError::Invalid(
            InvalidInput::Missing("namespaceName") | InvalidInput::Other("namespaceName", _),
        ) => {
            if name.trim().is_empty() || name.chars().any(|c| "@#$%^&*".contains(c)) {
                illegal(format!("namespaceName [{name}] contains illegal char"))
            } else {
                illegal("too long namespaceName, over 128".into())
            }
        }
        ServiceError::Rejected(ApplyError::NamespaceExists(_)) => {
            let id = id.trim();
            let detail = if canonical_namespace(id).is_empty() {
                format!("namespaceId [{id}] is default namespace id and already exist.")
            } else {
                format!("namespaceId [{id}] already exist.")
            };
            fail(StatusCode::BAD_REQUEST, NAMESPACE_ALREADY_EXIST, detail)
        }
        ServiceError::Rejected(ApplyError::NamespaceNotFound(_)) => not_exist(id),
        other => service_error(other),
    }
}

/// `POST`: `namespaceId` (blank: a generated id), `namespaceName`,
/// `namespaceDesc` → `true`.
pub async fn create(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let (id, name) = form(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .create_namespace(id, name, params.str("namespaceDesc"), &caller)
        .await
    {
        Ok(_) => ok(true),
        Err(e) => Err(refused(&e, id, name).into()),
    }
}

/// `PUT`: `namespaceId`, `namespaceName`, `namespaceDesc` → `true`; 404
/// (code 22001) for a namespace that does not exist, public included
/// (Nacos answers `true` and changes nothing).
pub async fn update(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let (id, name) = form(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .update_namespace(id, name, params.str("namespaceDesc"), &caller)
        .await
    {
        Ok(()) => ok(true),
        Err(e) => Err(refused(&e, id, name).into()),
    }
}

/// `DELETE ?namespaceId=` → `true`; refused while it holds configs (code
/// 20005; Nacos would leave them without a namespace), 404 (code 22001)
/// when it does not exist, public included.
pub async fn delete(
    req: HttpRequest,
    body: web::Bytes,
    app: web::Data<AppState>,
    Authed(principal): Authed,
) -> Answer {
    let params = Params::parse(&req, &body);
    let id = required_string(&params, "namespaceId")?;
    let caller = principal.caller("", client_ip(&req));
    match app.service.remove_namespace(id, &caller).await {
        Ok(()) => ok(true),
        Err(e) => Err(refused(&e, id, "").into()),
    }
}
