//! openraft's `RaftStateMachine`: the in-memory [`State`] plus snapshot files.
//!
//! The current state sits in an `ArcSwap`. `apply` clones it (O(1): the
//! tables are persistent maps), applies the batch and swaps the result in, so
//! readers on any thread see a consistent state without locks. A snapshot is
//! the `Arc` of the state at that moment; encoding and writing it happen on a
//! thread of their own, at a lower CPU priority, while apply goes on
//! ([`build_thread`]).

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError};

use tacos_core::types::{
    Entry, LogId, Snapshot, SnapshotData, SnapshotIo, SnapshotMeta, StorageError, StoredMembership,
    TypeConfig,
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
    /// The snapshot file loaded, built or installed last.
    current: Arc<Mutex<Option<Current>>>,
}

/// The file a snapshot from the leader is received into, with its path.
struct ReceivingFile {
    file: tokio::fs::File,
    path: PathBuf,
}

impl tokio::io::AsyncRead for ReceivingFile {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().file).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for ReceivingFile {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.get_mut().file).poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().file).poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.get_mut().file).poll_shutdown(cx)
    }
}

impl tokio::io::AsyncSeek for ReceivingFile {
    fn start_seek(
        self: std::pin::Pin<&mut Self>,
        position: std::io::SeekFrom,
    ) -> std::io::Result<()> {
        std::pin::Pin::new(&mut self.get_mut().file).start_seek(position)
    }

    fn poll_complete(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<u64>> {
        std::pin::Pin::new(&mut self.get_mut().file).poll_complete(cx)
    }
}

/// A snapshot received from the leader, as [`StateMachine::begin_receiving_snapshot`]
/// gave it out.
enum Received {
    /// Held in memory (a sealing node: no plain bytes on its disk).
    Bytes(Vec<u8>),
    /// Written to this file, fsynced.
    File(PathBuf),
}

/// A snapshot file known to be whole: the one loaded at start (checked
/// then), or one this node wrote since.
#[derive(Debug, Clone)]
struct Current {
    meta: SnapshotMeta,
    path: PathBuf,
    /// Sealed files open only whole.
    sealed: bool,
}

impl Current {
    fn set(slot: &Mutex<Option<Current>>, current: Current) {
        *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(current);
    }

