//! Gray versions of a config (Nacos 2.5+'s gray model): publish one (a
//! beta by client IPs, or a tag), stop one, promote one to the config.
//! A publish with `beta_ips` or `tag` lands here from `publish`.

use std::sync::Arc;
use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{ConfigKey, Op};

use tacos_state::{
    tag_gray_name, Config, BETA_GRAY, BETA_PRIORITY, GRAY_RULE_VERSION, TAG_PRIORITY,
};

use super::{checked_key, origin, Caller, ConfigService, ServiceError};

/// Which clients a gray publish is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrayTarget {
    /// The gray named `beta`: clients at these IPs.
    Beta(Vec<String>),
    /// The gray named `tag_{tag}`: clients that send this tag.
    Tag(String),
}

impl GrayTarget {
    /// The gray's name, rule and priority as Nacos' `ConfigOperationService`
    /// sets them.
    fn rule(&self) -> (String, pb::GrayRule) {
        let (name, kind, expr, priority) = match self {
            GrayTarget::Beta(ips) => (BETA_GRAY.to_string(), "beta", ips.join(","), BETA_PRIORITY),
            GrayTarget::Tag(tag) => (tag_gray_name(tag), "tag", tag.clone(), TAG_PRIORITY),
        };
        let rule = pb::GrayRule {
            r#type: kind.to_string(),
            version: GRAY_RULE_VERSION.to_string(),
            expr,
            priority,
        };
        (name, rule)
    }
}

/// A gray tag as a client sent it: trimmed, checked; `None` when blank.
pub fn checked_tag(tag: &str) -> Result<Option<String>, InvalidInput> {
    let tag = tag.trim();
    if tag.is_empty() {
        return Ok(None);
    }
    validate::tag(tag)?;
    Ok(Some(tag.to_string()))
}

impl ConfigService {
    /// The config a gray version of `key` is made from (the console takes
    /// its type and app name for the gray), once the caller may write it:
    /// `Ok(None)` when there is none. Asked before the gray's content is
    /// checked, so a caller who may not write learns nothing of the key.
    pub fn gray_base(
        &self,
        key: &ConfigKey,
        caller: &Caller,
    ) -> Result<Option<Arc<Config>>, ServiceError> {
        caller.may_write_key(key)?;
        Ok(self.state().config(key).cloned())
    }

    /// Publishes or replaces a gray version from a checked publish.
    pub(super) async fn publish_gray(
        &self,
        publish: pb::PublishConfig,
        target: GrayTarget,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        let (name, rule) = target.rule();
        let op = Op::PublishGray(pb::PublishGray {
            key: publish.key,
            name,
            rule: Some(rule),
            content: publish.content,
            md5: publish.md5,
            config_type: publish.config_type,
            app_name: publish.app_name,
            origin: publish.origin,
            cas_md5: publish.cas_md5,
            max_grays: self.limits.max_grays,
            history_limit: self.limits.history_limit,
            encrypted_data_key: publish.encrypted_data_key,
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Ends a gray version (`false` if there was none).
    pub async fn stop_gray(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        name: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        caller.may_write(namespace, group, data_id)?;
        let key = checked_key(namespace, group, data_id)?;
        let op = Op::StopGray(pb::StopGray {
            key: Some((&key).into()),
            name: name.to_string(),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        self.writer.propose_removal(op, caller).await
    }

    /// Ends a beta release (the gray named `beta`).
    pub async fn stop_beta(
        &self,
        namespace: &str,
        group: &str,
        data_id: &str,
        caller: &Caller,
    ) -> Result<bool, ServiceError> {
        self.stop_gray(namespace, group, data_id, BETA_GRAY, caller)
            .await
    }

    /// Makes the gray the user saw (`gray_md5`) the config, keeping the
    /// config's metadata, and ends the gray: one command, so a failure
    /// leaves both as they were. `cas_md5` is the config version the user
    /// saw.
    pub async fn promote_gray(
        &self,
        key: &ConfigKey,
        name: &str,
        gray_md5: &str,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        caller.may_write_key(key)?;
        let op = Op::PromoteGray(pb::PromoteGray {
            key: Some(key.into()),
            name: name.to_string(),
            gray_md5: gray_md5.to_string(),
            cas_md5: cas_md5.filter(|m| !m.is_empty()),
            origin: Some(origin(caller)),
            history_limit: self.limits.history_limit,
        });
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Promotes the beta (the gray named `beta`).
    pub async fn promote_beta(
        &self,
        key: &ConfigKey,
        beta_md5: &str,
        cas_md5: Option<String>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        self.promote_gray(key, BETA_GRAY, beta_md5, cas_md5, caller)
            .await
    }
}
