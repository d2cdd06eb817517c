//! The durable Raft log: segment files written by one dedicated thread with
//! group commit, and an index of the live entries for reads: the newest held
//! decoded, older ones read back from their segment file (see `Cached`).
//!
//! # Write path
//!
//! Callers (openraft's storage task) never touch a file. [`LogStore::append`]
//! encodes the entries on the caller's thread, puts them in the in-memory
//! cache (so they are readable at once, as openraft requires), and hands the
//! encoded records to the writer thread. The writer takes everything queued,
//! writes it with one `write` per segment, calls `sync_data` once, and only
//! then runs the completion callbacks. Appends that arrive while an fsync is
//! running queue up and share the next one: with one fsync costing ~3 ms, 128
//! concurrent writers get ~128 entries per fsync instead of one.
//!
//! Every other operation (vote, truncate, purge, flush) first makes the
//! pending appends durable, so all I/O is applied in the order it was issued.
//!
//! # Failure
//!
//! Any write, fsync, rename or remove error stops the writer for good: the
//! waiting callbacks get the error, every later call gets
//! [`StoreError::Stopped`], and [`LogStore::failure`] tells the node to exit.
//! Nothing is retried: after a failed fsync the kernel may have dropped the
//! dirty pages, and a retry could report success for data that is gone.

use std::any::Any;
use std::collections::BTreeMap;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};
use tokio::sync::{oneshot, watch};

use super::crypt::{self, DataKey, Kek};
use super::error::{Result, StoreError};
use super::fs::{AppendFile, Fs};
use super::meta::{self, Meta};
use super::record;
use super::scan;
use super::segment::{self, Place, MAGIC};
use tacos_core::types::{Entry, LogId, Vote};

/// Name of the lock file in the data dir.
pub const LOCK_FILE: &str = "LOCK";
/// Name of the directory of log segments in the data dir.
pub const LOG_DIR: &str = "log";

/// At most this many queued operations are taken into one group commit.
const MAX_BATCH: usize = 4096;

/// Tuning for the log.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// A segment is closed and a new one started once it reaches this size.
    pub segment_size: u64,
    /// The key-encryption key (encryption at rest, see crypt.rs): the data
    /// dir's data key is opened (or made) with it, under the lock, and seals
    /// every entry body written. A data dir with a keyring refuses to open
    /// without it.
    pub kek: Option<Arc<Kek>>,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            segment_size: 64 * 1024 * 1024,
            kek: None,
        }
    }
}

/// Called once the entries of one append are durable (or failed to be).
pub type Done = Box<dyn FnOnce(io::Result<()>) + Send>;
type Reply = oneshot::Sender<Result<()>>;

enum Op {
    Append {
        records: Vec<(LogId, Vec<u8>)>,
        done: Done,
    },
    Committed(Vec<u8>),
    Truncate {
        since: u64,
        reply: Reply,
    },
    Purge {
        upto: LogId,
        reply: Reply,
    },
    SaveVote {
        vote: Vote,
        reply: Reply,
    },
    Flush {
        reply: Reply,
    },
}

impl Op {
    /// Answers the operation with an error without doing it.
    fn refuse(self, message: &str) {
        let stopped = || StoreError::Stopped(message.to_string());
        match self {
            Op::Append { done, .. } => done(Err(io::Error::other(stopped().to_string()))),
            Op::Committed(_) => {}
            Op::Truncate { reply, .. }
            | Op::Purge { reply, .. }
            | Op::SaveVote { reply, .. }
            | Op::Flush { reply } => {
                let _ = reply.send(Err(stopped()));
            }
        }
    }
}

/// What recovery found when the log was opened.
#[derive(Debug, Clone, Default)]
pub struct Recovery {
    pub segments: usize,
    pub entries: usize,
    /// The damaged tail cut off the last segment, if any.
    pub torn_tail: Option<String>,
    pub committed: Option<LogId>,
}

struct Cache {
    entries: BTreeMap<u64, Cached>,
    last_purged: Option<LogId>,
}

