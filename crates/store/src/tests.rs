//! Store tests below the Raft layer: reopen, segments, truncate and purge,
//! torn tails at every byte, corruption, crashes and injected I/O errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use futures::executor::block_on;

use super::faulty_fs::{FaultyFs, EIO, ENOSPC};
use super::log::{LOCK_FILE, LOG_DIR};
use super::segment;
use super::*;
use tacos_core::command as pb;
use tacos_core::types::{Entry, LogId, Vote};
use tacos_core::{Command, Op};

fn log_id(term: u64, index: u64) -> LogId {
    LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
}

fn entry(term: u64, index: u64) -> Entry {
    Entry {
        log_id: log_id(term, index),
        payload: openraft::EntryPayload::Normal(
            Command::of(Op::RemoveConfig(pb::RemoveConfig {
                key: Some(pb::ConfigKey {
                    namespace: String::new(),
                    group: format!("group-{term}"),
                    data_id: format!("config-{index}"),
                }),
                origin: None,
                history_limit: 10,
            }))
            .into(),
        ),
    }
}

fn open(
    fs: Arc<dyn Fs>,
    dir: &Path,
    segment_size: u64,
) -> Result<(LogStore, Recovery), StoreError> {
    LogStore::open(
        fs,
        dir,
        LogOptions {
            segment_size,
            kek: None,
        },
    )
}

/// Appends and waits for the durability callback.
fn append_durably(store: &LogStore, entries: Vec<Entry>) -> std::io::Result<()> {
    let (tx, rx) = mpsc::channel();
    store
        .append(entries, Box::new(move |r| tx.send(r).expect("test waits")))
        .map_err(std::io::Error::other)?;
    rx.recv_timeout(Duration::from_secs(10))
        .expect("callback runs")
}

fn indexes(store: &LogStore) -> Vec<u64> {
    store
        .entries(..)
        .unwrap()
        .iter()
        .map(|e| e.log_id.index)
        .collect()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(LOG_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| segment::parse_file_name(p).is_some())
        .collect();
    files.sort();
    files
}

#[test]
fn reopen_returns_every_acknowledged_entry_vote_and_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, recovery) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
        assert_eq!(recovery.entries, 0);
        for batch in 0..10u64 {
            append_durably(
                &store,
                (batch * 10..batch * 10 + 10).map(|i| entry(1, i)).collect(),
            )
            .unwrap();
        }
        block_on(store.save_vote(Vote::new(1, 1))).unwrap();
        store.save_committed(Some(log_id(1, 95))).unwrap();
        block_on(store.flush()).unwrap();
    }
    let (store, recovery) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
    assert_eq!(recovery.entries, 100);
    assert_eq!(recovery.torn_tail, None);
    assert_eq!(indexes(&store), (0..100).collect::<Vec<_>>());
    assert_eq!(store.entries(5..7).unwrap(), vec![entry(1, 5), entry(1, 6)]);
    assert_eq!(store.vote(), Some(Vote::new(1, 1)));
    assert_eq!(store.committed(), Some(log_id(1, 95)));
    assert_eq!(store.log_state(), (None, Some(log_id(1, 99))));
}

