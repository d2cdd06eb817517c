//! Namespaces: create (an empty id gets a generated one), rename, remove
//! (only when empty: apply refuses otherwise).

use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{canonical_namespace, now_ms, ApplyError, Op};

use super::{Caller, ConfigService, ServiceError};

impl ConfigService {
    /// Creates a namespace; an empty id gets a generated one. Returns the id.
    pub async fn create_namespace(
        &self,
        id: &str,
        name: &str,
        desc: &str,
        caller: &Caller,
    ) -> Result<String, ServiceError> {
        let id = if id.trim().is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            id.trim().to_string()
        };
        validate::new_namespace_id(&id)?;
        if canonical_namespace(&id).is_empty() {
            return Err(ApplyError::NamespaceExists(id).into());
        }
        check_namespace_name(name)?;
        let op = Op::CreateNamespace(pb::CreateNamespace {
            id: id.clone(),
            name: name.to_string(),
            desc: desc.to_string(),
            time_ms: now_ms(),
        });
        self.writer.propose(op, caller).await?;
        Ok(id)
    }

    pub async fn update_namespace(
        &self,
        id: &str,
        name: &str,
        desc: &str,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        validate::namespace(id)?;
        check_namespace_name(name)?;
        let op = Op::UpdateNamespace(pb::UpdateNamespace {
            id: id.to_string(),
            name: name.to_string(),
            desc: desc.to_string(),
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }

    pub async fn remove_namespace(&self, id: &str, caller: &Caller) -> Result<(), ServiceError> {
        validate::namespace(id)?;
        let op = Op::RemoveNamespace(pb::RemoveNamespace { id: id.to_string() });
        self.writer.propose(op, caller).await.map(|_| ())
    }
}

fn check_namespace_name(name: &str) -> Result<(), InvalidInput> {
    if name.trim().is_empty() {
        return Err(InvalidInput::Missing("namespaceName"));
    }
    if name.chars().count() > 128 || name.chars().any(|c| "@#$%^&*".contains(c)) {
        return Err(InvalidInput::Other("namespaceName", name.to_string()));
    }
    Ok(())
}
