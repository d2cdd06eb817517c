//! Durable storage: the Raft log, its metadata, and snapshot files.
//!
//! The data dir holds only what Raft needs to rebuild memory on start:
//!
//! ```text
//! <data-dir>/
//!   LOCK                 exclusive lock (flock) held while a process uses the dir; holds its pid
//!   meta                 vote and last purged log id, replaced atomically (meta.rs)
//!   log/NNNN...NNNN.seg  append-only log segments with commit markers (segment.rs)
//!   snapshots/*.snap     the newest two snapshots (snapshot.rs)
//!   keyring              the data key wrapped by the key-encryption key, when
//!                        encryption at rest is on (crypt.rs)
//! ```
//!
//! Everything on disk is framed as checksummed records (record.rs). The log
//! is written by one dedicated thread with group commit (log.rs); file access
//! goes through the small [`fs::Fs`] trait so tests can inject crashes and
//! I/O errors (faulty_fs.rs).
//!
//! This module knows the shape of Raft entries (to encode them) but nothing
//! of openraft's traits: the adapters in the raft crate sit on top.

pub mod crypt;
pub mod error;
#[cfg(feature = "fault-injection")]
pub mod failpoint_fs;
#[cfg(any(test, feature = "fault-injection"))]
pub mod faulty_fs;
pub mod fs;
pub mod log;
pub mod meta;
pub mod record;
pub mod scan;
pub mod segment;
pub mod snapshot;

pub use crypt::{DataKey, Kek};
pub use error::StoreError;
pub use fs::{Fs, StdFs};
pub use log::{LogOptions, LogStore, Recovery};
pub use snapshot::SnapshotFiles;
#[cfg(test)]
mod tests;
