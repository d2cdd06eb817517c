//! Encryption at rest: the keys, sealing, and the keyring file.
//!
//! # Where data is encrypted, and why here
//!
//! The store seals what it writes, below the state machine: log entry bodies
//! (command batches and membership) in segments (segment.rs), and whole
//! snapshot files (snapshot.rs). Everything above the store — the state, its
//! snapshot encoding, Raft replication, the protocol — sees plain bytes and
//! did not change; no command or snapshot row changed shape, so the cluster
//! protocol version did not move, and a cluster may mix encrypted and plain
//! nodes. Sealing whole bodies rather than chosen fields means every field of
//! a command is covered (config contents, history, grays, but also the token
//! signing key and password hashes) and a field added later cannot be
//! forgotten. Backups are sealed by the node that serves them (see
//! [`seal_file`] with a wrapped key in the header), so a backup is as safe
//! as the data dir it came from and restores anywhere the key is given.
//!
//! # Keys
//!
//! * The key-encryption key (KEK, [`Kek`]) is 32 bytes the operator gives
//!   each node (`--encryption-key-file`). It never touches the data dir; its
//!   id ([`Kek::id`], a hash of the key) is recorded beside what it wraps, so
//!   a wrong key is told apart from damage.
//! * The data key (DEK, [`DataKey`]) is 32 random bytes made when a data dir
//!   is first opened with a KEK, stored in `<data-dir>/keyring` wrapped by
//!   the KEK ([`Keyring`]). Every node has its own: a data key never leaves
//!   its node, so nothing about keys is replicated and rotating the KEK
//!   (`tacos rekey`) only rewraps one small file — the log and snapshots,
//!   sealed with the unchanged data key, load as before. A backup carries its
//!   own fresh data key wrapped by the KEK.
//!
//! # Cipher and nonces
//!
//! XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`): an AEAD with a
//! 192-bit nonce, drawn at random from the OS for every sealed message. A
//! random 96-bit nonce (AES-GCM) is only safe for about 2^32 messages per key,
//! which a busy node's log could reach within weeks; 192 random bits never
//! collide in practice (2^-80 after 2^56 messages) and need no counter that
//! would have to survive crashes. Each sealed message binds its context as
//! associated data (a log entry its log id, a file its header), so a sealed
//! body moved elsewhere does not open.

use std::path::{Path, PathBuf};

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use super::error::{Result, StoreError};
use super::fs::Fs;
use super::record::{self, Decoded};

/// Length of a key (KEK or data key), in bytes.
pub const KEY_LEN: usize = 32;
/// Length of a nonce, in bytes.
pub const NONCE_LEN: usize = 24;
/// Length of the authentication tag, in bytes.
pub const TAG_LEN: usize = 16;
/// Length of a data key id, in bytes.
pub const KEY_ID_LEN: usize = 8;
/// Name of the keyring file in the data dir.
pub const KEYRING_FILE: &str = "keyring";
const KEYRING_TEMP: &str = "keyring.tmp";
/// The only cipher there is so far (recorded so another can be added).
const CIPHER: &str = "xchacha20poly1305";

/// Why a sealed message did not open: the wrong key, or damage (the
/// authentication tag does not match).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("sealed with data key {found}, but this data dir's key is {expected}")]
    WrongKey { found: String, expected: String },
    #[error("sealed data is cut short")]
    Short,
    #[error("authentication failed: the sealed data is damaged or was moved")]
    Damaged,
    #[error("the data is encrypted (data key {0}) but no key was given")]
    NoKey(String),
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the OS random number generator failed");
    bytes
}

/// The key-encryption key, given by the operator. Its bytes are wiped on drop
/// and never printed.
pub struct Kek {
    cipher: XChaCha20Poly1305,
    id: String,
}

impl std::fmt::Debug for Kek {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kek({})", self.id)
    }
}

impl Kek {
    /// Reads a key file: 64 hex digits, or the base64 of 32 bytes (surrounding
    /// white space ignored), or exactly 32 raw bytes.
    pub fn load(path: &Path) -> std::result::Result<Kek, String> {
        let bytes = Zeroizing::new(
            std::fs::read(path)
                .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?,
        );
        Kek::parse(&bytes).map_err(|e| format!("key file {}: {e}", path.display()))
    }

