//! Reads an r-nacos 0.5–0.8 data dir (the dir `RNACOS_DATA_DIR` names) into a
//! [`Source`], the way r-nacos itself rebuilds its state when it starts.
//!
//! # What r-nacos keeps on disk, and how it reads it back
//!
//! r-nacos 0.5+ keeps everything in memory and on disk only a Raft log and snapshots
//! (`raft/filestore/` in its source; the format is the same from 0.5.0 to 0.8.x):
//!
//! * `index`: 8 bytes big-endian `last_applied_log`, then a varint-length-prefixed
//!   protobuf `RaftIndex` listing the log files (`LogRange`: id, start index,
//!   `split_off_index`, ...) and the snapshots (id, end index), and the Raft members.
//! * `log_<id>`: a 32-byte header (magic `0x42313644`, first index, the data area
//!   offset, 4096), an index area, then from the data area varint-length-prefixed
//!   protobuf `LogRecord { index, term, value }` until a zero length. `value` is the
//!   async-raft entry as JSON: `"Blank"`, `{"ConfigChange":..}`, `{"SnapshotPointer":..}`
//!   or `{"Normal":{"data": ClientRequest}}`. A record's index is its log file's start
//!   index plus its position.
//! * `snapshot_<id>`: a length-prefixed `SnapshotHeader`, then length-prefixed
//!   `LogSnapshotItem { tree, key, value }`: trees `T_CONFIG` (a config with its
//!   history), `T_USER`, `T_NAMESPACE`, and others that are not config data.
//! * `db_lock`: locked (fs2, exclusive) while r-nacos runs; `ns_instance_meta/`: naming
//!   data.
//!
//! At start r-nacos loads the last snapshot `index` lists, then applies the log records
//! from the snapshot's end index + 1 (and not below a log file's `split_off_index`) up to
//! `last_applied_log`. This reader does the same and applies the requests the way
//! r-nacos applies them (learnt from its `config/core.rs`, `namespace/mod.rs`,
//! `raft/db/table.rs`):
//!
//! * `ConfigSet`: a new config gets one history row; a changed content replaces the
//!   config and appends a row (at most 100 rows, the oldest goes); a content with the same
//!   md5 adds no row but still sets the type and description it carries. Types are
//!   normalised as r-nacos does (`yml` → `yaml`, unknown → `text`).
//! * `ConfigFullValue` replaces a config with its history; `ConfigRemove` drops a config
//!   and its history.
//! * `TableManagerReq` on table `T_USER`: `Set`, `Remove`, `Drop`.
//! * `NamespaceReq`: `Set`, `Update`, `AddOnly`, `Delete`, `InitFromOldValue` (the 0.5
//!   namespace list, the config `__INNER_SYSTEM__`/`sys`/`namespaces`, registered once;
//!   r-nacos does it at its first 0.6+ start, and so does this reader when the dir was
//!   never started by 0.6+). `__already_sync` is that marker, not a namespace.
//! * Everything else (`Blank`, membership, `NodeAddr`, `CacheReq` login sessions and
//!   limits, `SequenceReq`, `McpReq`, `NamingReq`, ...) is not config data; the report
//!   counts it.
//!
//! Records after `last_applied_log`: r-nacos does not apply them when it loads, but Raft
//! applies them once committed. A single-voter r-nacos (one member in `index`) commits
//! its whole log at start, so this reader applies them too (and says so); with more
//! members it cannot know which were committed, and leaves them out (counted, with
//! their index range).
//!
//! # Where this reader is stricter than r-nacos
//!
//! r-nacos silently skips a log record it cannot decode, starts without a snapshot it
//! cannot read, and applies a log that ends before `last_applied_log`. Here each of those
//! stops the migration with a [`ReadError`] naming the file and offset (nothing is
//! written); with [`ReadOptions::skip_bad`] the record is left out instead, and listed.
//! Bytes after the last record r-nacos would read (a cut record, leftovers of older
//! records after the end) are never taken and never silently dropped: the report notes
//! them ([`Source::notes`]).
//!
//! # Users and passwords
//!
//! r-nacos 0.6+ keeps a BCrypt hash (`password_hash`); users written by 0.5 (and never
//! changed since) keep a plain password, which r-nacos still accepts. The hash is carried
//! as [`Password::Bcrypt`], the plain one as [`Password::Plain`]. LDAP users (`source`
//! `LDAP`) log in against the LDAP server in r-nacos; Tacos has no LDAP, so they are left
//! out (listed). Namespace privileges become [`NamespacePrivilege`].
//!
//! The dir is only read: files are opened read-only, `db_lock` included, and a dir whose
//! `db_lock` a running r-nacos holds is refused ([`ReadError::InUse`]).