/// How many of the newest entries stay decoded. Apply and replication read
/// an entry right after it is appended; older entries are read only by a
/// follower catching up (or a new one, before it gets a snapshot) and by the
/// replay of the log's committed tail when the node starts.
pub(crate) const DECODED_WINDOW: u64 = 64;

/// A live entry: decoded while it is among the newest [`DECODED_WINDOW`],
/// then only where it sits on disk, read back (and checked) when asked for.
/// The log keeps every entry since the last snapshot, up to
/// `--snapshot-log-bytes` of them. Held decoded they took 3-5 times their
/// bytes (37 MiB after a 10 s publish run, heaptrack); held as encoded
/// records, still their bytes plus an allocation each (9.4 MiB). An entry on
/// disk costs the index 48 bytes whatever its size (its leader and place; a
/// test holds this); the segment file has the bytes anyway.
///
/// An entry that leaves the window before the writer has made it durable
/// (and so has no place yet) is kept as its plain encoded record until the
/// writer reports the place.
enum Cached {
    Decoded(Box<(Entry, Option<Place>)>),
    Encoded(Box<[u8]>),
    OnDisk {
        leader: openraft::CommittedLeaderId<u64>,
        place: Place,
    },
}

impl Cached {
    fn decoded(entry: Entry, place: Option<Place>) -> Cached {
        Cached::Decoded(Box::new((entry, place)))
    }

    fn log_id(&self, index: u64) -> LogId {
        match self {
            Cached::Decoded(decoded) => decoded.0.log_id,
            Cached::Encoded(record) => {
                segment::record_log_id(record).expect("the cache holds records it encoded itself")
            }
            Cached::OnDisk { leader, .. } => LogId::new(*leader, index),
        }
    }

    /// Moves an entry that left the decoded window out of memory: to its
    /// place on disk, or (not yet durable) its plain record.
    fn age(self) -> Cached {
        match self {
            Cached::Decoded(decoded) => match *decoded {
                (entry, Some(place)) => Cached::OnDisk {
                    leader: entry.log_id.leader_id,
                    place,
                },
                (entry, None) => match segment::encode_entry(&entry, None) {
                    Ok(record) => Cached::Encoded(record.into_boxed_slice()),
                    // Over the record limit, which its append already refused.
                    Err(_) => Cached::decoded(entry, None),
                },
            },
            other => other,
        }
    }

    /// The writer made this entry durable at `place`.
    fn placed(self, log_id: LogId, place: Place) -> Cached {
        match self {
            Cached::Decoded(mut decoded) if decoded.0.log_id == log_id => {
                decoded.1 = Some(place);
                Cached::Decoded(decoded)
            }
            Cached::Encoded(record) if segment::record_log_id(&record) == Some(log_id) => {
                Cached::OnDisk {
                    leader: log_id.leader_id,
                    place,
                }
            }
            // Truncated and replaced since it was written: not this entry.
            other => other,
        }
    }
}

impl Cache {
    /// Moves the entry that just left the decoded window out of memory.
    fn age(&mut self, newest: u64) {
        let Some(index) = newest.checked_sub(DECODED_WINDOW) else {
            return;
        };
        if let Some(slot) = self.entries.get_mut(&index) {
            let cached = std::mem::replace(slot, Cached::Encoded(Box::default()));
            *slot = cached.age();
        }
    }

    /// Notes where the writer put entries it has made durable.
    fn place(&mut self, written: &[(LogId, Place)]) {
        for &(log_id, place) in written {
            if let Some(slot) = self.entries.get_mut(&log_id.index) {
                let cached = std::mem::replace(slot, Cached::Encoded(Box::default()));
                *slot = cached.placed(log_id, place);
            }
        }
    }
}

