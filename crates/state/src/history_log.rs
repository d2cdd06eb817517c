//! Where history rows live in memory: the newest few decoded, the rest in
//! compressed chunks, found without a per-row index.
//!
//! Each config keeps up to `--history-limit` rows (100 by default), and a
//! decoded row cost about 450 bytes (the row behind an `Arc`, its content
//! and md5 strings, the id index): with 100,000 configs of 10 rows each,
//! 400 MiB, most of a node's heap. Rows are written once, read rarely (the
//! history APIs, a rollback, a snapshot) and dropped when their config
//! passes its limit. So rows are filed by id range, [`CHUNK_ROWS`] ids a
//! range: the newest range decoded, every earlier one sealed into one zstd
//! frame of its rows' snapshot records (rows written close together share
//! users, IPs, keys and often content, and compress to a few tens of bytes
//! each). Reading a row decodes its chunk. Ids are handed out in order, so
//! a row's id says its chunk, and a bit per id says whether it is live: an
//! id → place index (about 60 bytes a row in a persistent map) would cost
//! twice what the compressed rows do.
//!
//! A dropped row's bit is cleared at once; its chunk's bytes go when the
//! chunk has no live row left, and a chunk with under a quarter of its rows
//! live is rewritten with only those (so rows of a rarely written config do
//! not pin whole chunks of dropped ones).
//!
//! Snapshots list the live rows in id order, which is each config's rows
//! oldest first, as loading expects. Older snapshots listed them grouped by
//! config; rows loaded out of id order wait decoded and are merged into
//! their chunks in bulk.

use std::sync::Arc;

use imbl::{OrdMap, Vector};
use prost::Message;

use super::snapshot::{history_record, history_row};
use super::HistoryRow;
use tacos_core::snapshot as pb;

/// Rows per sealed chunk (arrivals, live or not).
pub(crate) const CHUNK_ROWS: u64 = 256;
/// zstd's level for sealing: fast, and most of the gain.
const LEVEL: i32 = 3;

/// Rows as length-delimited `HistoryRecord`s, zstd-compressed (or stored as
/// they are if compressing failed).
#[derive(Debug)]
struct Chunk {
    bytes: Box<[u8]>,
    raw_len: usize,
    compressed: bool,
    rows: u32,
}

impl Chunk {
    fn seal<'a>(rows: impl Iterator<Item = &'a HistoryRow>) -> Option<Chunk> {
        let mut raw = Vec::new();
        let mut count = 0;
        for row in rows {
            history_record(row)
                .encode_length_delimited(&mut raw)
                .expect("a Vec grows as needed");
            count += 1;
        }
        if count == 0 {
            return None;
        }
        Some(match zstd::bulk::compress(&raw, LEVEL) {
            Ok(bytes) => Chunk {
                bytes: bytes.into_boxed_slice(),
                raw_len: raw.len(),
                compressed: true,
                rows: count,
            },
            Err(_) => Chunk {
                raw_len: raw.len(),
                bytes: raw.into_boxed_slice(),
                compressed: false,
                rows: count,
            },
        })
    }

    /// The chunk's bytes as they were before compressing.
    fn raw(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.compressed {
            std::borrow::Cow::Owned(
                zstd::bulk::decompress(&self.bytes, self.raw_len)
                    .expect("a history chunk decompresses (sealed by this process)"),
            )
        } else {
            std::borrow::Cow::Borrowed(&self.bytes[..])
        }
    }

    /// Each row's id and encoded `HistoryRecord`.
    fn records(&self) -> Vec<(u64, Vec<u8>)> {
        let raw = self.raw();
        each_record(&raw)
            .map(|(id, record)| (id, record.to_vec()))
            .collect()
    }

    /// The chunk's rows in arrival order. The bytes were written by `seal`
    /// in this process, so failing to read them back is a bug, not bad
    /// input.
    fn rows(&self) -> Vec<Arc<HistoryRow>> {
        let raw = self.raw();
        let mut rows = Vec::with_capacity(self.rows as usize);
        let mut buf = &raw[..];
        while !buf.is_empty() {
            let record = pb::HistoryRecord::decode_length_delimited(&mut buf)
                .expect("a history chunk decodes (sealed by this process)");
            let row = history_row(record).expect("a history chunk holds valid rows");
            rows.push(Arc::new(row));
        }
        rows
    }
}

