//! rustls configs for Tacos' ports and its clients, all on ring.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::{ReloadingIdentity, TlsError};

/// Whether a server port asks its clients for a certificate.
#[derive(Debug, Clone)]
pub enum ClientAuth {
    /// Any client may connect (it proves who it is by other means: a login,
    /// the cluster token).
    Off,
    /// Every client must present a certificate signed by a CA of this file.
    Required(PathBuf),
}

/// The CAs of a PEM file, as trust roots.
pub fn load_roots(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in crate::identity::read_certificates(path)? {
        roots.add(cert).map_err(|e| TlsError::BadCa {
            path: path.to_path_buf(),
            reason: format!("not a usable CA certificate: {e}"),
        })?;
    }
    Ok(roots)
}

/// A server config that serves `identity` (reloaded as its files change),
/// TLS 1.2 and 1.3, and offers `alpn` (empty: none; actix adds its own).
pub fn server_config(
    identity: Arc<ReloadingIdentity>,
    client_auth: &ClientAuth,
    alpn: &[&[u8]],
) -> Result<ServerConfig, TlsError> {
    let builder = ServerConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::BadCa {
            path: PathBuf::new(),
            reason: e.to_string(),
        })?;
    let builder = match client_auth {
        ClientAuth::Off => builder.with_no_client_auth(),
        ClientAuth::Required(ca_file) => {
            let roots = Arc::new(load_roots(ca_file)?);
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                roots,
                crate::provider(),
            )
            .build()
            .map_err(|e| TlsError::BadCa {
                path: ca_file.clone(),
                reason: e.to_string(),
            })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(identity);
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// A client config that trusts `roots` and, when given, presents
/// `identity` to servers that ask for a client certificate.
pub fn client_config(
    roots: RootCertStore,
    identity: Option<Arc<ReloadingIdentity>>,
    alpn: &[&[u8]],
) -> Result<ClientConfig, TlsError> {
    let builder = ClientConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::BadCa {
            path: PathBuf::new(),
            reason: e.to_string(),
        })?
        .with_root_certificates(roots);
    let mut config = match identity {
        Some(identity) => builder.with_client_cert_resolver(identity),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}
