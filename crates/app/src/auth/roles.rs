//! Nacos' roles and permissions model over Tacos' access: what the v1 and
//! v3 roles/permissions routes show and accept, once.
//!
//! Tacos grants whole namespaces, so a Nacos permission resource must be
//! `NAMESPACE:*:*` (`:*:*` or `public:*:*` is the public namespace, `*:*:*`
//! every namespace); `w` is taken as `rw` (Tacos has no write-only access);
//! `ROLE_ADMIN` is shown for admin users but is not a role one binds.

use tacos_core::validate::InvalidInput;
use tacos_state::{canonical_namespace, Access, State, ADMIN_ROLE};

/// A Nacos permission resource as the namespace Tacos grants.
pub fn namespace_of_resource(resource: &str) -> Result<String, InvalidInput> {
    let whole = |rest: &[&str]| rest.iter().all(|part| *part == "*");
    let parts: Vec<&str> = resource.split(':').collect();
    match parts.as_slice() {
        [namespace, rest @ ..] if rest.len() == 2 && whole(rest) => {
            Ok(canonical_namespace(namespace).to_string())
        }
        _ => Err(InvalidInput::Other(
            "resource",
            format!(
                "{resource:?}: Tacos grants whole namespaces, so a resource is NAMESPACE:*:* \
                 (:*:* for public, *:*:* for all)"
            ),
        )),
    }
}

/// The resource Nacos shows for a namespace permission.
pub fn resource_of(namespace: &str) -> String {
    format!("{namespace}:*:*")
}

/// A permission action (`r`, `w` or `rw`).
pub fn action(action: &str) -> Result<Access, InvalidInput> {
    Access::parse(action)
        .ok_or_else(|| InvalidInput::Other("action", format!("{action:?} (r, w or rw)")))
}

/// One user bound to one role (Nacos' `RoleInfo`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RoleBinding {
    pub role: String,
    pub username: String,
}

/// Every binding: admins as `ROLE_ADMIN` first, then the roles' users.
pub fn role_bindings(state: &State) -> Vec<RoleBinding> {
    let admins = state.users().filter(|u| u.admin).map(|u| RoleBinding {
        role: ADMIN_ROLE.to_string(),
        username: u.username.clone(),
    });
    let bound = state.roles().flat_map(|role| {
        role.users.iter().map(|username| RoleBinding {
            role: role.name.clone(),
            username: username.clone(),
        })
    });
    admins.chain(bound).collect()
}

/// Role names containing `part` (`ROLE_ADMIN` first).
pub fn role_names<'a>(state: &'a State, part: &str) -> Vec<&'a str> {
    std::iter::once(ADMIN_ROLE)
        .chain(state.roles().map(|r| r.name.as_str()))
        .filter(|name| name.contains(part))
        .collect()
}

/// One permission of one role (Nacos' `PermissionInfo`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PermissionRow {
    pub role: String,
    pub resource: String,
    pub action: &'static str,
}

/// Every role's permissions, by role.
pub fn permission_rows(state: &State) -> Vec<PermissionRow> {
    state
        .roles()
        .flat_map(|role| {
            role.permissions
                .iter()
                .map(|(namespace, access)| PermissionRow {
                    role: role.name.clone(),
                    resource: resource_of(namespace),
                    action: access.code(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacos_state::ALL_NAMESPACES;

    #[test]
    fn resources_name_whole_namespaces() {
        assert_eq!(namespace_of_resource("dev:*:*").unwrap(), "dev");
        assert_eq!(namespace_of_resource(":*:*").unwrap(), "");
        assert_eq!(namespace_of_resource("public:*:*").unwrap(), "");
        assert_eq!(namespace_of_resource("*:*:*").unwrap(), ALL_NAMESPACES);
        for refused in [
            "dev",
            "dev:*",
            "dev:DEFAULT_GROUP:*",
            "dev:*:app.yaml",
            "dev:*:*:*",
            "",
        ] {
            let error = namespace_of_resource(refused).unwrap_err().to_string();
            assert!(error.contains("NAMESPACE:*:*"), "{refused}: {error}");
        }
        assert_eq!(resource_of(""), ":*:*");
        assert_eq!(namespace_of_resource(&resource_of("dev")).unwrap(), "dev");
        assert_eq!(action("w").unwrap(), Access::parse("rw").unwrap());
        assert!(action("x").is_err());
    }
}
