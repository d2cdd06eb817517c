//! Log segment files: naming, record contents, and the recovery scan.
//!
//! The log lives in `log/` as numbered segment files `0000000000000001.seg`,
//! `0000000000000002.seg`, ... Only the highest-numbered one is written to; a
//! new one is started once the current one reaches the segment size.
//!
//! ```text
//! segment  = magic "TACOLOG1" (8 bytes), then records (see record.rs)
//! payload  = kind: u8, then
//!   kind 1 (entry):     term u64 | leader node u64 | index u64 | body kind u8 | body
//!                       body kind 0 blank (no body), 1 commands (protobuf Batch),
//!                       2 membership (JSON of openraft's Membership),
//!                       3 sealed: data key id (8) | nonce (24) | ciphertext | tag (16)
//!                         of (inner body kind u8 | body), the record's first 26
//!                         bytes (kind, log id, body kind) as associated data
//!   kind 2 (committed): term u64 | leader node u64 | index u64
//! ```
//! With encryption at rest on (crypt.rs), command and membership bodies are
//! written sealed (body kind 3); blank entries and commit markers carry
//! nothing to hide. Plain bodies from before encryption was switched on
//! still load.
//!
//! All integers are little-endian. Commit markers record the committed log id
//! as Raft learns it; they ride along with the next group commit instead of
//! costing an fsync of their own (openraft allows the committed id to lag).
//!
//! Recovery reads each segment once. Every record must be whole and match its
//! checksum, with one exception: the tail of the *last* segment, where a crash
//! can leave a partial record (never acknowledged, since acknowledgement waits
//! for fsync). That tail is cut off, provided no intact record follows the
//! damage. Damage anywhere else means the disk lost data that was
//! acknowledged, and the node refuses to start.

use std::path::{Path, PathBuf};

use prost::Message;

use super::crypt::{self, DataKey};
use super::error::{Result, StoreError};
use super::record::{self, Decoded};
use tacos_core::types::{Entry, LogId, Membership};
use tacos_core::Batch;

/// The first bytes of every segment file.
pub const MAGIC: &[u8; 8] = b"TACOLOG1";

const KIND_ENTRY: u8 = 1;
const KIND_COMMITTED: u8 = 2;
const BODY_BLANK: u8 = 0;
const BODY_COMMAND: u8 = 1;
const BODY_MEMBERSHIP: u8 = 2;
const BODY_SEALED: u8 = 3;
/// Kind, log id and body kind: what a sealed body binds as associated data.
const SEALED_AAD_LEN: usize = 2 + LOG_ID_LEN;
const LOG_ID_LEN: usize = 24;

/// Where a record sits: segment `seq`, from `offset`, `len` bytes framed
/// (header and payload). The log reads entries older than its decoded window
/// back from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub seq: u64,
    pub offset: u64,
    pub len: u32,
}

impl Place {
    /// Where the next record starts.
    pub fn end(&self) -> u64 {
        self.offset + u64::from(self.len)
    }
}

/// The file name of segment `seq`.
pub fn file_name(seq: u64) -> String {
    format!("{seq:016}.seg")
}

/// The sequence number of a segment file, if `path` names one.
pub fn parse_file_name(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let digits = name.strip_suffix(".seg")?;
    if digits.len() != 16 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// One record of a segment.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // short-lived, only during recovery
pub enum LogRecord {
    Entry(Entry),
    Committed(LogId),
}

fn put_log_id(out: &mut Vec<u8>, log_id: &LogId) {
    out.extend_from_slice(&log_id.leader_id.term.to_le_bytes());
    out.extend_from_slice(&log_id.leader_id.node_id.to_le_bytes());
    out.extend_from_slice(&log_id.index.to_le_bytes());
}

/// The log id in the header of a record payload (entry or committed).
pub fn record_log_id(payload: &[u8]) -> Option<LogId> {
    get_log_id(payload.get(1..)?)
}

fn get_log_id(bytes: &[u8]) -> Option<LogId> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            bytes.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    Some(LogId::new(
        openraft::CommittedLeaderId::new(word(0)?, word(1)?),
        word(2)?,
    ))
}

