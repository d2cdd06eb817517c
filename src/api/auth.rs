//! Login, users, permissions and the audit log.
//!
//! | route | needs | what |
//! |---|---|---|
//! | `POST /nacos/v1/auth/login`, `/nacos/v1/auth/users/login` | public | `username`, `password` (query or form) → `{accessToken, tokenTtl, globalAdmin, username}`; 403 on failure, 429 when rate-limited |
//! | `GET /nacos/v1/auth/users` | admin | `pageNo`, `pageSize`, `username`, `search=accurate\|blur` → page of users (never a hash) |
//! | `POST /nacos/v1/auth/users` | admin | `username`, `password`, `admin=true` (Tacos) |
//! | `PUT /nacos/v1/auth/users` | login | `username`, `newPassword`: users change their own, admins anyone's; admins may also set `admin`, `enabled` |
//! | `DELETE /nacos/v1/auth/users` | admin | `username` (not an admin: 400 `cannot delete admin`; demote it first) |
//! | `GET /tacos/v1/auth/me` | login | who the caller is |
//! | `GET /tacos/v1/auth/permissions` | admin | `username` → that user's permissions: namespace (or `NS:GROUP:config/DATAID` for a narrower grant) → action |
//! | `POST /tacos/v1/auth/permissions` | admin | `username`, `namespace` (`*` = all), `group`, `dataId` (patterns, `*` when absent), `action=r\|w\|rw` |
//! | `DELETE /tacos/v1/auth/permissions` | admin | `username`, `namespace`, `group`, `dataId` |
//! | `/nacos/v1/auth/roles`, `/nacos/v1/auth/permissions` | admin | Nacos roles: see [`super::roles`] |
//! | `GET /tacos/v1/admin/audit` | admin | `user`, `action` (prefix), `target` (substring), `from`, `to` (epoch ms), `pageNo`, `pageSize` → rows newest first |

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Serialize;

use super::guard::{refusal, Need, Routes};
use super::params::{client_ip, name_filter, paging, Params};
use super::render::{self, v1_error, v1_service_error, Page};
use crate::api::app_state::AppState;
use crate::api::call::{Call, FormCall};
use tacos_app::auth::{AuthError, Principal};
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_state::{Access, AuditRow, Resource, User};

pub fn routes(r: &mut Routes) {
    r.post("/nacos/v1/auth/login", Need::Public, login)
        .post("/nacos/v1/auth/users/login", Need::Public, login)
        .get("/nacos/v1/auth/users", Need::Admin, list_users)
        .post("/nacos/v1/auth/users", Need::Admin, create_user)
        .put("/nacos/v1/auth/users", Need::Login, update_user)
        .delete("/nacos/v1/auth/users", Need::Admin, delete_user)
        .get("/tacos/v1/auth/me", Need::Login, me)
        .get("/tacos/v1/auth/permissions", Need::Admin, list_permissions)
        .post("/tacos/v1/auth/permissions", Need::Admin, grant)
        .delete("/tacos/v1/auth/permissions", Need::Admin, revoke)
        .get("/tacos/v1/admin/audit", Need::Admin, audit);
}

pub(super) fn bad_request(error: InvalidInput) -> HttpResponse {
    v1_error(StatusCode::BAD_REQUEST, error)
}

/// Nacos' `RestResult` for user, role and permission writes:
/// `RestResultUtils.success("create user ok!")` puts the text in `data`,
/// `message` stays `null`.
fn rest_ok(text: &str) -> HttpResponse {
    render::rest_ok(None, text)
}

