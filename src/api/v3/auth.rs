//! Nacos 3's users, roles and permissions routes (`/nacos/v3/auth/user`,
//! `/role`, `/permission`, as its auth plugin's `UserControllerV3`,
//! `RoleControllerV3`, `PermissionControllerV3`), over the same use cases
//! and the same permission model as the v1 routes (`tacos_app::auth`,
//! `tacos_app::auth::roles`): a resource is `NAMESPACE:*:*`, anything else
//! is refused.
//!
//! Answers are Nacos 3's `Result` envelope. Its refusals: a missing
//! request parameter 400 code 10000, a number that does not parse 400 code
//! 20002, and what Nacos' controllers throw as `IllegalArgumentException`
//! (a user that exists, an admin to delete, a role write Tacos refuses) 400
//! in plain text `caused: ...;`, as Nacos' global handler writes it.

use crate::api::call::{Call, FormCall};
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Serialize;

use super::answer::{fail, missing_param, ok, Answer, Refusal, Refused, PARAMETER_VALIDATE_ERROR};
use super::params::{not_a_number, required_string};
use crate::api::app_state::AppState;
use crate::api::guard::refusal;
use crate::api::params::{client_ip, name_filter, Params};
use crate::api::render::{v1_error, Page};
use tacos_app::auth::roles::{
    action, parse_resource, permission_rows, role_bindings, role_names, PermissionRow, RoleBinding,
};
use tacos_app::auth::AuthError;
use tacos_app::query::Paging;
use tacos_app::service::ServiceError;
use tacos_core::validate::InvalidInput;
use tacos_state::ApplyError;

// ---- shared -------------------------------------------------------------------

/// A required `int` request parameter (`pageNo`, `pageSize`).
fn required_int(params: &Params, name: &str) -> Refused<i64> {
    let raw = params
        .get(name)
        .ok_or_else(|| missing_param(name, "int", false))?;
    if raw.trim().is_empty() {
        return Err(missing_param(name, "int", true).into());
    }
    Ok(raw.trim().parse().map_err(|_| not_a_number(raw, "int"))?)
}

/// `pageNo` and `pageSize`, both required (Nacos' `@RequestParam int`).
fn required_page(params: &Params) -> Refused<Paging> {
    let paging = Paging::at_least_one(
        required_int(params, "pageNo")?,
        required_int(params, "pageSize")?,
    );
    Ok(paging.map_err(|e| {
        let (name, current) = match &e {
            InvalidInput::Other(name, current) => (*name, current.clone()),
            other => ("pageNo", other.to_string()),
        };
        fail(
            StatusCode::BAD_REQUEST,
            PARAMETER_VALIDATE_ERROR,
            format!("Required parameter '{name}' should be positive integer, current is {current}"),
        )
    })?)
}

/// A page of `items` in the envelope.
fn page_of<T: Serialize>(items: Vec<T>, paging: Paging) -> Answer {
    let total = items.len();
    ok(Page::of(
        items.into_iter(),
        total,
        paging.page_no,
        paging.page_size,
    ))
}

/// A refusal Nacos' controllers throw as `IllegalArgumentException`: 400
/// `caused: ...;`.
fn illegal(message: impl std::fmt::Display) -> Refusal {
    v1_error(StatusCode::BAD_REQUEST, message).into()
}

/// A refused write: Tacos' input and state refusals as Nacos' illegal
/// arguments; no leader and internal failures with their status.
fn write_refused(error: &ServiceError) -> Refusal {
    match error {
        ServiceError::Invalid(_)
        | ServiceError::Rejected(_)
        | ServiceError::AdminNotDeletable(_) => illegal(error),
        ServiceError::Denied(e) => refusal(e).into(),
        other => super::answer::service_error(other).into(),
    }
}

/// `data` is Nacos' message on success.
fn done(result: Result<(), ServiceError>, message: &str) -> Answer {
    result.map_err(|e| write_refused(&e))?;
    ok(message)
}