/// The record payload of a log entry; its body sealed with `key` when given.
pub fn encode_entry(entry: &Entry, key: Option<&DataKey>) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    out.push(KIND_ENTRY);
    put_log_id(&mut out, &entry.log_id);
    let sealing = key.filter(|_| !matches!(entry.payload, openraft::EntryPayload::Blank));
    // Plain: the body goes straight after the header. Sealed: into a buffer
    // that is then sealed after a body kind of its own.
    let mut inner = Vec::new();
    let body = if sealing.is_some() {
        out.push(BODY_SEALED);
        &mut inner
    } else {
        &mut out
    };
    match &entry.payload {
        openraft::EntryPayload::Blank => body.push(BODY_BLANK),
        openraft::EntryPayload::Normal(batch) => {
            body.push(BODY_COMMAND);
            batch.encode(body).expect("a Vec grows as needed");
        }
        openraft::EntryPayload::Membership(membership) => {
            body.push(BODY_MEMBERSHIP);
            serde_json::to_writer(&mut *body, membership).map_err(|e| StoreError::BadEntry {
                index: entry.log_id.index,
                reason: e.to_string(),
            })?;
        }
    }
    if let Some(key) = sealing {
        let aad = out.clone();
        key.seal(&aad, &inner, &mut out);
    }
    if !record::fits(out.len()) {
        return Err(StoreError::BadEntry {
            index: entry.log_id.index,
            reason: format!(
                "{} bytes is over the {} byte record limit",
                out.len(),
                record::MAX_RECORD_LEN
            ),
        });
    }
    Ok(out)
}

/// The record payload of a commit marker.
pub fn encode_committed(log_id: &LogId) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + LOG_ID_LEN);
    out.push(KIND_COMMITTED);
    put_log_id(&mut out, log_id);
    out
}

/// Decodes a record payload written by [`encode_entry`] or
/// [`encode_committed`]; sealed bodies are opened with `key`.
pub fn decode(payload: &[u8], key: Option<&DataKey>) -> std::result::Result<LogRecord, String> {
    let (&kind, rest) = payload.split_first().ok_or("empty record")?;
    let log_id = get_log_id(rest).ok_or("record too short for a log id")?;
    let rest = &rest[LOG_ID_LEN..];
    match kind {
        KIND_COMMITTED if rest.is_empty() => Ok(LogRecord::Committed(log_id)),
        KIND_ENTRY => {
            let (&body_kind, body) = rest.split_first().ok_or("entry without a body kind")?;
            let opened;
            let (body_kind, body) = if body_kind == BODY_SEALED {
                opened = crypt::open_sealed(key, &payload[..SEALED_AAD_LEN], body)
                    .map_err(|e| format!("entry {}: {e}", log_id.index))?;
                let (&inner, body) = opened
                    .split_first()
                    .ok_or("sealed entry without a body kind")?;
                if inner == BODY_SEALED {
                    return Err("a sealed body inside a sealed body".into());
                }
                (inner, body)
            } else {
                (body_kind, body)
            };
            let payload = match body_kind {
                BODY_BLANK if body.is_empty() => openraft::EntryPayload::Blank,
                BODY_COMMAND => openraft::EntryPayload::Normal(std::sync::Arc::new(
                    Batch::decode(body).map_err(|e| format!("bad command batch: {e}"))?,
                )),
                BODY_MEMBERSHIP => openraft::EntryPayload::Membership(
                    serde_json::from_slice::<Membership>(body)
                        .map_err(|e| format!("bad membership: {e}"))?,
                ),
                other => return Err(format!("unknown entry body kind {other}")),
            };
            Ok(LogRecord::Entry(Entry { log_id, payload }))
        }
        other => Err(format!("unknown record kind {other} (or trailing bytes)")),
    }
}

/// Whether a record payload is an entry with a sealed body (for counting).
pub fn is_sealed_entry(payload: &[u8]) -> bool {
    payload.first() == Some(&KIND_ENTRY) && payload.get(SEALED_AAD_LEN - 1) == Some(&BODY_SEALED)
}

/// Whether a record payload is an entry with a plain body that carries
/// something (commands or membership; a blank entry carries nothing).
pub fn is_plain_entry(payload: &[u8]) -> bool {
    payload.first() == Some(&KIND_ENTRY)
        && matches!(
            payload.get(SEALED_AAD_LEN - 1),
            Some(&BODY_COMMAND | &BODY_MEMBERSHIP)
        )
}

/// The result of reading one segment file at start-up.
#[derive(Debug)]
pub struct Scanned {
    pub seq: u64,
    pub path: PathBuf,
    /// Each valid record with the offset where it starts.
    pub records: Vec<(u64, LogRecord)>,
    /// Where the valid records end: the length the file must have.
    pub valid_len: u64,
    /// Why the bytes after `valid_len` were dropped (last segment only).
    pub torn: Option<String>,
    /// How many of the entries are sealed (encryption at rest).
    pub sealed_entries: usize,
    /// How many carry a plain body (commands or membership).
    pub plain_entries: usize,
}