struct Shared {
    cache: Arc<RwLock<Cache>>,
    /// Where the segments are, to read older entries back.
    fs: Arc<dyn Fs>,
    log_dir: PathBuf,
    vote: Mutex<Option<Vote>>,
    committed: Mutex<Option<LogId>>,
    tx: Mutex<Option<Sender<Op>>>,
    failure: watch::Sender<Option<String>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Entry bytes appended since the log was opened.
    appended_bytes: std::sync::atomic::AtomicU64,
    /// Seals entry bodies (encryption at rest).
    data_key: Option<Arc<DataKey>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish what is queued, sync,
        // release the lock and exit; wait for that so a reopen finds the
        // directory free.
        if let Ok(tx) = self.tx.get_mut() {
            tx.take();
        }
        if let Ok(writer) = self.writer.get_mut() {
            if let Some(handle) = writer.take() {
                let _ = handle.join();
            }
        }
    }
}

/// A handle to the log; clones share the same log.
#[derive(Clone)]
pub struct LogStore {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore").finish_non_exhaustive()
    }
}

/// One segment as the writer tracks it.
struct SegmentState {
    seq: u64,
    path: PathBuf,
    /// (index, offset) of every entry record in the file, in order.
    entries: Vec<(u64, u64)>,
}

impl SegmentState {
    fn last_index(&self) -> Option<u64> {
        self.entries.last().map(|&(index, _)| index)
    }
}

