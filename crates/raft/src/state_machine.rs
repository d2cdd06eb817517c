//! openraft's `RaftStateMachine`: the in-memory [`State`] plus snapshot files.
//!
//! The current state sits in an `ArcSwap`. `apply` clones it (O(1): the
//! tables are persistent maps), applies the batch and swaps the result in, so
//! readers on any thread see a consistent state without locks. A snapshot is
//! the `Arc` of the state at that moment; encoding and writing it happen on a
//! thread of their own, at a lower CPU priority, while apply goes on
//! ([`build_thread`]).

use std::io::Cursor;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError};

use tacos_core::types::{
    Entry, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig,
};
use tacos_state::{Changes, DecodeError, Response, SnapshotLoader, State, StateHandle};
use tacos_store::snapshot::{self, LoadError, SnapshotDecodeError, SnapshotFiles};
use tacos_store::DataKey;
use tacos_store::{Fs, StoreError};

/// Where the state machine reports what each applied batch changed. The
/// watch layer implements it (to wake listeners); any `Fn(Changes)` does.
pub trait ChangeSink: Send + Sync + 'static {
    fn changed(&self, changes: Changes);
}

impl<F: Fn(Changes) + Send + Sync + 'static> ChangeSink for F {
    fn changed(&self, changes: Changes) {
        self(changes)
    }
}

/// The state machine and its snapshot files.
pub struct StateMachine {
    state: StateHandle,
    files: SnapshotFiles,
    builds: Arc<AtomicU64>,
    changes: Option<Arc<dyn ChangeSink>>,
}

/// Decodes a whole snapshot (or backup) file into the state it holds, as
/// the state machine does when it loads one.
pub fn decode_snapshot(
    bytes: &[u8],
) -> Result<(SnapshotMeta, State), SnapshotDecodeError<DecodeError>> {
    let mut loader = SnapshotLoader::default();
    let meta = snapshot::decode(bytes, |record| loader.load(record))?;
    Ok(loaded_state(meta, loader))
}

/// [`decode_snapshot`] of a file read as it is decoded (never held whole).
pub fn decode_snapshot_from(
    reader: impl std::io::Read,
) -> Result<(SnapshotMeta, State), SnapshotDecodeError<DecodeError>> {
    let mut loader = SnapshotLoader::default();
    let meta = snapshot::decode_from(reader, |record| loader.load(record))?;
    Ok(loaded_state(meta, loader))
}

fn loaded_state(meta: SnapshotMeta, loader: SnapshotLoader) -> (SnapshotMeta, State) {
    let mut state = loader.finish();
    state.last_applied = meta.last_log_id;
    state.membership = meta.last_membership.clone();
    (meta, state)
}

impl StateMachine {
    /// Opens the snapshot directory and loads the newest valid snapshot.
    /// With `data_key` (encryption at rest), snapshot files are sealed on
    /// disk; what is built, streamed to followers and installed stays plain
    /// in memory.
    pub fn open(
        fs: Arc<dyn Fs>,
        data_dir: &Path,
        data_key: Option<Arc<DataKey>>,
    ) -> Result<Self, StoreError> {
        let files = SnapshotFiles::open(fs, data_dir)?.with_key(data_key);
        // Decoded as it is read: the file's bytes are never held beside the state.
        let loaded = files
            .load_latest(SnapshotLoader::default, |loader, record| {
                loader.load(record)
            })
            .map_err(|e| match e {
                LoadError::Store(e) => e,
                LoadError::Decode { path, error } => StoreError::Corrupt {
                    path,
                    offset: 0,
                    reason: error.to_string(),
                },
            })?;
        let state = match loaded {
            Some((meta, loader)) => {
                let (meta, state) = loaded_state(meta, loader);
                tracing::info!(
                    snapshot = %meta.snapshot_id,
                    last_log_id = ?meta.last_log_id,
                    configs = state.config_count(),
                    "loaded snapshot"
                );
                state
            }
            None => State::default(),
        };
        Ok(StateMachine {
            state: Arc::new(ArcSwap::from_pointee(state)),
            files,
            builds: Arc::new(AtomicU64::new(0)),
            changes: None,
        })
    }

    /// Reports the keys each applied batch changed (for listeners).
    pub fn with_change_sink(mut self, sink: Arc<dyn ChangeSink>) -> Self {
        self.changes = Some(sink);
        self
    }

    fn report(&self, changes: Changes) {
        if let Some(sink) = &self.changes {
            sink.changed(changes);
        }
    }

    /// A handle readers use to see the current state.
    pub fn state(&self) -> StateHandle {
        self.state.clone()
    }
}

