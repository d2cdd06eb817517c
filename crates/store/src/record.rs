//! Record framing, shared by log segments, the metadata file and snapshots.
//!
//! ```text
//! +-----------+--------------+-----------------+
//! | len: u32  | crc: u32     | payload         |
//! | LE        | LE, crc32c   | `len` bytes     |
//! +-----------+--------------+-----------------+
//! ```
//!
//! `crc` is the CRC-32C of the four `len` bytes followed by the payload, so a
//! damaged length that still fits in the file is caught too. `len` is at most
//! [`MAX_RECORD_LEN`]: a garbage length never causes a huge allocation or a
//! read far past the data.

/// Bytes before the payload: length and checksum.
pub const HEADER_LEN: usize = 8;

/// The largest payload a record may carry (64 MiB): well above the largest
/// config content (10 MiB by default) plus its metadata.
pub const MAX_RECORD_LEN: u32 = 64 * 1024 * 1024;

/// What was found at an offset of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A whole, valid record; the next one starts at `next`.
    Record { payload: &'a [u8], next: usize },
    /// The buffer ends exactly here.
    End,
    /// The buffer ends inside a record (header or payload cut short).
    Incomplete,
    /// The length field is larger than [`MAX_RECORD_LEN`].
    BadLength(u32),
    /// The record is whole but its checksum does not match; it ends at `end`.
    BadChecksum { end: usize },
}

fn checksum(len: [u8; 4], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&len), payload)
}

/// Appends one framed record to `out`.
///
/// # Panics
/// If `payload` is longer than [`MAX_RECORD_LEN`]; callers check
/// [`fits`] first (entries are validated long before they reach the log).
pub fn encode(payload: &[u8], out: &mut Vec<u8>) {
    assert!(fits(payload.len()), "record payload too large");
    let len = (payload.len() as u32).to_le_bytes();
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Whether a payload of `len` bytes can be framed.
pub fn fits(len: usize) -> bool {
    len <= MAX_RECORD_LEN as usize
}

/// Decodes the record that starts at `offset` in `buf`.
pub fn decode_at(buf: &[u8], offset: usize) -> Decoded<'_> {
    let rest = &buf[offset.min(buf.len())..];
    if rest.is_empty() {
        return Decoded::End;
    }
    if rest.len() < HEADER_LEN {
        return Decoded::Incomplete;
    }
    let len_bytes = [rest[0], rest[1], rest[2], rest[3]];
    let len = u32::from_le_bytes(len_bytes);
    let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
    if len > MAX_RECORD_LEN {
        return Decoded::BadLength(len);
    }
    let end = HEADER_LEN + len as usize;
    if rest.len() < end {
        return Decoded::Incomplete;
    }
    let payload = &rest[HEADER_LEN..end];
    if checksum(len_bytes, payload) != crc {
        return Decoded::BadChecksum { end: offset + end };
    }
    Decoded::Record {
        payload,
        next: offset + end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let mut buf = Vec::new();
        encode(b"hello", &mut buf);
        encode(b"", &mut buf);
        let Decoded::Record { payload, next } = decode_at(&buf, 0) else {
            panic!("first record")
        };
        assert_eq!(payload, b"hello");
        assert_eq!(next, 13);
        assert_eq!(
            decode_at(&buf, next),
            Decoded::Record {
                payload: b"",
                next: 21
            }
        );
        assert_eq!(decode_at(&buf, 21), Decoded::End);
        assert_eq!(decode_at(&buf[..20], 13), Decoded::Incomplete);
        assert_eq!(decode_at(&buf[..10], 0), Decoded::Incomplete);

        let mut flipped = buf.clone();
        flipped[9] ^= 1;
        assert_eq!(decode_at(&flipped, 0), Decoded::BadChecksum { end: 13 });
        // A damaged length is caught by the checksum as well.
        let mut short = buf.clone();
        short[0] = 4;
        assert_eq!(decode_at(&short, 0), Decoded::BadChecksum { end: 12 });
        let mut huge = buf;
        huge[3] = 0xff;
        assert!(matches!(decode_at(&huge, 0), Decoded::BadLength(_)));
    }
}
