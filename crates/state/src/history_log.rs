//! Where history rows live in memory: the newest few decoded, the rest in
//! compressed chunks.
//!
//! Each config keeps up to `--history-limit` rows (100 by default), and a
//! decoded row cost about 450 bytes (the row behind an `Arc`, its content
//! and md5 strings, the id index): with 100,000 configs of 10 rows each,
//! 400 MiB, most of a node's heap. Rows are written once, read rarely (the
//! history APIs, a rollback, a snapshot) and dropped when their config
//! passes its limit. So rows are kept in arrival order: the newest
//! [`CHUNK_ROWS`] decoded, every earlier run of `CHUNK_ROWS` arrivals sealed
//! into one zstd frame of their snapshot records (rows of one run share
//! users, IPs, keys and often content, and compress to a few tens of bytes
//! each). Reading a row decodes its chunk.
//!
//! A dropped row is forgotten by the index at once; its chunk's bytes go
//! when the chunk has no live row left, and a chunk with under a quarter
//! of its rows live is rewritten with only those (so rows of a rarely
//! written config do not pin whole chunks of dropped ones).
//!
//! Snapshots list the live rows in arrival order: each config's rows
//! oldest first, as before, and what loading expects.

use std::sync::Arc;

use imbl::{OrdMap, Vector};
use prost::Message;

use super::snapshot::{history_record, history_row};
use super::{ConfigKey, HistoryRow};
use tacos_core::snapshot as pb;

/// Rows per sealed chunk (arrivals, live or not).
pub(crate) const CHUNK_ROWS: u64 = 256;
/// zstd's level for sealing: fast, and most of the gain.
const LEVEL: i32 = 3;

/// Where a live row is: its config, and its arrival number (which says its
/// chunk, or that it is still decoded).
#[derive(Debug, Clone)]
struct Place {
    key: ConfigKey,
    arrival: u64,
}

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

    /// Each row's id and encoded `HistoryRecord`, without decoding the
    /// rest of it (prost writes fields in tag order, so a record starts
    /// with its id, field 1, which is never 0).
    fn records(&self) -> Vec<(u64, Vec<u8>)> {
        let raw = self.raw();
        let mut records = Vec::with_capacity(self.rows as usize);
        let mut buf = &raw[..];
        while !buf.is_empty() {
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
            records.push((id, record.to_vec()));
        }
        records
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

#[derive(Debug, Clone)]
struct Sealed {
    chunk: Arc<Chunk>,
    live: u32,
}

/// Every live history row, findable by id. Cloning is O(1) (persistent
/// maps and vectors), as for every other table of the state.
#[derive(Debug, Clone, Default)]
pub(crate) struct HistoryLog {
    /// Sealed chunks by number (`arrival / CHUNK_ROWS`); a number whose
    /// rows all went has no chunk.
    sealed: OrdMap<u64, Sealed>,
    /// The newest arrivals (fewer than `CHUNK_ROWS`), decoded, dropped ones
    /// included until the run is sealed.
    open: Vector<Arc<HistoryRow>>,
    /// Rows pushed so far.
    arrivals: u64,
    /// The live rows by id.
    places: OrdMap<u64, Place>,
}

impl HistoryLog {
    fn open_start(&self) -> u64 {
        self.arrivals - self.open.len() as u64
    }

    /// Adds a row (ids are unique; each config's rows come oldest first).
    pub(crate) fn push(&mut self, row: HistoryRow) {
        let place = Place {
            key: row.key.clone(),
            arrival: self.arrivals,
        };
        self.places.insert(row.id, place);
        self.arrivals += 1;
        self.open.push_back(Arc::new(row));
        if self.open.len() as u64 == CHUNK_ROWS {
            let number = self.open_start() / CHUNK_ROWS;
            let places = &self.places;
            let live = self.open.iter().filter(|r| places.contains_key(&r.id));
            if let Some(chunk) = Chunk::seal(live.map(|r| r.as_ref())) {
                let live = chunk.rows;
                let chunk = Arc::new(chunk);
                self.sealed.insert(number, Sealed { chunk, live });
            }
            self.open = Vector::new();
        }
    }

    /// Drops a row (its config passed its limit).
    pub(crate) fn release(&mut self, id: u64) {
        let Some(place) = self.places.remove(&id) else {
            return;
        };
        if place.arrival >= self.open_start() {
            return; // still decoded: left out when its run is sealed
        }
        let number = place.arrival / CHUNK_ROWS;
        let Some(sealed) = self.sealed.get_mut(&number) else {
            return;
        };
        sealed.live = sealed.live.saturating_sub(1);
        if sealed.live == 0 {
            self.sealed.remove(&number);
        } else if sealed.live * 4 < sealed.chunk.rows {
            let rows = sealed.chunk.rows();
            let places = &self.places;
            let live = rows.iter().filter(|r| places.contains_key(&r.id));
            match Chunk::seal(live.map(|r| r.as_ref())) {
                Some(chunk) => {
                    let live = chunk.rows;
                    let chunk = Arc::new(chunk);
                    self.sealed.insert(number, Sealed { chunk, live });
                }
                None => {
                    self.sealed.remove(&number);
                }
            }
        }
    }

    /// The config a live row belongs to.
    pub(crate) fn key_of(&self, id: u64) -> Option<&ConfigKey> {
        self.places.get(&id).map(|p| &p.key)
    }

    /// Every live row in arrival order, decoding a chunk at a time.
    #[cfg(test)]
    pub(crate) fn live_rows(&self) -> impl Iterator<Item = Arc<HistoryRow>> + '_ {
        let places = &self.places;
        let sealed = self
            .sealed
            .values()
            .flat_map(|s| s.chunk.rows())
            .filter(move |r| places.contains_key(&r.id));
        let open = self
            .open
            .iter()
            .filter(move |r| places.contains_key(&r.id))
            .cloned();
        sealed.chain(open)
    }

    /// Every live row's encoded `HistoryRecord` in arrival order (what
    /// [`live_rows`](Self::live_rows) would encode to), sealed ones copied
    /// out of their chunk without decoding.
    pub(crate) fn live_records(&self) -> impl Iterator<Item = Vec<u8>> + '_ {
        let places = &self.places;
        let sealed = self.sealed.values().flat_map(move |s| {
            s.chunk
                .records()
                .into_iter()
                .filter(|(id, _)| places.contains_key(id))
                .map(|(_, record)| record)
        });
        let open = self
            .open
            .iter()
            .filter(move |r| places.contains_key(&r.id))
            .map(|r| history_record(r).encode_to_vec());
        sealed.chain(open)
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
    front_chunk: Option<(u64, Vec<Arc<HistoryRow>>)>,
    back_chunk: Option<(u64, Vec<Arc<HistoryRow>>)>,
}

