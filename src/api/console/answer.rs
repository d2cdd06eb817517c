//! What a console handler answers: its JSON (never cached), and why a
//! request failed (each kind with its status and the message the console
//! shows).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::de::DeserializeOwned;
use serde_json::json;

use tacos_app::auth::AuthError;
use tacos_app::service::ServiceError;
use tacos_app::syntax::SyntaxError;
use tacos_app::transfer::TransferError;
use tacos_core::validate::InvalidInput;
use tacos_raft::rpc::RouteError;
use tacos_state::ApplyError;

/// Why a console request failed. Each kind has its own status, and the
/// body carries the message the console shows.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConsoleError {
    #[error("invalid request body: {0}")]
    Body(String),
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    #[error(transparent)]
    Syntax(#[from] SyntaxError),
    /// Someone else changed the config (CAS), or it exists already.
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Denied(#[from] AuthError),
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error(transparent)]
    Transfer(#[from] TransferError),
    #[error("{0}")]
    Internal(String),
}

/// The message for a CAS refusal: what happened and what to do.
pub(super) const CAS_MESSAGE: &str = "someone else changed this config after you opened it; \
     nothing was published. Reload it to see their version, then apply your change again";

impl ConsoleError {
    fn kind(&self) -> &'static str {
        match self {
            ConsoleError::Body(_) | ConsoleError::Invalid(_) => "invalid",
            ConsoleError::Syntax(_) => "syntax",
            ConsoleError::Conflict(_) => "conflict",
            ConsoleError::NotFound(_) => "not-found",
            ConsoleError::Denied(_) => "denied",
            ConsoleError::Service(ServiceError::Rejected(
                ApplyError::CasMismatch
                | ApplyError::ConfigExists { .. }
                | ApplyError::ConfigGone { .. }
                | ApplyError::GrayReplaced(_)
                | ApplyError::GrayCasMismatch,
            )) => "conflict",
            ConsoleError::Service(ServiceError::Rejected(ApplyError::GrayNotFound(_))) => {
                "not-found"
            }
            ConsoleError::Service(ServiceError::Invalid(_)) => "invalid",
            ConsoleError::Service(ServiceError::Write(_)) => "unavailable",
            ConsoleError::Service(_) => "refused",
            ConsoleError::Transfer(TransferError::Conflicts(_)) => "conflict",
            ConsoleError::Transfer(_) => "invalid",
            ConsoleError::Internal(_) => "internal",
        }
    }
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::Body(_)
            | ConsoleError::Invalid(_)
            | ConsoleError::Syntax(_)
            | ConsoleError::Transfer(_) => {
                if matches!(self, ConsoleError::Transfer(TransferError::Conflicts(_))) {
                    StatusCode::CONFLICT
                } else {
                    StatusCode::BAD_REQUEST
                }
            }
            ConsoleError::Conflict(_) => StatusCode::CONFLICT,
            ConsoleError::NotFound(_) => StatusCode::NOT_FOUND,
            ConsoleError::Denied(e) => crate::api::guard::refusal_status(e),
            ConsoleError::Service(e) => match e {
                ServiceError::Invalid(_) => StatusCode::BAD_REQUEST,
                ServiceError::Rejected(
                    ApplyError::CasMismatch
                    | ApplyError::ConfigExists { .. }
                    | ApplyError::ConfigGone { .. }
                    | ApplyError::GrayReplaced(_)
                    | ApplyError::GrayCasMismatch
                    | ApplyError::NamespaceExists(_)
                    | ApplyError::NamespaceNotEmpty(..)
                    | ApplyError::UserExists(_)
                    | ApplyError::LastAdmin(_),
                ) => StatusCode::CONFLICT,
                ServiceError::Rejected(
                    ApplyError::NamespaceNotFound(_)
                    | ApplyError::UserNotFound(_)
                    | ApplyError::GrayNotFound(_),
                ) => StatusCode::NOT_FOUND,
                ServiceError::Rejected(_) | ServiceError::AdminNotDeletable(_) => {
                    StatusCode::BAD_REQUEST
                }
                ServiceError::Denied(e) => crate::api::guard::refusal_status(e),
                ServiceError::Write(RouteError::Stopped(_)) | ServiceError::Internal(_) => {
                    StatusCode::INTERNAL_SERVER_ERROR
                }
                ServiceError::Write(RouteError::Membership(_)) => StatusCode::BAD_REQUEST,
                ServiceError::Write(_) => StatusCode::SERVICE_UNAVAILABLE,
            },
            ConsoleError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        let message = match self {
            ConsoleError::Service(ServiceError::Rejected(ApplyError::CasMismatch)) => {
                CAS_MESSAGE.to_string()
            }
            other => other.to_string(),
        };
        let mut body = json!({ "error": message, "kind": self.kind() });
        match self {
            ConsoleError::Syntax(e) => {
                body["line"] = json!(e.line);
                body["column"] = json!(e.column);
                body["type"] = json!(e.kind);
            }
            ConsoleError::Transfer(TransferError::Invalid(problems)) => {
                body["problems"] = json!(problems);
            }
            ConsoleError::Transfer(TransferError::Conflicts(keys)) => {
                body["conflicts"] = json!(keys);
            }
            _ => {}
        }
        HttpResponse::build(self.status_code())
            .insert_header(("Cache-Control", "no-store"))
            .json(body)
    }
}

/// A JSON request body.
pub(super) fn json_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ConsoleError> {
    if body.is_empty() {
        return Err(ConsoleError::Body("a JSON body is required".into()));
    }
    serde_json::from_slice(body).map_err(|e| ConsoleError::Body(e.to_string()))
}

/// A JSON answer that is never cached (it holds live data).
pub(super) fn ok_json(value: impl serde::Serialize) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::body::MessageBody;

    fn body_of(error: ConsoleError) -> (u16, serde_json::Value) {
        let response = error.error_response();
        let status = response.status().as_u16();
        let bytes = response.into_body().try_into_bytes().unwrap_or_default();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn errors_carry_status_kind_and_details() {
        let (status, body) = body_of(ConsoleError::Service(ServiceError::Rejected(
            ApplyError::CasMismatch,
        )));
        assert_eq!((status, body["kind"].as_str()), (409, Some("conflict")));
        assert!(body["error"]
            .as_str()
            .unwrap()
            .contains("someone else changed"));
        let (status, body) = body_of(ConsoleError::Syntax(SyntaxError {
            kind: "json",
            line: 3,
            column: 7,
            message: "expected value".into(),
        }));
        assert_eq!(status, 400);
        assert_eq!(
            (body["line"].as_u64(), body["column"].as_u64()),
            (Some(3), Some(7))
        );
        let (status, body) = body_of(ConsoleError::Invalid(InvalidInput::DataId("a b".into())));
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid dataId : a b"))
        );
        let (status, body) = body_of(ConsoleError::Transfer(TransferError::Conflicts(vec![
            "G/a".into(),
        ])));
        assert_eq!((status, body["conflicts"][0].as_str()), (409, Some("G/a")));
        let (status, _) = body_of(ConsoleError::Service(ServiceError::Write(
            RouteError::NoLeader,
        )));
        assert_eq!(status, 503);
        let (status, _) = body_of(ConsoleError::Service(ServiceError::Rejected(
            ApplyError::NamespaceNotEmpty("dev".into(), 2),
        )));
        assert_eq!(status, 409);
        assert!(matches!(
            json_body::<serde_json::Value>(b""),
            Err(ConsoleError::Body(_))
        ));
        assert!(matches!(
            json_body::<serde_json::Value>(b"{"),
            Err(ConsoleError::Body(_))
        ));
    }
}