/// Each record of a chunk's raw bytes with its id, without decoding the
/// rest of it (prost writes fields in tag order, so a record starts with its
/// id, field 1, which is never 0). The bytes were written by `seal` in this
/// process, so failing to read them back is a bug, not bad input.
fn each_record(raw: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let mut buf = raw;
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let len = prost::encoding::decode_varint(&mut buf)
            .expect("a history chunk decodes (sealed by this process)");
        let (record, rest) = buf.split_at(len as usize);
        buf = rest;
        let mut fields = record;
        let id = match prost::encoding::decode_key(&mut fields) {
            Ok((1, prost::encoding::WireType::Varint)) => {
                prost::encoding::decode_varint(&mut fields).unwrap_or(0)
            }
            _ => 0,
        };
        Some((id, record))
    })
}

/// Which ids of one range are live: bit `id % CHUNK_ROWS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Live([u64; (CHUNK_ROWS / 64) as usize]);

impl Live {
    fn bit(id: u64) -> (usize, u64) {
        let i = id % CHUNK_ROWS;
        ((i / 64) as usize, 1 << (i % 64))
    }

    fn has(&self, id: u64) -> bool {
        let (word, bit) = Self::bit(id);
        self.0[word] & bit != 0
    }

    fn set(&mut self, id: u64) {
        let (word, bit) = Self::bit(id);
        self.0[word] |= bit;
    }

    /// Clears the id's bit; says whether it was set.
    fn clear(&mut self, id: u64) -> bool {
        let (word, bit) = Self::bit(id);
        let was = self.0[word] & bit != 0;
        self.0[word] &= !bit;
        was
    }

    fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }

    fn union(self, other: Live) -> Live {
        let mut out = self;
        for (word, more) in out.0.iter_mut().zip(other.0) {
            *word |= more;
        }
        out
    }
}

/// Decoded rows of one range that are not sealed yet (dropped ones
/// included, left out when sealed), and which of them are live.
#[derive(Debug, Clone, Default)]
struct Open {
    rows: Vector<Arc<HistoryRow>>,
    live: Live,
}

impl Open {
    /// The live rows in id order (they arrive in id order but while
    /// loading an older snapshot).
    fn live_rows(&self) -> impl Iterator<Item = &Arc<HistoryRow>> {
        let mut rows: Vec<&Arc<HistoryRow>> =
            self.rows.iter().filter(|r| self.live.has(r.id)).collect();
        rows.sort_unstable_by_key(|r| r.id);
        rows.into_iter()
    }

    fn find(&self, id: u64) -> Option<&Arc<HistoryRow>> {
        if !self.live.has(id) {
            return None;
        }
        self.rows.iter().rev().find(|r| r.id == id)
    }
}

/// A sealed range: its chunk (rows in id order) and which of them are
/// still live.
#[derive(Debug, Clone)]
struct Sealed {
    chunk: Arc<Chunk>,
    live: Live,
}

/// Rows that may wait decoded out of order (see [`HistoryLog::push`])
/// before they are merged into their chunks: about 300 bytes each.
const STRAY_LIMIT: usize = 65_536;

/// Every live history row, findable by id. Cloning is O(1) (persistent
/// maps and vectors), as for every other table of the state.
///
/// Rows are filed by id range: range `n` holds ids `n * CHUNK_ROWS ..
/// (n + 1) * CHUNK_ROWS`. Ids are handed out in order, so the newest range
/// fills up while older ones are sealed, and finding a row needs no index
/// (a per-row id index cost more than the compressed rows themselves):
/// its range says its chunk, a bit per id says whether it is live.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistoryLog {
    /// Sealed ranges by number; a range whose rows all went has no entry.
    sealed: OrdMap<u64, Sealed>,
    /// The newest range's number: its rows are in `open`.
    newest: u64,
    open: Open,
    /// Rows that came for a range older than `newest`: only while loading
    /// a snapshot that lists rows in another order than their ids (grouped
    /// by config, as older snapshots did). Merged into their chunks once
    /// [`STRAY_LIMIT`] of them wait; read from here until then.
    strays: OrdMap<u64, Open>,
    stray_rows: usize,
}

fn range_of(id: u64) -> u64 {
    id / CHUNK_ROWS
}

