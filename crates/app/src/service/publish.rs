//! Publish: a config, its beta, or many configs at once (an import).

use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{md5_hex, Op};

use super::{checked_key, origin, refuse_gray_tag, Caller, ConfigService, ServiceError};

/// Most bytes one import may take encoded: it is one log entry, which must
/// stay well inside a log record and a cluster frame.
pub const MAX_IMPORT_BYTES: usize = 48 * 1024 * 1024;
const _: () =
    assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_store::record::MAX_RECORD_LEN as usize);
const _: () = assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_raft::rpc::MAX_FRAME);

/// The items of one of Nacos' comma-separated lists (`betaIps`): trimmed,
/// empty ones left out.
pub fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

/// A config publish as a client asks for it.
#[derive(Debug, Clone, Default)]
pub struct PublishRequest {
    pub namespace: String,
    pub group: String,
    pub data_id: String,
    pub content: String,
    pub config_type: String,
    pub desc: String,
    pub app_name: String,
    pub tags: String,
    /// Compare-and-set against this md5 (when `Some` and not empty).
    pub cas_md5: Option<String>,
    /// What the config must be before the write (checked in apply).
    pub expect: pb::Expect,
    /// Publish as a beta to these IPs (when not empty).
    pub beta_ips: Vec<String>,
    /// A gray tag (Nacos' `tag`): refused while gray by tag is missing.
    pub tag: String,
}

impl ConfigService {
    /// Checks a publish and stamps it; the beta IPs come back beside it.
    fn checked_publish(
        &self,
        req: PublishRequest,
        caller: &Caller,
    ) -> Result<(pb::PublishConfig, Vec<String>), InvalidInput> {
        let key = checked_key(&req.namespace, &req.group, &req.data_id)?;
        refuse_gray_tag(&req.tag)?;
        validate::content(&req.content, self.limits.max_content_size)?;
        let publish = pb::PublishConfig {
            key: Some((&key).into()),
            md5: md5_hex(&req.content),
            content: req.content,
            config_type: validate::config_type(&req.config_type).to_string(),
            desc: req.desc,
            app_name: req.app_name,
            tags: req.tags,
            origin: Some(origin(caller)),
            cas_md5: req.cas_md5.filter(|m| !m.is_empty()),
            history_limit: self.limits.history_limit,
            expect: req.expect.into(),
            create_namespace: self.limits.create_namespaces,
        };
        Ok((publish, req.beta_ips))
    }

    /// Publishes a config (or its beta, when `beta_ips` is given).
    pub async fn publish(&self, req: PublishRequest, caller: &Caller) -> Result<(), ServiceError> {
        let (publish, beta_ips) = self.checked_publish(req, caller)?;
        let op = if beta_ips.is_empty() {
            Op::PublishConfig(publish)
        } else {
            Op::PublishBeta(pb::PublishBeta {
                key: publish.key,
                content: publish.content,
                md5: publish.md5,
                beta_ips,
                origin: publish.origin,
                config_type: publish.config_type,
                app_name: publish.app_name,
            })
        };
        self.writer.propose(op, caller).await.map(|_| ())
    }

    /// Publishes several configs as one write: all of them, or (if one is
    /// refused, e.g. its CAS md5 no longer matches) none, with
    /// [`ApplyError::ImportRefused`] naming it. Every publish is checked
    /// first; betas cannot be imported.
    pub async fn import(
        &self,
        requests: Vec<PublishRequest>,
        caller: &Caller,
    ) -> Result<(), ServiceError> {
        if requests.is_empty() {
            return Err(InvalidInput::Other("import", "it holds no configs".into()).into());
        }
        let mut publishes = Vec::with_capacity(requests.len());
        for request in requests {
            let (publish, beta_ips) = self.checked_publish(request, caller)?;
            if !beta_ips.is_empty() {
                return Err(InvalidInput::Other(
                    "import",
                    "a beta cannot be imported; publish it on its own".into(),
                )
                .into());
            }
            publishes.push(publish);
        }
        let op = Op::ImportConfigs(pb::ImportConfigs { publishes });
        let size = op.encoded_len();
        if size > MAX_IMPORT_BYTES {
            return Err(InvalidInput::Other(
                "import",
                format!(
                    "it is {} MiB; at most {} MiB go in one import (split it)",
                    size.div_ceil(1024 * 1024),
                    MAX_IMPORT_BYTES / 1024 / 1024
                ),
            )
            .into());
        }
        self.writer.propose(op, caller).await.map(|_| ())
    }
}