/// Entries older than the decoded window are held only by their place on
/// disk: they read back exactly as appended, in a running store and after a
/// reopen (also sealed, with encryption at rest), and truncate, purge and the
/// log state see them like the decoded ones.
#[test]
fn entries_outside_the_decoded_window_read_back_exactly() {
    let n = 2 * log::DECODED_WINDOW + 7;
    for kek in [None, Some([7u8; 32])] {
        let kek = || kek.map(|k| Kek::parse(&k).unwrap());
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = open_with(dir.path(), kek()).unwrap();
            for start in (0..n).step_by(50) {
                append_durably(
                    &store,
                    (start..(start + 50).min(n)).map(|i| entry(2, i)).collect(),
                )
                .unwrap();
            }
            assert_eq!(
                store.entries(..).unwrap(),
                (0..n).map(|i| entry(2, i)).collect::<Vec<_>>()
            );
            assert_eq!(store.log_state(), (None, Some(log_id(2, n - 1))));
            assert_eq!(store.held_entries(), on_disk_beyond_window(n));
        }
        let (store, recovery) = open_with(dir.path(), kek()).unwrap();
        assert_eq!(recovery.entries as u64, n);
        assert_eq!(store.held_entries(), on_disk_beyond_window(n));
        assert_eq!(store.entries(3..5).unwrap(), vec![entry(2, 3), entry(2, 4)]);
        assert_eq!(
            store.entries(..).unwrap(),
            (0..n).map(|i| entry(2, i)).collect::<Vec<_>>()
        );
        block_on(store.truncate(n - 3)).unwrap();
        block_on(store.purge(log_id(2, 10))).unwrap();
        assert_eq!(
            store.log_state(),
            (Some(log_id(2, 10)), Some(log_id(2, n - 4)))
        );
        assert_eq!(
            store.entries(..).unwrap(),
            (11..n - 3).map(|i| entry(2, i)).collect::<Vec<_>>()
        );
        // The replaced suffix reads back as the new entries, not the old.
        append_durably(&store, (n - 3..n + 70).map(|i| entry(3, i)).collect()).unwrap();
        let expected: Vec<Entry> = (11..n - 3)
            .map(|i| entry(2, i))
            .chain((n - 3..n + 70).map(|i| entry(3, i)))
            .collect();
        assert_eq!(store.entries(..).unwrap(), expected);
    }
}

/// (decoded, encoded, on disk) for `n` durable entries.
fn on_disk_beyond_window(n: u64) -> (usize, usize, usize) {
    let window = log::DECODED_WINDOW.min(n);
    (window as usize, 0, (n - window) as usize)
}

/// Entries that leave the decoded window before they are durable are held
/// as records until the writer says where they went, then by that place.
#[test]
fn entries_leaving_the_window_before_their_fsync_read_back_either_way() {
    let n = 3 * log::DECODED_WINDOW;
    let fs = FaultyFs::new();
    fs.set_sync_delay(Duration::from_millis(50));
    let dir = Path::new("/data");
    let (store, _) = open(Arc::new(fs.clone()), dir, 1 << 20).unwrap();
    let all: Vec<Entry> = (0..n).map(|i| entry(1, i)).collect();
    let (tx, rx) = mpsc::channel();
    store
        .append(
            all.clone(),
            Box::new(move |r| tx.send(r).expect("test waits")),
        )
        .unwrap();
    // Before or after the fsync, whichever this is: every entry reads back.
    let (decoded, encoded, on_disk) = store.held_entries();
    assert_eq!(decoded as u64, log::DECODED_WINDOW);
    assert_eq!((encoded + on_disk) as u64, n - log::DECODED_WINDOW);
    assert_eq!(store.entries(..).unwrap(), all);
    rx.recv_timeout(Duration::from_secs(10)).unwrap().unwrap();
    assert_eq!(store.held_entries(), on_disk_beyond_window(n));
    assert_eq!(store.entries(..).unwrap(), all);
    assert_eq!(store.entries(5..9).unwrap(), all[5..9].to_vec());
    // What an entry on disk costs the index, whatever its size (log.rs says so).
    assert_eq!(LogStore::CACHED_SIZE, 48);
}

/// An entry read back from disk is checked: damage is an error, not a
/// wrong entry.
#[test]
fn an_entry_damaged_on_disk_reads_back_as_an_error() {
    let n = 2 * log::DECODED_WINDOW;
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
    append_durably(&store, (0..n).map(|i| entry(1, i)).collect()).unwrap();
    let path = segments(dir.path()).remove(0);
    let mut bytes = std::fs::read(&path).unwrap();
    // Inside the first entry's payload (magic, then the record header).
    bytes[segment::MAGIC.len() + record::HEADER_LEN + 20] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let error = store.entries(0..2).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt { .. }), "{error}");
    // Entries elsewhere still read.
    assert_eq!(store.entries(5..6).unwrap(), vec![entry(1, 5)]);
}