// ---- users --------------------------------------------------------------------

/// `POST /nacos/v3/auth/user`: `username`, `password` → `create user ok!`;
/// an existing user 400 `user 'x' already exist!`.
pub async fn create_user(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let username = required_string(&params, "username")?;
    let password = required_string(&params, "password")?;
    if app.service.state().user(username).is_some() {
        return Err(illegal(format!("user '{username}' already exist!")));
    }
    let caller = principal.caller("", client_ip(&req));
    let created = app
        .auth
        .create_user(username, password, false, &caller)
        .await;
    match created {
        Err(ServiceError::Rejected(ApplyError::UserExists(_))) => {
            Err(illegal(format!("user '{username}' already exist!")))
        }
        other => done(other, "create user ok!"),
    }
}

/// `POST /nacos/v3/auth/user/admin`: Nacos 3 creates the first admin here
/// while there is none. A Tacos cluster gets its first admin when it
/// starts (`--admin-password`), so there always is one: Nacos' answer for
/// that case, 200 with code 409.
pub async fn create_admin(app: web::Data<AppState>) -> HttpResponse {
    let has_admin = app.service.state().users().any(|u| u.admin);
    if has_admin {
        HttpResponse::Ok().json(serde_json::json!({
            "code": 409, "message": "have admin user cannot use it.", "data": null
        }))
    } else {
        refusal(&AuthError::NotInitialized)
    }
}

/// `DELETE /nacos/v3/auth/user?username=` → `delete user ok!`; an admin
/// cannot be deleted (400 `cannot delete admin: x`, as Nacos 3).
pub async fn delete_user(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let username = required_string(&params, "username")?;
    let caller = principal.caller("", client_ip(&req));
    done(
        app.auth.remove_user(username, &caller).await,
        "delete user ok!",
    )
}

/// `PUT /nacos/v3/auth/user`: `username`, `newPassword` → `update user
/// ok!`; users change their own, admins anyone's (else 403); a user that
/// does not exist 400 `user x not exist!`.
pub async fn update_user(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let username = required_string(&params, "username")?;
    let new_password = required_string(&params, "newPassword")?;
    if principal.is_admin() && app.service.state().user(username).is_none() {
        return Err(illegal(format!("user {username} not exist!")));
    }
    done(
        app.auth
            .update_user(
                &principal,
                username,
                Some(new_password),
                None,
                None,
                &client_ip(&req),
            )
            .await,
        "update user ok!",
    )
}

/// A user as the list shows it: the name (Nacos' `User` also carries the
/// password hash; Tacos never answers one).
#[derive(Serialize)]
struct UserItem {
    username: String,
}

/// `GET /nacos/v3/auth/user/list`: `pageNo`, `pageSize` (required),
/// `username`, `search` (`accurate` default, `blur`) → `Page<User>`.
pub async fn list_users(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let paging = required_page(&params)?;
    let name = name_filter(&params, "username", false);
    let found: Vec<UserItem> = app
        .service
        .state()
        .users()
        .filter(|u| name.matches(&u.username))
        .map(|u| UserItem {
            username: u.username.clone(),
        })
        .collect();
    page_of(found, paging)
}

/// `GET /nacos/v3/auth/user/search?username=`: names containing it.
pub async fn search_users(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let part = required_string(&params, "username")?;
    let state = app.service.state();
    let names: Vec<&str> = state
        .users()
        .map(|u| u.username.as_str())
        .filter(|name| name.contains(part))
        .collect();
    ok(names)
}

// ---- roles --------------------------------------------------------------------

/// `POST /nacos/v3/auth/role`: `role`, `username` → `add role ok!` (binds
/// the user, creating the role).
pub async fn bind_role(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let role = required_string(&params, "role")?;
    let username = required_string(&params, "username")?;
    let caller = principal.caller("", client_ip(&req));
    done(
        app.auth.bind_role(role, username, &caller).await,
        "add role ok!",
    )
}