    /// Parses a key as [`Kek::load`] reads it.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Kek, String> {
        use base64::Engine as _;
        let text = std::str::from_utf8(bytes).ok().map(str::trim);
        let key: Zeroizing<Vec<u8>> = match text {
            Some(t) if t.len() == 2 * KEY_LEN && t.bytes().all(|b| b.is_ascii_hexdigit()) => {
                Zeroizing::new(hex::decode(t).map_err(|e| e.to_string())?)
            }
            Some(t) if t.len() == 44 => Zeroizing::new(
                base64::engine::general_purpose::STANDARD
                    .decode(t)
                    .map_err(|e| format!("not valid base64: {e}"))?,
            ),
            _ if bytes.len() == KEY_LEN => Zeroizing::new(bytes.to_vec()),
            _ => {
                return Err(format!(
                    "a key is 32 bytes: 64 hex digits, 44 base64 characters or 32 raw bytes (found {} bytes); make one with `openssl rand -hex 32`",
                    bytes.len()
                ))
            }
        };
        if key.len() != KEY_LEN {
            return Err(format!("a key is 32 bytes, found {}", key.len()));
        }
        if key.iter().all(|&b| b == 0) {
            return Err("the key is all zeros".into());
        }
        let id = hex::encode(
            &Sha256::new()
                .chain_update(b"tacos-kek-id\0")
                .chain_update(&key[..])
                .finalize()[..KEY_ID_LEN],
        );
        Ok(Kek {
            cipher: XChaCha20Poly1305::new(Key::from_slice(&key)),
            id,
        })
    }

    /// The key's id: the first 8 bytes of a SHA-256 of it, as hex. Tells keys
    /// apart without revealing them.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// A data key sealed by this KEK, bound to the data key's id.
    pub fn wrap(&self, key: &DataKey) -> WrappedKey {
        let mut sealed = Vec::new();
        seal_with(
            &self.cipher,
            &wrap_aad(&key.id),
            &key.bytes[..],
            &mut sealed,
        );
        WrappedKey {
            cipher: CIPHER.into(),
            kek_id: self.id.clone(),
            dek_id: hex::encode(key.id),
            wrapped_dek: hex::encode(sealed),
        }
    }

    /// Opens a data key this KEK wrapped; a clear error for another KEK's.
    pub fn unwrap(&self, wrapped: &WrappedKey) -> std::result::Result<DataKey, String> {
        if wrapped.cipher != CIPHER {
            return Err(format!("unknown cipher {:?}", wrapped.cipher));
        }
        if wrapped.kek_id != self.id {
            return Err(format!(
                "it was encrypted with the key of id {}, but the key given (--encryption-key-file) has id {}",
                wrapped.kek_id, self.id
            ));
        }
        let id: [u8; KEY_ID_LEN] = hex::decode(&wrapped.dek_id)
            .ok()
            .and_then(|v| v.try_into().ok())
            .ok_or("bad data key id")?;
        let sealed = hex::decode(&wrapped.wrapped_dek).map_err(|_| "bad wrapped data key")?;
        let bytes = open_with(&self.cipher, &wrap_aad(&id), &sealed).map_err(|_| {
            format!(
                "the wrapped data key does not open with key {} (the key id matches, so the wrapped key is damaged)",
                self.id
            )
        })?;
        let bytes: [u8; KEY_LEN] = bytes.try_into().map_err(|_| "bad data key length")?;
        Ok(DataKey::from_parts(id, Zeroizing::new(bytes)))
    }
}

fn wrap_aad(id: &[u8; KEY_ID_LEN]) -> Vec<u8> {
    [b"tacos-dek\0".as_slice(), id].concat()
}

/// A data key wrapped by a KEK, as the keyring and backup headers store it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WrappedKey {
    pub cipher: String,
    pub kek_id: String,
    pub dek_id: String,
    /// Hex of nonce, encrypted key and tag.
    pub wrapped_dek: String,
}