impl HistoryLog {
    /// Adds a row (ids are unique, which the caller checks with
    /// [`contains`](Self::contains); each config's rows come oldest first).
    pub(crate) fn push(&mut self, row: HistoryRow) {
        let number = range_of(row.id);
        let id = row.id;
        if number > self.newest {
            let open = std::mem::take(&mut self.open);
            self.merge(self.newest, open);
            self.newest = number;
        }
        let open = if number == self.newest {
            &mut self.open
        } else {
            self.stray_rows += 1;
            self.strays.entry(number).or_default()
        };
        open.rows.push_back(Arc::new(row));
        open.live.set(id);
        if self.stray_rows >= STRAY_LIMIT {
            self.settle();
        }
    }

    /// Merges waiting strays into their chunks.
    fn settle(&mut self) {
        for (number, open) in std::mem::take(&mut self.strays) {
            self.merge(number, open);
        }
        self.stray_rows = 0;
    }

    /// Seals a range's live rows (those of `open` and of its sealed chunk,
    /// if any) into one chunk in id order; the range goes if none is live.
    fn merge(&mut self, number: u64, open: Open) {
        let mut live = open.live;
        let mut rows: Vec<Arc<HistoryRow>> =
            open.rows.into_iter().filter(|r| live.has(r.id)).collect();
        if let Some(old) = self.sealed.remove(&number) {
            rows.extend(old.chunk.rows().into_iter().filter(|r| old.live.has(r.id)));
            live = live.union(old.live);
        }
        rows.sort_unstable_by_key(|r| r.id);
        if let Some(chunk) = Chunk::seal(rows.iter().map(|r| r.as_ref())) {
            let chunk = Arc::new(chunk);
            self.sealed.insert(number, Sealed { chunk, live });
        }
    }

    /// Drops a row (its config passed its limit).
    pub(crate) fn release(&mut self, id: u64) {
        let number = range_of(id);
        if number == self.newest && self.open.live.clear(id) {
            return; // still decoded: left out when its range is sealed
        }
        if let Some(stray) = self.strays.get_mut(&number) {
            if stray.live.clear(id) {
                if stray.live == Live::default() {
                    let rows = stray.rows.len();
                    self.strays.remove(&number);
                    self.stray_rows -= rows;
                }
                return;
            }
        }
        let Some(sealed) = self.sealed.get_mut(&number) else {
            return;
        };
        if !sealed.live.clear(id) {
            return;
        }
        let live = sealed.live.count();
        if live == 0 {
            self.sealed.remove(&number);
        } else if live * 4 < sealed.chunk.rows {
            // Rewritten with the live rows only.
            self.merge(number, Open::default());
        }
    }

    /// Whether a row with this id is live.
    pub(crate) fn contains(&self, id: u64) -> bool {
        let number = range_of(id);
        (number == self.newest && self.open.live.has(id))
            || self.strays.get(&number).is_some_and(|s| s.live.has(id))
            || self.sealed.get(&number).is_some_and(|s| s.live.has(id))
    }

    /// A live row that is still decoded (newest range or a stray).
    fn decoded(&self, id: u64) -> Option<&Arc<HistoryRow>> {
        let number = range_of(id);
        if number == self.newest {
            if let Some(row) = self.open.find(id) {
                return Some(row);
            }
        }
        self.strays.get(&number)?.find(id)
    }

    /// One live row by id (decoding its chunk if sealed).
    pub(crate) fn get(&self, id: u64) -> Option<Arc<HistoryRow>> {
        if let Some(row) = self.decoded(id) {
            return Some(row.clone());
        }
        let sealed = self.sealed.get(&range_of(id))?;
        if !sealed.live.has(id) {
            return None;
        }
        let rows = sealed.chunk.rows();
        let at = rows.binary_search_by_key(&id, |r| r.id).ok()?;
        Some(rows[at].clone())
    }

    /// The ranges holding rows, in order: a sealed chunk and waiting strays
    /// each (the newest range's open rows come after all of them).
    fn ranges(&self) -> Vec<(Option<&Sealed>, Option<&Open>)> {
        let mut numbers: Vec<u64> = self
            .sealed
            .keys()
            .chain(self.strays.keys())
            .copied()
            .collect();
        numbers.sort_unstable();
        numbers.dedup();
        numbers
            .into_iter()
            .map(|n| (self.sealed.get(&n), self.strays.get(&n)))
            .collect()
    }

