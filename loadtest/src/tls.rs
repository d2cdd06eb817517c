//! TLS for the load tools (`--tls`, `--cacert FILE`): HTTPS to the HTTP API and TLS to
//! the gRPC port of a server started with `--cert-file`. rustls on ring, the provider
//! the server links (goose's reqwest brings aws-lc-rs into these binaries too; every
//! config here names ring explicitly, so that is the one that runs).
//!
//! A binary calls [`TlsArgs::install`] once at start; the clients of this crate then
//! ask [`http1`], [`grpc`] and [`reqwest_builder`] for the process's configs: with
//! nothing installed they speak plaintext, as before. The server's certificate must
//! chain to the system's CAs or to `--cacert`, and name the host the tool connects to
//! (an IP address for `127.0.0.1:PORT`, so a test certificate needs `IP:127.0.0.1`).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// `--tls` and `--cacert`, for a binary's arguments (`#[command(flatten)]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct TlsArgs {
    /// Speak TLS to the server (HTTPS to the HTTP port, TLS to the gRPC port; rustls on
    /// ring). Its certificate must chain to the system's CAs or to --cacert.
    #[arg(long)]
    pub tls: bool,
    /// A PEM file of CA certificates to trust besides the system's (implies --tls).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

impl TlsArgs {
    pub fn enabled(&self) -> bool {
        self.tls || self.cacert.is_some()
    }

    /// Makes the process speak TLS when asked; an unreadable CA file is an error.
    pub fn install(&self) -> Result<(), String> {
        if !self.enabled() {
            return Ok(());
        }
        let roots = roots(self.cacert.as_deref())?;
        let configs = Configs {
            http1: Arc::new(client_config(roots.clone(), &[b"http/1.1"])),
            grpc: Arc::new(client_config(roots.clone(), &[b"h2"])),
            http: Arc::new(client_config(roots, &[b"h2", b"http/1.1"])),
        };
        CONFIGS
            .set(configs)
            .map_err(|_| "TLS was already set up".to_string())
    }
}

struct Configs {
    http1: Arc<ClientConfig>,
    grpc: Arc<ClientConfig>,
    http: Arc<ClientConfig>,
}

static CONFIGS: OnceLock<Configs> = OnceLock::new();

/// Whether the process speaks TLS.
pub fn enabled() -> bool {
    CONFIGS.get().is_some()
}

/// The config of a bare HTTP/1.1 connection (ALPN `http/1.1`), if TLS is on.
pub fn http1() -> Option<Arc<ClientConfig>> {
    CONFIGS.get().map(|c| c.http1.clone())
}

/// The config of a gRPC channel (ALPN `h2`), if TLS is on.
pub fn grpc() -> Option<Arc<ClientConfig>> {
    CONFIGS.get().map(|c| c.grpc.clone())
}

/// `builder` speaking TLS when it is on (for `https://` URLs; see [`scheme`]).
pub fn reqwest_builder(builder: reqwest::ClientBuilder) -> reqwest::ClientBuilder {
    match CONFIGS.get() {
        Some(c) => builder.tls_backend_preconfigured(ClientConfig::clone(&c.http)),
        None => builder,
    }
}

/// `https` when TLS is on, else `http`.
pub fn scheme() -> &'static str {
    if enabled() {
        "https"
    } else {
        "http"
    }
}

/// The system's CAs plus those of `cacert`.
pub fn roots(cacert: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(path) = cacert {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("--cacert {}: {e}", path.display()))?
        {
            let cert = cert.map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            added += 1;
        }
        if added == 0 {
            return Err(format!(
                "--cacert {}: no PEM certificate in it",
                path.display()
            ));
        }
    }
    Ok(roots)
}

/// A client config on ring trusting `roots`, offering `alpn`. Session resumption is
/// off: every new connection makes a full handshake (certificate checked, fresh key
/// exchange), as a client process that just started does, so `http_config --reconnect`
/// measures the worst case.
pub fn client_config(roots: RootCertStore, alpn: &[&[u8]]) -> ClientConfig {
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3")
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config.resumption = rustls::client::Resumption::disabled();
    config
}

/// A connection, plaintext or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}
pub type Stream = Box<dyn Io>;

/// `tcp` as is, or after a TLS handshake for `host` (a name or an IP address) with
/// `config`.
pub async fn wrap(
    tcp: TcpStream,
    host: &str,
    config: Option<Arc<ClientConfig>>,
) -> io::Result<Stream> {
    let Some(config) = config else {
        return Ok(Box::new(tcp));
    };
    let tls = handshake(tcp, host, config).await?;
    Ok(Box::new(tls))
}

/// A TLS handshake over `tcp` for `host` (a name or an IP address, `[v6]` allowed).
pub async fn handshake(
    tcp: TcpStream,
    host: &str,
    config: Arc<ClientConfig>,
) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("TLS with {host}: {e}")))
}

/// The host part of `HOST:PORT` (`[v6]:PORT` too).
pub fn host_of(authority: &str) -> &str {
    match authority.rsplit_once(':') {
        Some((host, port)) if port.parse::<u16>().is_ok() => host,
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_flags() {
        assert_eq!(host_of("127.0.0.1:8848"), "127.0.0.1");
        assert_eq!(host_of("[::1]:8848"), "[::1]");
        assert_eq!(host_of("localhost"), "localhost");
        assert!(!TlsArgs::default().enabled());
        let with_ca = TlsArgs {
            tls: false,
            cacert: Some("ca.crt".into()),
        };
        assert!(with_ca.enabled());
        assert!(roots(Some(Path::new("/no/such/ca.crt")))
            .unwrap_err()
            .contains("/no/such/ca.crt"));
    }
}
