//! Where the audit rows live in memory: the newest few decoded, the rest in
//! compressed chunks.
//!
//! The log keeps up to `--audit-limit` rows (100,000 by default), and
//! decoded each row cost about 290 bytes (a row behind an `Arc`, its target
//! and detail strings): 28 MiB at the limit, the largest single part of an
//! idle-but-written node's heap. Rows are only ever appended, dropped from
//! the front and read in bulk (the audit API scans them newest first), so
//! every [`CHUNK_ROWS`] rows are sealed into one zstd frame of their
//! protobuf records: rows of a chunk repeat their user, IP, action and
//! outcome, and compress to a few tens of bytes each. Reading decodes a
//! chunk at a time.
//!
//! The snapshot is unchanged: it lists the rows one record each, as before.

use std::sync::Arc;

use imbl::Vector;
use prost::Message;

use super::audit::{share, AuditRow};
use tacos_core::snapshot as pb;

/// Rows per sealed chunk: big enough for zstd to find the repeats, small
/// enough that reading the newest page decodes little.
pub(crate) const CHUNK_ROWS: usize = 256;
/// zstd's level for sealing: fast, and most of the gain.
const LEVEL: i32 = 3;

/// `CHUNK_ROWS` rows as length-delimited `AuditRecord`s, zstd-compressed
/// (or stored as they are if compressing failed).
#[derive(Debug)]
struct Chunk {
    bytes: Box<[u8]>,
    raw_len: usize,
    compressed: bool,
}

impl Chunk {
    fn seal(rows: &Vector<Arc<AuditRow>>) -> Chunk {
        let mut raw = Vec::new();
        for row in rows {
            let record = pb::AuditRecord {
                id: row.id,
                time_ms: row.time_ms,
                user: row.user.to_string(),
                ip: row.ip.to_string(),
                action: row.action.to_string(),
                target: row.target.clone(),
                detail: row.detail.clone(),
                outcome: row.outcome.to_string(),
            };
            record
                .encode_length_delimited(&mut raw)
                .expect("a Vec grows as needed");
        }
        match zstd::bulk::compress(&raw, LEVEL) {
            Ok(bytes) => Chunk {
                bytes: bytes.into_boxed_slice(),
                raw_len: raw.len(),
                compressed: true,
            },
            Err(_) => Chunk {
                raw_len: raw.len(),
                bytes: raw.into_boxed_slice(),
                compressed: false,
            },
        }
    }

    /// The chunk's rows, oldest first. The bytes were written by `seal` in
    /// this process, so failing to read them back is a bug, not bad input.
    fn rows(&self) -> Vec<Arc<AuditRow>> {
        let raw = if self.compressed {
            std::borrow::Cow::Owned(
                zstd::bulk::decompress(&self.bytes, self.raw_len)
                    .expect("an audit chunk decompresses (sealed by this process)"),
            )
        } else {
            std::borrow::Cow::Borrowed(&self.bytes[..])
        };
        let mut rows: Vec<Arc<AuditRow>> = Vec::with_capacity(CHUNK_ROWS);
        let mut buf = &raw[..];
        while !buf.is_empty() {
            let r = pb::AuditRecord::decode_length_delimited(&mut buf)
                .expect("an audit chunk decodes (sealed by this process)");
            let previous = rows.last();
            let row = AuditRow {
                id: r.id,
                time_ms: r.time_ms,
                user: share(previous.map(|p| &p.user), &r.user),
                ip: share(previous.map(|p| &p.ip), &r.ip),
                action: share(previous.map(|p| &p.action), &r.action),
                target: r.target,
                detail: r.detail,
                outcome: share(previous.map(|p| &p.outcome), &r.outcome),
            };
            rows.push(Arc::new(row));
        }
        rows
    }
}

/// The audit rows, oldest first. Cloning is O(1) (persistent vectors), as
/// for every other table of the state.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditLog {
    /// Full chunks, oldest first; each holds exactly `CHUNK_ROWS` rows.
    sealed: Vector<Arc<Chunk>>,
    /// Rows of the oldest chunk already dropped by the limit.
    skip: usize,
    /// The newest rows, fewer than `CHUNK_ROWS`, decoded.
    open: Vector<Arc<AuditRow>>,
}

impl AuditLog {
    pub(crate) fn len(&self) -> usize {
        self.sealed.len() * CHUNK_ROWS - self.skip + self.open.len()
    }

    /// The newest row, if it is still decoded (for sharing strings with it).
    pub(crate) fn last_open(&self) -> Option<&Arc<AuditRow>> {
        self.open.last()
    }

    pub(crate) fn push_back(&mut self, row: AuditRow) {
        self.open.push_back(Arc::new(row));
        if self.open.len() == CHUNK_ROWS {
            let chunk = Chunk::seal(&self.open);
            self.sealed.push_back(Arc::new(chunk));
            self.open = Vector::new();
        }
    }

    /// Drops the oldest row. A chunk's memory goes once all its rows did.
    pub(crate) fn pop_front(&mut self) {
        if self.sealed.is_empty() {
            self.open.pop_front();
            return;
        }
        self.skip += 1;
        if self.skip == CHUNK_ROWS {
            self.sealed.pop_front();
            self.skip = 0;
        }
    }

    pub(crate) fn iter(&self) -> AuditIter<'_> {
        AuditIter {
            log: self,
            front: 0,
            back: self.len(),
            front_chunk: None,
            back_chunk: None,
        }
    }
}

