//! Import: many configs into one namespace as one write, planned against
//! the current state with a conflict policy (`crate::transfer::plan`) and
//! checked again in apply. Zip imports (console, v1, v3) and clones (v1,
//! v3) are this one use case.

use serde::Serialize;

use tacos_core::command::Expect;
use tacos_state::{canonical_namespace, Access, ConfigKey, State};

use super::{Caller, ConfigService, PublishRequest, ServiceError};
use crate::auth::{AuthError, Principal};
use crate::query::config_with_id;
use crate::transfer::{self, Existing, Item, Policy, TransferError};

/// What an import did (or, refused under `abort`, would have met).
#[derive(Debug, Default, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportOutcome {
    /// `group/dataId` of each config created.
    pub created: Vec<String>,
    pub overwritten: Vec<String>,
    /// Existing configs kept (`skip`).
    pub skipped: Vec<String>,
    /// Existing configs that already held exactly this (`overwrite`).
    pub unchanged: Vec<String>,
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The target namespace does not exist.
    #[error("namespace {0} does not exist")]
    NamespaceNotFound(String),
    /// Nothing to import, conflicts under `abort` (with the items that did
    /// not conflict), or a zip that cannot be read.
    #[error(transparent)]
    Transfer(#[from] TransferError),
    /// Conflicts under `abort`: these exist (`group/dataId`); the others
    /// would have been written.
    #[error("{} configs already exist (policy abort); nothing was imported", .conflicts.len())]
    Conflicts {
        conflicts: Vec<String>,
        others: Vec<String>,
    },
    /// The write was refused or failed.
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// The items a clone of configs `ids` makes (Nacos' clone: each config's
/// content, type, desc and app, under the group and dataId it is given, or
/// its own); unknown ids are left out, each config once. The caller must
/// read every source (writing the copies is the import's to decide).
pub fn clone_items(
    state: &State,
    who: &Principal,
    targets: &[CloneTarget],
) -> Result<Vec<Item>, AuthError> {
    for target in targets {
        if let Some((key, _)) = config_with_id(state, target.id) {
            who.require_key(key, Access::Read)?;
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    Ok(targets
        .iter()
        .filter(|t| seen.insert(t.id))
        .filter_map(|t| {
            let (key, config) = config_with_id(state, t.id)?;
            let or = |given: &str, own: &str| match given.trim() {
                "" => own.to_string(),
                given => given.to_string(),
            };
            Some(Item {
                group: or(&t.group, &key.group),
                data_id: or(&t.data_id, &key.data_id),
                content: config.content.to_string(),
                config_type: config.config_type.clone(),
                desc: config.desc.clone(),
                app_name: config.app_name.clone(),
            })
        })
        .collect())
}

/// One config to clone: its id, and the group and dataId of the copy
/// (blank: the config's own).
#[derive(Debug, Clone, Default)]
pub struct CloneTarget {
    pub id: u64,
    pub group: String,
    pub data_id: String,
}

impl ConfigService {
    /// Where an import (a zip, a clone) into `namespace` goes, before its
    /// items are read: the namespace as sent must be a valid one the
    /// caller may write something in, and exist. Answers it canonical.
    pub fn import_target(&self, namespace: &str, caller: &Caller) -> Result<String, ImportError> {
        tacos_core::validate::namespace(namespace).map_err(ServiceError::from)?;
        caller
            .principal
            .require_some(namespace, Access::Write)
            .map_err(ServiceError::Denied)?;
        let ns = canonical_namespace(namespace).to_string();
        if !self.state().has_namespace(&ns) {
            return Err(ImportError::NamespaceNotFound(namespace.to_string()));
        }
        Ok(ns)
    }

    /// Imports `items` into `namespace` (which must exist, and which the
    /// caller must be able to write each item in) with `policy`: one write of every create and overwrite, or none. An overwrite is a
    /// compare-and-set against the version planned, a create requires the
    /// config to be still absent (checked in apply, for the whole import).
    pub async fn import_items(
        &self,
        namespace: &str,
        items: Vec<Item>,
        policy: Policy,
        caller: &Caller,
    ) -> Result<ImportOutcome, ImportError> {
        let ns = self.import_target(namespace, caller)?;
        // Every item or none: refused whole when the caller may not write
        // one of them (skipped ones too: what a file would write is asked).
        for item in &items {
            caller.may_write(namespace, &item.group, &item.data_id)?;
        }
        let state = self.state();
        let entries: Vec<String> = items.iter().map(Item::entry).collect();
        let plan = transfer::plan(items, policy, |group, data_id| {
            state
                .config(&ConfigKey::new(&ns, group, data_id))
                .map(|c| Existing {
                    md5: c.md5.to_string(),
                    content: c.content.to_string(),
                    config_type: c.config_type.clone(),
                    desc: c.desc.clone(),
                    app_name: c.app_name.clone(),
                })
        });
        drop(state);
        let plan = match plan {
            Ok(plan) => plan,
            Err(TransferError::Conflicts(conflicts)) => {
                let mut others = entries;
                others.retain(|e| !conflicts.contains(e));
                others.dedup();
                return Err(ImportError::Conflicts { conflicts, others });
            }
            Err(e) => return Err(e.into()),
        };
        let outcome = ImportOutcome {
            created: plan.create.iter().map(Item::entry).collect(),
            overwritten: plan.overwrite.iter().map(|(i, _)| i.entry()).collect(),
            skipped: plan.skip,
            unchanged: plan.unchanged,
        };
        let request = |item: Item, cas_md5: Option<String>| PublishRequest {
            namespace: namespace.to_string(),
            group: item.group,
            data_id: item.data_id,
            content: item.content,
            config_type: item.config_type,
            desc: item.desc,
            // An import replaces both (its file holds the app name).
            app_name: Some(item.app_name),
            tags: Some(String::new()),
            expect: if cas_md5.is_some() {
                Expect::Present
            } else {
                Expect::Absent
            },
            cas_md5,
            beta_ips: Vec::new(),
            tag: String::new(),
            // Nacos' export has no encryptedDataKey (see docs/security.md).
            encrypted_data_key: String::new(),
        };
        let requests: Vec<PublishRequest> = plan
            .create
            .into_iter()
            .map(|item| request(item, None))
            .chain(
                plan.overwrite
                    .into_iter()
                    .map(|(item, md5)| request(item, Some(md5))),
            )
            .collect();
        if !requests.is_empty() {
            self.import(requests, caller).await?;
        }
        Ok(outcome)
    }
}
