//! Route declarations and the access guard.
//!
//! Every HTTP route is registered through [`Routes::add`], which takes what
//! the route needs ([`Need`]) in the same call that registers the handler:
//! a route cannot exist without a declaration. The [`guard`] middleware runs
//! before any handler. It looks the request up by method and by the pattern
//! the router matched (never the raw path, so `/a/`, `//a` or `%2F` tricks
//! reach either the same declaration or none), and:
//!
//! * no declaration (including no route at all): 404, the handler never runs;
//! * `Public`: passes;
//! * `OpenApi` with open-API auth off: passes as [`Principal::Open`];
//! * otherwise: authenticates (token, or username/password), refuses with
//!   403 (429 when rate-limited), checks `Admin`, and hands the handler a
//!   [`Principal`]. What the principal may do with the configs a request
//!   names is the application's to decide: each write use case asks of its
//!   `Caller`, and reads are opened with `tacos_app::read::Reader`. No
//!   handler can ask itself (`Principal`'s checks are private to the app).
//!
//! No header grants trust: not `User-Agent: Nacos-Server`, not
//! `serverIdentity`. `tacos routes` prints the table ([`declared`]).

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{AUTHORIZATION, CONTENT_TYPE};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest, HttpResponse};
use base64::Engine;
use serde::Serialize;

use super::params::{client_ip, Params};
use crate::api::app_state::AppState;
use tacos_app::auth::{AuthError, Credentials, Principal};

/// What a route needs from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// Nothing (health, login, metrics).
    Public,
    /// A login when `--open-api-auth` is on; the handler then checks the
    /// namespace. Anyone when it is off (as in Nacos).
    OpenApi,
    /// Any enabled user.
    Login,
    /// An admin.
    Admin,
}

/// One declared route.
#[derive(Debug, Clone, Serialize)]
pub struct RouteSpec {
    #[serde(serialize_with = "method_name")]
    pub method: Method,
    pub path: &'static str,
    pub need: Need,
}

fn method_name<S: serde::Serializer>(method: &Method, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(method.as_str())
}

/// Registers routes and records what each needs.
pub struct Routes<'a> {
    cfg: Option<&'a mut web::ServiceConfig>,
    specs: Vec<RouteSpec>,
}

impl<'a> Routes<'a> {
    /// Routes registered into `cfg`.
    pub fn new(cfg: &'a mut web::ServiceConfig) -> Self {
        Routes {
            cfg: Some(cfg),
            specs: Vec::new(),
        }
    }