/// The rows in order (and reversed with `rev`), decoding a chunk at a time.
pub struct AuditIter<'a> {
    log: &'a AuditLog,
    /// Next row from the front, counted from the oldest kept row.
    front: usize,
    /// One past the next row from the back.
    back: usize,
    front_chunk: Option<(usize, Vec<Arc<AuditRow>>)>,
    back_chunk: Option<(usize, Vec<Arc<AuditRow>>)>,
}

impl AuditIter<'_> {
    fn row(&mut self, index: usize, from_back: bool) -> Arc<AuditRow> {
        let physical = index + self.log.skip;
        let sealed_rows = self.log.sealed.len() * CHUNK_ROWS;
        if physical >= sealed_rows {
            return self.log.open[physical - sealed_rows].clone();
        }
        let (chunk, offset) = (physical / CHUNK_ROWS, physical % CHUNK_ROWS);
        let cache = if from_back {
            &mut self.back_chunk
        } else {
            &mut self.front_chunk
        };
        match cache {
            Some((cached, rows)) if *cached == chunk => rows[offset].clone(),
            _ => {
                let rows = self.log.sealed[chunk].rows();
                let row = rows[offset].clone();
                *cache = Some((chunk, rows));
                row
            }
        }
    }
}

impl Iterator for AuditIter<'_> {
    type Item = Arc<AuditRow>;

    fn next(&mut self) -> Option<Arc<AuditRow>> {
        if self.front >= self.back {
            return None;
        }
        let row = self.row(self.front, false);
        self.front += 1;
        Some(row)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }

    /// Skips without decoding the chunks skipped over.
    fn nth(&mut self, n: usize) -> Option<Arc<AuditRow>> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for AuditIter<'_> {
    fn next_back(&mut self) -> Option<Arc<AuditRow>> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        Some(self.row(self.back, true))
    }

    fn nth_back(&mut self, n: usize) -> Option<Arc<AuditRow>> {
        self.back = self.back.saturating_sub(n).max(self.front);
        self.next_back()
    }
}

impl ExactSizeIterator for AuditIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64) -> AuditRow {
        AuditRow {
            id,
            time_ms: 1_700_000_000_000 + id as i64,
            user: "alice".into(),
            ip: "10.0.0.9".into(),
            action: "config.publish".into(),
            target: format!("public/DEFAULT_GROUP/key-{}", id % 7),
            detail: format!("md5={:x}", md5::compute(id.to_le_bytes())),
            outcome: "ok".into(),
        }
    }

    fn ids(log: &AuditLog) -> Vec<u64> {
        log.iter().map(|r| r.id).collect()
    }

    #[test]
    fn rows_read_back_the_same_across_chunks_and_limits() {
        let mut log = AuditLog::default();
        let total = CHUNK_ROWS * 3 + 17;
        for id in 1..=total as u64 {
            log.push_back(row(id));
        }
        assert_eq!(log.sealed.len(), 3);
        assert_eq!(log.len(), total);
        assert_eq!(ids(&log), (1..=total as u64).collect::<Vec<_>>());
        let every: Vec<AuditRow> = log.iter().map(|r| AuditRow::clone(&r)).collect();
        assert_eq!(every[CHUNK_ROWS + 3], row(CHUNK_ROWS as u64 + 4));

        // Dropping from the front: within the oldest chunk, then past it.
        for _ in 0..CHUNK_ROWS + 5 {
            log.pop_front();
        }
        assert_eq!(log.sealed.len(), 2);
        assert_eq!(log.len(), total - CHUNK_ROWS - 5);
        let first = CHUNK_ROWS as u64 + 6;
        assert_eq!(ids(&log), (first..=total as u64).collect::<Vec<_>>());

        // Backwards, and both ends at once, and skipping.
        let back: Vec<u64> = log.iter().rev().map(|r| r.id).collect();
        assert_eq!(back, (first..=total as u64).rev().collect::<Vec<_>>());
        let mut both = log.iter();
        assert_eq!(both.next().map(|r| r.id), Some(first));
        assert_eq!(both.next_back().map(|r| r.id), Some(total as u64));
        assert_eq!(both.len(), log.len() - 2);
        assert_eq!(log.iter().nth(300).map(|r| r.id), Some(first + 300));
        assert_eq!(
            log.iter().rev().nth(20).map(|r| r.id),
            Some(total as u64 - 20)
        );
        assert_eq!(log.iter().nth(log.len()), None);
    }

    #[test]
    fn a_clone_is_unaffected_by_later_rows() {
        let mut log = AuditLog::default();
        for id in 1..=CHUNK_ROWS as u64 - 1 {
            log.push_back(row(id));
        }
        let before = log.clone();
        log.push_back(row(CHUNK_ROWS as u64));
        log.pop_front();
        assert_eq!(before.len(), CHUNK_ROWS - 1);
        assert_eq!(ids(&before), (1..CHUNK_ROWS as u64).collect::<Vec<_>>());
        assert_eq!(ids(&log), (2..=CHUNK_ROWS as u64).collect::<Vec<_>>());
    }

    #[test]
    fn sealed_rows_are_much_smaller() {
        let mut log = AuditLog::default();
        for id in 1..=CHUNK_ROWS as u64 {
            log.push_back(row(id));
        }
        let bytes = log.sealed[0].bytes.len();
        assert!(
            bytes < CHUNK_ROWS * 60,
            "{bytes} bytes for {CHUNK_ROWS} rows"
        );
    }
}