#[test]
fn segments_roll_and_purge_deletes_whole_files_after_persisting_the_purge_point() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(Arc::new(StdFs), dir.path(), 512).unwrap();
        for i in 0..60 {
            append_durably(&store, vec![entry(1, i)]).unwrap();
        }
        let before = segments(dir.path()).len();
        assert!(before > 5, "small segments roll: {before}");
        block_on(store.purge(log_id(1, 30))).unwrap();
        assert_eq!(store.log_state().0, Some(log_id(1, 30)));
        assert_eq!(store.entries(..).unwrap().first().unwrap().log_id.index, 31);
        let after = segments(dir.path()).len();
        assert!(
            after < before,
            "whole segments were deleted ({before} -> {after})"
        );
    }
    let (store, _) = open(Arc::new(StdFs), dir.path(), 512).unwrap();
    assert_eq!(
        store.log_state(),
        (Some(log_id(1, 30)), Some(log_id(1, 59)))
    );
    assert_eq!(indexes(&store), (31..60).collect::<Vec<_>>());
    // Purging everything leaves an empty log whose last id is the purge point.
    block_on(store.purge(log_id(1, 59))).unwrap();
    assert_eq!(
        store.log_state(),
        (Some(log_id(1, 59)), Some(log_id(1, 59)))
    );
    append_durably(&store, vec![entry(2, 60)]).unwrap();
    drop(store);
    let (store, _) = open(Arc::new(StdFs), dir.path(), 512).unwrap();
    assert_eq!(indexes(&store), vec![60]);
}

#[test]
fn truncate_removes_the_suffix_across_segments_durably() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(Arc::new(StdFs), dir.path(), 400).unwrap();
        for i in 0..40 {
            append_durably(&store, vec![entry(1, i)]).unwrap();
        }
        block_on(store.truncate(15)).unwrap();
        assert_eq!(indexes(&store), (0..15).collect::<Vec<_>>());
        append_durably(&store, (15..20).map(|i| entry(2, i)).collect()).unwrap();
    }
    let (store, recovery) = open(Arc::new(StdFs), dir.path(), 400).unwrap();
    assert_eq!(recovery.torn_tail, None);
    assert_eq!(indexes(&store), (0..20).collect::<Vec<_>>());
    assert_eq!(
        store.entries(14..16).unwrap(),
        vec![entry(1, 14), entry(2, 15)]
    );
    // Truncating at the very first entry empties the log.
    block_on(store.truncate(0)).unwrap();
    drop(store);
    let (store, _) = open(Arc::new(StdFs), dir.path(), 400).unwrap();
    assert!(store.entries(..).unwrap().is_empty());
}