    /// Every live row in id order, decoding a chunk at a time (each chunk
    /// once: what a bulk reader wants, where one lookup per row would
    /// decode a chunk per row).
    pub(crate) fn live_rows(&self) -> impl Iterator<Item = Arc<HistoryRow>> + '_ {
        self.ranges()
            .into_iter()
            .flat_map(|(sealed, stray)| {
                let mut rows: Vec<Arc<HistoryRow>> = sealed
                    .map(|s| {
                        let live = s.live;
                        s.chunk.rows().into_iter().filter(move |r| live.has(r.id))
                    })
                    .into_iter()
                    .flatten()
                    .collect();
                if let Some(stray) = stray {
                    rows.extend(stray.live_rows().cloned());
                    rows.sort_unstable_by_key(|r| r.id);
                }
                rows
            })
            .chain(self.open.live_rows().cloned().collect::<Vec<_>>())
    }

    /// Every live row's encoded `HistoryRecord` in id order (what
    /// [`live_rows`](Self::live_rows) would encode to: a snapshot's rows
    /// and the state's digest do not depend on the order rows were
    /// loaded in), sealed ones copied out of their chunk without decoding.
    pub(crate) fn live_records(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        let encoded = |open: &Open| -> Vec<(u64, Vec<u8>)> {
            open.live_rows()
                .map(|r| (r.id, history_record(r).encode_to_vec()))
                .collect()
        };
        self.ranges()
            .into_iter()
            .flat_map(move |(sealed, stray)| {
                let mut records: Vec<(u64, Vec<u8>)> = sealed
                    .map(|s| {
                        s.chunk
                            .records()
                            .into_iter()
                            .filter(|(id, _)| s.live.has(*id))
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(stray) = stray {
                    records.extend(encoded(stray));
                    records.sort_unstable_by_key(|(id, _)| *id);
                }
                records
            })
            .chain(encoded(&self.open))
            .map(|(_, record)| record)
    }

    /// The rows with these ids (live ones, in the given order).
    pub(crate) fn rows<'a>(&'a self, ids: &'a [u64]) -> HistoryIter<'a> {
        HistoryIter {
            log: self,
            ids,
            front: 0,
            back: ids.len(),
            front_chunk: None,
            back_chunk: None,
        }
    }

    #[cfg(test)]
    fn sealed_chunks(&self) -> usize {
        self.sealed.len()
    }
}

/// A config's history rows, oldest first (and reversed with `rev`).
pub struct HistoryIter<'a> {
    log: &'a HistoryLog,
    ids: &'a [u64],
    front: usize,
    back: usize,
    /// The last chunk read from each end, decompressed: a config's rows
    /// written close together share one. Only the asked-for row is decoded
    /// from it (a config's rows usually sit in as many chunks as it has
    /// rows, and decoding all 256 rows of each took 0.7 ms a row).
    front_chunk: Option<(u64, std::borrow::Cow<'a, [u8]>)>,
    back_chunk: Option<(u64, std::borrow::Cow<'a, [u8]>)>,
}

impl<'a> HistoryIter<'a> {
    fn row(&mut self, id: u64, from_back: bool) -> Arc<HistoryRow> {
        if let Some(row) = self.log.decoded(id) {
            return row.clone();
        }
        let number = range_of(id);
        let log: &'a HistoryLog = self.log;
        let cache = if from_back {
            &mut self.back_chunk
        } else {
            &mut self.front_chunk
        };
        if cache.as_ref().is_none_or(|(cached, _)| *cached != number) {
            *cache = Some((number, log.sealed[&number].chunk.raw()));
        }
        let (_, raw) = cache.as_ref().expect("filled above");
        let (_, record) = each_record(raw)
            .find(|&(at, _)| at == id)
            .expect("a config's history ids are live rows");
        let record = pb::HistoryRecord::decode(record)
            .expect("a history chunk decodes (sealed by this process)");
        Arc::new(history_row(record).expect("a history chunk holds valid rows"))
    }
}

impl Iterator for HistoryIter<'_> {
    type Item = Arc<HistoryRow>;

    fn next(&mut self) -> Option<Arc<HistoryRow>> {
        if self.front >= self.back {
            return None;
        }
        let id = self.ids[self.front];
        self.front += 1;
        Some(self.row(id, false))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }

    /// Counts without decoding.
    fn count(self) -> usize {
        self.back - self.front
    }

    /// Skips without decoding the rows skipped over.
    fn nth(&mut self, n: usize) -> Option<Arc<HistoryRow>> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for HistoryIter<'_> {
    fn next_back(&mut self) -> Option<Arc<HistoryRow>> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        let id = self.ids[self.back];
        Some(self.row(id, true))
    }

    fn nth_back(&mut self, n: usize) -> Option<Arc<HistoryRow>> {
        self.back = self.back.saturating_sub(n).max(self.front);
        self.next_back()
    }
}