    fn get(slot: &Mutex<Option<Current>>) -> Option<Current> {
        slot.lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// Snapshot data held in memory.
fn in_memory(bytes: Vec<u8>) -> Box<SnapshotData> {
    Box::new(Box::new(Cursor::new(bytes)))
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
        let mut current = None;
        let state = match loaded {
            Some(loaded) => {
                let (meta, state) = loaded_state(loaded.meta, loaded.value);
                tracing::info!(
                    snapshot = %meta.snapshot_id,
                    last_log_id = ?meta.last_log_id,
                    configs = state.config_count(),
                    "loaded snapshot"
                );
                current = Some(Current {
                    meta,
                    path: loaded.path,
                    sealed: loaded.sealed,
                });
                state
            }
            None => State::default(),
        };
        Ok(StateMachine {
            state: Arc::new(ArcSwap::from_pointee(state)),
            files,
            builds: Arc::new(AtomicU64::new(0)),
            changes: None,
            current: Arc::new(Mutex::new(current)),
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

    /// The snapshot openraft hands to install: what
    /// [`begin_receiving_snapshot`](RaftStateMachine::begin_receiving_snapshot)
    /// gave out, written into (the bytes, or the file made durable), or a
    /// current snapshot's file handed over as it is (openraft's storage test
    /// suite does that), copied as if received.
    async fn received(&self, snapshot: Box<SnapshotData>) -> std::io::Result<Received> {
        use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _, AsyncWriteExt as _};
        let any = <dyn SnapshotIo>::into_any(*snapshot);
        let any = match any.downcast::<Cursor<Vec<u8>>>() {
            Ok(cursor) => return Ok(Received::Bytes(cursor.into_inner())),
            Err(any) => any,
        };
        let any = match any.downcast::<ReceivingFile>() {
            Ok(mut received) => {
                received.file.flush().await?;
                received.file.sync_all().await?;
                return Ok(Received::File(received.path));
            }
            Err(any) => any,
        };
        let Ok(mut file) = any.downcast::<tokio::fs::File>() else {
            return Err(std::io::Error::other(
                "a snapshot to install is neither received here nor a snapshot file",
            ));
        };
        file.seek(std::io::SeekFrom::Start(0)).await?;
        if self.files.seals() {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).await?;
            return Ok(Received::Bytes(bytes));
        }
        let path = self.files.receiving_path();
        let mut copy = tokio::fs::File::create(&path).await?;
        tokio::io::copy(&mut file, &mut copy).await?;
        copy.flush().await?;
        copy.sync_all().await?;
        Ok(Received::File(path))
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
    current: Arc<Mutex<Option<Current>>>,
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
            let path = files.save(&meta, &bytes)?;
            Ok::<_, StoreError>((meta, bytes, path))
        });
        let (meta, bytes, path) = task
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        tracing::info!(snapshot = %meta.snapshot_id, bytes = bytes.len(), "built snapshot");
        Current::set(
            &self.current,
            Current {
                meta: meta.clone(),
                path,
                sealed: self.files.seals(),
            },
        );
        Ok(Snapshot {
            meta,
            snapshot: in_memory(bytes),
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
            current: self.current.clone(),
        }
    }

    /// A file in the snapshot dir, so a follower never holds a whole
    /// snapshot it is sent; in memory on a sealing node.
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<SnapshotData>, StorageError> {
        if self.files.seals() {
            return Ok(in_memory(Vec::new()));
        }
        let path = self.files.receiving_path();
        let file = tokio::fs::File::create(&path)
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, &e))?;
        Ok(Box::new(Box::new(ReceivingFile { file, path })))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<SnapshotData>,
    ) -> Result<(), StorageError> {
        let signature = meta.signature();
        let failed = |reason: String| {
            StorageIOError::read_snapshot(Some(signature.clone()), &std::io::Error::other(reason))
        };
        let received = self
            .received(snapshot)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let files = self.files.clone();
        let expected = meta.clone();
        let task = tokio::task::spawn_blocking(move || {
            let decoded = match &received {
                Received::Bytes(bytes) => decode_snapshot(bytes),
                Received::File(path) => std::fs::File::open(path)
                    .map_err(SnapshotDecodeError::Read)
                    .and_then(|file| decode_snapshot_from(std::io::BufReader::new(file))),
            };
            let checked = decoded.map_err(|e| e.to_string()).and_then(|(found, state)| {
                if found.last_log_id != expected.last_log_id
                    || found.last_membership != expected.last_membership
                {
                    return Err(format!(
                        "snapshot header {found:?} does not match what the leader announced {expected:?}"
                    ));
                }
                Ok((found, state))
            });
            let (found, state) = match checked {
                Ok(checked) => checked,
                Err(reason) => {
                    if let Received::File(path) = &received {
                        let _ = std::fs::remove_file(path);
                    }
                    return Err(reason);
                }
            };
            let path = match &received {
                Received::Bytes(bytes) => files.save(&found, bytes),
                Received::File(path) => files.adopt(path, &found),
            }
            .map_err(|e| e.to_string())?;
            Ok((state, found, path))
        });
        let (state, found, path) = task
            .await
            .map_err(|e| failed(e.to_string()))?
            .map_err(failed)?;
        tracing::info!(snapshot = %meta.snapshot_id, configs = state.config_count(), "installed snapshot");
        Current::set(
            &self.current,
            Current {
                meta: found,
                path,
                sealed: self.files.seals(),
            },
        );
        self.state.store(Arc::new(state));
        self.report(Changes::All);
        Ok(())
    }

