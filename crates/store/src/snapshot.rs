//! Snapshot files: a point-in-time copy of the state machine.
//!
//! ```text
//! file    = magic "TACOSNP1" (8 bytes), then records (see record.rs):
//!   header:  JSON of openraft's SnapshotMeta (last log id, membership, id)
//!   body:    one record per state item, encoded by the state (first byte = kind)
//!   trailer: 0xFF, then the number of body records as u64 LE
//! ```
//! Every record carries its own checksum and the trailer proves the file is
//! whole. The same bytes are what a leader streams to a lagging follower.
//!
//! Files live in `snapshots/`, named `<index+1>-<term>.snap` (zero-padded,
//! so names sort by log position). One is written as `*.tmp`, fsynced,
//! renamed into place and the directory fsynced; then all but the newest two
//! are deleted. On start the newest file that decodes is used; the older one
//! is the fallback if the newest is damaged.
//!
//! With encryption at rest on, a file is saved sealed as a whole (see
//! [`crypt::seal_file`]: magic "TACOSEAL", a header naming the data key,
//! the sealed plain file) and opened again on load; everything else handles
//! the plain bytes. Plain files written before encryption was switched on
//! still load. A sealed file whose authentication fails counts as damaged;
//! one sealed with another data key, or with no key given, stops the load.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::crypt::{self, DataKey};
use super::error::{Result, StoreError};
use super::fs::Fs;
use super::record::{self, Decoded};
use tacos_core::types::SnapshotMeta;

/// The first bytes of every snapshot file.
pub const MAGIC: &[u8; 8] = b"TACOSNP1";
/// Name of the snapshot directory in the data dir.
pub const SNAPSHOT_DIR: &str = "snapshots";
/// How many snapshot files are kept.
pub const KEEP: usize = 2;
const TRAILER: u8 = 0xFF;

/// Encodes a snapshot file from its metadata and body records.
pub fn encode<R: AsRef<[u8]>>(meta: &SnapshotMeta, body: impl IntoIterator<Item = R>) -> Vec<u8> {
    encode_spilling(meta, body, |_| Ok(())).expect("nothing is spilled, so nothing fails")
}

/// Writes what [`encode`] returns to `out` about 64 KiB at a time, so a large
/// snapshot (a migration's) is never held whole as bytes.
pub fn write_to<R: AsRef<[u8]>>(
    out: &mut impl std::io::Write,
    meta: &SnapshotMeta,
    body: impl IntoIterator<Item = R>,
) -> std::io::Result<()> {
    let rest = encode_spilling(meta, body, |buf| {
        if buf.len() >= 64 * 1024 {
            out.write_all(buf)?;
            buf.clear();
        }
        Ok(())
    })?;
    out.write_all(&rest)
}

/// Encodes into one buffer, handing it to `spill` after each record (which may
/// write it out and empty it); returns what is left.
fn encode_spilling<R: AsRef<[u8]>>(
    meta: &SnapshotMeta,
    body: impl IntoIterator<Item = R>,
    mut spill: impl FnMut(&mut Vec<u8>) -> std::io::Result<()>,
) -> std::io::Result<Vec<u8>> {
    let mut buf = MAGIC.to_vec();
    let header = serde_json::to_vec(meta).expect("snapshot metadata always serializes");
    record::encode(&header, &mut buf);
    let mut count: u64 = 0;
    for payload in body {
        let payload = payload.as_ref();
        debug_assert_ne!(payload.first(), Some(&TRAILER), "0xFF is the trailer kind");
        record::encode(payload, &mut buf);
        count += 1;
        spill(&mut buf)?;
    }
    let mut trailer = vec![TRAILER];
    trailer.extend_from_slice(&count.to_le_bytes());
    record::encode(&trailer, &mut buf);
    Ok(buf)
}