impl ExactSizeIterator for HistoryIter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConfigKey, OpType};

    fn row(id: u64, config: u64) -> HistoryRow {
        let content = format!("server.port=8080\nname=app-{config}\nversion={id}\n");
        HistoryRow {
            id,
            last_id: id.saturating_sub(1),
            key: ConfigKey::new("", "DEFAULT_GROUP", &format!("app-{config}")),
            md5: tacos_core::md5_hex(&content).into(),
            content: content.into(),
            app_name: String::new(),
            src_user: "nacos".into(),
            src_ip: "10.0.0.1".into(),
            op: OpType::Update,
            created_time: 1_700_000_000_000 + id as i64,
            last_modified_time: 1_700_000_000_000 + id as i64,
            gray_name: String::new(),
            encrypted_data_key: None,
        }
    }

    fn ids_of(rows: impl Iterator<Item = Arc<HistoryRow>>) -> Vec<u64> {
        rows.map(|r| r.id).collect()
    }

    #[test]
    fn rows_read_back_the_same_sealed_or_not() {
        let mut log = HistoryLog::default();
        let total = CHUNK_ROWS * 3 + 10;
        for id in 1..=total {
            log.push(row(id, id % 5));
        }
        // Ranges 0, 1 and 2 sealed, range 3 still decoded.
        assert_eq!(log.sealed_chunks(), 3);
        let ids: Vec<u64> = (1..=total).filter(|id| id % 5 == 2).collect();
        let rows: Vec<Arc<HistoryRow>> = log.rows(&ids).collect();
        assert_eq!(rows.len(), ids.len());
        for (got, id) in rows.iter().zip(&ids) {
            assert_eq!(**got, row(*id, 2));
        }
        assert_eq!(
            ids_of(log.rows(&ids).rev()),
            ids.iter().rev().copied().collect::<Vec<_>>()
        );
        assert_eq!(log.rows(&ids).count(), ids.len());
        assert_eq!(log.rows(&ids).nth(100).map(|r| r.id), Some(ids[100]));
        assert_eq!(log.get(7).as_deref(), Some(&row(7, 2)));
        assert_eq!(log.get(total).as_deref(), Some(&row(total, total % 5)));
        assert!(log.contains(7) && log.contains(total));
        assert!(!log.contains(0) && !log.contains(total + 1));
        assert_eq!(log.get(total + 1), None);
        assert_eq!(ids_of(log.live_rows()), (1..=total).collect::<Vec<_>>());
        let encoded: Vec<Vec<u8>> = log
            .live_rows()
            .map(|r| history_record(&r).encode_to_vec())
            .collect();
        assert_eq!(log.live_records().collect::<Vec<_>>(), encoded);
    }

    #[test]
    fn dropped_rows_free_their_chunks_and_leave_the_snapshot() {
        let mut log = HistoryLog::default();
        // Ranges 1 to 4 full, range 5 open.
        let first = CHUNK_ROWS;
        let total = CHUNK_ROWS * 5;
        for id in first..=total {
            log.push(row(id, id % 2));
        }
        assert_eq!(log.sealed_chunks(), 4);
        // Every row of range 1 goes: its chunk goes.
        for id in first..CHUNK_ROWS * 2 {
            log.release(id);
        }
        assert_eq!(log.sealed_chunks(), 3);
        assert!(!log.contains(first));
        assert_eq!(log.get(first), None);
        // Most of range 2 goes: its chunk is rewritten with the rest.
        let second = CHUNK_ROWS * 2..CHUNK_ROWS * 3;
        for id in second.clone().filter(|id| id % 8 != 0) {
            log.release(id);
        }
        let kept: Vec<u64> = second.filter(|id| id % 8 == 0).collect();
        // Rewritten once live rows fell under a quarter; not again since.
        let rewritten = &log.sealed[&2];
        assert_eq!(rewritten.live.count() as usize, kept.len());
        assert!((kept.len()..CHUNK_ROWS as usize / 4).contains(&(rewritten.chunk.rows as usize)));
        assert_eq!(ids_of(log.rows(&kept)), kept);
        // Releasing twice, or an id never pushed, changes nothing.
        log.release(first);
        log.release(total + 100);
        let live: Vec<u64> = kept.iter().copied().chain(CHUNK_ROWS * 3..=total).collect();
        assert_eq!(ids_of(log.live_rows()), live);
        let encoded: Vec<Vec<u8>> = log
            .live_rows()
            .map(|r| history_record(&r).encode_to_vec())
            .collect();
        assert_eq!(log.live_records().collect::<Vec<_>>(), encoded);
    }

    #[test]
    fn rows_dropped_before_sealing_are_left_out() {
        let mut log = HistoryLog::default();
        for id in 1..CHUNK_ROWS {
            log.push(row(id, id % 3));
        }
        let before = log.clone();
        log.release(5);
        assert!(!log.contains(5));
        log.push(row(CHUNK_ROWS, 0));
        assert_eq!(log.sealed_chunks(), 1);
        assert_eq!(log.sealed[&0].chunk.rows as u64, CHUNK_ROWS - 2);
        assert_eq!(log.live_rows().count() as u64, CHUNK_ROWS - 1);
        // A clone taken before is untouched.
        assert_eq!(before.live_rows().count() as u64, CHUNK_ROWS - 1);
        assert_eq!(ids_of(before.rows(&[5])), [5]);
    }

    /// Older snapshots list history grouped by config: rows come far out
    /// of id order, wait decoded and are merged into their chunks.
    #[test]
    fn rows_loaded_out_of_id_order_read_back_and_settle() {
        let configs = 7;
        let total = CHUNK_ROWS * 4 + 30;
        // Ids handed out round robin, as writes to several configs do.
        let per_config = |c: u64| (1..=total).filter(move |id| id % configs == c);
        let mut log = HistoryLog::default();
        for c in 0..configs {
            for id in per_config(c) {
                log.push(row(id, c));
            }
        }
        assert!(log.stray_rows > 0);
        let check = |log: &HistoryLog, released: bool| {
            for c in 0..configs {
                let ids: Vec<u64> = per_config(c)
                    .filter(|id| id % 11 != 0 || !released)
                    .collect();
                let rows: Vec<Arc<HistoryRow>> = log.rows(&ids).collect();
                assert_eq!(ids_of(rows.iter().cloned()), ids);
                for (got, id) in rows.iter().zip(&ids) {
                    assert_eq!(**got, row(*id, c));
                }
            }
            // In id order (so each config's rows oldest first), every live
            // row once, whether strays wait or not.
            let seen: Vec<u64> = log
                .live_records()
                .map(|record| pb::HistoryRecord::decode(&record[..]).unwrap().id)
                .collect();
            let live: Vec<u64> = (1..=total).filter(|id| log.contains(*id)).collect();
            assert_eq!(seen, live);
            assert_eq!(ids_of(log.live_rows()), live);
        };
        check(&log, false);
        // Dropping rows while some wait.
        for id in (1..=total).filter(|id| id % 11 == 0) {
            log.release(id);
        }
        assert!(!log.contains(11));
        let before = log.clone();
        log.settle();
        assert_eq!(log.stray_rows, 0);
        assert!(log.strays.is_empty());
        check(&log, true);
        check(&before, true);
        // Settled: one chunk per full range, in id order.
        assert_eq!(log.sealed_chunks() as u64, total / CHUNK_ROWS);
        assert_eq!(
            ids_of(log.live_rows()),
            (1..=total).filter(|id| id % 11 != 0).collect::<Vec<_>>()
        );
        // New rows after loading go on as usual.
        log.push(row(total + 1, (total + 1) % configs));
        assert_eq!(log.get(total + 1).map(|r| r.id), Some(total + 1));
    }

    #[test]
    fn sealed_rows_are_much_smaller_than_decoded_ones() {
        let mut log = HistoryLog::default();
        // Rows of as many configs, as in a chunk of a busy node.
        for id in 1..=CHUNK_ROWS {
            log.push(row(id, id + 1000));
        }
        let bytes = log.sealed[&0].chunk.bytes.len() as u64;
        assert!(
            bytes < CHUNK_ROWS * 80,
            "{bytes} bytes for {CHUNK_ROWS} rows"
        );
    }
}
