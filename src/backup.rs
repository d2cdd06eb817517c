//! What a backup is, for both its ends: the node that serves
//! `GET /tacos/v1/admin/backup` (`crate::api`) and `tacos backup`, which
//! fetches and checks it (`crate::ops::backup`). A backup is a snapshot
//! file of the node's state at its applied index, sealed when encryption at
//! rest is on.

use tacos_core::types::{LogId, SnapshotMeta};
use tacos_state::State;
use tacos_store::{crypt, snapshot, DataKey, Kek};

/// The response header with the backup's `State::digest()`.
pub const DIGEST_HEADER: &str = "X-Tacos-Digest";
/// The response header with the applied log index the backup is at.
pub const APPLIED_HEADER: &str = "X-Tacos-Applied";
/// The admin route that serves a backup.
pub const ROUTE: &str = "/tacos/v1/admin/backup";

/// A backup of one state.
pub struct Backup {
    /// A snapshot file.
    pub bytes: Vec<u8>,
    /// `State::digest()` of the state in it.
    pub digest: String,
    pub applied: Option<LogId>,
}

/// Encodes `state` as a snapshot file, with the metadata the snapshot
/// builder gives it (applied log id and membership), sealed when `kek` is
/// given. Takes time and memory in proportion to the state: call it off
/// the request threads.
pub fn encode(state: &State, kek: Option<&Kek>) -> Backup {
    let applied = state.last_applied;
    let meta = SnapshotMeta {
        last_log_id: applied,
        last_membership: state.membership.clone(),
        snapshot_id: format!(
            "backup-{}-{}",
            applied.map_or(0, |id| id.leader_id.term),
            applied.map_or(0, |id| id.index),
        ),
    };
    let bytes = snapshot::encode(&meta, state.snapshot_records());
    let bytes = match kek {
        Some(kek) => crypt::seal_file(&DataKey::generate(), Some(kek), &bytes),
        None => bytes,
    };
    Backup {
        bytes,
        digest: state.digest(),
        applied,
    }
}
