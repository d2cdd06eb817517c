//! Store errors.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the store.
///
/// I/O errors are fatal: after a failed write or fsync the kernel may have
/// dropped the dirty pages, so a retry could "succeed" without the data. The
/// store stops and every later call returns [`StoreError::Stopped`].
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("data dir {dir} is in use: {reason}. Stop the other tacos process or pick another --data-dir")]
    Locked { dir: PathBuf, reason: String },

    #[error("I/O error while trying to {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error("corrupt data in {path} at offset {offset}: {reason}; refusing to start (restore this node from a backup or re-add it to the cluster with an empty data dir)")]
    Corrupt {
        path: PathBuf,
        offset: u64,
        reason: String,
    },

    #[error("the log store stopped after an I/O error and accepts no more writes: {0}")]
    Stopped(String),

    #[error("data dir {dir} cannot be opened: {reason}")]
    Key { dir: PathBuf, reason: String },

    #[error("log entry {index} cannot be stored: {reason}")]
    BadEntry { index: u64, reason: String },
}

impl StoreError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| StoreError::Io {
            action,
            path,
            source,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