/// Why bytes are not a whole, valid snapshot file. `E` is what the
/// visitor of the body records refuses a record with (the state's decode
/// error when a state is loaded).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotDecodeError<E: std::fmt::Display> {
    #[error("not a tacos snapshot (bad magic)")]
    BadMagic,
    #[error("damaged record at offset {offset}: {reason}")]
    DamagedRecord { offset: usize, reason: String },
    #[error("snapshot has no header")]
    NoHeader,
    #[error("bad snapshot header: {0}")]
    BadHeader(serde_json::Error),
    #[error("snapshot has no trailer: it is cut short")]
    CutShort,
    #[error("bad snapshot trailer")]
    BadTrailer,
    #[error("snapshot trailer says {expected} records, found {found}")]
    CountMismatch { expected: u64, found: u64 },
    #[error("trailing bytes after the snapshot trailer at {0}")]
    TrailingBytes(usize),
    #[error("bad snapshot record at offset {offset}: {error}")]
    Record { offset: usize, error: E },
    /// Reading the file failed ([`decode_from`]).
    #[error("cannot read the snapshot: {0}")]
    Read(std::io::Error),
}

/// Decodes a snapshot file, handing each body record to `visit`. Returns the
/// metadata, or why the bytes are not a whole, valid snapshot.
pub fn decode<E: std::fmt::Display>(
    bytes: &[u8],
    visit: impl FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<SnapshotMeta, SnapshotDecodeError<E>> {
    decode_records(&mut Slice { bytes, offset: 0 }, visit)
}

/// [`decode`] reading the file from `reader` about a megabyte at a time, so
/// a large snapshot is never held whole as bytes (a restore's read-back, a
/// migration's). The same checks, the same errors, plus
/// [`SnapshotDecodeError::Read`].
pub fn decode_from<E: std::fmt::Display>(
    reader: impl std::io::Read,
    visit: impl FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<SnapshotMeta, SnapshotDecodeError<E>> {
    let mut window = Window {
        reader,
        buf: Vec::new(),
        start: 0,
        end: 0,
        base: 0,
        eof: false,
    };
    decode_records(&mut window, visit)
}

/// What the next record of a snapshot file is, at `offset` from its start.
enum Next<'a> {
    Record(&'a [u8]),
    /// The file ends here.
    End,
    Damaged(String),
}

/// Where [`decode_records`] reads records from: a file whole in memory, or a
/// reader seen through a window.
trait Records {
    /// The offset of the next record (from the start of the file).
    fn offset(&self) -> usize;
    /// The magic check: whether the file starts with [`MAGIC`].
    fn magic(&mut self) -> std::io::Result<bool>;
    fn next(&mut self) -> std::io::Result<Next<'_>>;
    /// Whether nothing follows the last record read.
    fn at_end(&mut self) -> std::io::Result<bool>;
}

struct Slice<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl Records for Slice<'_> {
    fn offset(&self) -> usize {
        self.offset
    }

    fn magic(&mut self) -> std::io::Result<bool> {
        self.offset = MAGIC.len();
        Ok(self.bytes.len() >= MAGIC.len() && &self.bytes[..MAGIC.len()] == MAGIC)
    }

    fn next(&mut self) -> std::io::Result<Next<'_>> {
        Ok(match record::decode_at(self.bytes, self.offset) {
            Decoded::Record { payload, next } => {
                self.offset = next;
                Next::Record(payload)
            }
            Decoded::End => Next::End,
            other => Next::Damaged(format!("{other:?}")),
        })
    }

    fn at_end(&mut self) -> std::io::Result<bool> {
        Ok(self.offset == self.bytes.len())
    }
}

/// A reader seen through a buffer that holds at least the record being
/// decoded: `buf[start..end]` is what is read and not yet decoded, `base`
/// the file offset of `buf[0]`. The buffer grows only for a record larger
/// than it.
struct Window<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    base: usize,
    eof: bool,
}

/// How much a [`Window`] reads at a time.
const WINDOW: usize = 1 << 20;

impl<R: std::io::Read> Window<R> {
    /// Reads more (keeping `buf[start..]`); false at the end of the reader.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.base += self.start;
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).max(WINDOW);
            self.buf.resize(grown, 0);
        }
        let read = loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.end += read;
        self.eof = read == 0;
        Ok(read > 0)
    }
}