mod apply;
mod files;
pub(crate) mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use prost::Message;

pub use crate::source::{
    Config, ConfigKey, HistoryRow, Namespace, NamespacePrivilege, Password, ReadOptions, Skipped,
    Source, User,
};
use files::Frame;

/// r-nacos keeps at most this many history rows per config.
pub const HISTORY_LIMIT: usize = 100;

/// Why reading failed. Nothing was written anywhere.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The path does not exist.
    #[error("{}: no such directory", path.display())]
    NotFound { path: PathBuf },
    /// Not an r-nacos 0.5+ data dir.
    #[error("{} is not an r-nacos 0.5-0.8 data dir: {reason}", path.display())]
    NotRaftDir { path: PathBuf, reason: String },
    /// A running r-nacos holds the dir.
    #[error(
        "{} is in use (another process, probably a running r-nacos, holds the lock on its \
         `db_lock` file); stop it first, or migrate from a copy made while it was stopped",
        path.display()
    )]
    InUse { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file that is not what r-nacos writes.
    #[error("{}: {reason}", path.display())]
    BadFile { path: PathBuf, reason: String },
    /// A record r-nacos would apply cannot be decoded (see [`ReadOptions::skip_bad`]).
    #[error("{what}: {reason} (--skip-bad leaves it out and lists it)")]
    Corrupt { what: String, reason: String },
    /// The log ends before `last_applied_log`: records r-nacos had applied are missing or
    /// cut (see [`ReadOptions::skip_bad`]).
    #[error(
        "the log ends at index {last_read} but r-nacos had applied up to index \
         {last_applied} (`index`): {detail}; the dir is incomplete (a copy made while \
         r-nacos wrote?). --skip-bad migrates what is there and says what is missing"
    )]
    LogCut {
        last_read: u64,
        last_applied: u64,
        detail: String,
    },
}

/// Reads the r-nacos 0.5–0.8 data dir `from`. `from` is only read; see the module docs.
pub fn read(from: &Path, options: &ReadOptions) -> Result<Source, ReadError> {
    match std::fs::metadata(from) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(ReadError::NotRaftDir {
                path: from.to_path_buf(),
                reason: "it is not a directory".to_string(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReadError::NotFound {
                path: from.to_path_buf(),
            })
        }
        Err(source) => {
            return Err(ReadError::Io {
                path: from.to_path_buf(),
                source,
            })
        }
    }
    if !from.join("index").is_file() {
        return Err(ReadError::NotRaftDir {
            path: from.to_path_buf(),
            reason: "it has no `index` file".to_string(),
        });
    }
    // Held until the end of reading.
    let lock = files::lock(from)?;
    let mut reader = Reader {
        dir: from,
        skip_bad: options.skip_bad,
        machine: apply::Machine::default(),
    };
    if lock.is_none() {
        reader.machine.notes.push(
            "no `db_lock` file (r-nacos before 0.5.x, or a copy without it): whether an \
             r-nacos was using the dir could not be checked"
                .to_string(),
        );
    }
    reader.read()?;
    let source = reader.machine.finish();
    drop(lock);
    Ok(source)
}

struct Reader<'a> {
    dir: &'a Path,
    skip_bad: bool,
    machine: apply::Machine,
}

/// Where the log reading stands.
#[derive(Default)]
struct LogProgress {
    /// The highest index read (applied or not).
    last_read: u64,
    /// Records after `last_applied_log` applied (single voter) or left out.
    unapplied: Vec<u64>,
    /// Stale records (below a `split_off_index` or in the snapshot) not applied.
    stale: u64,
}

