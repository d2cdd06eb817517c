//! Reading r-nacos's Raft files: the `index`, the length-prefixed message streams of
//! `log_<id>` and `snapshot_<id>`, and the `db_lock` check. Files are opened read-only;
//! nothing here writes.

use std::fs::{File, TryLockError};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use prost::Message;

use super::{wire, ReadError};

/// `log_<id>` header magic ("B16D").
pub(crate) const LOG_MAGIC: u32 = 0x4231_3644;
/// Bytes of a log file's header.
const LOG_HEADER_LEN: usize = 32;

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ReadError + '_ {
    move |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What `index` holds.
pub(crate) struct Index {
    pub last_applied_log: u64,
    pub raft: wire::RaftIndex,
}

/// Reads `dir/index`: 8 bytes big-endian `last_applied_log`, then one varint-length
/// prefixed `RaftIndex` (r-nacos rewrites it in place without truncating, so bytes after
/// it are old and ignored, as r-nacos ignores them).
pub(crate) fn read_index(dir: &Path) -> Result<Index, ReadError> {
    let path = dir.join("index");
    let bytes = std::fs::read(&path).map_err(io_err(&path))?;
    let corrupt = |reason: String| ReadError::BadFile {
        path: path.clone(),
        reason,
    };
    // r-nacos treats an index of 20 bytes or less as new and starts an empty store.
    if bytes.len() <= 20 {
        return Err(corrupt(format!(
            "it is {} bytes: r-nacos has never written this dir (it would start empty)",
            bytes.len()
        )));
    }
    let (head, rest) = bytes.split_at(8);
    let mut applied = [0u8; 8];
    applied.copy_from_slice(head);
    let mut rest: &[u8] = rest;
    let raft = wire::RaftIndex::decode_length_delimited(&mut rest)
        .map_err(|e| corrupt(format!("not an r-nacos Raft index: {e}")))?;
    Ok(Index {
        last_applied_log: u64::from_be_bytes(applied),
        raft,
    })
}

/// Refuses a dir a running r-nacos holds: r-nacos 0.5.x+ takes an exclusive `flock`
/// (fs2) on `db_lock` for as long as it runs. The returned file keeps an exclusive lock
/// of ours while we read (so an r-nacos started meanwhile fails to start instead of
/// writing under us); `None` when there is no `db_lock` (r-nacos before 0.5.x) or the
/// file system has no locks. `db_lock` is opened read-only: nothing is created.
pub(crate) fn lock(dir: &Path) -> Result<Option<File>, ReadError> {
    let path = dir.join("db_lock");
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&path)(e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Err(ReadError::InUse {
            path: dir.to_path_buf(),
        }),
        Err(TryLockError::Error(_)) => Ok(None),
    }
}

/// One step of a message stream.
pub(crate) enum Frame {
    /// A whole message (without its length prefix) that starts at `offset`.
    Message { offset: u64, bytes: Vec<u8> },
    /// A zero length prefix at `offset`: the end of the stream as r-nacos reads it.
    Zero { offset: u64 },
    /// The file ends between messages.
    Eof,
    /// A message at `offset` claims more bytes than the file holds.
    Cut { offset: u64, missing: u64 },
}

/// Reads varint-length-prefixed messages from `start` on.
pub(crate) struct Stream {
    path: PathBuf,
    reader: BufReader<File>,
    offset: u64,
    len: u64,
}

impl Stream {
    pub fn open(path: &Path, start: u64) -> Result<Stream, ReadError> {
        let mut file = File::open(path).map_err(io_err(path))?;
        let len = file.metadata().map_err(io_err(path))?.len();
        file.seek(SeekFrom::Start(start)).map_err(io_err(path))?;
        Ok(Stream {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(1 << 20, file),
            offset: start,
            len,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn byte(&mut self) -> Result<Option<u8>, ReadError> {
        let mut b = [0u8; 1];
        match self.reader.read(&mut b) {
            Ok(0) => Ok(None),
            Ok(_) => {
                self.offset += 1;
                Ok(Some(b[0]))
            }
            Err(e) => Err(io_err(&self.path)(e)),
        }
    }

    /// The next frame.
    pub fn next_frame(&mut self) -> Result<Frame, ReadError> {
        let start = self.offset;
        let mut len: u64 = 0;
        let mut shift = 0;
        loop {
            let Some(b) = self.byte()? else {
                return Ok(if self.offset == start {
                    Frame::Eof
                } else {
                    Frame::Cut {
                        offset: start,
                        missing: 1,
                    }
                });
            };
            if shift >= 64 {
                return Err(ReadError::BadFile {
                    path: self.path.clone(),
                    reason: format!("a message length at offset {start} is not a varint"),
                });
            }
            len |= u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        if len == 0 {
            return Ok(Frame::Zero { offset: start });
        }
        let available = self.len.saturating_sub(self.offset);
        if len > available {
            return Ok(Frame::Cut {
                offset: start,
                missing: len - available,
            });
        }
        let len = usize::try_from(len).map_err(|_| ReadError::BadFile {
            path: self.path.clone(),
            reason: format!("a message at offset {start} is too long"),
        })?;
        let mut bytes = vec![0u8; len];
        self.reader
            .read_exact(&mut bytes)
            .map_err(io_err(&self.path))?;
        self.offset += len as u64;
        Ok(Frame::Message {
            offset: start,
            bytes,
        })
    }

    /// How many of the bytes from here to the end of the file are not zero, and where the
    /// first of them is.
    pub fn nonzero_rest(&mut self) -> Result<(u64, Option<u64>), ReadError> {
        let mut count = 0;
        let mut first = None;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = self.reader.read(&mut buf).map_err(io_err(&self.path))?;
            if n == 0 {
                return Ok((count, first));
            }
            for (i, b) in buf[..n].iter().enumerate() {
                if *b != 0 {
                    count += 1;
                    first.get_or_insert(self.offset + i as u64);
                }
            }
            self.offset += n as u64;
        }
    }
}

/// Opens `log_<id>` and checks its header; the stream starts at its data area.
pub(crate) fn open_log(dir: &Path, id: u64) -> Result<Stream, ReadError> {
    let path = dir.join(format!("log_{id}"));
    let mut file = File::open(&path).map_err(io_err(&path))?;
    let mut header = [0u8; LOG_HEADER_LEN];
    file.read_exact(&mut header)
        .map_err(|e| ReadError::BadFile {
            path: path.clone(),
            reason: format!("too short for a log header ({e})"),
        })?;
    let magic = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if magic != LOG_MAGIC {
        return Err(ReadError::BadFile {
            path,
            reason: format!("not an r-nacos log file (magic {magic:#010x})"),
        });
    }
    // u32 magic, u16 version, u64 last_term, u64 first_index, then u16 data_area_index.
    let data_area = u16::from_be_bytes([header[22], header[23]]);
    if usize::from(data_area) < LOG_HEADER_LEN {
        return Err(ReadError::BadFile {
            path,
            reason: format!("bad data area offset {data_area}"),
        });
    }
    drop(file);
    Stream::open(&path, u64::from(data_area))
}