impl LogStore {
    /// Opens (or creates) the log in `data_dir`: takes the lock, reads the
    /// metadata, scans every segment, cuts a torn tail off the last one, and
    /// starts the writer thread.
    pub fn open(fs: Arc<dyn Fs>, data_dir: &Path, options: LogOptions) -> Result<(Self, Recovery)> {
        fs.create_dir_all(data_dir)
            .map_err(StoreError::io("create", data_dir))?;
        let lock = lock_data_dir(fs.as_ref(), data_dir)?;
        let log_dir = data_dir.join(LOG_DIR);
        fs.create_dir_all(&log_dir)
            .map_err(StoreError::io("create", &log_dir))?;
        let meta = meta::load(fs.as_ref(), data_dir)?;
        let data_key = crypt::open_data_key(fs.as_ref(), data_dir, options.kek.as_deref())?;

        let mut recovery = Recovery::default();
        let scan = scan::read_log(fs.as_ref(), &log_dir, meta.last_purged, data_key.as_deref())?;
        if let Some(torn) = &scan.torn_tail {
            tracing::warn!(
                file = %torn.path.display(),
                cut_at = torn.valid_len,
                dropped = torn.len - torn.valid_len,
                "cutting a torn tail off the log (it was never acknowledged): {}",
                torn.reason
            );
            cut_torn_tail(fs.as_ref(), &torn.path, torn.valid_len)?;
            recovery.torn_tail = Some(format!("{}: {}", torn.path.display(), torn.reason));
        }
        let entries = cached(scan.entries, &scan.places);
        let committed = scan.committed;
        // Encryption switched on over a plain log: new entries go to a new
        // segment, so the plain one is deleted as soon as the log is purged
        // past it (after the next snapshot) instead of when it fills up.
        let roll_plain =
            data_key.is_some() && scan.segments.last().is_some_and(|s| s.plain_entries > 0);
        let mut segments: Vec<SegmentState> = scan
            .segments
            .into_iter()
            .map(|s| SegmentState {
                seq: s.seq,
                path: s.path,
                entries: s.entries,
            })
            .collect();
        if segments.is_empty() {
            segments.push(create_segment(fs.as_ref(), &log_dir, 1)?);
        } else if roll_plain {
            let seq = segments.last().map_or(1, |s| s.seq + 1);
            segments.push(create_segment(fs.as_ref(), &log_dir, seq)?);
        }
        let active = {
            let last = segments.last().expect("at least one segment");
            fs.open_append(&last.path)
                .map_err(StoreError::io("open", &last.path))?
        };

        recovery.segments = segments.len();
        recovery.entries = entries.len();
        recovery.committed = committed;

        let cache = Arc::new(RwLock::new(Cache {
            entries,
            last_purged: meta.last_purged,
        }));
        let (tx, rx) = crossbeam_channel::unbounded();
        let (failure, _) = watch::channel(None);
        let writer = Writer {
            fs: fs.clone(),
            data_dir: data_dir.to_path_buf(),
            log_dir: log_dir.clone(),
            meta: meta.clone(),
            segment_size: options.segment_size.max(MAGIC.len() as u64 + 1),
            segments,
            active,
            buf: Vec::new(),
            written: Vec::new(),
            cache: cache.clone(),
            dirty: false,
            waiting: Vec::new(),
            failure: failure.clone(),
            _lock: lock,
        };
        let handle = std::thread::Builder::new()
            .name("tacos-log-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(StoreError::io("spawn the writer thread for", data_dir))?;

        let shared = Shared {
            cache,
            fs,
            log_dir,
            vote: Mutex::new(meta.vote),
            committed: Mutex::new(committed),
            tx: Mutex::new(Some(tx)),
            failure,
            writer: Mutex::new(Some(handle)),
            appended_bytes: std::sync::atomic::AtomicU64::new(0),
            data_key,
        };
        Ok((
            LogStore {
                shared: Arc::new(shared),
            },
            recovery,
        ))
    }

    /// The data dir's data key, when encryption at rest is on: snapshot
    /// files are sealed with it too.
    pub fn data_key(&self) -> Option<Arc<DataKey>> {
        self.shared.data_key.clone()
    }

    /// Fires when the store stops after an I/O error, with the reason.
    pub fn failure(&self) -> watch::Receiver<Option<String>> {
        self.shared.failure.subscribe()
    }

    fn check_running(&self) -> Result<()> {
        match &*self.shared.failure.borrow() {
            Some(reason) => Err(StoreError::Stopped(reason.clone())),
            None => Ok(()),
        }
    }

    fn send(&self, op: Op) {
        let tx = lock(&self.shared.tx).clone();
        match tx {
            Some(tx) => {
                if let Err(crossbeam_channel::SendError(op)) = tx.send(op) {
                    op.refuse("the log writer has exited");
                }
            }
            None => op.refuse("the log is closed"),
        }
    }

    async fn request(&self, make: impl FnOnce(Reply) -> Op) -> Result<()> {
        self.check_running()?;
        let (reply, wait) = oneshot::channel();
        self.send(make(reply));
        wait.await
            .unwrap_or_else(|_| Err(StoreError::Stopped("the log writer has exited".into())))
    }

    /// The last purged log id and the last log id (which is the last purged
    /// one when the log is empty).
    pub fn log_state(&self) -> (Option<LogId>, Option<LogId>) {
        let cache = read(&self.shared.cache);
        let last = cache
            .entries
            .last_key_value()
            .map(|(&index, e)| e.log_id(index))
            .or(cache.last_purged);
        (cache.last_purged, last)
    }

    /// What one index entry costs in memory (besides the map's own).
    #[cfg(test)]
    pub(crate) const CACHED_SIZE: usize = std::mem::size_of::<Cached>();

    /// How many live entries are held decoded, as encoded records, and only
    /// as their place on disk.
    #[cfg(test)]
    pub(crate) fn held_entries(&self) -> (usize, usize, usize) {
        let cache = read(&self.shared.cache);
        let count = |f: fn(&Cached) -> bool| cache.entries.values().filter(|e| f(e)).count();
        (
            count(|e| matches!(e, Cached::Decoded(_))),
            count(|e| matches!(e, Cached::Encoded(_))),
            count(|e| matches!(e, Cached::OnDisk { .. })),
        )
    }

    /// The entries whose index is in `range`. Older entries are read back
    /// from their segment (a run of neighbours with one read); an entry that
    /// cannot be read or does not check out is an error.
    pub fn entries(&self, range: impl RangeBounds<u64>) -> Result<Vec<Entry>> {
        let start = range.start_bound().cloned();
        let end = range.end_bound().cloned();
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) =
            (start, end)
        {
            if s > e {
                return Ok(Vec::new());
            }
        }
        // The read lock is held while the files are read: purge and truncate
        // drop entries from the cache (under the write lock) before the
        // writer touches their files, so every place seen here stays valid.
        let cache = read(&self.shared.cache);
        let mut out = Vec::new();
        let mut run: Vec<(LogId, Place)> = Vec::new();
        for (&index, cached) in cache.entries.range((start, end)) {
            if let Cached::OnDisk { leader, place } = cached {
                let follows = run
                    .last()
                    .is_some_and(|(_, last)| last.seq == place.seq && last.end() == place.offset);
                if !follows {
                    self.read_run(&mut run, &mut out)?;
                }
                run.push((LogId::new(*leader, index), *place));
                continue;
            }
            self.read_run(&mut run, &mut out)?;
            out.push(match cached {
                Cached::Decoded(decoded) => decoded.0.clone(),
                Cached::Encoded(record) => match segment::decode(record, None) {
                    Ok(segment::LogRecord::Entry(entry)) => entry,
                    other => unreachable!("the cache holds entry records it encoded: {other:?}"),
                },
                Cached::OnDisk { .. } => unreachable!("handled above"),
            });
        }
        self.read_run(&mut run, &mut out)?;
        Ok(out)
    }

