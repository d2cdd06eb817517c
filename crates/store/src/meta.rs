//! The metadata file: the vote and the last purged log id.
//!
//! Layout: one record (see [`record`](super::record)) whose payload is the
//! JSON of [`Meta`]. It is replaced atomically: write `meta.tmp`, fsync it,
//! rename it over `meta`, fsync the directory. A crash leaves either the old
//! or the new file, never a mix; a leftover `meta.tmp` is ignored.
//!
//! The committed log id is not kept here: it travels in the log segments as
//! commit marker records (see [`segment`](super::segment)), which costs no
//! extra fsync on the write path.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{Result, StoreError};
use super::fs::Fs;
use super::record::{self, Decoded};
use tacos_core::types::{LogId, Vote};

const FILE: &str = "meta";
const TEMP: &str = "meta.tmp";

/// What the metadata file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub vote: Option<Vote>,
    pub last_purged: Option<LogId>,
}

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Reads the metadata in `dir`; a missing file means a new data dir.
pub fn load(fs: &dyn Fs, dir: &Path) -> Result<Meta> {
    let path = path(dir);
    if !fs.exists(&path) {
        return Ok(Meta::default());
    }
    let bytes = fs.read(&path).map_err(StoreError::io("read", &path))?;
    let corrupt = |reason: String| StoreError::Corrupt {
        path: path.clone(),
        offset: 0,
        reason,
    };
    match record::decode_at(&bytes, 0) {
        Decoded::Record { payload, next } if next == bytes.len() => serde_json::from_slice(payload)
            .map_err(|e| corrupt(format!("metadata is not valid: {e}"))),
        other => Err(corrupt(format!("metadata record is damaged ({other:?})"))),
    }
}

/// Replaces the metadata in `dir` atomically and durably.
pub fn store(fs: &dyn Fs, dir: &Path, meta: &Meta) -> Result<()> {
    let temp = dir.join(TEMP);
    let json = serde_json::to_vec(meta).expect("metadata always serializes");
    let mut buf = Vec::with_capacity(json.len() + record::HEADER_LEN);
    record::encode(&json, &mut buf);
    crate::fs::write_atomically(fs, &path(dir), &temp, &buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    #[test]
    fn store_then_load_and_detect_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(&StdFs, dir.path()).unwrap(), Meta::default());
        let meta = Meta {
            vote: Some(Vote::new(3, 1)),
            last_purged: Some(LogId::new(openraft::CommittedLeaderId::new(2, 1), 40)),
        };
        store(&StdFs, dir.path(), &meta).unwrap();
        assert_eq!(load(&StdFs, dir.path()).unwrap(), meta);

        let file = dir.path().join(FILE);
        let mut bytes = std::fs::read(&file).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x20;
        std::fs::write(&file, bytes).unwrap();
        let err = load(&StdFs, dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    }
}
