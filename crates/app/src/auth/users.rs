//! The writes of the users, roles and permissions APIs (admin routes):
//! each one command, proposed through the application's one writer.

use tacos_core::command as pb;
use tacos_core::validate::{InvalidInput, MAX_DATA_ID_LEN, MAX_GROUP_LEN};
use tacos_core::{now_ms, Op};
use tacos_state::{Access, Resource, ALL_NAMESPACES};

use super::{check_role, check_username, Auth, AuthError, Principal};
use crate::service::{Caller, ServiceError};

impl Auth {
    async fn propose(&self, op: Op, caller: &Caller) -> Result<(), ServiceError> {
        self.writer.propose(op, caller).await.map(|_| ())
    }

    async fn hash_new(&self, password: &str) -> Result<String, ServiceError> {
        self.settings
            .password_policy
            .check(password)
            .map_err(|e| InvalidInput::Other("password", e.to_string()))?;
        self.hasher
            .hash(password)
            .await
            .map_err(|e| ServiceError::Internal(e.to_string()))
    }

    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        admin: bool,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        check_username(username)?;
        let password_hash = self.hash_new(password).await?;
        let op = Op::CreateUser(pb::CreateUser {
            username: username.to_string(),
            password_hash,
            admin,
            time_ms: now_ms(),
        });
        self.propose(op, caller).await
    }

    /// Changes what is `Some`: the password, the admin flag, enabled.
    /// Users change their own password; only admins change other users,
    /// admin rights or enabled (one rule for v1, v3 and the console).
    pub async fn update_user(
        &self,
        by: &Principal,
        username: &str,
        new_password: Option<&str>,
        admin: Option<bool>,
        enabled: Option<bool>,
        client_ip: &str,
    ) -> Result<(), ServiceError> {
        if !by.is_admin() {
            if by.name() != username {
                return Err(ServiceError::Denied(AuthError::Forbidden(
                    "only admins change other users' passwords".into(),
                )));
            }
            if admin.is_some() || enabled.is_some() {
                return Err(ServiceError::Denied(AuthError::Forbidden(
                    "only admins change admin rights or enabled".into(),
                )));
            }
        }
        let caller = &by.caller("", client_ip.to_string());
        check_username(username)?;
        let password_hash = match new_password {
            Some(password) => Some(self.hash_new(password).await?),
            None => None,
        };
        if password_hash.is_none() && admin.is_none() && enabled.is_none() {
            return Err(InvalidInput::Missing("newPassword").into());
        }
        let op = Op::UpdateUser(pb::UpdateUser {
            username: username.to_string(),
            password_hash,
            admin,
            enabled,
            time_ms: now_ms(),
        });
        self.propose(op, caller).await
    }

    pub async fn remove_user(&self, username: &str, caller: &Caller) -> Result<(), ServiceError> {
        check_username(username)?;
        if self.engine.state().user(username).is_some_and(|u| u.admin) {
            return Err(ServiceError::AdminNotDeletable(username.to_string()));
        }
        let op = Op::RemoveUser(pb::RemoveUser {
            username: username.to_string(),
        });
        self.propose(op, caller).await
    }

    /// Grants `access` on `resource`; `None` revokes it.
    pub async fn set_permission(
        &self,
        username: &str,
        resource: &Resource,
        access: Option<Access>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        check_username(username)?;
        check_resource(resource)?;
        let op = Op::SetPermission(pb::SetPermission {
            username: username.to_string(),
            namespace: resource.namespace.clone(),
            access: access.map_or(pb::Access::None, Access::to_pb) as i32,
            group: resource.group.clone(),
            data_id: resource.data_id.clone(),
        });
        self.propose(op, caller).await
    }

    /// Binds `username` to `role` (creating the role).
    pub async fn bind_role(
        &self,
        role: &str,
        username: &str,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        check_role(role)?;
        check_username(username)?;
        let op = Op::BindRole(pb::BindRole {
            role: role.to_string(),
            username: username.to_string(),
        });
        self.propose(op, caller).await
    }

    /// Unbinds `username` from `role`; with no username, removes the role
    /// with its bindings and permissions.
    pub async fn unbind_role(
        &self,
        role: &str,
        username: Option<&str>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        check_role(role)?;
        if let Some(username) = username {
            check_username(username)?;
        }
        let op = Op::UnbindRole(pb::UnbindRole {
            role: role.to_string(),
            username: username.unwrap_or_default().to_string(),
        });
        self.propose(op, caller).await
    }

    /// Grants a role `access` on `resource`; `None` revokes it.
    pub async fn set_role_permission(
        &self,
        role: &str,
        resource: &Resource,
        access: Option<Access>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        check_role(role)?;
        check_resource(resource)?;
        let op = Op::SetRolePermission(pb::SetRolePermission {
            role: role.to_string(),
            namespace: resource.namespace.clone(),
            access: access.map_or(pb::Access::None, Access::to_pb) as i32,
            group: resource.group.clone(),
            data_id: resource.data_id.clone(),
        });
        self.propose(op, caller).await
    }

    /// Records a change that is not a state change (membership) in the
    /// audit log.
    pub async fn audit_note(
        &self,
        action: &str,
        target: &str,
        detail: &str,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        let op = Op::AuditNote(pb::AuditNote {
            action: action.to_string(),
            target: target.to_string(),
            detail: detail.to_string(),
        });
        self.propose(op, caller).await
    }
}

/// A resource's parts: a namespace (or `*`), group and dataId patterns.
fn check_resource(resource: &Resource) -> Result<(), InvalidInput> {
    if resource.namespace != ALL_NAMESPACES {
        tacos_core::validate::namespace(&resource.namespace)?;
    }
    super::roles::pattern(&resource.group, MAX_GROUP_LEN)?;
    super::roles::pattern(&resource.data_id, MAX_DATA_ID_LEN)
}