    /// Reads a run of neighbouring records of one segment with one read,
    /// checks each (checksum, log id) and decodes it onto `out`.
    fn read_run(&self, run: &mut Vec<(LogId, Place)>, out: &mut Vec<Entry>) -> Result<()> {
        let (Some(&(_, first)), Some(&(_, last))) = (run.first(), run.last()) else {
            return Ok(());
        };
        let path = self.shared.log_dir.join(segment::file_name(first.seq));
        let len = usize::try_from(last.end() - first.offset).unwrap_or(usize::MAX);
        let bytes = self
            .shared
            .fs
            .read_at(&path, first.offset, len)
            .map_err(StoreError::io("read", &path))?;
        for (log_id, place) in run.drain(..) {
            let corrupt = |reason: String| StoreError::Corrupt {
                path: path.clone(),
                offset: place.offset,
                reason,
            };
            let at = usize::try_from(place.offset - first.offset).unwrap_or(usize::MAX);
            let record::Decoded::Record { payload, .. } = record::decode_at(&bytes, at) else {
                return Err(corrupt(format!(
                    "entry {} no longer reads back whole (checksum or length)",
                    log_id.index
                )));
            };
            match segment::decode(payload, self.shared.data_key.as_deref()) {
                Ok(segment::LogRecord::Entry(entry)) if entry.log_id == log_id => out.push(entry),
                Ok(other) => {
                    return Err(corrupt(format!("expected entry {log_id}, found {other:?}")))
                }
                Err(reason) => return Err(corrupt(reason)),
            }
        }
        Ok(())
    }

    /// Appends entries. They are readable when this returns; `done` runs once
    /// they are durable (or with the error that stopped the store).
    ///
    /// Entries must continue the log without a gap; openraft guarantees that.
    pub fn append(&self, entries: Vec<Entry>, done: Done) -> Result<()> {
        self.check_running()?;
        let mut records = Vec::with_capacity(entries.len());
        let mut bytes = 0;
        for entry in &entries {
            let record = segment::encode_entry(entry, self.shared.data_key.as_deref())?;
            bytes += record.len() as u64;
            records.push((entry.log_id, record));
        }
        self.shared
            .appended_bytes
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        {
            let mut cache = write(&self.shared.cache);
            for entry in entries {
                let index = entry.log_id.index;
                cache.entries.insert(index, Cached::decoded(entry, None));
                cache.age(index);
            }
        }
        self.send(Op::Append { records, done });
        Ok(())
    }