impl HistoryIter<'_> {
    fn row(&mut self, id: u64, from_back: bool) -> Arc<HistoryRow> {
        let place = self
            .log
            .places
            .get(&id)
            .expect("a config's history ids are live rows");
        let open_start = self.log.open_start();
        if place.arrival >= open_start {
            return self.log.open[(place.arrival - open_start) as usize].clone();
        }
        let number = place.arrival / CHUNK_ROWS;
        let cache = if from_back {
            &mut self.back_chunk
        } else {
            &mut self.front_chunk
        };
        if cache.as_ref().is_none_or(|(cached, _)| *cached != number) {
            let rows = self.log.sealed[&number].chunk.rows();
            *cache = Some((number, rows));
        }
        let (_, rows) = cache.as_ref().expect("filled above");
        rows.iter()
            .find(|r| r.id == id)
            .expect("a live row is in its chunk")
            .clone()
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
    use crate::OpType;

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
        assert_eq!(log.key_of(7), Some(&row(7, 2).key));
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
        let total = CHUNK_ROWS * 4;
        for id in 1..=total {
            log.push(row(id, id % 2));
        }
        assert_eq!(log.sealed_chunks(), 4);
        // Every row of the first chunk goes: the chunk goes.
        for id in 1..=CHUNK_ROWS {
            log.release(id);
        }
        assert_eq!(log.sealed_chunks(), 3);
        assert_eq!(log.key_of(1), None);
        // Most of the second chunk goes: it is rewritten with the rest.
        let second = CHUNK_ROWS + 1..=CHUNK_ROWS * 2;
        for id in second.clone().filter(|id| id % 8 != 0) {
            log.release(id);
        }
        let kept: Vec<u64> = second.filter(|id| id % 8 == 0).collect();
        // Rewritten once live rows fell under a quarter; not again since.
        let second = &log.sealed[&1];
        assert_eq!(second.live as usize, kept.len());
        assert!((kept.len()..CHUNK_ROWS as usize / 4).contains(&(second.chunk.rows as usize)));
        assert_eq!(ids_of(log.rows(&kept)), kept);
        let live: Vec<u64> = kept
            .iter()
            .copied()
            .chain(CHUNK_ROWS * 2 + 1..=total)
            .collect();
        assert_eq!(ids_of(log.live_rows()), live);
    }

    #[test]
    fn rows_dropped_before_sealing_are_left_out() {
        let mut log = HistoryLog::default();
        for id in 1..CHUNK_ROWS {
            log.push(row(id, id % 3));
        }
        let before = log.clone();
        log.release(5);
        log.push(row(CHUNK_ROWS, 0));
        assert_eq!(log.sealed_chunks(), 1);
        assert_eq!(log.sealed[&0].chunk.rows as u64, CHUNK_ROWS - 1);
        assert_eq!(log.live_rows().count() as u64, CHUNK_ROWS - 1);
        // A clone taken before is untouched.
        assert_eq!(before.live_rows().count() as u64, CHUNK_ROWS - 1);
        assert_eq!(ids_of(before.rows(&[5])), [5]);
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
