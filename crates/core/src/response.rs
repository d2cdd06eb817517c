//! What applying a command answers: done, removed, or a deterministic refusal.

use serde::{Deserialize, Serialize};

/// What applying one log entry produced, returned to the proposer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    /// The command was applied.
    Done,
    /// A remove; `existed` is false when there was nothing to remove.
    Removed { existed: bool },
    /// The command was refused; the state did not change.
    Rejected(ApplyError),
}

/// A deterministic refusal: every node refuses the same command the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum ApplyError {
    #[error("Cas publish fail, server md5 may have changed.")]
    CasMismatch,
    /// A create found the config there already (`Expect::Absent`).
    #[error(
        "config {group}/{data_id} already exists in namespace {namespace}; open it to edit it"
    )]
    ConfigExists {
        namespace: String,
        group: String,
        data_id: String,
    },
    /// An edit found the config removed (`Expect::Present`).
    #[error("config {group}/{data_id} was deleted after you opened it; nothing was published")]
    ConfigGone { group: String, data_id: String },
    /// Nacos' `CONFIG_GRAY_OVER_MAX_VERSION_COUNT` (20010), its text.
    #[error("gray config version is over max count :{0}")]
    GrayOverMaxCount(u32),
    /// Nacos' `CONFIG_GRAY_VERSION_INVALID` (20012): an unknown rule type
    /// or version.
    #[error("config gray rule version invalid")]
    GrayRuleVersionInvalid,
    #[error("Cas publish gray config fail, server md5 may have changed.")]
    GrayCasMismatch,
    #[error("this config has no gray version {0:?}")]
    GrayNotFound(String),
    #[error("the gray version {0:?} was replaced after you opened it; reload to see the new one")]
    GrayReplaced(String),
    #[error("namespace not exist: {0}")]
    NamespaceNotFound(String),
    #[error("namespace already exists: {0}")]
    NamespaceExists(String),
    #[error("namespace {0} still holds {1} configs; delete them first")]
    NamespaceNotEmpty(String, usize),
    #[error("the command is incomplete or carries no operation this node understands")]
    UnknownCommand,
    #[error("auth is already initialized")]
    AuthInitialized,
    #[error("user already exist: {0}")]
    UserExists(String),
    #[error("user not exist: {0}")]
    UserNotFound(String),
    #[error("{0} is the last enabled admin; make another admin first")]
    LastAdmin(String),
    /// One publish of an import was refused, so none was applied.
    #[error("nothing imported: {entry} was refused: {reason}")]
    ImportRefused {
        /// `group/dataId` of the refused publish.
        entry: String,
        reason: Box<ApplyError>,
    },
    #[error("role not found: {0}")]
    RoleNotFound(String),
    #[error("role '{0}' is reserved: admins are users with the admin flag")]
    RoleReserved(String),
    #[error("user '{username}' already bound to the role '{role}'!")]
    RoleBound { role: String, username: String },
    /// A rehash found another hash than the one the login verified (cluster
    /// protocol 5).
    #[error("the password hash of {0} changed meanwhile; it was not re-hashed")]
    PasswordHashChanged(String),
}
