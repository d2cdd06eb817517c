//! What a handler starts from, as one extractor: the node's services, who
//! asks, the request's parameters and the request itself. Without it every
//! handler repeats the same four arguments and the same two lines (parse
//! the parameters, name the caller).
//!
//! [`Call`] reads the query string only, so a handler can still take its
//! body as it needs it (JSON, multipart); [`FormCall`] also reads a form
//! body into the parameters (Nacos' write routes take either) and keeps
//! the body. Every HTTP surface's handlers start from one of the two (the
//! Nacos v1, v2 and v3 routes, users and roles, admin, the console).

use std::future::{ready, Ready};
use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use futures::future::LocalBoxFuture;

use super::params::{client_ip, Params};
use crate::api::app_state::AppState;
use tacos_app::auth::Principal;
use tacos_app::service::Caller;

/// A request the guard let through, with its query parameters. A route
/// without an established [`Principal`] gets 403 (fail closed).
pub struct Call {
    pub app: web::Data<AppState>,
    pub principal: Principal,
    pub params: Params,
    pub req: HttpRequest,
    /// The body as sent ([`FormCall`]; empty for a [`Call`]): for what is
    /// not a form field (a multipart zip, a JSON list, repeated `ids`).
    pub body: web::Bytes,
}

impl Call {
    fn of(req: &HttpRequest, body: web::Bytes) -> Result<Call, actix_web::Error> {
        let app = req.app_data::<web::Data<AppState>>().cloned();
        let principal = req.extensions().get::<Principal>().cloned();
        match (app, principal) {
            (Some(app), Some(principal)) => Ok(Call {
                app,
                principal,
                params: Params::parse(req, &body),
                req: req.clone(),
                body,
            }),
            (None, _) => Err(actix_web::error::ErrorInternalServerError(
                "the server has no app state",
            )),
            (_, None) => Err(actix_web::error::ErrorForbidden("not authenticated")),
        }
    }

    /// Who a write is recorded as: the logged-in user (or, with open API
    /// access, `src_user`), from the client IP.
    pub fn caller_as(&self, src_user: &str) -> Caller {
        self.principal.caller(src_user, client_ip(&self.req))
    }

    /// Who a write is recorded as: the logged-in user, from the client IP.
    pub fn caller(&self) -> Caller {
        self.caller_as("")
    }
}

impl FromRequest for Call {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Call::of(req, web::Bytes::new()))
    }
}

/// A [`Call`] whose parameters also hold the fields of a form body.
pub struct FormCall(pub Call);

impl Deref for FormCall {
    type Target = Call;

    fn deref(&self) -> &Call {
        &self.0
    }
}

impl FromRequest for FormCall {
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = web::Bytes::from_request(req, payload);
        let req = req.clone();
        Box::pin(async move { Call::of(&req, body.await?).map(FormCall) })
    }
}