/// How much lower than the rest of the node a snapshot build runs (nice).
const BUILD_NICE: i32 = 10;

/// Runs `build` on a new thread at [`BUILD_NICE`] lower priority and hands
/// back its result.
///
/// Building a snapshot encodes the whole state: 28-40 ms of one core for a
/// 2-3 MB snapshot here, more as the audit log fills. On a busy node that time came out of the
/// requests' share, and publishes answered around each snapshot were the
/// slowest of a run (`publish_timeline`, docs/benchmarks.md). A lower
/// priority only weights the scheduler's share, so the build still finishes
/// under load, just behind the requests. A thread per build (one every few
/// seconds at most) because an unprivileged process cannot raise a thread's
/// priority back: a pooled thread would stay low for whatever ran next.
fn build_thread<T: Send + 'static>(
    build: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<tokio::sync::oneshot::Receiver<T>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("snapshot-build".into())
        .spawn(move || {
            lower_priority(BUILD_NICE);
            let _ = tx.send(build());
        })?;
    Ok(rx)
}

/// Raises the calling thread's nice value by `by` (at most to 19). Best
/// effort: where it fails the build runs at the node's priority.
fn lower_priority(by: i32) {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority/setpriority on this thread's own id read and set
    // only this thread's nice value (Linux keeps one per thread).
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if *libc::__errno_location() == 0
            && libc::setpriority(libc::PRIO_PROCESS, tid, (now + by).min(19)) != 0
        {
            tracing::debug!(
                "snapshot build keeps the node's priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = by;
}

/// Builds a snapshot from the state as it was when the builder was made.
pub struct SnapshotBuilder {
    state: Arc<State>,
    files: SnapshotFiles,
    builds: Arc<AtomicU64>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let state = self.state.clone();
        let files = self.files.clone();
        let build = self.builds.fetch_add(1, Ordering::Relaxed) + 1;
        let task = build_thread(move || {
            let meta = SnapshotMeta {
                last_log_id: state.last_applied,
                last_membership: state.membership.clone(),
                snapshot_id: format!(
                    "{}-{}-{build}",
                    state.last_applied.map_or(0, |id| id.leader_id.term),
                    state.last_applied.map_or(0, |id| id.index),
                ),
            };
            let bytes = snapshot::encode(&meta, state.snapshot_records());
            files.save(&meta, &bytes)?;
            Ok::<_, StoreError>((meta, bytes))
        });
        let (meta, bytes) = task
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        tracing::info!(snapshot = %meta.snapshot_id, bytes = bytes.len(), "built snapshot");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let state = self.state.load();
        Ok((state.last_applied, state.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut next = State::clone(&self.state.load());
        let mut responses = Vec::new();
        let mut changed = Vec::new();
        for entry in entries {
            next.last_applied = Some(entry.log_id);
            let response = match entry.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(batch) => batch
                    .commands
                    .iter()
                    .map(|command| next.apply(command, &mut changed))
                    .collect(),
                EntryPayload::Membership(membership) => {
                    next.membership = StoredMembership::new(Some(entry.log_id), membership);
                    Vec::new()
                }
            };
            responses.push(response);
        }
        self.state.store(Arc::new(next));
        if !changed.is_empty() {
            self.report(Changes::Keys(changed));
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder {
            state: self.state.load_full(),
            files: self.files.clone(),
            builds: self.builds.clone(),
        }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let bytes = snapshot.into_inner();
        let files = self.files.clone();
        let expected = meta.clone();
        let signature = meta.signature();
        let task = tokio::task::spawn_blocking(move || {
            let (found, state) = decode_snapshot(&bytes).map_err(|e| e.to_string())?;
            if found.last_log_id != expected.last_log_id
                || found.last_membership != expected.last_membership
            {
                return Err(format!(
                    "snapshot header {found:?} does not match what the leader announced {expected:?}"
                ));
            }
            files.save(&found, &bytes).map_err(|e| e.to_string())?;
            Ok(state)
        });
        let state = task
            .await
            .map_err(|e| StorageIOError::read_snapshot(Some(signature.clone()), &e))?
            .map_err(|reason| {
                StorageIOError::read_snapshot(
                    Some(signature.clone()),
                    &std::io::Error::other(reason),
                )
            })?;
        tracing::info!(snapshot = %meta.snapshot_id, configs = state.config_count(), "installed snapshot");
        self.state.store(Arc::new(state));
        self.report(Changes::All);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let latest = self
            .files
            .latest()
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok(latest.map(|(meta, bytes)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(bytes)),
        }))
    }
}
