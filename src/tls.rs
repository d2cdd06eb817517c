//! The node's TLS, built from its settings: what the client ports serve
//! (HTTP and console through actix, gRPC through [`tacos_tls::incoming`]),
//! mutual TLS on the cluster port, and how this node calls the other
//! members' HTTP ports (the console's cluster pages, listener and health
//! aggregation). Every check of the files runs here, before the data dir is
//! touched, so a bad certificate stops the start with the file's name.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tacos_tls::rustls::{ClientConfig, ServerConfig};
use tacos_tls::{ClientAuth, Plaintext, ReloadingIdentity};

/// How often the certificate files are checked for a rotation.
pub const RELOAD_POLL: Duration = Duration::from_secs(10);

/// TLS on the client ports.
pub struct ClientTls {
    /// HTTP and console: actix adds its ALPN (h2, http/1.1).
    pub http: ServerConfig,
    /// gRPC: h2 only.
    pub grpc: Arc<ServerConfig>,
    /// Plaintext gRPC clients too (`--grpc-tls-compatibility`).
    pub grpc_plaintext: Plaintext,
}

/// The TLS files and switches of a node: its `--cert-file`, `--key-file`,
/// `--trusted-ca-file`, `--client-cert-auth`, `--grpc-tls-compatibility`
/// and `--peer-*` settings (checked as groups by the settings).
#[derive(Debug, Clone, Default)]
pub struct TlsFiles {
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    pub trusted_ca_file: Option<PathBuf>,
    pub client_cert_auth: bool,
    pub grpc_tls_compatibility: bool,
    /// Whether the node has a console port of its own (one more port the
    /// certificate serves, in the metrics).
    pub console_port: bool,
    pub peer_cert_file: Option<PathBuf>,
    pub peer_key_file: Option<PathBuf>,
    pub peer_trusted_ca_file: Option<PathBuf>,
}

/// Everything TLS of a node.
pub struct NodeTls {
    pub client: Option<ClientTls>,
    pub peer: Option<tacos_raft::rpc::PeerTls>,
    pub peer_http: PeerHttp,
    /// The pairs to follow on disk (see [`NodeTls::watch`]).
    identities: Vec<Arc<ReloadingIdentity>>,
}

impl NodeTls {
    /// Reads and checks every certificate, key and CA file the settings name.
    pub fn load(settings: &TlsFiles) -> anyhow::Result<NodeTls> {
        tacos_tls::install_default_provider();
        let mut identities = Vec::new();
        let client = match (&settings.cert_file, &settings.key_file) {
            (Some(cert), Some(key)) => {
                let ports: &[&'static str] = if settings.console_port {
                    &["http", "console", "grpc"]
                } else {
                    &["http", "grpc"]
                };
                let identity =
                    ReloadingIdentity::load(cert, key, ports).context("--cert-file/--key-file")?;
                let auth = match (&settings.trusted_ca_file, settings.client_cert_auth) {
                    (Some(ca), true) => ClientAuth::Required(ca.clone()),
                    _ => ClientAuth::Off,
                };
                let http = tacos_tls::server_config(identity.clone(), &auth, &[])
                    .context("--trusted-ca-file")?;
                let grpc = tacos_tls::server_config(identity.clone(), &auth, &[b"h2"])
                    .context("--trusted-ca-file")?;
                identities.push(identity);
                Some(ClientTls {
                    http,
                    grpc: Arc::new(grpc),
                    grpc_plaintext: if settings.grpc_tls_compatibility {
                        Plaintext::Accept
                    } else {
                        Plaintext::Refuse
                    },
                })
            }
            _ => None,
        };
        let peer_identity = match (&settings.peer_cert_file, &settings.peer_key_file) {
            (Some(cert), Some(key)) => Some(
                ReloadingIdentity::load(cert, key, &["cluster"])
                    .context("--peer-cert-file/--peer-key-file")?,
            ),
            _ => None,
        };
        let peer = match (&peer_identity, &settings.peer_trusted_ca_file) {
            (Some(identity), Some(ca)) => {
                let auth = ClientAuth::Required(ca.clone());
                let server = tacos_tls::server_config(identity.clone(), &auth, &[b"h2"])
                    .context("--peer-trusted-ca-file")?;
                let roots = tacos_tls::load_roots(ca).context("--peer-trusted-ca-file")?;
                let client = tacos_tls::client_config(roots, Some(identity.clone()), &[b"h2"])
                    .context("--peer-trusted-ca-file")?;
                Some(tacos_raft::rpc::PeerTls {
                    server: Arc::new(server),
                    client: Arc::new(client),
                })
            }
            _ => None,
        };
        let peer_http = match client {
            Some(_) => PeerHttp::tls(settings, peer_identity.clone())?,
            None => PeerHttp::plain(),
        };
        identities.extend(peer_identity);
        Ok(NodeTls {
            client,
            peer,
            peer_http,
            identities,
        })
    }

    /// Follows the certificate files (poll and `SIGHUP`) on the current
    /// tokio runtime.
    pub fn watch(&self) {
        for identity in &self.identities {
            identity.watch(RELOAD_POLL);
        }
    }
}

/// How this node reaches the other members' HTTP ports. The client ports
/// of a cluster's nodes are all TLS or all plaintext; over TLS, a member's
/// certificate must chain to the system's CAs, `--trusted-ca-file` or
/// `--peer-trusted-ca-file`, and this node presents its peer certificate
/// (needed when the members require client certificates).
#[derive(Clone)]
pub struct PeerHttp {
    tls: Option<Arc<ClientConfig>>,
}

impl PeerHttp {
    pub fn plain() -> PeerHttp {
        PeerHttp { tls: None }
    }

    fn tls(settings: &TlsFiles, identity: Option<Arc<ReloadingIdentity>>) -> anyhow::Result<Self> {
        let mut roots = tacos_tls::rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(found.certs);
        for (flag, file) in [
            ("--trusted-ca-file", &settings.trusted_ca_file),
            ("--peer-trusted-ca-file", &settings.peer_trusted_ca_file),
        ] {
            if let Some(file) = file {
                for cert in tacos_tls::identity::read_certificates(file).context(flag)? {
                    roots
                        .add(cert)
                        .with_context(|| format!("{flag}: {}", file.display()))?;
                }
            }
        }
        let config = tacos_tls::client_config(roots, identity, &[b"h2", b"http/1.1"])?;
        Ok(PeerHttp {
            tls: Some(Arc::new(config)),
        })
    }

    /// A client for asking other members: no proxy, `timeout` for the
    /// whole request and for connecting.
    pub fn client(&self, timeout: Duration) -> reqwest::Result<PeerClient> {
        let builder = reqwest::Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout);
        let client = match &self.tls {
            Some(config) => builder
                .use_preconfigured_tls(ClientConfig::clone(config))
                .build()?,
            None => builder.build()?,
        };
        Ok(PeerClient {
            client,
            scheme: if self.tls.is_some() { "https" } else { "http" },
        })
    }
}

/// A client for the other members' HTTP ports ([`PeerHttp::client`]).
pub struct PeerClient {
    client: reqwest::Client,
    scheme: &'static str,
}

impl PeerClient {
    /// `GET path_and_query` of the member at `http_addr` (host:port).
    pub fn get(&self, http_addr: &str, path_and_query: &str) -> reqwest::RequestBuilder {
        self.client
            .get(format!("{}://{http_addr}{path_and_query}", self.scheme))
    }
}