/// `DELETE /nacos/v3/auth/role`: `role`, `username` (blank: the whole
/// role) → `delete role of user x ok!`.
pub async fn unbind_role(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let role = required_string(&params, "role")?;
    let username = params.str("username");
    let user = Some(username).filter(|u| !u.trim().is_empty());
    let caller = principal.caller("", client_ip(&req));
    done(
        app.auth.unbind_role(role, user, &caller).await,
        &format!("delete role of user {username} ok!"),
    )
}

/// `GET /nacos/v3/auth/role/list`: `pageNo`, `pageSize` (required),
/// `username`, `role`, `search` → `Page<RoleInfo {role, username}>`.
pub async fn list_roles(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let paging = required_page(&params)?;
    let (role, user) = (
        name_filter(&params, "role", false),
        name_filter(&params, "username", false),
    );
    let found: Vec<RoleBinding> = role_bindings(&app.service.state())
        .into_iter()
        .filter(|b| role.matches(&b.role) && user.matches(&b.username))
        .collect();
    page_of(found, paging)
}

/// `GET /nacos/v3/auth/role/search?role=`: role names containing it.
pub async fn search_roles(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let part = required_string(&params, "role")?;
    ok(role_names(&app.service.state(), part))
}

// ---- permissions --------------------------------------------------------------

/// `role`, `resource` and `action` (all required).
fn permission_of(params: &Params) -> Refused<(&str, tacos_state::Resource, tacos_state::Access)> {
    let role = required_string(params, "role")?;
    let resource = required_string(params, "resource")?;
    let access = required_string(params, "action")?;
    let resource = parse_resource(resource).map_err(illegal)?;
    let access = action(access).map_err(illegal)?;
    Ok((role, resource, access))
}

/// `POST /nacos/v3/auth/permission`: `role`, `resource`
/// (`NS:GROUP:config/DATAID`, `*` wildcards), `action` (`r`, `w`, `rw`) →
/// `add permission ok!`.
pub async fn grant(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let (role, resource, access) = permission_of(&params)?;
    let caller = principal.caller("", client_ip(&req));
    done(
        app.auth
            .set_role_permission(role, &resource, Some(access), &caller)
            .await,
        "add permission ok!",
    )
}

/// `DELETE /nacos/v3/auth/permission`: the (role, resource, action) row
/// goes; a permission held with another action stays (as Nacos).
pub async fn revoke(call: FormCall) -> Answer {
    let FormCall(Call {
        app,
        principal,
        params,
        req,
        ..
    }) = call;
    let (role, resource, access) = permission_of(&params)?;
    let held = app
        .service
        .state()
        .role(role)
        .and_then(|r| r.permissions.get(&resource).copied());
    if held != Some(access) {
        return ok("delete permission ok!");
    }
    let caller = principal.caller("", client_ip(&req));
    done(
        app.auth
            .set_role_permission(role, &resource, None, &caller)
            .await,
        "delete permission ok!",
    )
}

/// `GET /nacos/v3/auth/permission`: whether the role already holds the
/// resource with this action or with `rw` (Nacos' `isDuplicatePermission`).
pub async fn is_duplicate(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let (role, resource, access) = permission_of(&params)?;
    let held = app
        .service
        .state()
        .role(role)
        .and_then(|r| r.permissions.get(&resource).copied());
    ok(held.is_some_and(|h| h == access || h == tacos_state::Access::ReadWrite))
}

/// `GET /nacos/v3/auth/permission/list`: `pageNo`, `pageSize` (required),
/// `role`, `search` → `Page<PermissionInfo {role, resource, action}>`.
pub async fn list_permissions(call: Call) -> Answer {
    let Call { app, params, .. } = call;
    let paging = required_page(&params)?;
    let role = name_filter(&params, "role", false);
    let found: Vec<PermissionRow> = permission_rows(&app.service.state())
        .into_iter()
        .filter(|row| role.matches(&row.role))
        .collect();
    page_of(found, paging)
}