/// A data key: seals and opens what the store writes.
pub struct DataKey {
    id: [u8; KEY_ID_LEN],
    bytes: Zeroizing<[u8; KEY_LEN]>,
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataKey({})", self.id_hex())
    }
}

fn seal_with(cipher: &XChaCha20Poly1305, aad: &[u8], plain: &[u8], out: &mut Vec<u8>) {
    let nonce = random::<NONCE_LEN>();
    out.reserve(NONCE_LEN + plain.len() + TAG_LEN);
    out.extend_from_slice(&nonce);
    let start = out.len();
    out.extend_from_slice(plain);
    let tag = cipher
        .encrypt_in_place_detached(XNonce::from_slice(&nonce), aad, &mut out[start..])
        .expect("XChaCha20-Poly1305 seals any length a record can have");
    out.extend_from_slice(&tag);
}

fn open_with(
    cipher: &XChaCha20Poly1305,
    aad: &[u8],
    sealed: &[u8],
) -> std::result::Result<Vec<u8>, OpenError> {
    if sealed.len() < NONCE_LEN + TAG_LEN {
        return Err(OpenError::Short);
    }
    let (nonce, rest) = sealed.split_at(NONCE_LEN);
    let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
    let mut plain = body.to_vec();
    cipher
        .decrypt_in_place_detached(
            XNonce::from_slice(nonce),
            aad,
            &mut plain,
            chacha20poly1305::Tag::from_slice(tag),
        )
        .map_err(|_| OpenError::Damaged)?;
    Ok(plain)
}

impl DataKey {
    /// A new random data key.
    pub fn generate() -> DataKey {
        DataKey::from_parts(random(), Zeroizing::new(random()))
    }

    fn from_parts(id: [u8; KEY_ID_LEN], bytes: Zeroizing<[u8; KEY_LEN]>) -> DataKey {
        let cipher = XChaCha20Poly1305::new(Key::from_slice(&bytes[..]));
        DataKey { id, bytes, cipher }
    }

    /// The key's id (random, not derived from the key).
    pub fn id(&self) -> [u8; KEY_ID_LEN] {
        self.id
    }

    pub fn id_hex(&self) -> String {
        hex::encode(self.id)
    }

    /// Appends `id | nonce | ciphertext | tag` of `plain` to `out`, `aad`
    /// bound to it.
    pub fn seal(&self, aad: &[u8], plain: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id);
        seal_with(&self.cipher, aad, plain, out);
    }

    /// Opens what [`DataKey::seal`] wrote.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> std::result::Result<Vec<u8>, OpenError> {
        let (id, rest) = split_id(sealed)?;
        if id != self.id {
            return Err(OpenError::WrongKey {
                found: hex::encode(id),
                expected: self.id_hex(),
            });
        }
        open_with(&self.cipher, aad, rest)
    }
}

fn split_id(sealed: &[u8]) -> std::result::Result<([u8; KEY_ID_LEN], &[u8]), OpenError> {
    if sealed.len() < KEY_ID_LEN {
        return Err(OpenError::Short);
    }
    let (id, rest) = sealed.split_at(KEY_ID_LEN);
    Ok((id.try_into().expect("split at the id length"), rest))
}

/// Opens a sealed message with `key`, or says whose key it needs.
pub fn open_sealed(
    key: Option<&DataKey>,
    aad: &[u8],
    sealed: &[u8],
) -> std::result::Result<Vec<u8>, OpenError> {
    match key {
        Some(key) => key.open(aad, sealed),
        None => Err(OpenError::NoKey(hex::encode(split_id(sealed)?.0))),
    }
}

// ---------------------------------------------------------------------------
// Sealed files (snapshots and backups)

/// The first bytes of a sealed file (a snapshot file or a backup).
pub const FILE_MAGIC: &[u8; 8] = b"TACOSEAL";

/// What a sealed file's header says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileHeader {
    pub cipher: String,
    /// The data key the body is sealed with.
    pub dek_id: String,
    /// That data key wrapped by a KEK, when the file carries its own key (a
    /// backup); absent when it is the data dir's (a snapshot file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrapped: Option<WrappedKey>,
}

