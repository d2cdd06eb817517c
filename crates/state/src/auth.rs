//! The auth tables: the token signing key, users and their permissions
//! ([`super::permission`]). Applied like every other table: the proposing node hashes
//! passwords and draws the key, so apply only stores what it is given.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::permission::{self, Access, Permissions, Resource, ALL_NAMESPACES};
use super::{canonical_namespace, ApplyError, Response, State};
use tacos_core::command as pb;

/// A user account.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub username: String,
    /// PHC string (argon2id).
    pub password_hash: String,
    pub admin: bool,
    pub enabled: bool,
    pub create_time: i64,
    pub modify_time: i64,
    /// Bumped by every password change: tokens carry the generation they
    /// were issued at, so a new password ends the old tokens.
    pub generation: u64,
    /// Resource → access (with its roles' folded in when the user comes
    /// from [`State::user_with_roles`]).
    pub permissions: Permissions,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("username", &self.username)
            .field("admin", &self.admin)
            .field("enabled", &self.enabled)
            .field("generation", &self.generation)
            .field("permissions", &self.permissions)
            .finish_non_exhaustive()
    }
}

impl User {
    /// A new, enabled user without permissions.
    fn new(username: &str, password_hash: &str, admin: bool, time_ms: i64) -> Self {
        User {
            username: username.to_string(),
            password_hash: password_hash.to_string(),
            admin,
            enabled: true,
            create_time: time_ms,
            modify_time: time_ms,
            generation: 0,
            permissions: BTreeMap::new(),
        }
    }

    /// Whether this user may do `need` on `namespace` (as a client spells
    /// it) / `group` / `data_id` (`*` in them asks for all; see
    /// [`permission`]).
    pub fn allows(&self, namespace: &str, group: &str, data_id: &str, need: Access) -> bool {
        self.admin
            || permission::allows(
                &self.permissions,
                canonical_namespace(namespace),
                group,
                data_id,
                need,
            )
    }

    /// What this user holds on the whole of `namespace` (as a client spells
    /// it): the union of its namespace-wide permissions that cover it.
    pub fn namespace_access(&self, namespace: &str) -> Option<Access> {
        if self.admin {
            return Some(Access::ReadWrite);
        }
        let namespace = canonical_namespace(namespace);
        self.permissions
            .iter()
            .filter(|(r, _)| r.is_namespace_wide() && r.covers(namespace, "*", "*"))
            .map(|(_, a)| *a)
            .reduce(Access::union)
    }

    /// Whether this user may do `need` on some config of `namespace`.
    pub fn allows_some(&self, namespace: &str, need: Access) -> bool {
        self.admin
            || permission::allows_some(&self.permissions, canonical_namespace(namespace), need)
    }
}

/// The cluster's token signing key.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthKey {
    pub token_key: Vec<u8>,
    pub init_time: i64,
}

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKey(..)")
    }
}

impl State {
    // ---- reads -----------------------------------------------------------

    /// The token key, once auth is initialized.
    pub fn auth_key(&self) -> Option<&Arc<AuthKey>> {
        self.auth.as_ref()
    }

    pub fn user(&self, username: &str) -> Option<&Arc<User>> {
        self.users.get(username)
    }

    /// Users in name order.
    pub fn users(&self) -> impl Iterator<Item = &Arc<User>> {
        self.users.values()
    }

    // ---- apply -----------------------------------------------------------

    pub(super) fn init_auth(&mut self, c: &pb::InitAuth) -> Result<Response, ApplyError> {
        if self.auth.is_some() {
            return Err(ApplyError::AuthInitialized);
        }
        if c.token_key.len() < 32 || c.admin_username.is_empty() {
            return Err(ApplyError::UnknownCommand);
        }
        self.auth = Some(Arc::new(AuthKey {
            token_key: c.token_key.clone(),
            init_time: c.time_ms,
        }));
        // A user of that name may exist (a migrated data dir): it becomes
        // admin with the given password only when it did not exist.
        if !self.users.contains_key(&c.admin_username) {
            let admin = User::new(&c.admin_username, &c.admin_password_hash, true, c.time_ms);
            self.users.insert(c.admin_username.clone(), Arc::new(admin));
        }
        Ok(Response::Done)
    }

