//! Namespaces (`/nacos/v3/admin/core/namespace...`): list, one, exists,
//! and (admins) create, rename, delete; and Nacos 2's
//! `NamespaceControllerV2` (`/nacos/v2/console/namespace`, `/list`), the
//! same controller in the same envelope, registered by `nacos_v2` with the
//! same handlers (the path says which generation answers).
//!
//! Reads show the namespaces the caller may read (as every Tacos list
//! does), public first: Nacos 3 names it `public` and gives custom
//! namespaces type 1; Nacos 2 names it `""` and gives them type 2. A taken
//! id is refused with code 22002 by Nacos 3, 22000 by Nacos 2.

use crate::api::call::{Call, FormCall};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};

use super::answer::{
    fail, ok, service_error, Answer, Refusal, Refused, ILLEGAL_NAMESPACE, NAMESPACE_ALREADY_EXIST,
    NAMESPACE_NOT_EXIST, PARAMETER_MISSING,
};
use super::model::Namespace;
use super::params::required_string;
use crate::api::app_state::AppState;
use crate::api::params::{client_ip, Params};
use tacos_app::auth::Principal;
use tacos_app::query::{visible_namespaces, PUBLIC_NAMESPACE_DESC};
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_state::{canonical_namespace, ApplyError};

/// Whose answers: Nacos 2's `NamespaceControllerV2` or Nacos 3's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Generation {
    V2,
    V3,
}

impl Generation {
    /// The generation of the route the request came in on.
    fn of(req: &HttpRequest) -> Self {
        if req.path().starts_with("/nacos/v2/") {
            Generation::V2
        } else {
            Generation::V3
        }
    }
}

fn visible(app: &AppState, principal: &Principal, generation: Generation) -> Vec<Namespace> {
    let shown = match generation {
        Generation::V2 => Namespace::of_v2,
        Generation::V3 => Namespace::of,
    };
    visible_namespaces(&app.service.state(), principal, PUBLIC_NAMESPACE_DESC)
        .into_iter()
        .map(shown)
        .collect()
}

pub async fn list(call: Call) -> Answer {
    let Call {
        app,
        principal,
        req,
        ..
    } = call;
    ok(visible(&app, &principal, Generation::of(&req)))
}

/// `GET ?namespaceId=`: one namespace; 404 (code 22001) when it does not
/// exist or the caller may not read it. On v2 the public namespace is
/// named as it was asked for (`""`, blank or `public`, as Nacos 2 echoes
/// it).
pub async fn one(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        req,
        ..
    } = call;
    let generation = Generation::of(&req);
    let id = required_string(&params, "namespaceId")?;
    let wanted = canonical_namespace(id.trim());
    let mut found = visible(&app, &principal, generation)
        .into_iter()
        .find(|n| canonical_namespace(&n.namespace) == wanted)
        .ok_or_else(|| not_exist(id))?;
    if generation == Generation::V2 && found.kind == 0 {
        found.namespace = id.to_string();
    }
    ok(found)
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
pub async fn check(call: Call) -> Answer {
    let Call {
        app,
        principal,
        params,
        ..
    } = call;
    let id = required_string(&params, "namespaceId")?;
    let count = visible(&app, &principal, Generation::V3)
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
fn refused(error: &ServiceError, id: &str, name: &str, generation: Generation) -> HttpResponse {
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
        ServiceError::Rejected(ApplyError::NamespaceExists(_)) if generation == Generation::V2 => {
            // Nacos 2's controller checks before its service does.
            illegal(format!("the namespaceId is existed, namespaceId: {id}"))
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
pub async fn create(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let generation = Generation::of(&req);
    let (id, name) = form(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .create_namespace(id, name, params.str("namespaceDesc"), &caller)
        .await
    {
        Ok(_) => ok(true),
        Err(e) => Err(refused(&e, id, name, generation).into()),
    }
}

/// `PUT`: `namespaceId`, `namespaceName`, `namespaceDesc` → `true`; 404
/// (code 22001) for a namespace that does not exist, public included
/// (Nacos answers `true` and changes nothing).
pub async fn update(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let generation = Generation::of(&req);
    let (id, name) = form(&params)?;
    let caller = principal.caller("", client_ip(&req));
    match app
        .service
        .update_namespace(id, name, params.str("namespaceDesc"), &caller)
        .await
    {
        Ok(()) => ok(true),
        Err(e) => Err(refused(&e, id, name, generation).into()),
    }
}

/// `DELETE ?namespaceId=` → `true`; refused while it holds configs (code
/// 20005; Nacos would leave them without a namespace), 404 (code 22001)
/// when it does not exist, public included.
pub async fn delete(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let generation = Generation::of(&req);
    let id = required_string(&params, "namespaceId")?;
    let caller = principal.caller("", client_ip(&req));
    match app.service.remove_namespace(id, &caller).await {
        Ok(()) => ok(true),
        Err(e) => Err(refused(&e, id, "", generation).into()),
    }
}
