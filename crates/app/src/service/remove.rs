//! Remove a config, or several.

use tacos_core::command as pb;
use tacos_core::{ConfigKey, Op};

use super::gray::checked_tag;
use super::{checked_key, origin, Caller, ConfigService, ServiceError};
use tacos_state::tag_gray_name;

impl ConfigService {
    /// Removes a config; removing an absent one is not an error. With a
    /// gray `tag` it removes that tag's gray version (`tag_{tag}`) only, as
    /// Nacos does; the config stays.
    pub async fn remove(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        tag: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        caller.may_write(namespace, group, data_id)?;
        let key = checked_key(namespace, group, data_id)?;
        if let Some(tag) = checked_tag(tag)? {
            return self
                .stop_gray(namespace, group, data_id, &tag_gray_name(&tag), caller)
                .await;
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
        // The caller must write every one before any is removed.
        for key in keys {
            caller.may_write_key(key)?;
        }
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