    pub(super) fn create_user(&mut self, c: &pb::CreateUser) -> Result<Response, ApplyError> {
        if self.users.contains_key(&c.username) {
            return Err(ApplyError::UserExists(c.username.clone()));
        }
        let user = User::new(&c.username, &c.password_hash, c.admin, c.time_ms);
        self.users.insert(c.username.clone(), Arc::new(user));
        Ok(Response::Done)
    }

    fn existing_user(&self, username: &str) -> Result<User, ApplyError> {
        self.users
            .get(username)
            .map(|u| User::clone(u))
            .ok_or_else(|| ApplyError::UserNotFound(username.to_string()))
    }

    /// Whether `username` is the only enabled admin.
    fn is_last_admin(&self, username: &str) -> bool {
        let mut admins = self.users.values().filter(|u| u.admin && u.enabled);
        matches!(
            (admins.next(), admins.next()),
            (Some(only), None) if only.username == username
        )
    }

    pub(super) fn update_user(&mut self, u: &pb::UpdateUser) -> Result<Response, ApplyError> {
        let mut user = self.existing_user(&u.username)?;
        let demoted = u.admin == Some(false) || u.enabled == Some(false);
        if demoted && self.is_last_admin(&u.username) {
            return Err(ApplyError::LastAdmin(u.username.clone()));
        }
        if let Some(hash) = &u.password_hash {
            user.password_hash = hash.clone();
            user.generation += 1;
        }
        if let Some(admin) = u.admin {
            user.admin = admin;
        }
        if let Some(enabled) = u.enabled {
            user.enabled = enabled;
        }
        user.modify_time = u.time_ms;
        self.users.insert(u.username.clone(), Arc::new(user));
        Ok(Response::Done)
    }

    /// Replaces a migrated hash after a login verified it: only if the stored
    /// hash is still the one verified; the generation (tokens) is kept.
    pub(super) fn rehash_password(
        &mut self,
        r: &pb::RehashPassword,
    ) -> Result<Response, ApplyError> {
        let mut user = self.existing_user(&r.username)?;
        if user.password_hash != r.expected_hash || r.new_hash.is_empty() {
            return Err(ApplyError::PasswordHashChanged(r.username.clone()));
        }
        user.password_hash = r.new_hash.clone();
        self.users.insert(r.username.clone(), Arc::new(user));
        Ok(Response::Done)
    }

    pub(super) fn remove_user(&mut self, r: &pb::RemoveUser) -> Result<Response, ApplyError> {
        self.existing_user(&r.username)?;
        if self.is_last_admin(&r.username) {
            return Err(ApplyError::LastAdmin(r.username.clone()));
        }
        self.users.remove(&r.username);
        self.unbind_everywhere(&r.username);
        Ok(Response::Removed { existed: true })
    }

    pub(super) fn set_permission(&mut self, p: &pb::SetPermission) -> Result<Response, ApplyError> {
        let mut user = self.existing_user(&p.username)?;
        let resource = Resource::from_record(&p.namespace, &p.group, &p.data_id);
        if resource.namespace != ALL_NAMESPACES && !self.has_namespace(&resource.namespace) {
            return Err(ApplyError::NamespaceNotFound(p.namespace.clone()));
        }
        let existed = match Access::from_pb(p.access) {
            Some(access) => user.permissions.insert(resource, access).is_some(),
            None => user.permissions.remove(&resource).is_some(),
        };
        self.users.insert(p.username.clone(), Arc::new(user));
        Ok(Response::Removed { existed })
    }
}