/// Writes `n` entries (one append each, with commit markers as Raft would)
/// into a fresh data dir and returns it with the single segment's path.
fn write_log(n: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
    for i in 0..n {
        append_durably(&store, vec![entry(1, i)]).unwrap();
        if i > 0 {
            store.save_committed(Some(log_id(1, i - 1))).unwrap();
        }
    }
    block_on(store.flush()).unwrap();
    drop(store);
    let segment = segments(dir.path()).pop().unwrap();
    (dir, segment)
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let target = to.join(rel);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        if rel != Path::new(LOCK_FILE) {
            std::fs::copy(&entry, &target).unwrap();
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Where each entry record of a segment ends.
fn entry_ends(bytes: &[u8]) -> Vec<(u64, usize)> {
    let scanned = segment::scan(1, Path::new("x"), bytes, true, None).unwrap();
    let mut ends = Vec::new();
    let offsets: Vec<usize> = scanned.records.iter().map(|(o, _)| *o as usize).collect();
    for (i, (_, rec)) in scanned.records.iter().enumerate() {
        if let segment::LogRecord::Entry(e) = rec {
            let end = offsets.get(i + 1).copied().unwrap_or(bytes.len());
            ends.push((e.log_id.index, end));
        }
    }
    ends
}

#[test]
fn a_log_cut_at_every_byte_of_its_last_records_reopens_with_a_clean_prefix() {
    let (source, segment_path) = write_log(12);
    let bytes = std::fs::read(&segment_path).unwrap();
    let ends = entry_ends(&bytes);
    // Cover the last four entry records (and the commit markers among them).
    let from = ends[ends.len() - 5].1;
    let rel = segment_path
        .strip_prefix(source.path())
        .unwrap()
        .to_path_buf();
    for cut in from..=bytes.len() {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(dir.path().join(&rel))
            .unwrap();
        file.set_len(cut as u64).unwrap();
        drop(file);

        // Every entry whose record ends at or before the cut was durable.
        let expected: Vec<u64> = ends
            .iter()
            .filter(|(_, end)| *end <= cut)
            .map(|(i, _)| *i)
            .collect();
        let (store, recovery) = open(Arc::new(StdFs), dir.path(), 1 << 20)
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(indexes(&store), expected, "cut at {cut}");
        let at_boundary = cut == bytes.len()
            || segment::scan(1, Path::new("x"), &bytes[..cut], true, None)
                .unwrap()
                .torn
                .is_none();
        assert_eq!(recovery.torn_tail.is_none(), at_boundary, "cut at {cut}");
        if let Some(committed) = store.committed() {
            assert!(committed.index <= *expected.last().unwrap(), "cut at {cut}");
        }

        // The log goes on cleanly after the cut.
        let next = expected.last().unwrap() + 1;
        append_durably(&store, vec![entry(2, next)]).unwrap();
        drop(store);
        let (store, recovery) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
        assert_eq!(recovery.torn_tail, None, "cut at {cut}");
        let mut with_next = expected.clone();
        with_next.push(next);
        assert_eq!(indexes(&store), with_next, "cut at {cut}");
    }
}

#[test]
fn a_flipped_byte_before_the_tail_refuses_to_start_naming_file_and_offset() {
    let (source, segment_path) = write_log(12);
    let bytes = std::fs::read(&segment_path).unwrap();
    let ends = entry_ends(&bytes);
    let rel = segment_path
        .strip_prefix(source.path())
        .unwrap()
        .to_path_buf();
    // Every byte of entries 3..=5: header, checksum and payload.
    let (start, end) = (ends[2].1, ends[5].1);
    for at in start..end {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(source.path(), dir.path());
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        std::fs::write(dir.path().join(&rel), &damaged).unwrap();
        match open(Arc::new(StdFs), dir.path(), 1 << 20) {
            Err(StoreError::Corrupt { path, offset, .. }) => {
                assert_eq!(path, dir.path().join(&rel), "flip at {at}");
                assert!(
                    offset as usize <= at && offset as usize >= start,
                    "flip at {at}: reported {offset}"
                );
            }
            Err(other) => panic!("flip at {at}: wrong error {other}"),
            Ok(_) => panic!("flip at {at}: opened a damaged log"),
        }
    }
}

#[test]
fn damage_in_a_segment_that_is_not_the_last_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (store, _) = open(Arc::new(StdFs), dir.path(), 300).unwrap();
        for i in 0..30 {
            append_durably(&store, vec![entry(1, i)]).unwrap();
        }
    }
    let files = segments(dir.path());
    assert!(files.len() > 2);
    // Cutting the end off a middle segment loses acknowledged entries.
    let middle = &files[1];
    let len = std::fs::metadata(middle).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(middle)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let err = open(Arc::new(StdFs), dir.path(), 300).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{message}");
    assert!(message.contains(&middle.display().to_string()), "{message}");
}

#[test]
fn a_second_open_of_the_same_data_dir_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap();
    let err = open(Arc::new(StdFs), dir.path(), 1 << 20).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }));
    let message = err.to_string();
    assert!(message.contains("is in use"), "{message}");
    assert!(
        message.contains(&format!("pid {}", std::process::id())),
        "{message}"
    );
    drop(first);
    open(Arc::new(StdFs), dir.path(), 1 << 20).expect("free again once closed");
}