    /// The current snapshot. A plain file is handed over open, to be read
    /// where openraft needs it: at start it wants only the metadata, and a
    /// follower is sent the file a chunk at a time. A sealed one is opened
    /// whole.
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        if let Some(current) = Current::get(&self.current).filter(|c| !c.sealed) {
            match tokio::fs::File::open(&current.path).await {
                Ok(file) => {
                    return Ok(Some(Snapshot {
                        meta: current.meta,
                        snapshot: Box::new(Box::new(file)),
                    }))
                }
                // Only the newest two files are kept and this is one of
                // them; if it went anyway, look again.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(
                        StorageIOError::read_snapshot(Some(current.meta.signature()), &e).into(),
                    )
                }
            }
        }
        let latest = self
            .files
            .latest()
            .map_err(|e| StorageIOError::read_snapshot(None, &e))?;
        Ok(latest.map(|(meta, bytes)| Snapshot {
            meta,
            snapshot: in_memory(bytes),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::storage::RaftStateMachine;
    use tacos_store::fs::StdFs;
    use tokio::io::{AsyncReadExt, AsyncSeekExt};

    async fn current(sm: &mut StateMachine) -> (SnapshotMeta, Vec<u8>, bool) {
        let mut snapshot = sm
            .get_current_snapshot()
            .await
            .expect("get_current_snapshot")
            .expect("a snapshot");
        snapshot
            .snapshot
            .seek(std::io::SeekFrom::Start(0))
            .await
            .expect("seek");
        let mut bytes = Vec::new();
        snapshot
            .snapshot
            .read_to_end(&mut bytes)
            .await
            .expect("read");
        let in_memory = <dyn SnapshotIo>::into_any(*snapshot.snapshot)
            .downcast::<Cursor<Vec<u8>>>()
            .is_ok();
        (snapshot.meta, bytes, in_memory)
    }

    /// A snapshot sent by the leader is written to a file as it arrives
    /// (kept in memory on a sealing node), checked, and becomes the current
    /// one; a damaged one is refused and its file goes.
    #[tokio::test]
    async fn a_received_snapshot_goes_through_a_file_unless_sealing() {
        use tokio::io::AsyncWriteExt;
        let fs: Arc<dyn Fs> = Arc::new(StdFs);
        let leader_dir = tempfile::tempdir().expect("temp dir");
        let mut leader = StateMachine::open(fs.clone(), leader_dir.path(), None).expect("open");
        let built = leader
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .expect("build");
        let (meta, bytes, _) = current(&mut leader).await;
        assert_eq!(meta, built.meta);
        for key in [None, Some(Arc::new(DataKey::generate()))] {
            let dir = tempfile::tempdir().expect("temp dir");
            let mut follower =
                StateMachine::open(fs.clone(), dir.path(), key.clone()).expect("open");
            let receiving = dir.path().join("snapshots/receiving.tmp");

            // Cut short: refused, nothing left behind.
            let mut data = follower.begin_receiving_snapshot().await.expect("begin");
            data.write_all(&bytes[..bytes.len() - 1])
                .await
                .expect("write");
            assert!(follower.install_snapshot(&meta, data).await.is_err());
            assert!(!receiving.exists());
            assert!(follower
                .get_current_snapshot()
                .await
                .expect("none")
                .is_none());

            let mut data = follower.begin_receiving_snapshot().await.expect("begin");
            assert_eq!(receiving.exists(), key.is_none());
            data.write_all(&bytes).await.expect("write");
            follower
                .install_snapshot(&meta, data)
                .await
                .expect("install");
            assert!(!receiving.exists());
            let (installed, installed_bytes, in_memory) = current(&mut follower).await;
            assert_eq!((installed, installed_bytes), (meta.clone(), bytes.clone()));
            assert_eq!(in_memory, key.is_some());
            assert_eq!(follower.state().load().last_applied, meta.last_log_id);
        }
    }

    /// A plain snapshot is handed over as its file, the one loaded at start
    /// or built since; a sealed one as its plain bytes in memory.
    #[tokio::test]
    async fn the_current_snapshot_is_read_from_its_file_unless_sealed() {
        for key in [None, Some(Arc::new(DataKey::generate()))] {
            let dir = tempfile::tempdir().expect("temp dir");
            let fs: Arc<dyn Fs> = Arc::new(StdFs);
            let mut sm = StateMachine::open(fs.clone(), dir.path(), key.clone()).expect("open");
            assert!(sm.get_current_snapshot().await.expect("none").is_none());
            let built = sm
                .get_snapshot_builder()
                .await
                .build_snapshot()
                .await
                .expect("build");
            let (meta, bytes, in_memory) = current(&mut sm).await;
            assert_eq!(meta, built.meta);
            assert_eq!(in_memory, key.is_some());
            let files = SnapshotFiles::open(fs.clone(), dir.path())
                .expect("files")
                .with_key(key.clone());
            let (latest_meta, latest_bytes) = files.latest().expect("latest").expect("one");
            assert_eq!((meta.clone(), bytes), (latest_meta, latest_bytes.clone()));

            // Opened again, the node hands over the file it loaded.
            drop(sm);
            let mut sm = StateMachine::open(fs, dir.path(), key.clone()).expect("reopen");
            let (again, bytes, in_memory) = current(&mut sm).await;
            assert_eq!((again, bytes), (meta, latest_bytes));
            assert_eq!(in_memory, key.is_some());
        }
    }
}