pub(super) fn write_result(result: Result<(), ServiceError>, message: &str) -> HttpResponse {
    match result {
        Ok(()) => rest_ok(message),
        Err(ServiceError::Denied(e)) => refusal(&e),
        Err(e) => v1_service_error(&e),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LoginReply<'a> {
    access_token: &'a str,
    token_ttl: u64,
    global_admin: bool,
    username: &'a str,
}

async fn login(req: HttpRequest, body: web::Bytes, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &body);
    let fields =
        (|| Ok::<_, InvalidInput>((params.required("username")?, params.required("password")?)))();
    let (username, password) = match fields {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    match app.auth.login(username, password, &client_ip(&req)).await {
        Ok(login) => HttpResponse::Ok().json(LoginReply {
            access_token: &login.token,
            token_ttl: login.ttl,
            global_admin: login.user.admin,
            username: &login.user.username,
        }),
        Err(AuthError::WrongCredentials) => HttpResponse::Forbidden()
            .content_type("text/plain;charset=UTF-8")
            .body("unknown user!"),
        Err(e) => refusal(&e),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UserView {
    username: String,
    admin: bool,
    enabled: bool,
    create_time: i64,
    modify_time: i64,
    /// Namespace (`*` = all, "" = public) → `r`, `w` or `rw`; a grant
    /// narrower than a namespace is keyed by its resource
    /// (`NS:GROUP:config/DATAID`, `NS:GROUP:*`).
    permissions: BTreeMap<String, &'static str>,
}

impl UserView {
    fn of(user: &User) -> Self {
        UserView {
            username: user.username.clone(),
            admin: user.admin,
            enabled: user.enabled,
            create_time: user.create_time,
            modify_time: user.modify_time,
            permissions: user
                .permissions
                .iter()
                .map(|(resource, access)| {
                    let shown = if resource.is_namespace_wide() {
                        resource.namespace.clone()
                    } else {
                        resource.to_string()
                    };
                    (shown, access.code())
                })
                .collect(),
        }
    }
}

async fn list_users(call: Call) -> HttpResponse {
    let Call { app, params, .. } = call;
    let (page_no, page_size) = match paging(&params, 100) {
        Ok(p) => p,
        Err(e) => return bad_request(e),
    };
    // Nacos' user list is blur (its LIKE: `*` wildcards) unless told
    // `search=accurate`.
    let name = name_filter(&params, "username", true);
    let state = app.service.state();
    let found: Vec<UserView> = state
        .users()
        .filter(|u| name.matches(&u.username))
        .map(|u| UserView::of(u))
        .collect();
    let total = found.len();
    HttpResponse::Ok().json(Page::of(found.into_iter(), total, page_no, page_size))
}

/// `true`/`false` parameter, absent = `None`.
fn flag(params: &Params, name: &'static str) -> Result<Option<bool>, InvalidInput> {
    match params.get(name) {
        None | Some("") => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(other) => Err(InvalidInput::Other(
            name,
            format!("{other:?} (true or false)"),
        )),
    }
}

async fn create_user(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let fields = (|| {
        Ok::<_, InvalidInput>((
            params.required("username")?,
            params.required("password")?,
            flag(&params, "admin")?.unwrap_or(false),
        ))
    })();
    let (username, password, admin) = match fields {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth
            .create_user(username, password, admin, &caller)
            .await,
        "create user ok!",
    )
}

async fn update_user(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let fields = (|| {
        Ok::<_, InvalidInput>((
            params.required("username")?,
            params.get("newPassword").filter(|p| !p.is_empty()),
            flag(&params, "admin")?,
            flag(&params, "enabled")?,
        ))
    })();
    let (username, new_password, admin, enabled) = match fields {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    write_result(
        app.auth
            .update_user(
                &principal,
                username,
                new_password,
                admin,
                enabled,
                &client_ip(&req),
            )
            .await,
        "update user ok!",
    )
}

async fn delete_user(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let username = match params.required("username") {
        Ok(u) => u,
        Err(e) => return bad_request(e),
    };
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth.remove_user(username, &caller).await,
        "delete user ok!",
    )
}

async fn me(call: Call) -> HttpResponse {
    let Call { principal, .. } = call;
    match &principal {
        Principal::User(user) => HttpResponse::Ok().json(UserView::of(user)),
        Principal::Open => refusal(&AuthError::NoCredentials),
    }
}

async fn list_permissions(call: Call) -> HttpResponse {
    let Call { app, params, .. } = call;
    let username = match params.required("username") {
        Ok(u) => u,
        Err(e) => return bad_request(e),
    };
    match app.service.state().user(username) {
        Some(user) => HttpResponse::Ok().json(UserView::of(user).permissions),
        None => v1_error(StatusCode::NOT_FOUND, format!("user not exist: {username}")),
    }
}

async fn set_permission(
    req: &HttpRequest,
    params: &Params,
    app: &AppState,
    principal: &Principal,
    access: Option<Access>,
) -> HttpResponse {
    let fields =
        (|| Ok::<_, InvalidInput>((params.required("username")?, params.required("namespace")?)))();
    let (username, namespace) = match fields {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let pattern = |name| match params.str(name).trim() {
        "" => "*",
        given => given,
    };
    let namespace = match namespace {
        tacos_state::ALL_NAMESPACES => namespace,
        one => tacos_state::canonical_namespace(one),
    };
    let resource = Resource::new(namespace, pattern("group"), pattern("dataId"));
    let caller = principal.caller("", client_ip(req));
    write_result(
        app.auth
            .set_permission(username, &resource, access, &caller)
            .await,
        "ok",
    )
}

async fn grant(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let action = params.str("action");
    let Some(access) = Access::parse(action) else {
        return bad_request(InvalidInput::Other(
            "action",
            format!("{action:?} (r, w or rw)"),
        ));
    };
    set_permission(&req, &params, &app, &principal, Some(access)).await
}

async fn revoke(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    set_permission(&req, &params, &app, &principal, None).await
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuditView<'a> {
    id: u64,
    time: i64,
    user: &'a str,
    ip: &'a str,
    action: &'a str,
    target: &'a str,
    detail: &'a str,
    outcome: &'a str,
}

impl<'a> AuditView<'a> {
    fn of(row: &'a AuditRow) -> Self {
        AuditView {
            id: row.id,
            time: row.time_ms,
            user: &row.user,
            ip: &row.ip,
            action: &row.action,
            target: &row.target,
            detail: &row.detail,
            outcome: &row.outcome,
        }
    }
}

async fn audit(call: Call) -> HttpResponse {
    let Call { app, params, .. } = call;
    let filters = (|| {
        Ok::<_, InvalidInput>((
            paging(&params, 100)?,
            params.number("from", 0)? as i64,
            params.number("to", i64::MAX as u64)? as i64,
        ))
    })();
    let ((page_no, page_size), from, to) = match filters {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let (user, action, target) = (
        params.str("user"),
        params.str("action"),
        params.str("target"),
    );
    let state = app.service.state();
    let matches = |row: &AuditRow| {
        (user.is_empty() || *row.user == *user)
            && row.action.starts_with(action)
            && row.target.contains(target)
            && (from..=to).contains(&row.time_ms)
    };
    // Newest first. Only the page's rows are kept: most rows live in
    // compressed chunks and are decoded one chunk at a time to be counted.
    let skip = Page::<AuditView>::skipped(page_no, page_size);
    let mut total = 0;
    let mut page = Vec::new();
    for row in state.audit().rev() {
        if !matches(&row) {
            continue;
        }
        if total >= skip && page.len() < page_size as usize {
            page.push(row);
        }
        total += 1;
    }
    HttpResponse::Ok().json(Page::window(
        page.iter().map(|row| AuditView::of(row)).collect(),
        total,
        page_no,
        page_size,
    ))
}
