//! Publish: a config, one of its gray versions (beta, tag), or many
//! configs at once (an import).

use tacos_core::command as pb;
use tacos_core::validate::{self, InvalidInput};
use tacos_core::{md5_hex, Op};

use super::gray::{checked_tag, GrayTarget};
use super::{checked_key, origin, Caller, ConfigService, ServiceError};

/// Most bytes one import may take encoded: it is one log entry, which must
/// stay well inside a log record and a cluster frame.
pub const MAX_IMPORT_BYTES: usize = 48 * 1024 * 1024;
const _: () =
    assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_store::record::MAX_RECORD_LEN as usize);
const _: () = assert!(MAX_IMPORT_BYTES + 1024 * 1024 < tacos_raft::rpc::MAX_FRAME);

/// The client IPs of a beta (Nacos' comma-separated `betaIps`; the
/// console's box takes spaces and lines too): trimmed, empty ones left
/// out. Each must be an IP, which [`ConfigService::publish`] checks on
/// every surface.
pub fn beta_list(text: &str) -> Vec<String> {
    text.split([',', ' ', '\n', '\r', '\t'])
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
    /// `None`: the client did not send it, and an update keeps the app
    /// name the config holds (Nacos' rule: only an empty one clears it).
    pub app_name: Option<String>,
    /// `None`: not sent; an update keeps the config's tags (as Nacos).
    pub tags: Option<String>,
    /// Compare-and-set against this md5 (when `Some` and not empty).
    pub cas_md5: Option<String>,
    /// What the config must be before the write (checked in apply).
    pub expect: pb::Expect,
    /// Publish as the beta gray to these IPs (when not empty).
    pub beta_ips: Vec<String>,
    /// Publish as the gray `tag_{tag}` (Nacos' `tag`; when not blank and
    /// there are no beta IPs, which win as in Nacos).
    pub tag: String,
    /// Nacos' `encryptedDataKey`: what a client's encryption plugin sends
    /// with the content it encrypted (dataId `cipher-{alg}-...`). Stored
    /// and returned as given; Tacos never decrypts (Nacos without a server
    /// side plugin does the same).
    pub encrypted_data_key: String,
}

/// A beta is served to the clients whose IP is listed: an entry that is no
/// IP could never match one, so it is refused rather than stored (Nacos
/// stores any text; see docs/gray.md).
fn checked_beta_ips(ips: &[String]) -> Result<(), InvalidInput> {
    match ips
        .iter()
        .find(|ip| ip.parse::<std::net::IpAddr>().is_err())
    {
        Some(bad) => Err(InvalidInput::Other(
            "betaIps",
            format!("{bad:?} is not an IP (a beta is served to the client IPs it lists)"),
        )),
        None => Ok(()),
    }
}

/// What an editor's publish expects of the config, checked in apply
/// with the write (atomically): a new config (`create`) must not exist
/// yet; an edit of a version the user loaded (`cas_md5`) must still exist
/// (and match it, by the CAS); anything else may land either way.
pub fn edit_expectation(create: bool, cas_md5: Option<&str>) -> pb::Expect {
    match (create, cas_md5.filter(|m| !m.is_empty())) {
        (true, _) => pb::Expect::Absent,
        (false, Some(_)) => pb::Expect::Present,
        (false, None) => pb::Expect::Any,
    }
}

/// What a publish stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The md5 of the content, as clients will see it.
    pub md5: String,
}

/// The longest `encryptedDataKey` accepted (Nacos' column is
/// `varchar(1024)`).
pub const MAX_ENCRYPTED_DATA_KEY: usize = 1024;

impl ConfigService {
    /// Checks a publish (may the caller, then the input) and stamps it; the
    /// gray it is for (if any) comes back beside it.
    fn checked_publish(
        &self,
        req: PublishRequest,
        caller: &Caller,
    ) -> Result<(pb::PublishConfig, Option<GrayTarget>), ServiceError> {
        caller.may_write(&req.namespace, &req.group, &req.data_id)?;
        let key = checked_key(&req.namespace, &req.group, &req.data_id)?;
        let tag = checked_tag(&req.tag)?;
        checked_beta_ips(&req.beta_ips)?;
        let gray = if !req.beta_ips.is_empty() {
            Some(GrayTarget::Beta(req.beta_ips))
        } else {
            tag.map(GrayTarget::Tag)
        };
        validate::content(&req.content, self.limits.max_content_size)?;
        if req.encrypted_data_key.len() > MAX_ENCRYPTED_DATA_KEY {
            return Err(InvalidInput::Other(
                "encryptedDataKey",
                format!("it is longer than {MAX_ENCRYPTED_DATA_KEY} bytes"),
            )
            .into());
        }
        let publish = pb::PublishConfig {
            key: Some((&key).into()),
            md5: md5_hex(&req.content),
            content: req.content,
            config_type: validate::config_type(&req.config_type).to_string(),
            desc: req.desc,
            keep_app_name: req.app_name.is_none(),
            keep_tags: req.tags.is_none(),
            app_name: req.app_name.unwrap_or_default(),
            tags: req.tags.unwrap_or_default(),
            origin: Some(origin(caller)),
            cas_md5: req.cas_md5.filter(|m| !m.is_empty()),
            history_limit: self.limits.history_limit,
            expect: req.expect.into(),
            create_namespace: self.limits.create_namespaces,
            encrypted_data_key: req.encrypted_data_key,
        };
        Ok((publish, gray))
    }

    /// Publishes a config, or its beta (`beta_ips` given) or tag gray
    /// (`tag` given).
    pub async fn publish(
        &self,
        req: PublishRequest,
        caller: &Caller,
    ) -> Result<Published, ServiceError> {
        let (publish, gray) = self.checked_publish(req, caller)?;
        let published = Published {
            md5: publish.md5.clone(),
        };
        let done = match gray {
            Some(target) => self.publish_gray(publish, target, caller).await,
            None => {
                let op = Op::PublishConfig(publish);
                self.writer.propose(op, caller).await.map(|_| ())
            }
        };
        if done.is_ok() {
            metrics::counter!("tacos_config_publishes_total").increment(1);
        }
        done.map(|()| published)
    }

    /// Publishes several configs as one write: all of them, or (if one is
    /// refused, e.g. its CAS md5 no longer matches) none, with
    /// [`ApplyError::ImportRefused`](tacos_state::ApplyError::ImportRefused) naming it. Every publish is checked
    /// first; gray versions cannot be imported.
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
            let (publish, gray) = self.checked_publish(request, caller)?;
            if gray.is_some() {
                return Err(InvalidInput::Other(
                    "import",
                    "a gray version (beta or tag) cannot be imported; publish it on its own".into(),
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