    /// Entry bytes appended since the log was opened (for size-based snapshots).
    pub fn appended_bytes(&self) -> u64 {
        self.shared
            .appended_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records the committed log id. It is written with the next group commit
    /// and not waited for: openraft allows the persisted value to lag.
    pub fn save_committed(&self, committed: Option<LogId>) -> Result<()> {
        self.check_running()?;
        *lock(&self.shared.committed) = committed;
        if let Some(id) = committed {
            self.send(Op::Committed(segment::encode_committed(&id)));
        }
        Ok(())
    }

    /// The last committed log id recorded (on disk, or since opening).
    pub fn committed(&self) -> Option<LogId> {
        *lock(&self.shared.committed)
    }

    /// The last vote saved.
    pub fn vote(&self) -> Option<Vote> {
        *lock(&self.shared.vote)
    }

    /// Saves the vote durably before returning.
    pub async fn save_vote(&self, vote: Vote) -> Result<()> {
        self.request(|reply| Op::SaveVote { vote, reply }).await?;
        *lock(&self.shared.vote) = Some(vote);
        Ok(())
    }

    /// Deletes the entries from index `since` on, durably.
    pub async fn truncate(&self, since: u64) -> Result<()> {
        self.check_running()?;
        write(&self.shared.cache).entries.split_off(&since);
        self.request(|reply| Op::Truncate { since, reply }).await
    }

    /// Deletes the entries up to and including `upto`. The new purge point is
    /// durable before any file is deleted.
    pub async fn purge(&self, upto: LogId) -> Result<()> {
        self.check_running()?;
        {
            let mut cache = write(&self.shared.cache);
            let keep = cache.entries.split_off(&(upto.index + 1));
            cache.entries = keep;
            cache.last_purged = Some(upto);
        }
        self.request(|reply| Op::Purge { upto, reply }).await
    }

    /// Waits until everything issued so far is durable.
    pub async fn flush(&self) -> Result<()> {
        self.request(|reply| Op::Flush { reply }).await
    }
}

/// The recovered entries as the cache keeps them: the newest
/// [`DECODED_WINDOW`] decoded, the rest by their place on disk.
fn cached(entries: BTreeMap<u64, Entry>, places: &BTreeMap<u64, Place>) -> BTreeMap<u64, Cached> {
    let decoded_from = entries
        .last_key_value()
        .map_or(0, |(&last, _)| last.saturating_sub(DECODED_WINDOW) + 1);
    entries
        .into_iter()
        .map(|(index, entry)| {
            let cached = Cached::decoded(entry, places.get(&index).copied());
            let cached = if index < decoded_from {
                cached.age()
            } else {
                cached
            };
            (index, cached)
        })
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes the data-dir lock, turning "held by someone else" into a clear error.
pub fn lock_data_dir(fs: &dyn Fs, data_dir: &Path) -> Result<Box<dyn Any + Send + Sync>> {
    let path = data_dir.join(LOCK_FILE);
    fs.lock(&path).map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            StoreError::Locked {
                dir: data_dir.to_path_buf(),
                reason: e.to_string(),
            }
        } else {
            StoreError::io("lock", path)(e)
        }
    })
}

fn create_segment(fs: &dyn Fs, log_dir: &Path, seq: u64) -> Result<SegmentState> {
    let path = log_dir.join(segment::file_name(seq));
    let mut file = fs.create(&path).map_err(StoreError::io("create", &path))?;
    file.write_all(MAGIC)
        .map_err(StoreError::io("write", &path))?;
    file.sync_data().map_err(StoreError::io("fsync", &path))?;
    fs.sync_dir(log_dir)
        .map_err(StoreError::io("fsync", log_dir))?;
    Ok(SegmentState {
        seq,
        path,
        entries: Vec::new(),
    })
}

fn cut_torn_tail(fs: &dyn Fs, path: &Path, valid_len: u64) -> Result<()> {
    let mut file = fs.open_append(path).map_err(StoreError::io("open", path))?;
    if valid_len < MAGIC.len() as u64 {
        file.set_len(0).map_err(StoreError::io("truncate", path))?;
        file.write_all(MAGIC)
            .map_err(StoreError::io("write", path))?;
    } else {
        file.set_len(valid_len)
            .map_err(StoreError::io("truncate", path))?;
    }
    file.sync_data().map_err(StoreError::io("fsync", path))
}