/// Whether `bytes` are a sealed file.
pub fn is_sealed_file(bytes: &[u8]) -> bool {
    bytes.starts_with(FILE_MAGIC)
}

/// [`is_sealed_file`] of the file at `path`, reading only its first bytes
/// (a plain snapshot can then be decoded as it is read).
pub fn is_sealed_path(path: &std::path::Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut start = Vec::with_capacity(FILE_MAGIC.len());
    std::fs::File::open(path)?
        .take(FILE_MAGIC.len() as u64)
        .read_to_end(&mut start)?;
    Ok(is_sealed_file(&start))
}

/// Seals a whole file:
/// `"TACOSEAL" | record(header JSON) | data key id | nonce | ciphertext | tag`,
/// the magic and header record bound as associated data. With `kek`, the
/// header carries `key` wrapped by it (the file then opens anywhere that KEK
/// is given).
pub fn seal_file(key: &DataKey, kek: Option<&Kek>, plain: &[u8]) -> Vec<u8> {
    let header = FileHeader {
        cipher: CIPHER.into(),
        dek_id: key.id_hex(),
        wrapped: kek.map(|kek| kek.wrap(key)),
    };
    let json = serde_json::to_vec(&header).expect("a header always serializes");
    let mut out = Vec::with_capacity(FILE_MAGIC.len() + 64 + json.len() + plain.len() + 64);
    out.extend_from_slice(FILE_MAGIC);
    record::encode(&json, &mut out);
    let aad = out.clone();
    key.seal(&aad, plain, &mut out);
    out
}

/// Reads a sealed file's header and where its sealed body starts.
pub fn file_header(bytes: &[u8]) -> std::result::Result<(FileHeader, usize), String> {
    if !is_sealed_file(bytes) {
        return Err("not a sealed file".into());
    }
    match record::decode_at(bytes, FILE_MAGIC.len()) {
        Decoded::Record { payload, next } => serde_json::from_slice(payload)
            .map(|h| (h, next))
            .map_err(|e| format!("bad sealed file header: {e}")),
        other => Err(format!("damaged sealed file header ({other:?})")),
    }
}

/// Opens a sealed file with the data dir's key `key`, or, when the header
/// carries a wrapped key, with `kek`.
pub fn open_file(
    bytes: &[u8],
    key: Option<&DataKey>,
    kek: Option<&Kek>,
) -> std::result::Result<Vec<u8>, String> {
    let (header, body) = file_header(bytes)?;
    if header.cipher != CIPHER {
        return Err(format!("unknown cipher {:?}", header.cipher));
    }
    let aad = &bytes[..body];
    let sealed = &bytes[body..];
    match (&header.wrapped, kek) {
        (Some(wrapped), Some(kek)) => {
            let key = kek.unwrap(wrapped)?;
            key.open(aad, sealed).map_err(|e| e.to_string())
        }
        (Some(wrapped), None) => Err(format!(
            "it is encrypted with the key of id {}: give that key (--encryption-key-file)",
            wrapped.kek_id
        )),
        (None, _) => open_sealed(key, aad, sealed).map_err(|e| e.to_string()),
    }
}

// ---------------------------------------------------------------------------
// The keyring file

/// `<data-dir>/keyring`: the data dir's data key wrapped by the KEK. One
/// record (see record.rs) of JSON, replaced atomically like `meta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Keyring {
    pub format: u32,
    #[serde(flatten)]
    pub key: WrappedKey,
}

/// The path of the keyring file of `data_dir`.
pub fn keyring_path(data_dir: &Path) -> PathBuf {
    data_dir.join(KEYRING_FILE)
}