impl Reader<'_> {
    fn bad(&mut self, what: String, reason: String) -> Result<(), ReadError> {
        if self.skip_bad {
            self.machine.skipped.push(Skipped { what, reason });
            Ok(())
        } else {
            Err(ReadError::Corrupt { what, reason })
        }
    }

    fn read(&mut self) -> Result<(), ReadError> {
        let index = files::read_index(self.dir)?;
        let last_applied = index.last_applied_log;
        let single_voter = index.raft.member.len() <= 1;
        let mut next_index = 1;
        if let Some(snapshot) = index.raft.snapshots.last() {
            let header_index = self.read_snapshot(snapshot.id)?;
            next_index = snapshot.end_index + 1;
            self.machine.notes.push(format!(
                "read snapshot_{} (state up to index {}), then the log from index {}",
                snapshot.id, snapshot.end_index, next_index
            ));
            if header_index != snapshot.end_index {
                self.machine.notes.push(format!(
                    "snapshot_{} says it ends at index {header_index}, `index` says {}; \
                     the log is replayed from `index`'s, as r-nacos does",
                    snapshot.id, snapshot.end_index
                ));
            }
        }
        let mut progress = LogProgress {
            last_read: next_index.saturating_sub(1),
            ..LogProgress::default()
        };
        let mut logs = index.raft.logs.clone();
        logs.sort_by_key(|l| l.start_index);
        for (i, range) in logs.iter().enumerate() {
            let next_start = logs.get(i + 1).map(|l| l.start_index);
            // A file wholly below what must be read may be gone (r-nacos deletes them).
            let needed = next_start.is_none_or(|s| s > next_index);
            let path = self.dir.join(format!("log_{}", range.id));
            if !needed && !path.exists() {
                continue;
            }
            self.read_log(range, next_index, last_applied, single_voter, &mut progress)?;
        }
        if progress.last_read < last_applied {
            let detail = format!(
                "index {}..={} missing",
                progress.last_read + 1,
                last_applied
            );
            if !self.skip_bad {
                return Err(ReadError::LogCut {
                    last_read: progress.last_read,
                    last_applied,
                    detail,
                });
            }
            self.machine.skipped.push(Skipped {
                what: format!("log records {detail}"),
                reason: format!(
                    "the log ends at index {} although r-nacos had applied up to {}: \
                     those changes are lost",
                    progress.last_read, last_applied
                ),
            });
        }
        if let (Some(first), Some(last)) = (progress.unapplied.first(), progress.unapplied.last()) {
            let n = progress.unapplied.len();
            if single_voter {
                self.machine.notes.push(format!(
                    "{n} log record(s) after last_applied_log {last_applied} (index \
                     {first}..={last}) were applied: a single-voter r-nacos commits and \
                     applies them at its next start"
                ));
            } else {
                self.machine.skipped.push(Skipped {
                    what: format!(
                        "{n} log record(s) after last_applied_log {last_applied} (index \
                         {first}..={last})"
                    ),
                    reason: "r-nacos had not applied them and, in a cluster of several \
                             members, they may never have been committed; migrate from \
                             the leader after it applied them to carry them"
                        .to_string(),
                });
            }
        }
        if progress.stale > 0 {
            self.machine.notes.push(format!(
                "{} log record(s) already in the snapshot were not replayed",
                progress.stale
            ));
        }
        Ok(())
    }

    /// Loads `snapshot_<id>`; returns the last index its header names.
    fn read_snapshot(&mut self, id: u64) -> Result<u64, ReadError> {
        let path = self.dir.join(format!("snapshot_{id}"));
        let mut stream = files::Stream::open(&path, 0)?;
        let header = match stream.next_frame()? {
            Frame::Message { bytes, .. } => wire::SnapshotHeader::decode(bytes.as_slice())
                .map_err(|e| ReadError::BadFile {
                    path: path.clone(),
                    reason: format!("not an r-nacos snapshot header: {e}"),
                })?,
            _ => {
                return Err(ReadError::BadFile {
                    path: path.clone(),
                    reason: "no snapshot header".to_string(),
                })
            }
        };
        loop {
            match stream.next_frame()? {
                Frame::Message { offset, bytes } => {
                    match wire::LogSnapshotItem::decode(bytes.as_slice()) {
                        Ok(item) => {
                            let what =
                                format!("snapshot_{id} at offset {offset} (tree {})", item.tree);
                            if let Err(reason) = self.machine.load_snapshot_item(item) {
                                self.bad(what, reason)?;
                            }
                        }
                        Err(e) => self.bad(
                            format!("snapshot_{id} at offset {offset}"),
                            format!("not a snapshot item: {e}"),
                        )?,
                    }
                }
                Frame::Eof => break,
                Frame::Zero { offset } => {
                    self.note_rest(&mut stream, offset)?;
                    break;
                }
                Frame::Cut { offset, missing } => {
                    self.machine.notes.push(format!(
                        "{}: the bytes from offset {offset} to the end do not form a whole \
                         item ({missing} byte(s) short); r-nacos does not read them either",
                        stream.path().display()
                    ));
                    break;
                }
            }
        }
        Ok(header.last_index)
    }

    /// Notes non-zero bytes after a zero length at `offset`.
    fn note_rest(&mut self, stream: &mut files::Stream, offset: u64) -> Result<(), ReadError> {
        let (count, first) = stream.nonzero_rest()?;
        if let (true, Some(first)) = (count > 0, first) {
            let name = file_name(stream.path());
            self.machine.notes.push(format!(
                "{name}: the records end at offset {offset}, but {count} non-zero byte(s) \
                 follow (the first at offset {first}): leftovers r-nacos does not read, \
                 not taken"
            ));
        }
        Ok(())
    }

    fn read_log(
        &mut self,
        range: &wire::LogRange,
        next_index: u64,
        last_applied: u64,
        single_voter: bool,
        progress: &mut LogProgress,
    ) -> Result<(), ReadError> {
        let mut stream = files::open_log(self.dir, range.id)?;
        let name = file_name(stream.path());
        let first_needed = next_index.max(range.split_off_index);
        let mut index = range.start_index;
        loop {
            let frame = stream.next_frame()?;
            let applies = index >= first_needed
                && (index <= last_applied || single_voter)
                && index > progress.last_read;
            let must = index >= first_needed && index <= last_applied;
            match frame {
                Frame::Message { offset, bytes } => {
                    let what = || format!("{name} record {index} at offset {offset}");
                    let record = match wire::LogRecord::decode(bytes.as_slice()) {
                        Ok(r) if r.index == index => r,
                        Ok(r) => {
                            let reason = format!(
                                "it says index {}, its place in the file says {index}",
                                r.index
                            );
                            if must {
                                self.bad(what(), reason)?;
                                index += 1;
                                progress.last_read = progress.last_read.max(index - 1);
                                continue;
                            }
                            self.tail_garbage(&name, offset, &reason);
                            return Ok(());
                        }
                        Err(e) => {
                            let reason = format!("not a log record: {e}");
                            if must {
                                self.bad(what(), reason)?;
                                index += 1;
                                progress.last_read = progress.last_read.max(index - 1);
                                continue;
                            }
                            self.tail_garbage(&name, offset, &reason);
                            return Ok(());
                        }
                    };
                    if applies {
                        if let Err(reason) = self.machine.apply_entry(&record.value) {
                            if must {
                                self.bad(what(), reason)?;
                            } else {
                                self.tail_garbage(&name, offset, &reason);
                                return Ok(());
                            }
                        }
                        if index > last_applied {
                            progress.unapplied.push(index);
                        }
                    } else if index > last_applied && index >= first_needed {
                        progress.unapplied.push(index);
                    } else if index < first_needed {
                        progress.stale += 1;
                    }
                    progress.last_read = progress.last_read.max(index);
                    index += 1;
                }
                Frame::Eof => return Ok(()),
                Frame::Zero { offset } => return self.note_rest(&mut stream, offset),
                Frame::Cut { offset, missing } => {
                    let detail = format!(
                        "{name}: record {index} at offset {offset} is cut ({missing} byte(s) \
                         missing at the end of the file)"
                    );
                    if must {
                        if self.skip_bad {
                            self.machine.skipped.push(Skipped {
                                what: format!("{name} record {index} at offset {offset}"),
                                reason: format!(
                                    "cut short ({missing} byte(s) missing); r-nacos had \
                                     applied it"
                                ),
                            });
                            return Ok(());
                        }
                        return Err(ReadError::LogCut {
                            last_read: progress.last_read,
                            last_applied,
                            detail,
                        });
                    }
                    self.machine
                        .notes
                        .push(format!("{detail}: not a record r-nacos applied; not taken"));
                    return Ok(());
                }
            }
        }
    }

    fn tail_garbage(&mut self, name: &str, offset: u64, reason: &str) {
        self.machine.notes.push(format!(
            "{name}: the bytes from offset {offset} on are not a record in sequence \
             ({reason}); r-nacos had not applied anything there; not taken"
        ));
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Counts per request kind, for the report.
pub(crate) type Kinds = BTreeMap<String, u64>;
