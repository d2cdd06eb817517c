//! A beta (gray release by client IP): stop it, or promote it to the config.
//! Publishing one is a publish with `beta_ips` (publish.rs).

use tacos_core::command as pb;
use tacos_core::{ConfigKey, Op};

use super::{checked_key, origin, Caller, ConfigService, ServiceError};

impl ConfigService {
    /// Ends a beta release.
    pub async fn stop_beta(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        let key = checked_key(namespace, group, data_id)?;
        let op = Op::StopBeta(pb::StopBeta {
            key: Some((&key).into()),
        });
        self.writer.propose_removal(op, caller).await
    }

    /// Makes the beta the user saw (`beta_md5`) the config, keeping the
    /// config's metadata, and ends the beta: one command, so a failure
    /// leaves both as they were. `cas_md5` is the config version the user
    /// saw.
    pub async fn promote_beta(
        &self,
        key: &ConfigKey,
        beta_md5: &str,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        let op = Op::PromoteBeta(pb::PromoteBeta {
            key: Some(key.into()),
            beta_md5: beta_md5.to_string(),
            cas_md5: cas_md5.filter(|m| !m.is_empty()),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }
}