/// Reads the keyring of `data_dir`, if there is one.
pub fn read_keyring(fs: &dyn Fs, data_dir: &Path) -> Result<Option<Keyring>> {
    let path = keyring_path(data_dir);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let bytes = fs.read(&path).map_err(StoreError::io("read", &path))?;
    let corrupt = |reason: String| StoreError::Corrupt {
        path: path.clone(),
        offset: 0,
        reason,
    };
    match record::decode_at(&bytes, 0) {
        Decoded::Record { payload, next } if next == bytes.len() => {
            let keyring: Keyring = serde_json::from_slice(payload)
                .map_err(|e| corrupt(format!("keyring is not valid: {e}")))?;
            if keyring.format != 1 {
                return Err(corrupt(format!(
                    "keyring format {} is newer than this tacos knows (1)",
                    keyring.format
                )));
            }
            Ok(Some(keyring))
        }
        other => Err(corrupt(format!("keyring record is damaged ({other:?})"))),
    }
}

/// Replaces the keyring of `data_dir` atomically and durably.
pub fn write_keyring(fs: &dyn Fs, data_dir: &Path, key: WrappedKey) -> Result<()> {
    let json = serde_json::to_vec(&Keyring { format: 1, key }).expect("a keyring serializes");
    let mut buf = Vec::with_capacity(json.len() + record::HEADER_LEN);
    record::encode(&json, &mut buf);
    crate::fs::write_atomically(
        fs,
        &keyring_path(data_dir),
        &data_dir.join(KEYRING_TEMP),
        &buf,
    )
}

/// The data key of `data_dir`, opened with `kek`:
/// * a keyring and the KEK that wrapped it: its data key;
/// * a keyring and no KEK, or another KEK: [`StoreError::Key`] (the node
///   refuses to start);
/// * no keyring and a KEK: a new data key, written to a new keyring (a new
///   data dir, or a plain one switched to encrypted: from now on what is
///   written is sealed);
/// * neither: `None` (plain).
pub fn open_data_key(
    fs: &dyn Fs,
    data_dir: &Path,
    kek: Option<&Kek>,
) -> Result<Option<std::sync::Arc<DataKey>>> {
    let key_error = |reason: String| StoreError::Key {
        dir: data_dir.to_path_buf(),
        reason,
    };
    match (read_keyring(fs, data_dir)?, kek) {
        (Some(keyring), Some(kek)) => kek
            .unwrap(&keyring.key)
            .map(|key| Some(std::sync::Arc::new(key)))
            .map_err(key_error),
        (Some(keyring), None) => Err(key_error(format!(
            "it is encrypted (key id {}) and no key was given: start with --encryption-key-file FILE (or TACOS_ENCRYPTION_KEY_FILE) naming that key",
            keyring.key.kek_id
        ))),
        (None, Some(kek)) => {
            fs.create_dir_all(data_dir)
                .map_err(StoreError::io("create", data_dir))?;
            let key = DataKey::generate();
            write_keyring(fs, data_dir, kek.wrap(&key))?;
            tracing::info!(
                data_dir = %data_dir.display(),
                kek_id = kek.id(),
                dek_id = key.id_hex(),
                "encryption at rest: made a new data key; what is written from now on is encrypted"
            );
            Ok(Some(std::sync::Arc::new(key)))
        }
        (None, None) => Ok(None),
    }
}