/// The writer thread's state: the only code that touches log files.
struct Writer {
    fs: Arc<dyn Fs>,
    data_dir: PathBuf,
    log_dir: PathBuf,
    meta: Meta,
    segment_size: u64,
    /// Oldest first; the last one is `active`.
    segments: Vec<SegmentState>,
    active: Box<dyn AppendFile>,
    /// Encoded records not yet written to `active`.
    buf: Vec<u8>,
    /// Where the entries written since the last sync went; told to the
    /// cache once they are durable.
    written: Vec<(LogId, Place)>,
    cache: Arc<RwLock<Cache>>,
    /// Whether `active` has writes not yet synced.
    dirty: bool,
    /// Callbacks of appends written but not yet synced.
    waiting: Vec<Done>,
    failure: watch::Sender<Option<String>>,
    /// Held until the writer exits.
    _lock: Box<dyn Any + Send + Sync>,
}

impl Writer {
    fn run(mut self, rx: Receiver<Op>) {
        while let Ok(first) = rx.recv() {
            let mut batch = Vec::with_capacity(16);
            batch.push(first);
            batch.extend(rx.try_iter().take(MAX_BATCH));
            if let Err(error) = self.process(batch) {
                self.stop(error, &rx);
                return;
            }
        }
        if let Err(error) = self.sync() {
            tracing::error!("final log sync failed: {error}");
        }
    }

    fn process(&mut self, batch: Vec<Op>) -> Result<()> {
        let mut ops = batch.into_iter();
        while let Some(op) = ops.next() {
            let (result, reply) = match op {
                Op::Append { records, done } => {
                    for (log_id, payload) in &records {
                        self.write_record(Some(*log_id), payload)?;
                    }
                    self.waiting.push(done);
                    continue;
                }
                Op::Committed(payload) => {
                    self.write_record(None, &payload)?;
                    continue;
                }
                Op::Truncate { since, reply } => (self.truncate(since), reply),
                Op::Purge { upto, reply } => (self.purge(upto), reply),
                Op::SaveVote { vote, reply } => (self.save_vote(vote), reply),
                Op::Flush { reply } => (self.sync(), reply),
            };
            match result {
                Ok(()) => {
                    let _ = reply.send(Ok(()));
                }
                Err(error) => {
                    let _ = reply.send(Err(StoreError::Stopped(error.to_string())));
                    // The rest of the batch goes back to be refused by stop().
                    for op in ops {
                        op.refuse(&error.to_string());
                    }
                    return Err(error);
                }
            }
        }
        self.sync()
    }

    /// Stops for good: fails everything waiting and everything still queued.
    fn stop(mut self, error: StoreError, rx: &Receiver<Op>) {
        let message = error.to_string();
        tracing::error!("log store stopped: {message}");
        self.failure.send_replace(Some(message.clone()));
        for done in self.waiting.drain(..) {
            done(Err(io::Error::other(message.clone())));
        }
        // Keep answering until every handle is gone, so no caller hangs.
        for op in rx.iter() {
            op.refuse(&message);
        }
    }

    fn active_path(&self) -> PathBuf {
        self.segments
            .last()
            .map(|s| s.path.clone())
            .unwrap_or_else(|| self.log_dir.clone())
    }

    fn write_record(&mut self, log_id: Option<LogId>, payload: &[u8]) -> Result<()> {
        let len = self.active.len() + self.buf.len() as u64;
        if len >= self.segment_size && len > MAGIC.len() as u64 {
            self.roll()?;
        }
        let offset = self.active.len() + self.buf.len() as u64;
        record::encode(payload, &mut self.buf);
        if let Some(log_id) = log_id {
            let active = self.segments.last_mut().expect("at least one segment");
            active.entries.push((log_id.index, offset));
            let len = self.active.len() + self.buf.len() as u64 - offset;
            let place = Place {
                seq: active.seq,
                offset,
                // A record is at most MAX_RECORD_LEN plus its header.
                len: u32::try_from(len).unwrap_or(u32::MAX),
            };
            self.written.push((log_id, place));
        }
        Ok(())
    }

