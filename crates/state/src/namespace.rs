//! Applying namespaces: create, update, remove (which also revokes the
//! permissions that named it), and the rule that a write names one that
//! exists.

use std::sync::Arc;

use super::auth::User;
use super::{canonical_namespace, pb, ApplyError, ConfigKey, Namespace, Response, State};

impl State {
    pub(super) fn key_in_existing_namespace(
        &self,
        key: Option<&pb::ConfigKey>,
    ) -> Result<ConfigKey, ApplyError> {
        let key = ConfigKey::from(key.ok_or(ApplyError::UnknownCommand)?);
        if !self.has_namespace(&key.namespace) {
            return Err(ApplyError::NamespaceNotFound(key.namespace.clone()));
        }
        Ok(key)
    }

    pub(super) fn create_namespace(
        &mut self,
        c: &pb::CreateNamespace,
    ) -> Result<Response, ApplyError> {
        let id = canonical_namespace(&c.id);
        if id.is_empty() || self.namespaces.contains_key(id) {
            return Err(ApplyError::NamespaceExists(c.id.clone()));
        }
        let namespace = Namespace {
            id: id.to_string(),
            name: c.name.clone(),
            desc: c.desc.clone(),
            create_time: c.time_ms,
        };
        self.namespaces.insert(id.to_string(), Arc::new(namespace));
        Ok(Response::Done)
    }

    pub(super) fn update_namespace(
        &mut self,
        u: &pb::UpdateNamespace,
    ) -> Result<Response, ApplyError> {
        let Some(old) = self.namespaces.get(&u.id) else {
            return Err(ApplyError::NamespaceNotFound(u.id.clone()));
        };
        let mut namespace = Namespace::clone(old);
        namespace.name = u.name.clone();
        namespace.desc = u.desc.clone();
        self.namespaces.insert(u.id.clone(), Arc::new(namespace));
        Ok(Response::Done)
    }

    pub(super) fn remove_namespace(
        &mut self,
        r: &pb::RemoveNamespace,
    ) -> Result<Response, ApplyError> {
        if !self.namespaces.contains_key(&r.id) {
            return Err(ApplyError::NamespaceNotFound(r.id.clone()));
        }
        let count = self.configs_in(&r.id).count();
        if count > 0 {
            return Err(ApplyError::NamespaceNotEmpty(r.id.clone(), count));
        }
        self.namespaces.remove(&r.id);
        // Permissions in it go too, so a namespace created later under the
        // same id does not inherit them.
        let holders: Vec<String> = self
            .users
            .values()
            .filter(|u| u.permissions.keys().any(|p| p.namespace == r.id))
            .map(|u| u.username.clone())
            .collect();
        for username in holders {
            if let Some(user) = self.users.get(&username) {
                let mut user = User::clone(user);
                user.permissions.retain(|p, _| p.namespace != r.id);
                self.users.insert(username, Arc::new(user));
            }
        }
        self.revoke_namespace_from_roles(&r.id);
        Ok(Response::Removed { existed: true })
    }
}
