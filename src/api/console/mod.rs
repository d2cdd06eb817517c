//! The web console: its static files and its JSON API.
//!
//! The console is plain HTML, CSS and JavaScript modules in `web-console/`,
//! with one bundle built from npm (CodeMirror, uPlot) committed beside
//! them, all embedded into the binary ([`assets`]): a user gets it with the
//! server, and `cargo build` needs no Node. The files hold no data and are public; everything the
//! console shows comes from the JSON routes below, which need a login
//! (namespace rights are checked per request, as on the Nacos routes), and
//! from the existing login, user, permission and audit routes.
//!
//! The console API exists beside the Nacos open API because the console
//! needs what Nacos' API does not give: config counts per namespace with
//! the caller's rights, a syntax check and a diff before a publish, CAS
//! conflicts as a distinct answer, history diffs, who listens to a config,
//! import/export reports, and a cluster view gathered from every node.
//! Answers are JSON; errors are `{"error": message, "kind": ...}` with a
//! status that says what went wrong (400 bad input, 403 no right, 404, 409
//! conflict, 503 no leader). Writes go through the config service and Raft
//! like every other write, with the logged-in user as the caller (audited).
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /tacos/api/console/namespaces` | login | namespaces the caller may read, config counts, the caller's right |
//! | `POST`, `PUT`, `DELETE /tacos/api/console/namespaces` | admin | create, rename, delete (refused while it holds configs) |
//! | `GET /tacos/api/console/configs` | login | search (blur/accurate), type filter, paging |
//! | `GET`, `POST`, `DELETE /tacos/api/console/config` | login | one config with its beta; publish (type, syntax check, CAS); delete |
//! | `POST /tacos/api/console/config/check` | login | syntax check |
//! | `POST /tacos/api/console/config/preview` | login | syntax check and diff against the current version |
//! | `POST`, `DELETE /tacos/api/console/config/beta`, `POST .../beta/promote` | login | beta publish, stop, promote |
//! | `POST /tacos/api/console/config/gray` | login | publish a tag gray (`tag`, content; the config must exist) |
//! | `DELETE /tacos/api/console/config/gray`, `POST .../gray/promote` | login | any gray version (beta, tag) by name: stop, promote |
//! | `GET /tacos/api/console/config/listeners` | login | who listens (on every node), with the md5 they hold |
//! | `GET /tacos/api/console/history`, `/history/item`, `/history/diff`; `POST /history/rollback` | login | history rows, one row, a diff of two versions, a rollback |
//! | `GET /tacos/api/console/export`, `POST /tacos/api/console/import` | login | Nacos zip export and import |
//! | `GET /tacos/api/console/cluster` | admin | every node's Raft view and health |
//! | `GET /tacos/api/console/dashboard` | admin | every node's recent samples (rates, p99s, Raft, RSS, CPU) for the charts |
//! | `GET /`, `/console`, `/console/{file}` | public | the console's static files |
//!
//! docs/console.md describes every parameter.

mod assets;
mod beta;
mod cluster;
mod configs;
mod dashboard;
mod diff;
mod history;
mod import_export;
mod listeners;
mod namespaces;
mod syntax;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::call::Call;
use super::guard::{Need, Routes};
use syntax::SyntaxError;
use tacos_app::auth::AuthError;
use tacos_app::read::Reader;
use tacos_app::service::ServiceError;
use tacos_app::transfer::TransferError;
use tacos_core::validate::InvalidInput;
use tacos_raft::rpc::RouteError;
use tacos_state::ApplyError;
use tacos_state::ConfigKey;

pub fn routes(r: &mut Routes) {
    assets::routes(r);
    r.get(
        "/tacos/api/console/namespaces",
        Need::Login,
        namespaces::list_namespaces,
    )
    .post(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::create_namespace,
    )
    .put(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::update_namespace,
    )
    .delete(
        "/tacos/api/console/namespaces",
        Need::Admin,
        namespaces::delete_namespace,
    )
    .get("/tacos/api/console/configs", Need::Login, configs::list)
    .get("/tacos/api/console/config", Need::Login, configs::get)
    .post("/tacos/api/console/config", Need::Login, configs::publish)
    .delete("/tacos/api/console/config", Need::Login, configs::remove)
    .post(
        "/tacos/api/console/config/check",
        Need::Login,
        configs::check,
    )
    .post(
        "/tacos/api/console/config/preview",
        Need::Login,
        configs::preview,
    )
    .post(
        "/tacos/api/console/config/beta",
        Need::Login,
        beta::publish_beta,
    )
    .delete(
        "/tacos/api/console/config/beta",
        Need::Login,
        beta::stop_beta,
    )
    .post(
        "/tacos/api/console/config/beta/promote",
        Need::Login,
        beta::promote_beta,
    )
    .post(
        "/tacos/api/console/config/gray",
        Need::Login,
        beta::publish_tag_gray,
    )
    .delete(
        "/tacos/api/console/config/gray",
        Need::Login,
        beta::stop_gray,
    )
    .post(
        "/tacos/api/console/config/gray/promote",
        Need::Login,
        beta::promote_gray,
    )
    .get(
        "/tacos/api/console/config/listeners",
        Need::Login,
        listeners::listeners,
    )
    .get("/tacos/api/console/history", Need::Login, history::list)
    .get(
        "/tacos/api/console/history/item",
        Need::Login,
        history::item,
    )
    .get(
        "/tacos/api/console/history/diff",
        Need::Login,
        history::diff,
    )
    .post(
        "/tacos/api/console/history/rollback",
        Need::Login,
        history::rollback,
    )
    .get(
        "/tacos/api/console/export",
        Need::Login,
        import_export::export,
    )
    .post(
        "/tacos/api/console/import",
        Need::Login,
        import_export::import,
    )
    .get("/tacos/api/console/cluster", Need::Admin, cluster::overview)
    .get(
        "/tacos/api/console/dashboard",
        Need::Admin,
        dashboard::dashboard,
    );
}

/// Why a console request failed. Each kind has its own status, and the
/// body carries the message the console shows.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
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
pub const CAS_MESSAGE: &str = "someone else changed this config after you opened it; \
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
fn json_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ConsoleError> {
    if body.is_empty() {
        return Err(ConsoleError::Body("a JSON body is required".into()));
    }
    serde_json::from_slice(body).map_err(|e| ConsoleError::Body(e.to_string()))
}

/// A JSON answer that is never cached (it holds live data).
fn ok_json(value: impl serde::Serialize) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(value)
}

/// What console handlers ask of a [`Call`].
impl Call {
    /// The config the route names by its `namespace`, `group` and `dataId`
    /// parameters (a write's use case decides whether the caller may).
    pub fn config(&self) -> Result<ConfigKey, ConsoleError> {
        configs::key_param(&self.params)
    }

    /// [`config`](Self::config), once the caller may read it.
    pub fn readable_config(&self) -> Result<ConfigKey, ConsoleError> {
        let key = self.config()?;
        self.reader().key(&key)?;
        Ok(key)
    }

    /// The caller's reads ([`tacos_app::read`]).
    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.principal)
    }
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

    /// Where the console's JSON routes live.
    const API: &str = "/tacos/api/console";

    #[test]
    fn every_console_api_route_needs_a_login() {
        for route in crate::api::guard::declared() {
            if route.path.starts_with(API) {
                assert!(matches!(route.need, Need::Login | Need::Admin), "{route:?}");
            }
            if route.path == "/tacos/api/console/cluster"
                || route.path == "/tacos/api/console/dashboard"
                || (route.path == "/tacos/api/console/namespaces"
                    && route.method != actix_web::http::Method::GET)
            {
                assert_eq!(route.need, Need::Admin, "{route:?}");
            }
        }
    }
}