/// Reads the records of segment `seq` from its bytes. In the last segment, a
/// damaged tail is reported in [`Scanned::torn`]; anywhere else, or when valid
/// records follow the damage, it is [`StoreError::Corrupt`].
pub fn scan(
    seq: u64,
    path: &Path,
    bytes: &[u8],
    is_last: bool,
    key: Option<&DataKey>,
) -> Result<Scanned> {
    let corrupt = |offset: usize, reason: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    };
    let mut scanned = Scanned {
        seq,
        path: path.to_path_buf(),
        records: Vec::new(),
        valid_len: 0,
        torn: None,
        sealed_entries: 0,
        plain_entries: 0,
    };
    if bytes.len() < MAGIC.len() {
        // Only a crash while a segment was being created leaves this.
        if is_last && MAGIC.starts_with(bytes) {
            scanned.torn = Some("segment header cut short".into());
            return Ok(scanned);
        }
        return Err(corrupt(0, "segment header cut short".into()));
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(corrupt(0, "not a tacos log segment (bad magic)".into()));
    }
    let mut offset = MAGIC.len();
    loop {
        let damage = match record::decode_at(bytes, offset) {
            Decoded::End => break,
            Decoded::Record { payload, next } => {
                let rec = decode(payload, key).map_err(|reason| corrupt(offset, reason))?;
                scanned.sealed_entries += usize::from(is_sealed_entry(payload));
                scanned.plain_entries += usize::from(is_plain_entry(payload));
                scanned.records.push((offset as u64, rec));
                offset = next;
                continue;
            }
            Decoded::Incomplete => "record cut short by the end of the file".to_string(),
            Decoded::BadLength(len) => format!("record length {len} is over the limit"),
            Decoded::BadChecksum { .. } => "record checksum mismatch".to_string(),
        };
        if !is_last {
            return Err(corrupt(offset, damage));
        }
        // A crash tears only the end of the file. If an intact record follows
        // the damage, the damage is not a torn tail but lost data.
        if let Some(valid) = next_valid_record(bytes, offset + 1) {
            return Err(corrupt(
                offset,
                format!("{damage}, yet an intact record follows at offset {valid}"),
            ));
        }
        scanned.torn = Some(format!("{damage} at offset {offset}"));
        break;
    }
    scanned.valid_len = offset as u64;
    Ok(scanned)
}

/// The first offset at or after `from` where a whole record with a matching
/// checksum starts.
fn next_valid_record(bytes: &[u8], from: usize) -> Option<usize> {
    (from..bytes.len().saturating_sub(record::HEADER_LEN - 1))
        .find(|&at| matches!(record::decode_at(bytes, at), Decoded::Record { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacos_core::types::LogId;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
    }

    #[test]
    fn entries_round_trip() {
        let entries = [
            Entry {
                log_id: log_id(1, 1),
                payload: openraft::EntryPayload::Blank,
            },
            Entry {
                log_id: log_id(1, 2),
                payload: openraft::EntryPayload::Normal(
                    tacos_core::Command::of(tacos_core::Op::StopBeta(
                        tacos_core::command::StopBeta { key: None },
                    ))
                    .into(),
                ),
            },
            Entry {
                log_id: log_id(2, 3),
                payload: openraft::EntryPayload::Membership(Membership::new(
                    vec![[1u64].into_iter().collect()],
                    None,
                )),
            },
        ];
        let key = DataKey::generate();
        for entry in entries {
            let bytes = encode_entry(&entry, None).unwrap();
            let LogRecord::Entry(back) = decode(&bytes, None).unwrap() else {
                panic!("expected an entry")
            };
            assert_eq!(back, entry);
            // Sealed: opens with the key only, and only at its own log id.
            let sealed = encode_entry(&entry, Some(&key)).unwrap();
            let blank = matches!(entry.payload, openraft::EntryPayload::Blank);
            assert_eq!(is_sealed_entry(&sealed), !blank);
            let LogRecord::Entry(back) = decode(&sealed, Some(&key)).unwrap() else {
                panic!("expected an entry")
            };
            assert_eq!(back, entry);
            if !blank {
                let error = decode(&sealed, None).unwrap_err();
                assert!(error.contains("no key was given"), "{error}");
                let mut moved = sealed.clone();
                moved[17] ^= 1; // the index
                assert!(decode(&moved, Some(&key)).is_err());
                assert!(decode(&sealed, Some(&DataKey::generate())).is_err());
            }
        }
        let LogRecord::Committed(id) =
            decode(&encode_committed(&log_id(4, 9)), Some(&key)).unwrap()
        else {
            panic!("expected a commit marker")
        };
        assert_eq!(id, log_id(4, 9));
        assert!(decode(&[7], None).is_err());
        assert!(decode(&[KIND_ENTRY, 1, 2], None).is_err());
    }

    #[test]
    fn file_names() {
        assert_eq!(file_name(12), "0000000000000012.seg");
        assert_eq!(
            parse_file_name(Path::new("log/0000000000000012.seg")),
            Some(12)
        );
        assert_eq!(parse_file_name(Path::new("log/12.seg")), None);
        assert_eq!(parse_file_name(Path::new("log/0000000000000012.tmp")), None);
    }
}