#[test]
fn a_crash_keeps_exactly_the_acknowledged_entries() {
    let dir = Path::new("/data");
    let mut crashed_mid_stream = 0;
    for round in 0..40u64 {
        let fs = FaultyFs::new();
        let acked = Arc::new(Mutex::new(BTreeSet::new()));
        let (store, _) = open(Arc::new(fs.clone()), dir, 600).unwrap();
        let writer = {
            let store = store.clone();
            let acked = acked.clone();
            std::thread::spawn(move || {
                for i in 0..300u64 {
                    let acked = acked.clone();
                    let done = Box::new(move |r: std::io::Result<()>| {
                        if r.is_ok() {
                            acked.lock().unwrap().insert(i);
                        }
                    });
                    if store.append(vec![entry(1, i)], done).is_err() {
                        break;
                    }
                    if i % 7 == 0 {
                        std::thread::yield_now();
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_micros(50 * round));
        fs.crash();
        writer.join().unwrap();
        drop(store);
        let acked = acked.lock().unwrap().clone();

        let (store, _) = open(Arc::new(fs.clone()), dir, 600)
            .unwrap_or_else(|e| panic!("round {round}: reopen after crash: {e}"));
        let found = indexes(&store);
        assert_eq!(
            found,
            (0..found.len() as u64).collect::<Vec<_>>(),
            "round {round}: a contiguous prefix"
        );
        for i in &acked {
            assert!(
                found.contains(i),
                "round {round}: acknowledged entry {i} lost"
            );
        }
        if found.len() < 300 {
            crashed_mid_stream += 1;
        }
    }
    assert!(
        crashed_mid_stream > 0,
        "no crash landed while entries were in flight"
    );
}

#[test]
fn enospc_stops_the_store_and_never_reports_success() {
    let dir = Path::new("/data");
    let fs = FaultyFs::new();
    let (store, _) = open(Arc::new(fs.clone()), dir, 1 << 20).unwrap();
    let mut failure = store.failure();
    for i in 0..10 {
        append_durably(&store, vec![entry(1, i)]).unwrap();
    }
    fs.fail_writes_after(100, ENOSPC);
    let mut first_failure = None;
    for i in 10..20 {
        match append_durably(&store, vec![entry(1, i)]) {
            Ok(()) => continue,
            Err(e) => {
                first_failure = Some((i, e.to_string()));
                break;
            }
        }
    }
    let (failed_at, message) = first_failure.expect("the disk filled up");
    assert!(message.contains("No space left"), "{message}");
    // Stopped for good, even once space is back: no silent retry.
    fs.clear_faults();
    assert!(matches!(
        store.append(vec![entry(1, failed_at)], Box::new(|_| {})),
        Err(StoreError::Stopped(_))
    ));
    assert!(block_on(store.save_vote(Vote::new(2, 1))).is_err());
    assert!(block_on(failure.wait_for(|f| f.is_some())).is_ok());
    drop(store);

    fs.crash();
    let (store, recovery) = open(Arc::new(fs.clone()), dir, 1 << 20).unwrap();
    assert_eq!(indexes(&store), (0..failed_at).collect::<Vec<_>>());
    let _ = recovery;
}

#[test]
fn eio_on_fsync_fails_the_append_and_every_later_call() {
    let dir = Path::new("/data");
    let fs = FaultyFs::new();
    let (store, _) = open(Arc::new(fs.clone()), dir, 1 << 20).unwrap();
    append_durably(&store, vec![entry(1, 0)]).unwrap();
    fs.fail_syncs(EIO);
    let err = append_durably(&store, vec![entry(1, 1)]).unwrap_err();
    assert!(err.to_string().contains("Input/output error"), "{err}");
    fs.clear_faults();
    assert!(append_durably(&store, vec![entry(1, 2)]).is_err());
    assert!(block_on(store.flush()).is_err());
    assert!(block_on(store.truncate(1)).is_err());
    drop(store);
    fs.crash();
    let (store, _) = open(Arc::new(fs), dir, 1 << 20).unwrap();
    assert_eq!(
        indexes(&store),
        vec![0],
        "the unsynced entry is gone after a crash"
    );
}

#[test]
fn vote_truncate_and_purge_are_durable_when_they_return() {
    let dir = Path::new("/data");
    let fs = FaultyFs::new();
    let (store, _) = open(Arc::new(fs.clone()), dir, 300).unwrap();
    for i in 0..30 {
        append_durably(&store, vec![entry(1, i)]).unwrap();
    }
    block_on(store.save_vote(Vote::new(3, 2))).unwrap();
    block_on(store.truncate(25)).unwrap();
    block_on(store.purge(log_id(1, 10))).unwrap();
    fs.crash();
    drop(store);
    let (store, _) = open(Arc::new(fs), dir, 300).unwrap();
    assert_eq!(store.vote(), Some(Vote::new(3, 2)));
    assert_eq!(indexes(&store), (11..25).collect::<Vec<_>>());
    assert_eq!(store.log_state().0, Some(log_id(1, 10)));
}

#[test]
fn appends_queued_during_an_fsync_share_the_next_one() {
    let dir = Path::new("/data");
    let fs = FaultyFs::new();
    let (store, _) = open(Arc::new(fs.clone()), dir, 1 << 30).unwrap();
    // A disk whose flush takes a while, so appends pile up behind it.
    fs.set_sync_delay(Duration::from_millis(2));
    let syncs_before = fs.syncs();
    let (tx, rx) = mpsc::channel();
    let n = 2000u64;
    for i in 0..n {
        let tx = tx.clone();
        store
            .append(
                vec![entry(1, i)],
                Box::new(move |r| tx.send(r.is_ok()).unwrap()),
            )
            .unwrap();
    }
    for _ in 0..n {
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
    }
    let syncs = fs.syncs() - syncs_before;
    assert!(syncs < n / 4, "{n} appends took {syncs} fsyncs");
}

fn open_with(dir: &Path, kek: Option<Kek>) -> Result<(LogStore, Recovery), StoreError> {
    LogStore::open(
        Arc::new(StdFs),
        dir,
        LogOptions {
            segment_size: 1 << 20,
            kek: kek.map(Arc::new),
        },
    )
}

fn files_contain(dir: &Path, needle: &[u8]) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if std::fs::read(&path)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
        {
            return true;
        }
    }
    false
}

#[test]
fn a_plain_log_switched_to_encrypted_keeps_loading_and_then_needs_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let kek = || Kek::parse(&[9u8; 32]).unwrap();
    {
        let (store, _) = open_with(dir.path(), None).unwrap();
        assert!(store.data_key().is_none());
        append_durably(&store, (0..5).map(|i| entry(1, i)).collect()).unwrap();
    }
    assert!(files_contain(dir.path(), b"group-1"), "plain before");
    {
        // Switched on: the old entries load, new ones are sealed.
        let (store, recovery) = open_with(dir.path(), Some(kek())).unwrap();
        assert!(store.data_key().is_some());
        assert_eq!(recovery.entries, 5);
        append_durably(&store, (5..10).map(|i| entry(2, i)).collect()).unwrap();
    }
    assert!(
        !files_contain(dir.path(), b"group-2"),
        "new entries are sealed"
    );
    let (store, recovery) = open_with(dir.path(), Some(kek())).unwrap();
    assert_eq!(recovery.entries, 10);
    assert_eq!(store.entries(8..9).unwrap(), vec![entry(2, 8)]);
    drop(store);
    let error = open_with(dir.path(), None).unwrap_err().to_string();
    assert!(error.contains("no key was given"), "{error}");
    let error = open_with(dir.path(), Some(Kek::parse(&[8u8; 32]).unwrap()))
        .unwrap_err()
        .to_string();
    assert!(error.contains(kek().id()), "{error}");
}
