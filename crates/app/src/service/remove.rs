//! Remove a config, or several.

use tacos_core::command as pb;
use tacos_core::{ConfigKey, Op};

use super::{checked_key, origin, Caller, ConfigService, ServiceError};

impl ConfigService {
    /// Removes a config; removing an absent one is not an error. With a
    /// gray `tag` Nacos removes that tag's gray version only; this server
    /// has no gray by tag yet, so there is nothing to remove: `false`, and
    /// the config stays (never removed for every client).
    pub async fn remove(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        tag: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        let key = checked_key(namespace, group, data_id)?;
        if !tag.trim().is_empty() {
            return Ok(false);
        }
        let op = Op::RemoveConfig(pb::RemoveConfig {
            key: Some((&key).into()),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        self.writer.propose_removal(op, caller).await
    }

    /// Removes configs one after the other, as Nacos' batch delete does
    /// (not one write: each removal is its own command, and a failure stops
    /// the rest, leaving the ones before it removed). Returns how many
    /// existed.
    pub async fn remove_each(
        &self,
        keys: &[ConfigKey],
        caller: &Caller,
    ) -> Result<usize, ServiceError> {
        let mut existed = 0;
        for key in keys {
            if self
                .remove(&key.namespace, &key.group, &key.data_id, "", caller)
                .await?
            {
                existed += 1;
            }
        }
        Ok(existed)
    }
}