/// Rewraps the data key of `data_dir` from `old` to `new` (`tacos rekey`).
/// The data key itself does not change, so everything sealed with it still
/// opens. Returns the rewrapped key.
pub fn rekey(fs: &dyn Fs, data_dir: &Path, old: &Kek, new: &Kek) -> Result<WrappedKey> {
    let keyring = read_keyring(fs, data_dir)?.ok_or_else(|| StoreError::Key {
        dir: data_dir.to_path_buf(),
        reason: "it has no keyring: it is not encrypted (start it once with --encryption-key-file to encrypt it)".into(),
    })?;
    let key = old.unwrap(&keyring.key).map_err(|reason| StoreError::Key {
        dir: data_dir.to_path_buf(),
        reason,
    })?;
    let wrapped = new.wrap(&key);
    write_keyring(fs, data_dir, wrapped.clone())?;
    Ok(wrapped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::StdFs;

    fn kek(byte: u8) -> Kek {
        Kek::parse(&[byte; KEY_LEN]).unwrap()
    }

    #[test]
    fn key_files_in_every_form() {
        let raw = [7u8; KEY_LEN];
        let hex_text = format!("{}\n", hex::encode(raw));
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
        let id = kek(7).id().to_string();
        assert_eq!(Kek::parse(hex_text.as_bytes()).unwrap().id(), id);
        assert_eq!(Kek::parse(b64.as_bytes()).unwrap().id(), id);
        assert_ne!(kek(8).id(), id);
        assert_eq!(id.len(), 16);
        for bad in [&b"short"[..], &[0u8; KEY_LEN][..], &[1u8; 33][..]] {
            assert!(Kek::parse(bad).is_err());
        }
        assert!(!format!("{:?}", kek(7)).contains("0707"));
    }

    #[test]
    fn seal_open_and_tamper() {
        let key = DataKey::generate();
        let mut sealed = Vec::new();
        key.seal(b"ctx", b"secret", &mut sealed);
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(key.open(b"ctx", &sealed).unwrap(), b"secret");
        assert_eq!(key.open(b"other", &sealed), Err(OpenError::Damaged));
        let mut again = Vec::new();
        key.seal(b"ctx", b"secret", &mut again);
        assert_ne!(sealed, again, "a fresh nonce every time");
        for at in 0..sealed.len() {
            let mut flipped = sealed.clone();
            flipped[at] ^= 1;
            assert!(key.open(b"ctx", &flipped).is_err(), "flip at {at}");
        }
        let other = DataKey::generate();
        assert!(matches!(
            other.open(b"ctx", &sealed),
            Err(OpenError::WrongKey { .. })
        ));
        assert!(matches!(
            open_sealed(None, b"ctx", &sealed),
            Err(OpenError::NoKey(_))
        ));
    }

    #[test]
    fn sealed_files_with_and_without_a_wrapped_key() {
        let key = DataKey::generate();
        let file = seal_file(&key, None, b"TACOSNP1 snapshot");
        assert!(is_sealed_file(&file));
        assert_eq!(
            open_file(&file, Some(&key), None).unwrap(),
            b"TACOSNP1 snapshot"
        );
        assert!(open_file(&file, None, None).is_err());
        let backup = seal_file(&key, Some(&kek(1)), b"backup");
        assert_eq!(open_file(&backup, None, Some(&kek(1))).unwrap(), b"backup");
        let error = open_file(&backup, None, Some(&kek(2))).unwrap_err();
        assert!(error.contains(kek(1).id()), "{error}");
        assert!(open_file(&backup, None, None)
            .unwrap_err()
            .contains(kek(1).id()));
        let mut damaged = backup.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(open_file(&damaged, None, Some(&kek(1))).is_err());
    }

    #[test]
    fn keyring_create_open_refuse_and_rekey() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        assert!(open_data_key(&fs, dir.path(), None).unwrap().is_none());
        let key = open_data_key(&fs, dir.path(), Some(&kek(1)))
            .unwrap()
            .unwrap();
        let again = open_data_key(&fs, dir.path(), Some(&kek(1)))
            .unwrap()
            .unwrap();
        assert_eq!(key.id(), again.id());
        let mut sealed = Vec::new();
        key.seal(b"", b"x", &mut sealed);

        let none = open_data_key(&fs, dir.path(), None)
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("no key was given") && none.contains(kek(1).id()),
            "{none}"
        );
        let wrong = open_data_key(&fs, dir.path(), Some(&kek(2)))
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains(kek(2).id()) && wrong.contains(kek(1).id()),
            "{wrong}"
        );

        assert!(rekey(&fs, dir.path(), &kek(2), &kek(3)).is_err());
        rekey(&fs, dir.path(), &kek(1), &kek(3)).unwrap();
        assert!(open_data_key(&fs, dir.path(), Some(&kek(1))).is_err());
        let rotated = open_data_key(&fs, dir.path(), Some(&kek(3)))
            .unwrap()
            .unwrap();
        assert_eq!(
            rotated.open(b"", &sealed).unwrap(),
            b"x",
            "old data still opens"
        );
        assert!(!std::fs::read(keyring_path(dir.path()))
            .unwrap()
            .windows(KEY_LEN)
            .any(|w| w == &key.bytes[..]));
    }
}
