//! Reads an r-nacos 0.5–0.8 data dir (Raft index, log and snapshot files). The reader
//! itself comes in the next step; this module only fixes its place in [`crate::Input`].

use std::path::{Path, PathBuf};

use crate::source::{ReadOptions, Source};

/// Why reading failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("{}: reading r-nacos 0.5-0.8 data dirs is not implemented yet", path.display())]
    NotImplemented { path: PathBuf },
}

/// Reads the r-nacos 0.5–0.8 data dir `from`.
pub fn read(from: &Path, _options: &ReadOptions) -> Result<Source, ReadError> {
    Err(ReadError::NotImplemented {
        path: from.to_path_buf(),
    })
}
