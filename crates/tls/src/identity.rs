//! A certificate chain and its private key, read from PEM files and checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

use crate::TlsError;

/// A checked certificate/key pair, ready for rustls.
#[derive(Debug, Clone)]
pub struct Identity {
    pub key: Arc<CertifiedKey>,
    /// When the leaf certificate stops being valid (seconds since the epoch).
    pub not_after: i64,
    pub cert_file: PathBuf,
}

impl Identity {
    /// Reads `cert_file` (the leaf first, then any intermediates) and
    /// `key_file` (PKCS#8, PKCS#1 RSA or SEC1 EC) and checks that the key
    /// belongs to the leaf and that the leaf is valid now.
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<Identity, TlsError> {
        let chain = read_certificates(cert_file)?;
        let key_pem = read(key_file)?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| match e {
            rustls::pki_types::pem::Error::NoItemsFound => TlsError::NoKey {
                path: key_file.to_path_buf(),
            },
            other => TlsError::BadPem {
                path: key_file.to_path_buf(),
                reason: other.to_string(),
            },
        })?;
        let (not_before, not_after) = validity(cert_file, &chain[0])?;
        let now = unix_now();
        if now > not_after.0 {
            return Err(TlsError::Expired {
                path: cert_file.to_path_buf(),
                not_after: not_after.1,
            });
        }
        if now < not_before.0 {
            return Err(TlsError::NotYetValid {
                path: cert_file.to_path_buf(),
                not_before: not_before.1,
            });
        }
        let provider = crate::provider();
        let signer =
            provider
                .key_provider
                .load_private_key(key)
                .map_err(|e| TlsError::UnusableKey {
                    key: key_file.to_path_buf(),
                    reason: e.to_string(),
                })?;
        let certified = CertifiedKey::new(chain, signer);
        certified.keys_match().map_err(|_| TlsError::KeyMismatch {
            cert: cert_file.to_path_buf(),
            key: key_file.to_path_buf(),
        })?;
        Ok(Identity {
            key: Arc::new(certified),
            not_after: not_after.0,
            cert_file: cert_file.to_path_buf(),
        })
    }

    /// Days left before the certificate expires (negative once it has).
    pub fn days_left(&self) -> i64 {
        (self.not_after - unix_now()).div_euclid(86_400)
    }
}

/// Every certificate of a PEM file, at least one.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadPem {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// (not before, not after), each as seconds since the epoch and as text.
type Validity = ((i64, String), (i64, String));

fn validity(path: &Path, cert: &CertificateDer<'_>) -> Result<Validity, TlsError> {
    let (_, parsed) =
        x509_parser::parse_x509_certificate(cert).map_err(|e| TlsError::BadCertificate {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    let v = parsed.validity();
    Ok((
        (v.not_before.timestamp(), v.not_before.to_string()),
        (v.not_after.timestamp(), v.not_after.to_string()),
    ))
}

pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{CertificateParams, KeyPair};

    /// A self-signed pair for `localhost`, valid from `from` to `to` days
    /// from now, written to `dir` as `{name}.crt` / `{name}.key`.
    pub(crate) fn self_signed(
        dir: &Path,
        name: &str,
        from: i64,
        to: i64,
    ) -> (PathBuf, PathBuf, KeyPair) {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(vec!["localhost".into()]).expect("params");
        params.not_before = time_of(from);
        params.not_after = time_of(to);
        let cert = params.self_signed(&key).expect("cert");
        let cert_file = dir.join(format!("{name}.crt"));
        let key_file = dir.join(format!("{name}.key"));
        std::fs::write(&cert_file, cert.pem()).expect("write");
        std::fs::write(&key_file, key.serialize_pem()).expect("write");
        (cert_file, key_file, key)
    }

    fn time_of(days: i64) -> time::OffsetDateTime {
        time::OffsetDateTime::from_unix_timestamp(unix_now() + days * 86_400).expect("time")
    }

    #[test]
    fn a_valid_pair_loads() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key, _) = self_signed(dir.path(), "a", -1, 90);
        let id = Identity::load(&cert, &key).expect("loads");
        assert!((88..=90).contains(&id.days_left()), "{}", id.days_left());
    }

    #[test]
    fn an_expired_certificate_is_refused_naming_its_file() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key, _) = self_signed(dir.path(), "old", -30, -1);
        let err = Identity::load(&cert, &key).expect_err("expired");
        assert!(matches!(err, TlsError::Expired { .. }), "{err}");
        assert!(err.to_string().contains("old.crt"), "{err}");
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, _, _) = self_signed(dir.path(), "a", -1, 90);
        let (_, other_key, _) = self_signed(dir.path(), "b", -1, 90);
        let err = Identity::load(&cert, &other_key).expect_err("mismatch");
        assert!(matches!(err, TlsError::KeyMismatch { .. }), "{err}");
    }

    #[test]
    fn files_without_pem_are_refused_clearly() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key, _) = self_signed(dir.path(), "a", -1, 90);
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").expect("write");
        let err = Identity::load(&junk, &key).expect_err("no cert");
        assert!(matches!(err, TlsError::NoCertificate { .. }), "{err}");
        let err = Identity::load(&cert, &junk).expect_err("no key");
        assert!(matches!(err, TlsError::NoKey { .. }), "{err}");
        let err = Identity::load(&dir.path().join("missing.crt"), &key).expect_err("missing");
        assert!(err.to_string().contains("missing.crt"), "{err}");
    }
}
