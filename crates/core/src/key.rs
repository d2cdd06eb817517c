//! Config keys: namespace, group and dataId, with the public namespace in
//! one canonical spelling.

use std::fmt;
use std::sync::Arc;

use crate::command as pb;

/// Identifies a config. `namespace` is canonical: "" is the public namespace
/// (clients may say "" or "public"; both map here).
///
/// The parts sit behind one `Arc`, so a clone is a reference count: the
/// state's persistent maps clone every key of a node they copy on write,
/// and with three `String`s per key that was most of the cost of an apply.
/// Fields read through `Deref` (`key.data_id`); keys are immutable.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigKey(Arc<KeyParts>);

/// The parts of a [`ConfigKey`], ordered namespace, group, dataId.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyParts {
    pub namespace: String,
    pub group: String,
    pub data_id: String,
}

impl ConfigKey {
    pub fn new(namespace: &str, group: &str, data_id: &str) -> Self {
        Self::from_parts(
            canonical_namespace(namespace).to_string(),
            group.to_string(),
            data_id.to_string(),
        )
    }

    /// A key from parts taken as they are (`namespace` already canonical).
    pub fn from_parts(namespace: String, group: String, data_id: String) -> Self {
        ConfigKey(Arc::new(KeyParts {
            namespace,
            group,
            data_id,
        }))
    }
}

impl std::ops::Deref for ConfigKey {
    type Target = KeyParts;

    fn deref(&self) -> &KeyParts {
        &self.0
    }
}

impl fmt::Debug for ConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigKey")
            .field("namespace", &self.namespace)
            .field("group", &self.group)
            .field("data_id", &self.data_id)
            .finish()
    }
}

impl fmt::Display for ConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}+{}", self.data_id, self.group, self.namespace)
    }
}

impl From<&pb::ConfigKey> for ConfigKey {
    fn from(key: &pb::ConfigKey) -> Self {
        ConfigKey::new(&key.namespace, &key.group, &key.data_id)
    }
}

impl From<&ConfigKey> for pb::ConfigKey {
    fn from(key: &ConfigKey) -> Self {
        pb::ConfigKey {
            namespace: key.namespace.clone(),
            group: key.group.clone(),
            data_id: key.data_id.clone(),
        }
    }
}

/// The id of the public namespace as clients may spell it.
pub const PUBLIC_NAMESPACE: &str = "public";

/// "" and "public" are the same namespace; stored as "".
pub fn canonical_namespace(namespace: &str) -> &str {
    if namespace == PUBLIC_NAMESPACE {
        ""
    } else {
        namespace
    }
}

/// A namespace as people name it: the public one is `public`, whichever way
/// it was spelled.
pub fn shown_namespace(namespace: &str) -> &str {
    match canonical_namespace(namespace) {
        "" => PUBLIC_NAMESPACE,
        other => other,
    }
}