impl<R: std::io::Read> Records for Window<R> {
    fn offset(&self) -> usize {
        self.base + self.start
    }

    fn magic(&mut self) -> std::io::Result<bool> {
        while self.end < MAGIC.len() && self.fill()? {}
        let ok = self.end >= MAGIC.len() && &self.buf[..MAGIC.len()] == MAGIC;
        self.start = MAGIC.len().min(self.end);
        Ok(ok)
    }

    fn next(&mut self) -> std::io::Result<Next<'_>> {
        loop {
            // Decoded at 0 of the rest, so `next` is the record's length.
            let found = match record::decode_at(&self.buf[self.start..self.end], 0) {
                Decoded::Record { next, .. } => Ok(next),
                Decoded::End => Err(None),
                Decoded::Incomplete => Err(Some(format!("{:?}", Decoded::Incomplete))),
                other => return Ok(Next::Damaged(format!("{other:?}"))),
            };
            match found {
                Ok(len) => {
                    let at = self.start;
                    self.start += len;
                    return Ok(Next::Record(&self.buf[at + record::HEADER_LEN..at + len]));
                }
                Err(_) if self.fill()? => continue,
                Err(None) => return Ok(Next::End),
                Err(Some(reason)) => return Ok(Next::Damaged(reason)),
            }
        }
    }

    fn at_end(&mut self) -> std::io::Result<bool> {
        while self.start == self.end {
            if !self.fill()? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn decode_records<E: std::fmt::Display>(
    records: &mut impl Records,
    mut visit: impl FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<SnapshotMeta, SnapshotDecodeError<E>> {
    if !records.magic().map_err(SnapshotDecodeError::Read)? {
        return Err(SnapshotDecodeError::BadMagic);
    }
    let header = match next(records)? {
        Some(header) => header.to_vec(),
        None => return Err(SnapshotDecodeError::NoHeader),
    };
    let meta: SnapshotMeta =
        serde_json::from_slice(&header).map_err(SnapshotDecodeError::BadHeader)?;
    let mut count: u64 = 0;
    loop {
        let at = records.offset();
        let payload = next(records)?.ok_or(SnapshotDecodeError::CutShort)?;
        if payload.first() == Some(&TRAILER) {
            let expected = payload
                .get(1..9)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or(SnapshotDecodeError::BadTrailer)?;
            if expected != count {
                return Err(SnapshotDecodeError::CountMismatch {
                    expected,
                    found: count,
                });
            }
            return if records.at_end().map_err(SnapshotDecodeError::Read)? {
                Ok(meta)
            } else {
                Err(SnapshotDecodeError::TrailingBytes(records.offset()))
            };
        }
        visit(payload).map_err(|error| SnapshotDecodeError::Record { offset: at, error })?;
        count += 1;
    }
}

/// The next record of `records`, `None` at the end of the file.
fn next<E: std::fmt::Display>(
    records: &mut impl Records,
) -> std::result::Result<Option<&[u8]>, SnapshotDecodeError<E>> {
    let offset = records.offset();
    match records.next().map_err(SnapshotDecodeError::Read)? {
        Next::Record(payload) => Ok(Some(payload)),
        Next::End => Ok(None),
        Next::Damaged(reason) => Err(SnapshotDecodeError::DamagedRecord { offset, reason }),
    }
}

/// An [`AppendFile`](crate::fs::AppendFile) as a writer.
struct AppendWriter<'a>(&'a mut dyn crate::fs::AppendFile);

impl std::io::Write for AppendWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The snapshot files of one data dir.
#[derive(Debug, Clone)]
pub struct SnapshotFiles {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    /// Seals saved files (encryption at rest); needed to load sealed ones.
    key: Option<Arc<DataKey>>,
}

fn file_name(meta: &SnapshotMeta) -> String {
    let (position, term) = meta
        .last_log_id
        .map_or((0, 0), |id| (id.index + 1, id.leader_id.term));
    format!("{position:020}-{term:020}.snap")
}

impl SnapshotFiles {
    /// Opens the snapshot directory, removing temp files a crash left behind.
    pub fn open(fs: Arc<dyn Fs>, data_dir: &Path) -> Result<Self> {
        let dir = data_dir.join(SNAPSHOT_DIR);
        fs.create_dir_all(&dir)
            .map_err(StoreError::io("create", &dir))?;
        for path in fs.list(&dir).map_err(StoreError::io("list", &dir))? {
            if path.extension().is_some_and(|e| e == "tmp") {
                fs.remove(&path).map_err(StoreError::io("remove", &path))?;
            }
        }
        Ok(SnapshotFiles { fs, dir, key: None })
    }

    /// Saves files sealed with `key` and opens sealed ones with it.
    pub fn with_key(mut self, key: Option<Arc<DataKey>>) -> Self {
        self.key = key;
        self
    }

    fn snapshot_paths(&self) -> Result<Vec<PathBuf>> {
        let mut paths: Vec<PathBuf> = self
            .fs
            .list(&self.dir)
            .map_err(StoreError::io("list", &self.dir))?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "snap"))
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// Writes a snapshot file durably, then deletes all but the newest [`KEEP`].
    pub fn save(&self, meta: &SnapshotMeta, bytes: &[u8]) -> Result<PathBuf> {
        let path = self.dir.join(file_name(meta));
        let temp = path.with_extension("tmp");
        let sealed;
        let bytes = match &self.key {
            Some(key) => {
                sealed = crypt::seal_file(key, None, bytes);
                &sealed[..]
            }
            None => bytes,
        };
        crate::fs::write_atomically(self.fs.as_ref(), &path, &temp, bytes)?;
        self.keep_newest(&path)?;
        Ok(path)
    }

    /// [`save`](Self::save) of the file [`encode`] makes of `meta` and `body`,
    /// written out a piece at a time ([`write_to`]) so it is never held whole
    /// as bytes — unless it is sealed, which takes the whole file.
    pub fn save_records<R: AsRef<[u8]>>(
        &self,
        meta: &SnapshotMeta,
        body: impl IntoIterator<Item = R>,
    ) -> Result<PathBuf> {
        if self.key.is_some() {
            return self.save(meta, &encode(meta, body));
        }
        let path = self.dir.join(file_name(meta));
        let temp = path.with_extension("tmp");
        crate::fs::write_atomically_with(self.fs.as_ref(), &path, &temp, |file| {
            write_to(&mut AppendWriter(file), meta, body)
        })?;
        self.keep_newest(&path)?;
        Ok(path)
    }

    /// The plain bytes of the file at `path` (opened when sealed); `None`
    /// when it is damaged (skipped with a warning). A file sealed with
    /// another key, or with none given, stops the load.
    fn read_plain(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        let bytes = self.fs.read(path).map_err(StoreError::io("read", path))?;
        match open_file(bytes, self.key.as_deref()) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(Unsealed::Damaged(reason)) => {
                tracing::warn!(file = %path.display(), "skipping a damaged snapshot: {reason}");
                Ok(None)
            }
            Err(Unsealed::Key(reason)) => Err(StoreError::Key {
                dir: self.dir.clone(),
                reason: format!("snapshot {}: {reason}", path.display()),
            }),
        }
    }

    /// Deletes all but the newest [`KEEP`] files (never `saved`).
    fn keep_newest(&self, saved: &Path) -> Result<()> {
        let paths = self.snapshot_paths()?;
        if paths.len() > KEEP {
            for old in &paths[..paths.len() - KEEP] {
                if old != saved {
                    self.fs.remove(old).map_err(StoreError::io("remove", old))?;
                }
            }
            self.fs
                .sync_dir(&self.dir)
                .map_err(StoreError::io("fsync", &self.dir))?;
        }
        Ok(())
    }

    /// The newest snapshot that decodes, with its bytes. Damaged files are
    /// skipped with a warning.
    pub fn latest(&self) -> Result<Option<(SnapshotMeta, Vec<u8>)>> {
        for path in self.snapshot_paths()?.into_iter().rev() {
            let Some(bytes) = self.read_plain(&path)? else {
                continue;
            };
            match decode(&bytes, |_| Ok::<(), String>(())) {
                Ok(meta) => return Ok(Some((meta, bytes))),
                Err(reason) => {
                    tracing::warn!(file = %path.display(), "skipping a damaged snapshot: {reason}")
                }
            }
        }
        Ok(None)
    }
}

