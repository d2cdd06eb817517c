//! What a v3 handler answers: Nacos 3's `{code, message, data}` envelope
//! with its codes, and the refusals (already rendered, so a helper can
//! refuse with `?`).

use std::fmt::Display;

use actix_web::error::InternalError;
use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::api::render::{filter_refusal, status_of, v2_error};
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_state::ApplyError;

/// What a v3 handler answers: the success, or a refusal already rendered
/// (so helpers can refuse with `?`).
pub(crate) type Answer = Refused<HttpResponse>;

/// A value, or the rendered refusal that stands in for it.
pub(crate) type Refused<T> = Result<T, Refusal>;

/// A rendered refusal.
pub(crate) struct Refusal(pub(crate) Box<HttpResponse>);

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
pub(super) struct Code(pub(super) u32, pub(super) &'static str);

pub(super) const PARAMETER_MISSING: Code = Code(10000, "parameter missing");
pub(super) const ACCESS_DENIED: Code = Code(10001, "access denied");
pub(super) const PARAMETER_VALIDATE_ERROR: Code = Code(20002, "parameter validate error");
pub(super) const RESOURCE_NOT_FOUND: Code = Code(20004, "resource not found");
pub(super) const RESOURCE_CONFLICT: Code = Code(20005, "resource conflict");
pub(super) const ILLEGAL_NAMESPACE: Code = Code(22000, "illegal namespace");
pub(super) const NAMESPACE_NOT_EXIST: Code = Code(22001, "namespace not exist");
pub(super) const NAMESPACE_ALREADY_EXIST: Code = Code(22002, "namespace already exist");
pub(super) const SERVER_ERROR: Code = Code(30000, "server error");

/// A success in the envelope.
pub(super) fn ok(data: impl serde::Serialize) -> Answer {
    Ok(crate::api::render::v2_ok(data))
}

/// A failure in the envelope, `data` holding the detail.
pub(super) fn fail(status: StatusCode, code: Code, detail: impl Display) -> HttpResponse {
    v2_error(status, code.0, code.1, detail)
}

/// A failure in the envelope with `data: null`, as `Result.failure(code)`
/// writes it (Nacos answers these with status 200).
pub(super) fn fail_without_data(status: StatusCode, code: Code) -> HttpResponse {
    HttpResponse::build(status)
        .json(serde_json::json!({"code": code.0, "message": code.1, "data": null}))
}

/// A `ConfigFormV3` field Nacos finds missing (absent or blank).
pub(super) fn missing_field(name: &str) -> HttpResponse {
    fail(
        StatusCode::BAD_REQUEST,
        PARAMETER_MISSING,
        format!("Required parameter '{name}' type String is not present"),
    )
}

/// A `@RequestParam` Spring finds missing (absent, or blank for a number).
pub(super) fn missing_param(name: &str, java_type: &str, blank: bool) -> HttpResponse {
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
pub(super) fn invalid(error: &InvalidInput) -> HttpResponse {
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
pub(super) fn service_error(error: &ServiceError) -> HttpResponse {
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
