//! Reading the log segments back: the checks every reader applies.
//!
//! [`read_log`] reads every segment in order and checks that entries follow
//! each other without holes (the first may sit at or before the purge point)
//! and that the newest commit marker points at an entry that exists. A torn
//! tail of the last segment is reported, not cut: the log store cuts it when
//! it opens the log for writing, `tacos inspect` only shows it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::crypt::DataKey;
use super::error::{Result, StoreError};
use super::fs::Fs;
use super::segment::{self, LogRecord, Place};
use tacos_core::types::{Entry, LogId};

/// One segment file as read.
#[derive(Debug)]
pub struct ScannedSegment {
    pub seq: u64,
    pub path: PathBuf,
    /// File size on disk (torn tail included).
    pub bytes: u64,
    /// (index, offset) of every entry record, in order.
    pub entries: Vec<(u64, u64)>,
    pub commit_markers: usize,
    /// Entries whose body is sealed (encryption at rest).
    pub sealed_entries: usize,
    /// Entries with a plain body that carries commands or membership.
    pub plain_entries: usize,
}

/// Damage at the end of the last segment that no intact record follows:
/// an append that never completed (so was never acknowledged).
#[derive(Debug, Clone)]
pub struct TornTail {
    pub path: PathBuf,
    /// Where the intact records end.
    pub valid_len: u64,
    /// The file's length.
    pub len: u64,
    pub reason: String,
}

/// The whole log as read.
#[derive(Debug)]
pub struct LogScan {
    pub segments: Vec<ScannedSegment>,
    /// Entries after the purge point, by index.
    pub entries: BTreeMap<u64, Entry>,
    /// Where each of `entries` sits in its segment.
    pub places: BTreeMap<u64, Place>,
    /// The newest commit marker (or the purge point when none is newer).
    pub committed: Option<LogId>,
    pub torn_tail: Option<TornTail>,
}

/// Reads every segment in `log_dir` (missing dir: an empty log).
/// Sealed entries are opened with `key` (encryption at rest).
pub fn read_log(
    fs: &dyn Fs,
    log_dir: &Path,
    last_purged: Option<LogId>,
    key: Option<&DataKey>,
) -> Result<LogScan> {
    let listed = match fs.list(log_dir) {
        Ok(listed) => listed,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(StoreError::io("list", log_dir)(e)),
    };
    let mut files: Vec<(u64, PathBuf)> = listed
        .into_iter()
        .filter_map(|path| segment::parse_file_name(&path).map(|seq| (seq, path)))
        .collect();
    files.sort();

    let mut scan = LogScan {
        segments: Vec::with_capacity(files.len()),
        entries: BTreeMap::new(),
        places: BTreeMap::new(),
        committed: last_purged,
        torn_tail: None,
    };
    let mut last_index: Option<u64> = None;
    let count = files.len();
    for (i, (seq, path)) in files.into_iter().enumerate() {
        let bytes = fs.read(&path).map_err(StoreError::io("read", &path))?;
        let scanned = segment::scan(seq, &path, &bytes, i + 1 == count, key)?;
        if let Some(reason) = scanned.torn {
            scan.torn_tail = Some(TornTail {
                path: path.clone(),
                valid_len: scanned.valid_len,
                len: bytes.len() as u64,
                reason,
            });
        }
        let mut segment = ScannedSegment {
            seq,
            path: path.clone(),
            bytes: bytes.len() as u64,
            entries: Vec::new(),
            commit_markers: 0,
            sealed_entries: scanned.sealed_entries,
            plain_entries: scanned.plain_entries,
        };
        let ends: Vec<u64> = scanned
            .records
            .iter()
            .skip(1)
            .map(|(offset, _)| *offset)
            .chain([scanned.valid_len])
            .collect();
        for ((offset, record), end) in scanned.records.into_iter().zip(ends) {
            match record {
                LogRecord::Entry(entry) => {
                    let index = entry.log_id.index;
                    let follows = match last_index {
                        Some(previous) => index == previous + 1,
                        None => index <= last_purged.map_or(0, |p| p.index + 1),
                    };
                    if !follows {
                        return Err(StoreError::Corrupt {
                            path,
                            offset,
                            reason: format!(
                                "entry {index} does not follow entry {last_index:?}: the log has a hole"
                            ),
                        });
                    }
                    last_index = Some(index);
                    segment.entries.push((index, offset));
                    if last_purged.is_none_or(|p| index > p.index) {
                        scan.entries.insert(index, entry);
                        // A record is at most MAX_RECORD_LEN plus its header.
                        let len = u32::try_from(end - offset).unwrap_or(u32::MAX);
                        scan.places.insert(index, Place { seq, offset, len });
                    }
                }
                LogRecord::Committed(id) => {
                    segment.commit_markers += 1;
                    scan.committed = scan.committed.max(Some(id));
                }
            }
        }
        scan.segments.push(segment);
    }
    if let Some(id) = scan.committed {
        let last = scan
            .entries
            .last_key_value()
            .map(|(_, e)| e.log_id)
            .or(last_purged);
        if last.is_none_or(|last| last.index < id.index) {
            return Err(StoreError::Corrupt {
                path: log_dir.to_path_buf(),
                offset: 0,
                reason: format!(
                    "entry {} was committed but is missing from the log",
                    id.index
                ),
            });
        }
    }
    Ok(scan)
}