/// The snapshot [`SnapshotFiles::load_latest`] loaded.
#[derive(Debug)]
pub struct Loaded<T> {
    pub meta: SnapshotMeta,
    /// What `load` made of its records.
    pub value: T,
    /// The file, to read it again (as a snapshot to send) without choosing anew.
    pub path: PathBuf,
    /// Whether the file is sealed (it then opens only whole).
    pub sealed: bool,
}

impl SnapshotFiles {
    /// Whether files saved from now on are sealed.
    pub fn seals(&self) -> bool {
        self.key.is_some()
    }

    /// Where a snapshot sent by the leader is written as it arrives (a
    /// `.tmp`: one a crash leaves behind goes at the next open). Only for
    /// plain files: a sealing node keeps what it receives in memory, so no
    /// plain bytes reach its disk.
    pub fn receiving_path(&self) -> PathBuf {
        self.dir.join("receiving.tmp")
    }

    /// Makes the received file `temp`, already fsynced and checked whole,
    /// the snapshot of `meta`: renamed into place, the directory fsynced, all
    /// but the newest [`KEEP`] deleted, as [`save`](Self::save) does.
    pub fn adopt(&self, temp: &Path, meta: &SnapshotMeta) -> Result<PathBuf> {
        let path = self.dir.join(file_name(meta));
        self.fs
            .rename(temp, &path)
            .map_err(StoreError::io("rename", temp))?;
        self.fs
            .sync_dir(&self.dir)
            .map_err(StoreError::io("fsync", &self.dir))?;
        self.keep_newest(&path)?;
        Ok(path)
    }
}