    fn write_buffered(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let path = self.active_path();
            self.active
                .write_all(&self.buf)
                .map_err(StoreError::io("write", path))?;
            self.buf.clear();
            self.dirty = true;
        }
        Ok(())
    }

    /// Makes every write so far durable, then runs the waiting callbacks.
    fn sync(&mut self) -> Result<()> {
        self.write_buffered()?;
        if self.dirty {
            let path = self.active_path();
            let started = std::time::Instant::now();
            self.active
                .sync_data()
                .map_err(StoreError::io("fsync", path))?;
            metrics::histogram!("tacos_log_fsync_seconds").record(started.elapsed().as_secs_f64());
            self.dirty = false;
        }
        if !self.written.is_empty() {
            write(&self.cache).place(&self.written);
            self.written.clear();
        }
        for done in self.waiting.drain(..) {
            done(Ok(()));
        }
        Ok(())
    }

    /// Closes the active segment (durably) and starts the next one.
    fn roll(&mut self) -> Result<()> {
        self.sync()?;
        let seq = self.segments.last().map_or(1, |s| s.seq + 1);
        let next = create_segment(self.fs.as_ref(), &self.log_dir, seq)?;
        self.active = self
            .fs
            .open_append(&next.path)
            .map_err(StoreError::io("open", &next.path))?;
        self.segments.push(next);
        Ok(())
    }

    fn truncate(&mut self, since: u64) -> Result<()> {
        self.sync()?;
        // The segment holding the first entry to delete.
        let Some(keep) = self
            .segments
            .iter()
            .rposition(|s| s.entries.first().is_some_and(|&(first, _)| first <= since))
            .or_else(|| (!self.segments.is_empty()).then_some(0))
        else {
            return Ok(());
        };
        let cut_at = {
            let seg = &self.segments[keep];
            seg.entries
                .iter()
                .position(|&(index, _)| index >= since)
                .map(|pos| (pos, seg.entries[pos].1))
        };
        let later: Vec<SegmentState> = self.segments.drain(keep + 1..).collect();
        let removed_any = !later.is_empty();
        for seg in later.iter().rev() {
            self.fs
                .remove(&seg.path)
                .map_err(StoreError::io("remove", &seg.path))?;
        }
        if removed_any {
            self.fs
                .sync_dir(&self.log_dir)
                .map_err(StoreError::io("fsync", &self.log_dir))?;
            let path = &self.segments[keep].path;
            self.active = self
                .fs
                .open_append(path)
                .map_err(StoreError::io("open", path))?;
        }
        if let Some((pos, offset)) = cut_at {
            let path = self.active_path();
            self.active
                .set_len(offset)
                .map_err(StoreError::io("truncate", &path))?;
            self.active
                .sync_data()
                .map_err(StoreError::io("fsync", &path))?;
            self.segments[keep].entries.truncate(pos);
        }
        Ok(())
    }

    fn purge(&mut self, upto: LogId) -> Result<()> {
        self.sync()?;
        if self.meta.last_purged.is_some_and(|p| p.index >= upto.index) {
            return Ok(());
        }
        let mut meta = self.meta.clone();
        meta.last_purged = Some(upto);
        meta::store(self.fs.as_ref(), &self.data_dir, &meta)?;
        self.meta = meta;
        let mut removed = 0;
        while self.segments.len() > 1
            && self.segments[0]
                .last_index()
                .is_none_or(|last| last <= upto.index)
        {
            let seg = self.segments.remove(0);
            self.fs
                .remove(&seg.path)
                .map_err(StoreError::io("remove", &seg.path))?;
            removed += 1;
        }
        if removed > 0 {
            self.fs
                .sync_dir(&self.log_dir)
                .map_err(StoreError::io("fsync", &self.log_dir))?;
        }
        Ok(())
    }

    fn save_vote(&mut self, vote: Vote) -> Result<()> {
        self.sync()?;
        let mut meta = self.meta.clone();
        meta.vote = Some(vote);
        meta::store(self.fs.as_ref(), &self.data_dir, &meta)?;
        self.meta = meta;
        Ok(())
    }
}
