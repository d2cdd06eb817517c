//! Nacos roles: a role binds users, and its permissions apply to every
//! user bound to it (on top of the user's own permissions).
//!
//! Admins are users with the admin flag, as before; the reserved role
//! [`ADMIN_ROLE`] is how the Nacos API shows them and cannot be bound or
//! removed through roles. A role exists while it has a user or a
//! permission: unbinding its last user keeps its permissions (as Nacos
//! does), removing the role drops both.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::auth::User;
use super::permission::{self, Access, Permissions, Resource, ALL_NAMESPACES};
use super::{ApplyError, Response, State};
use tacos_core::command as pb;

/// Nacos' global admin role: shown for admin users, never stored.
pub const ADMIN_ROLE: &str = "ROLE_ADMIN";

/// A role and what it grants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Role {
    pub name: String,
    pub users: BTreeSet<String>,
    /// Resource → access.
    pub permissions: Permissions,
}

impl Role {
    fn is_empty(&self) -> bool {
        self.users.is_empty() && self.permissions.is_empty()
    }
}

impl State {
    // ---- reads -----------------------------------------------------------

    /// Roles in name order.
    pub fn roles(&self) -> impl Iterator<Item = &Arc<Role>> {
        self.roles.values()
    }

    pub fn role(&self, name: &str) -> Option<&Arc<Role>> {
        self.roles.get(name)
    }

    /// A user with the permissions of its roles folded into its own: what
    /// a request by this user may do.
    pub fn user_with_roles(&self, username: &str) -> Option<Arc<User>> {
        let user = self.users.get(username)?;
        if user.admin {
            return Some(user.clone());
        }
        let mut merged: Option<User> = None;
        for role in self.roles.values() {
            if role.permissions.is_empty() || !role.users.contains(username) {
                continue;
            }
            let merged = merged.get_or_insert_with(|| User::clone(user));
            for (resource, access) in &role.permissions {
                permission::add(&mut merged.permissions, resource, *access);
            }
        }
        Some(merged.map_or_else(|| user.clone(), Arc::new))
    }

    // ---- apply -----------------------------------------------------------

    fn not_reserved(role: &str) -> Result<(), ApplyError> {
        if role == ADMIN_ROLE {
            return Err(ApplyError::RoleReserved(role.to_string()));
        }
        Ok(())
    }

    pub(super) fn bind_role(&mut self, b: &pb::BindRole) -> Result<Response, ApplyError> {
        Self::not_reserved(&b.role)?;
        if !self.users.contains_key(&b.username) {
            return Err(ApplyError::UserNotFound(b.username.clone()));
        }
        let mut role = self.roles.get(&b.role).map_or_else(
            || Role {
                name: b.role.clone(),
                ..Role::default()
            },
            |r| Role::clone(r),
        );
        if !role.users.insert(b.username.clone()) {
            return Err(ApplyError::RoleBound {
                role: b.role.clone(),
                username: b.username.clone(),
            });
        }
        self.roles.insert(b.role.clone(), Arc::new(role));
        Ok(Response::Done)
    }

    pub(super) fn unbind_role(&mut self, u: &pb::UnbindRole) -> Result<Response, ApplyError> {
        Self::not_reserved(&u.role)?;
        let Some(role) = self.roles.get(&u.role) else {
            return Ok(Response::Removed { existed: false });
        };
        if u.username.is_empty() {
            self.roles.remove(&u.role);
            return Ok(Response::Removed { existed: true });
        }
        let mut role = Role::clone(role);
        let existed = role.users.remove(&u.username);
        self.put_role(role);
        Ok(Response::Removed { existed })
    }

    pub(super) fn set_role_permission(
        &mut self,
        p: &pb::SetRolePermission,
    ) -> Result<Response, ApplyError> {
        Self::not_reserved(&p.role)?;
        let resource = Resource::from_record(&p.namespace, &p.group, &p.data_id);
        let access = Access::from_pb(p.access);
        let Some(role) = self.roles.get(&p.role) else {
            // Revoking from a role that does not exist changes nothing.
            return match access {
                Some(_) => Err(ApplyError::RoleNotFound(p.role.clone())),
                None => Ok(Response::Removed { existed: false }),
            };
        };
        let mut role = Role::clone(role);
        let existed = match access {
            Some(access) => {
                if resource.namespace != ALL_NAMESPACES && !self.has_namespace(&resource.namespace)
                {
                    return Err(ApplyError::NamespaceNotFound(p.namespace.clone()));
                }
                role.permissions.insert(resource, access).is_some()
            }
            None => role.permissions.remove(&resource).is_some(),
        };
        self.put_role(role);
        Ok(Response::Removed { existed })
    }

    /// Stores a changed role, or drops it once it binds and grants nothing.
    fn put_role(&mut self, role: Role) {
        if role.is_empty() {
            self.roles.remove(&role.name);
        } else {
            self.roles.insert(role.name.clone(), Arc::new(role));
        }
    }

    /// Applies `edit` to every role it changes (`edit` says whether it did).
    fn edit_roles(&mut self, edit: impl Fn(&mut Role) -> bool) {
        let changed: Vec<Role> = self
            .roles
            .values()
            .filter_map(|role| {
                let mut role = Role::clone(role);
                edit(&mut role).then_some(role)
            })
            .collect();
        for role in changed {
            self.put_role(role);
        }
    }

    /// A removed user leaves every role.
    pub(super) fn unbind_everywhere(&mut self, username: &str) {
        self.edit_roles(|role| role.users.remove(username));
    }

    /// A removed namespace leaves every role's permissions.
    pub(super) fn revoke_namespace_from_roles(&mut self, namespace: &str) {
        self.edit_roles(|role| {
            let before = role.permissions.len();
            role.permissions.retain(|r, _| r.namespace != namespace);
            role.permissions.len() != before
        });
    }

    /// Loads a role from a snapshot.
    pub(super) fn load_role(&mut self, role: Role) {
        self.roles.insert(role.name.clone(), Arc::new(role));
    }
}
