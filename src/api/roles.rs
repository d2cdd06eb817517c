//! Nacos' roles and permissions API, for tools that manage access the Nacos
//! way: users are bound to roles, roles are granted resources.
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /nacos/v1/auth/roles` | admin | `pageNo`, `pageSize`, `username`, `role`, `search=accurate\|blur` → page of `{role, username}` |
//! | `GET /nacos/v1/auth/roles/search` | admin | `role` → role names containing it |
//! | `POST /nacos/v1/auth/roles` | admin | `role`, `username`: binds the user (creates the role) |
//! | `DELETE /nacos/v1/auth/roles` | admin | `role`, `username`: unbinds; without `username` removes the role |
//! | `GET /nacos/v1/auth/permissions` | admin | `role`, `pageNo`, `pageSize`, `search` → page of `{role, resource, action}` |
//! | `POST /nacos/v1/auth/permissions` | admin | `role`, `resource=NS:GROUP:config/DATAID` (`*` wildcards), `action=r\|w\|rw` |
//! | `DELETE /nacos/v1/auth/permissions` | admin | `role`, `resource`, `action` |
//!
//! Resources and actions are read as Nacos writes them
//! ([`tacos_app::auth::roles`]: `dev:*:*`, `dev:GROUP:*`,
//! `dev:GROUP:config/app*.yaml`; `r`, `w` write-only, `rw`); a resource
//! Tacos could not honour is refused with a clear message rather than
//! half-honoured. `ROLE_ADMIN` is listed for admin users but cannot be bound or removed
//! here (admins are users with the admin flag: `PUT /nacos/v1/auth/users`
//! with `admin=true`).

use actix_web::{web, HttpRequest, HttpResponse};

use super::auth::{bad_request, write_result};
use super::guard::{Need, Routes};
use super::params::{client_ip, name_filter, paging, Params};
use super::render::Page;
use crate::api::app_state::AppState;
use crate::api::call::{Call, FormCall};
use tacos_app::auth::roles::{
    action, parse_resource, permission_rows, role_bindings, role_names, PermissionRow, RoleBinding,
};
use tacos_app::query::NameMatch;
use tacos_core::validate::InvalidInput;
use tacos_state::{Access, Resource};

pub fn routes(r: &mut Routes) {
    r.get("/nacos/v1/auth/roles", Need::Admin, list_roles)
        .get("/nacos/v1/auth/roles/search", Need::Admin, search_roles)
        .post("/nacos/v1/auth/roles", Need::Admin, bind)
        .delete("/nacos/v1/auth/roles", Need::Admin, unbind)
        .get("/nacos/v1/auth/permissions", Need::Admin, list_permissions)
        .post("/nacos/v1/auth/permissions", Need::Admin, grant)
        .delete("/nacos/v1/auth/permissions", Need::Admin, revoke);
}

/// A `username` or `role` filter: exact unless `search=blur` (Nacos'
/// role and permission lists default to `accurate`).
fn filter<'a>(params: &'a Params, name: &str) -> NameMatch<'a> {
    name_filter(params, name, false)
}

async fn list_roles(req: HttpRequest, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &[]);
    let (page_no, page_size) = match paging(&params, 100) {
        Ok(p) => p,
        Err(e) => return bad_request(e),
    };
    let (role_filter, user_filter) = (filter(&params, "role"), filter(&params, "username"));
    let found: Vec<RoleBinding> = role_bindings(&app.service.state())
        .into_iter()
        .filter(|item| role_filter.matches(&item.role) && user_filter.matches(&item.username))
        .collect();
    let total = found.len();
    HttpResponse::Ok().json(Page::of(found.into_iter(), total, page_no, page_size))
}

async fn search_roles(req: HttpRequest, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &[]);
    let state = app.service.state();
    HttpResponse::Ok().json(role_names(&state, params.str("role")))
}

async fn bind(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let fields =
        (|| Ok::<_, InvalidInput>((params.required("role")?, params.required("username")?)))();
    let (role, username) = match fields {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth.bind_role(role, username, &caller).await,
        "add role ok!",
    )
}

async fn unbind(call: FormCall) -> HttpResponse {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        body: _,
        ..
    }) = call;
    let role = match params.required("role") {
        Ok(role) => role,
        Err(e) => return bad_request(e),
    };
    let username = params.get("username").filter(|u| !u.is_empty());
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth.unbind_role(role, username, &caller).await,
        &format!("delete role of user {} ok!", username.unwrap_or_default()),
    )
}

/// `role`, `resource` and `action` of a permission write.
fn permission_fields(params: &Params) -> Result<(&str, Resource, Access), InvalidInput> {
    let role = params.required("role")?;
    let resource = parse_resource(params.required("resource")?)?;
    let access = action(params.required("action")?)?;
    Ok((role, resource, access))
}

async fn list_permissions(req: HttpRequest, app: web::Data<AppState>) -> HttpResponse {
    let params = Params::parse(&req, &[]);
    let (page_no, page_size) = match paging(&params, 100) {
        Ok(p) => p,
        Err(e) => return bad_request(e),
    };
    let role_filter = filter(&params, "role");
    let found: Vec<PermissionRow> = permission_rows(&app.service.state())
        .into_iter()
        .filter(|row| role_filter.matches(&row.role))
        .collect();
    let total = found.len();
    HttpResponse::Ok().json(Page::of(found.into_iter(), total, page_no, page_size))
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
    let (role, resource, access) = match permission_fields(&params) {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth
            .set_role_permission(role, &resource, Some(access), &caller)
            .await,
        "add permission ok!",
    )
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
    let (role, resource, access) = match permission_fields(&params) {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    // Nacos deletes the (role, resource, action) row: a permission held
    // with another action stays.
    let held = app
        .service
        .state()
        .role(role)
        .and_then(|r| r.permissions.get(&resource).copied());
    if held != Some(access) {
        return write_result(Ok(()), "delete permission ok!");
    }
    let caller = principal.caller("", client_ip(&req));
    write_result(
        app.auth
            .set_role_permission(role, &resource, None, &caller)
            .await,
        "delete permission ok!",
    )
}
