//! Nacos' roles and permissions model: what the v1 and v3 roles/permissions
//! routes show and accept, once.
//!
//! A Nacos permission resource is `NAMESPACE:GROUP:config/DATAID` (as Nacos'
//! `joinResource` spells what a config request touches), where `*` matches
//! any run of characters: `dev:*:*` is all of namespace `dev`,
//! `dev:DEFAULT_GROUP:*` one group, `dev:DEFAULT_GROUP:config/app*.yaml`
//! some dataIds of it; `:*:*` or `public:*:*` is the public namespace,
//! `*:*:*` every namespace. Actions are `r`, `w` (write only) and `rw`.
//! Unlike Nacos (a regular expression made by turning `*` into `.*`), every
//! other character matches only itself (Nacos' `.` matches any character).
//! The namespace part is one namespace or `*`; a resource Tacos could not
//! honour (a naming resource, a namespace pattern, a dataId part without
//! `config/`, which in Nacos matches no config) is refused, not stored.
//! `ROLE_ADMIN` is shown for admin users but is not a role one binds.

use tacos_core::validate::{InvalidInput, MAX_DATA_ID_LEN, MAX_GROUP_LEN};
use tacos_state::{canonical_namespace, Access, Resource, State, ADMIN_ROLE, ALL_NAMESPACES};

/// Parses a Nacos permission resource (see the module docs).
pub fn parse_resource(resource: &str) -> Result<Resource, InvalidInput> {
    let refuse = |why: &str| {
        InvalidInput::Other(
            "resource",
            format!(
                "{resource:?}: {why}; a resource is NAMESPACE:GROUP:config/DATAID, \
                 NAMESPACE:GROUP:* or NAMESPACE:*:* (`*` matches any run of characters, \
                 :*:* is public, *:*:* every namespace)"
            ),
        )
    };
    let Some((namespace, rest)) = resource.split_once(':') else {
        return Err(refuse("no group part"));
    };
    let (group, data_id) = if let Some(group) = rest.strip_suffix(":*") {
        (group, "*")
    } else if let Some((group, data_id)) = rest.split_once(":config/") {
        (group, data_id)
    } else {
        return Err(refuse("the third part must be * or config/DATAID"));
    };
    let namespace = if namespace == ALL_NAMESPACES {
        ALL_NAMESPACES
    } else if namespace.contains('*') {
        return Err(refuse("the namespace part is one namespace or *"));
    } else {
        tacos_core::validate::namespace(namespace).map_err(|_| refuse("invalid namespace"))?;
        canonical_namespace(namespace)
    };
    pattern(group, MAX_GROUP_LEN).map_err(|_| refuse("invalid group pattern"))?;
    pattern(data_id, MAX_DATA_ID_LEN).map_err(|_| refuse("invalid dataId pattern"))?;
    Ok(Resource::new(namespace, group, data_id))
}

/// A group or dataId pattern: the key characters (letters and digits of
/// any script, `- _ : .`, as a key may hold) and `*`, not empty.
pub fn pattern(s: &str, max: usize) -> Result<(), InvalidInput> {
    let ok = !s.is_empty()
        && s.chars().count() <= max
        && s.chars()
            .all(|c| c == '*' || tacos_core::validate::key_char(c));
    if ok {
        Ok(())
    } else {
        Err(InvalidInput::Other(
            "pattern",
            format!("{s:?} (letters, digits, - _ : . and *, 1 to {max})"),
        ))
    }
}

/// The resource Nacos shows for a permission.
pub fn resource_string(resource: &Resource) -> String {
    resource.to_string()
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
                .map(|(resource, access)| PermissionRow {
                    role: role.name.clone(),
                    resource: resource_string(resource),
                    action: access.code(),
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_parse_as_nacos_spells_them() {
        let ok = |r: &str, ns: &str, g: &str, d: &str| {
            assert_eq!(parse_resource(r).unwrap(), Resource::new(ns, g, d), "{r}");
        };
        ok("dev:*:*", "dev", "*", "*");
        ok(":*:*", "", "*", "*");
        ok("public:*:*", "", "*", "*");
        ok("*:*:*", ALL_NAMESPACES, "*", "*");
        ok("dev:DEFAULT_GROUP:*", "dev", "DEFAULT_GROUP", "*");
        ok("dev:G:config/app.yaml", "dev", "G", "app.yaml");
        ok("dev:G*:config/app*", "dev", "G*", "app*");
        ok("dev:a:b:config/x:y", "dev", "a:b", "x:y");
        ok("dev:*:config/*", "dev", "*", "*");
        for refused in [
            "dev",
            "dev:*",
            "dev:G:app.yaml",
            "dev:G:naming/svc",
            "de*:*:*",
            "dev::*",
            "dev:G:config/",
            "dev:G:config/a b",
            "",
        ] {
            let error = parse_resource(refused).unwrap_err().to_string();
            assert!(
                error.contains("NAMESPACE:GROUP:config/DATAID"),
                "{refused}: {error}"
            );
        }
        for shown in [":*:*", "dev:G:*", "dev:G:config/app.yaml", "*:*:*"] {
            assert_eq!(resource_string(&parse_resource(shown).unwrap()), shown);
        }
        assert_eq!(action("w").unwrap(), Access::Write);
        assert_eq!(action("rw").unwrap(), Access::ReadWrite);
        assert!(action("x").is_err());
    }
}
