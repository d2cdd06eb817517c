//! TLS for every port of a node: the client ports (HTTP, console, gRPC)
//! and the cluster port between nodes.
//!
//! The design in four parts:
//!
//! - [`identity`]: a certificate chain and its private key, read from PEM
//!   files and checked before they are used. A pair that is unreadable,
//!   expired, not yet valid or whose key does not belong to the certificate
//!   is refused with an error that names the file: a node never starts (or
//!   rotates) onto a certificate no client would accept.
//! - [`reload`]: the identity a port serves lives behind an `ArcSwap`, and
//!   rustls asks it for the certificate at every handshake. A rotated pair
//!   on disk (seen by polling the files' modification times, or on
//!   `SIGHUP`) is swapped in for new connections; connections already made
//!   keep the keys they negotiated. A rotation that fails its checks keeps
//!   the old pair and says why.
//! - [`config`]: the rustls server and client configs, all on the `ring`
//!   provider (the only one the server binary links), with client
//!   certificates verified against a CA file when asked (mutual TLS).
//! - [`incoming`] and [`connector`]: the accept side of the tonic ports
//!   (handshakes run concurrently with a deadline, so a client that never
//!   finishes one holds nothing) and the connect side of the cluster client.
//!   HTTP (actix) takes the server config directly.

pub mod config;
pub mod connector;
pub mod identity;
pub mod incoming;
pub mod reload;

use std::path::PathBuf;

pub use config::{client_config, load_roots, server_config, ClientAuth};
pub use connector::TlsConnector;
pub use identity::Identity;
pub use incoming::{incoming, Conn, Plaintext};
pub use reload::ReloadingIdentity;
/// The rustls this crate builds on, for the layers that hold its configs.
pub use rustls;
pub use tokio_rustls;

/// Why a certificate, key or CA file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")")]
    NoCertificate { path: PathBuf },
    #[error("{path} is not valid PEM: {reason}")]
    BadPem { path: PathBuf, reason: String },
    #[error("{path} holds no private key (PKCS#8, PKCS#1 RSA or SEC1 EC PEM)")]
    NoKey { path: PathBuf },
    #[error("the key in {key} cannot sign: {reason}")]
    UnusableKey { key: PathBuf, reason: String },
    #[error("the key in {key} does not belong to the certificate in {cert}")]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("{path}: the certificate cannot be parsed: {reason}")]
    BadCertificate { path: PathBuf, reason: String },
    #[error("{path}: the certificate expired at {not_after} (UTC)")]
    Expired { path: PathBuf, not_after: String },
    #[error("{path}: the certificate is not valid before {not_before} (UTC)")]
    NotYetValid { path: PathBuf, not_before: String },
    #[error("{path}: {reason}")]
    BadCa { path: PathBuf, reason: String },
}

/// The one crypto provider of every TLS config Tacos makes.
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}

/// Makes ring the process' default provider, for libraries (reqwest) that
/// build their own rustls configs. Harmless when called twice.
pub fn install_default_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