    /// Only the declarations (for `tacos routes` and tests).
    pub fn table_only() -> Routes<'static> {
        Routes {
            cfg: None,
            specs: Vec::new(),
        }
    }

    /// Registers `handler` for `method path`, needing `need`.
    pub fn add<F, Args>(
        &mut self,
        method: Method,
        path: &'static str,
        need: Need,
        handler: F,
    ) -> &mut Self
    where
        F: actix_web::Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: actix_web::Responder + 'static,
    {
        if let Some(cfg) = self.cfg.as_deref_mut() {
            cfg.route(path, web::method(method.clone()).to(handler));
        }
        self.specs.push(RouteSpec { method, path, need });
        self
    }

    pub fn get<F, Args>(&mut self, path: &'static str, need: Need, handler: F) -> &mut Self
    where
        F: actix_web::Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: actix_web::Responder + 'static,
    {
        self.add(Method::GET, path, need, handler)
    }

    pub fn post<F, Args>(&mut self, path: &'static str, need: Need, handler: F) -> &mut Self
    where
        F: actix_web::Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: actix_web::Responder + 'static,
    {
        self.add(Method::POST, path, need, handler)
    }

    pub fn put<F, Args>(&mut self, path: &'static str, need: Need, handler: F) -> &mut Self
    where
        F: actix_web::Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: actix_web::Responder + 'static,
    {
        self.add(Method::PUT, path, need, handler)
    }

    pub fn delete<F, Args>(&mut self, path: &'static str, need: Need, handler: F) -> &mut Self
    where
        F: actix_web::Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: actix_web::Responder + 'static,
    {
        self.add(Method::DELETE, path, need, handler)
    }

    pub fn into_specs(self) -> Vec<RouteSpec> {
        self.specs
    }
}

/// The declarations, looked up by matched pattern, then method (no
/// allocation per request).
#[derive(Debug, Default)]
pub struct Policy {
    table: HashMap<&'static str, Vec<(Method, Need)>>,
    /// Paths the router has matched to a pattern without parameters (the
    /// path is the pattern), so later requests on them skip the walk through
    /// the route table (which actix does linearly; with ~150 routes it was
    /// 5% of a config read's instructions). What the router matches depends
    /// on the path alone, so a remembered answer stays right; the set holds
    /// at most one entry per declared pattern.
    static_paths: RwLock<HashSet<&'static str>>,
}

impl Policy {
    pub fn of(specs: &[RouteSpec]) -> Self {
        let mut table: HashMap<&'static str, Vec<(Method, Need)>> = HashMap::new();
        for spec in specs {
            table
                .entry(spec.path)
                .or_default()
                .push((spec.method.clone(), spec.need));
        }
        Policy {
            table,
            static_paths: RwLock::default(),
        }
    }

    pub fn need(&self, method: &Method, pattern: &str) -> Option<Need> {
        self.table
            .get(pattern)?
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, need)| *need)
    }

    /// The declared pattern the router matches `req` to, if any.
    fn pattern(&self, req: &ServiceRequest) -> Option<&'static str> {
        let path = req.path();
        if let Some(&known) = read(&self.static_paths).get(path) {
            return Some(known);
        }
        let matched = req.match_pattern()?;
        let (&pattern, _) = self.table.get_key_value(matched.as_str())?;
        if pattern == path {
            write(&self.static_paths).insert(pattern);
        }
        Some(pattern)
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every declared route, in registration order.
pub fn declared() -> Vec<RouteSpec> {
    let mut routes = Routes::table_only();
    super::declare(&mut routes);
    routes.into_specs()
}

/// The HTTP answer to an auth failure. Nacos answers 403 to every auth
/// failure (its clients re-login on 403); a rate limit is 429.
pub fn refusal(error: &AuthError) -> HttpResponse {
    let mut response = HttpResponse::build(refusal_status(error));
    if let AuthError::RateLimited(wait) | AuthError::Locked { wait, .. } = error {
        response.insert_header(("Retry-After", wait.as_secs().max(1).to_string()));
    }
    response
        .content_type("text/plain;charset=UTF-8")
        .body(error.to_string())
}

/// The status of a refusal: 429 for a rate limit or a locked account (with
/// `Retry-After`), 503 while auth cannot answer (not initialized, the
/// directory down), 403 otherwise.
pub fn refusal_status(error: &AuthError) -> StatusCode {
    match error {
        AuthError::RateLimited(_) | AuthError::Locked { .. } => StatusCode::TOO_MANY_REQUESTS,
        AuthError::NotInitialized | AuthError::DirectoryUnavailable(_) => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        AuthError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::FORBIDDEN,
    }
}

/// Credentials in headers and the query string: `Authorization: Bearer`,
/// `accessToken` (header or parameter), `Authorization: Basic`, or
/// `username` + `password` parameters.
fn credentials_from(req: &HttpRequest, params: &Params) -> Credentials {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let authorization = header(AUTHORIZATION.as_str()).unwrap_or_default();
    let (scheme, value) = authorization.split_once(' ').unwrap_or_default();
    let bearer = scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| value.trim().to_string());
    let basic = scheme
        .eq_ignore_ascii_case("basic")
        .then(|| {
            base64::engine::general_purpose::STANDARD
                .decode(value.trim())
                .ok()
        })
        .flatten()
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|pair| {
            pair.split_once(':')
                .map(|(u, p)| (u.to_string(), p.to_string()))
        });
    let param = |name| {
        params
            .get(name)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let (username, password) = match basic {
        Some((u, p)) => (Some(u), Some(p)),
        None => (param("username"), param("password")),
    };
    Credentials {
        token: bearer
            .or_else(|| header("accessToken"))
            .or_else(|| param("accessToken")),
        username,
        password,
    }
}

fn is_form(req: &ServiceRequest) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// The credentials of a request, reading a form body when the query and
/// headers hold none (the body is put back for the handler).
async fn credentials(req: &mut ServiceRequest) -> Result<Credentials, actix_web::Error> {
    let found = credentials_from(req.request(), &Params::parse(req.request(), &[]));
    if !found.is_empty() || !is_form(req) {
        return Ok(found);
    }
    let body = req.extract::<web::Bytes>().await?;
    let found = credentials_from(req.request(), &Params::parse(req.request(), &body));
    req.set_payload(Payload::from(body));
    Ok(found)
}

/// The declared route pattern the router matched, found once per request:
/// the metrics middleware and the guard both need it.
#[derive(Clone, Copy)]
struct MatchedPattern(Option<&'static str>);

/// The declared pattern the router matched for `req` (cached in its
/// extensions); `None` when no route matches.
pub fn matched_pattern(req: &ServiceRequest) -> Option<&'static str> {
    if let Some(found) = req.extensions().get::<MatchedPattern>() {
        return found.0;
    }
    let pattern = req
        .app_data::<web::Data<AppState>>()
        .and_then(|app| app.policy.pattern(req));
    req.extensions_mut().insert(MatchedPattern(pattern));
    pattern
}

/// The middleware; see the module docs.
pub async fn guard(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(app) = req.app_data::<web::Data<AppState>>().cloned() else {
        return Err(actix_web::error::ErrorInternalServerError("no app state"));
    };
    let need = matched_pattern(&req).and_then(|pattern| app.policy.need(req.method(), pattern));
    let deny = |req: ServiceRequest, response: HttpResponse| {
        Ok(req.into_response(response).map_into_right_body())
    };
    let principal = match need {
        None => {
            return deny(
                req,
                HttpResponse::NotFound()
                    .content_type("text/plain;charset=UTF-8")
                    .body("no such route\n"),
            )
        }
        Some(Need::Public) => None,
        Some(Need::OpenApi) if !app.auth.open_api_auth() => Some(Principal::Open),
        Some(need) => {
            let found = credentials(&mut req).await?;
            let ip = client_ip(req.request());
            match app.auth.authenticate(&found, &ip).await {
                Ok(user) if need == Need::Admin && !user.admin => {
                    return deny(
                        req,
                        refusal(&AuthError::Forbidden(format!(
                            "{} is not an admin",
                            user.username
                        ))),
                    )
                }
                Ok(user) => Some(Principal::User(user)),
                Err(error) => return deny(req, refusal(&error)),
            }
        }
    };
    if let Some(principal) = principal {
        req.extensions_mut().insert(principal);
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_left_body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_declared_once_and_admin_routes_need_admin() {
        let routes = declared();
        let policy = Policy::of(&routes);
        let declared: usize = policy.table.values().map(Vec::len).sum();
        assert_eq!(declared, routes.len());
        for (path, methods) in &policy.table {
            let mut names: Vec<&str> = methods.iter().map(|(m, _)| m.as_str()).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), methods.len(), "{path} declared twice");
        }
        for route in &routes {
            if route.path.starts_with("/tacos/v1/admin/") {
                assert_eq!(route.need, Need::Admin, "{route:?}");
            }
            if route.path.starts_with("/nacos/v1/console/namespaces") {
                assert!(matches!(route.need, Need::Login | Need::Admin), "{route:?}");
            }
        }
        assert_eq!(policy.need(&Method::GET, "/health"), Some(Need::Public));
        assert_eq!(policy.need(&Method::PATCH, "/health"), None);
        assert_eq!(policy.need(&Method::GET, "/health/"), None);
    }
}