/// Why [`SnapshotFiles::load_latest`] could not load the snapshot it chose.
#[derive(Debug, thiserror::Error)]
pub enum LoadError<E: std::fmt::Display> {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file's framing is whole, but a record does not load.
    #[error("snapshot {}: {error}", path.display())]
    Decode {
        path: PathBuf,
        error: SnapshotDecodeError<E>,
    },
}

impl SnapshotFiles {
    /// The newest snapshot that decodes (as [`latest`](Self::latest) picks
    /// it), its records handed to `load` one at a time with what `start`
    /// made: a plain file is read twice as it is decoded (its framing checked
    /// whole first, then loaded), never held whole in memory; a sealed one is
    /// read whole to be opened.
    pub fn load_latest<T, E: std::fmt::Display>(
        &self,
        start: impl Fn() -> T,
        mut load: impl FnMut(&mut T, &[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<Option<Loaded<T>>, LoadError<E>> {
        use std::io::Read as _;
        let whole = |_: &[u8]| Ok::<(), String>(());
        for path in self.snapshot_paths()?.into_iter().rev() {
            let open = || {
                self.fs
                    .open_read(&path)
                    .map_err(StoreError::io("read", &path))
            };
            let mut head = Vec::with_capacity(MAGIC.len());
            open()?
                .take(MAGIC.len() as u64)
                .read_to_end(&mut head)
                .map_err(StoreError::io("read", &path))?;
            let sealed = crypt::is_sealed_file(&head);
            let loaded = if sealed {
                let Some(bytes) = self.read_plain(&path)? else {
                    continue;
                };
                if let Err(reason) = decode(&bytes, whole) {
                    tracing::warn!(file = %path.display(), "skipping a damaged snapshot: {reason}");
                    continue;
                }
                let mut loaded = start();
                decode(&bytes, |r| load(&mut loaded, r)).map(|meta| (meta, loaded))
            } else {
                match decode_from(open()?, whole) {
                    Err(SnapshotDecodeError::Read(e)) => {
                        return Err(StoreError::io("read", &path)(e).into())
                    }
                    Err(reason) => {
                        tracing::warn!(file = %path.display(), "skipping a damaged snapshot: {reason}");
                        continue;
                    }
                    Ok(_) => {}
                }
                let mut loaded = start();
                decode_from(open()?, |r| load(&mut loaded, r)).map(|meta| (meta, loaded))
            };
            return match loaded {
                Ok((meta, value)) => Ok(Some(Loaded {
                    meta,
                    value,
                    path,
                    sealed,
                })),
                Err(error) => Err(LoadError::Decode { path, error }),
            };
        }
        Ok(None)
    }
}

/// Why a snapshot file did not open.
#[derive(Debug)]
pub enum Unsealed {
    /// Damaged (authentication failed, header unreadable): like a bad checksum.
    Damaged(String),
    /// Sealed with a data key that is not this data dir's, or none was given.
    Key(String),
}

/// The plain bytes of a snapshot file as read from disk: unchanged when it
/// is plain, opened with `key` when sealed.
pub fn open_file(bytes: Vec<u8>, key: Option<&DataKey>) -> std::result::Result<Vec<u8>, Unsealed> {
    if !crypt::is_sealed_file(&bytes) {
        return Ok(bytes);
    }
    let (header, _) = crypt::file_header(&bytes).map_err(Unsealed::Damaged)?;
    match key {
        None => Err(Unsealed::Key(format!(
            "it is encrypted (data key {}) and no key was given",
            header.dek_id
        ))),
        Some(key) if key.id_hex() != header.dek_id => Err(Unsealed::Key(format!(
            "it is encrypted with data key {}, but this data dir's is {}",
            header.dek_id,
            key.id_hex()
        ))),
        Some(key) => crypt::open_file(&bytes, Some(key), None).map_err(Unsealed::Damaged),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    fn meta(index: u64) -> SnapshotMeta {
        SnapshotMeta {
            last_log_id: Some(openraft::LogId::new(
                openraft::CommittedLeaderId::new(1, 1),
                index,
            )),
            last_membership: Default::default(),
            snapshot_id: format!("s{index}"),
        }
    }

    #[test]
    fn encode_decode_and_damage() {
        let bytes = encode(&meta(5), vec![vec![1, 2], vec![1, 3]]);
        let mut seen = Vec::new();
        let back = decode(&bytes, |r| {
            seen.push(r.to_vec());
            Ok::<_, String>(())
        })
        .unwrap();
        assert_eq!(back, meta(5));
        assert_eq!(seen, vec![vec![1, 2], vec![1, 3]]);
        for cut in 0..bytes.len() {
            assert!(
                decode(&bytes[..cut], |_| Ok::<_, String>(())).is_err(),
                "cut at {cut}"
            );
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x01;
            assert!(
                decode(&flipped, |_| Ok::<_, String>(())).is_err(),
                "flip at {at}"
            );
        }
    }

    /// Hands out at most `step` bytes a read, as a slow file or pipe may.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.bytes.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn decoded_from(
        bytes: &[u8],
        step: usize,
    ) -> std::result::Result<(SnapshotMeta, Vec<Vec<u8>>), String> {
        let mut seen = Vec::new();
        let meta = decode_from(Trickle { bytes, step }, |r| {
            seen.push(r.to_vec());
            Ok::<_, String>(())
        })
        .map_err(|e| e.to_string())?;
        Ok((meta, seen))
    }

    #[test]
    fn read_from_a_reader_it_decodes_as_from_memory() {
        // A record larger than the window makes it grow.
        let body = vec![vec![1, 2], vec![1; 3 * WINDOW / 2], vec![1, 3]];
        let large = encode(&meta(6), &body);
        assert_eq!(decoded_from(&large, 65_536).unwrap(), (meta(6), body));

        let bytes = encode(&meta(5), vec![vec![1, 2], vec![1, 3], vec![1; 300]]);
        for step in [1, 7, 4096, usize::MAX] {
            let (back, seen) = decoded_from(&bytes, step).unwrap();
            assert_eq!(back, meta(5));
            assert_eq!(seen, vec![vec![1, 2], vec![1, 3], vec![1; 300]]);
        }
        for cut in 0..bytes.len() {
            let whole = decode(&bytes[..cut], |_| Ok::<_, String>(())).map_err(|e| e.to_string());
            let read = decoded_from(&bytes[..cut], 5).map(|(m, _)| m);
            assert!(read.is_err(), "cut at {cut}");
            assert_eq!(read.unwrap_err(), whole.unwrap_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x01;
            assert!(decoded_from(&flipped, 3).is_err(), "flip at {at}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            decoded_from(&longer, 2).unwrap_err(),
            decode(&longer, |_| Ok::<_, String>(()))
                .unwrap_err()
                .to_string()
        );
    }

    #[test]
    fn saved_from_records_it_is_the_file_save_writes() {
        let dir = tempfile::tempdir().unwrap();
        let files = SnapshotFiles::open(Arc::new(StdFs), dir.path()).unwrap();
        let body: Vec<Vec<u8>> = (0..5_000u32)
            .map(|i| [vec![1], vec![(i % 250) as u8; 50]].concat())
            .collect();
        let path = files.save_records(&meta(4), &body).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), encode(&meta(4), &body));
        assert_eq!(files.latest().unwrap().unwrap().0, meta(4));
        // Sealed, it is saved whole and opens again.
        let key = Arc::new(DataKey::generate());
        let sealed = SnapshotFiles::open(Arc::new(StdFs), dir.path())
            .unwrap()
            .with_key(Some(key));
        let path = sealed.save_records(&meta(8), &body).unwrap();
        assert!(crypt::is_sealed_file(&std::fs::read(&path).unwrap()));
        let (found, bytes) = sealed.latest().unwrap().unwrap();
        assert_eq!((found, bytes), (meta(8), encode(&meta(8), &body)));
    }

    /// What `load_latest` hands over: the records of the file it picked.
    fn load_latest_of(files: &SnapshotFiles) -> Option<(SnapshotMeta, Vec<Vec<u8>>)> {
        files
            .load_latest(Vec::new, |seen: &mut Vec<Vec<u8>>, r| {
                seen.push(r.to_vec());
                Ok::<(), String>(())
            })
            .unwrap()
            .map(|loaded| {
                // It names the file it read, and whether that is sealed.
                let bytes = std::fs::read(&loaded.path).unwrap();
                assert_eq!(loaded.sealed, crypt::is_sealed_file(&bytes));
                (loaded.meta, loaded.value)
            })
    }

    #[test]
    fn load_latest_decodes_the_file_latest_picks() {
        let dir = tempfile::tempdir().unwrap();
        let files = SnapshotFiles::open(Arc::new(StdFs), dir.path()).unwrap();
        assert!(load_latest_of(&files).is_none());
        let body = |i: u8| vec![vec![1, i], vec![1; 200]];
        let mut paths = Vec::new();
        for index in [3u8, 7] {
            let meta = meta(index.into());
            paths.push(files.save(&meta, &encode(&meta, body(index))).unwrap());
        }
        assert_eq!(load_latest_of(&files), Some((meta(7), body(7))));
        // A newest file cut short is skipped for the one before, as by latest().
        let whole = std::fs::read(&paths[1]).unwrap();
        std::fs::write(&paths[1], &whole[..whole.len() - 3]).unwrap();
        assert_eq!(load_latest_of(&files), Some((meta(3), body(3))));
        std::fs::write(&paths[1], &whole).unwrap();
        // A whole file whose record the loader refuses is an error naming it.
        let refused = files
            .load_latest(|| (), |_, r| if r == [1, 7] { Err("no") } else { Ok(()) })
            .unwrap_err();
        assert!(matches!(&refused, LoadError::Decode { path, .. } if *path == paths[1]));
        assert!(refused.to_string().contains("no"), "{refused}");

        // Sealed files load as well; without their key the load stops.
        let key = Arc::new(DataKey::generate());
        let sealed = SnapshotFiles::open(Arc::new(StdFs), dir.path())
            .unwrap()
            .with_key(Some(key));
        sealed.save(&meta(9), &encode(&meta(9), body(9))).unwrap();
        assert_eq!(load_latest_of(&sealed), Some((meta(9), body(9))));
        let Err(LoadError::Store(StoreError::Key { .. })) =
            files.load_latest(|| (), |_, _| Ok::<(), String>(()))
        else {
            panic!("a sealed newest file without its key stops the load")
        };
    }

    #[test]
    fn written_out_in_pieces_it_is_the_same_file() {
        // Enough records to spill several times (64 KiB at a time).
        let body: Vec<Vec<u8>> = (0..3_000u32)
            .map(|i| {
                let mut r = vec![1];
                r.extend(std::iter::repeat_n((i % 251) as u8, 40 + (i % 97) as usize));
                r
            })
            .collect();
        let whole = encode(&meta(9), &body);
        assert!(whole.len() > 3 * 64 * 1024);
        let mut written = Vec::new();
        write_to(&mut written, &meta(9), &body).unwrap();
        assert_eq!(written, whole);
        let mut seen = 0;
        decode(&whole, |_| {
            seen += 1;
            Ok::<(), String>(())
        })
        .unwrap();
        assert_eq!(seen, body.len());
    }

    #[test]
    fn keeps_the_newest_two_and_falls_back_past_damage() {
        let dir = tempfile::tempdir().unwrap();
        let files = SnapshotFiles::open(Arc::new(StdFs), dir.path()).unwrap();
        assert!(files.latest().unwrap().is_none());
        let mut paths = Vec::new();
        for index in [3, 7, 11] {
            let bytes = encode(&meta(index), std::iter::empty::<Vec<u8>>());
            paths.push(files.save(&meta(index), &bytes).unwrap());
        }
        assert!(!paths[0].exists(), "the oldest is deleted");
        assert_eq!(files.latest().unwrap().unwrap().0, meta(11));
        std::fs::write(&paths[2], b"TACOSNP1garbage").unwrap();
        assert_eq!(files.latest().unwrap().unwrap().0, meta(7));
    }

    #[test]
    fn sealed_files_load_beside_plain_ones() {
        let dir = tempfile::tempdir().unwrap();
        let plain = SnapshotFiles::open(Arc::new(StdFs), dir.path()).unwrap();
        let body = || vec![vec![1u8, b's', b'e', b'c', b'r', b'e', b't']].into_iter();
        let old = plain.save(&meta(3), &encode(&meta(3), body())).unwrap();
        let key = Arc::new(DataKey::generate());
        let sealed = SnapshotFiles::open(Arc::new(StdFs), dir.path())
            .unwrap()
            .with_key(Some(key.clone()));
        // The plain file written before encryption was on still loads.
        assert_eq!(sealed.latest().unwrap().unwrap().0, meta(3));
        let new = sealed.save(&meta(7), &encode(&meta(7), body())).unwrap();
        let on_disk = std::fs::read(&new).unwrap();
        assert!(crypt::is_sealed_file(&on_disk));
        assert!(!on_disk.windows(6).any(|w| w == b"secret"));
        let (found, bytes) = sealed.latest().unwrap().unwrap();
        assert_eq!(found, meta(7));
        assert_eq!(bytes, encode(&meta(7), body()));
        // Without the key, or with another, the load stops.
        assert!(matches!(plain.latest(), Err(StoreError::Key { .. })));
        let other = SnapshotFiles::open(Arc::new(StdFs), dir.path())
            .unwrap()
            .with_key(Some(Arc::new(DataKey::generate())));
        assert!(matches!(other.latest(), Err(StoreError::Key { .. })));
        // A damaged sealed file is skipped like any damaged one.
        let mut damaged = on_disk;
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        std::fs::write(&new, damaged).unwrap();
        assert_eq!(sealed.latest().unwrap().unwrap().0, meta(3));
        assert!(old.exists());
    }
}
