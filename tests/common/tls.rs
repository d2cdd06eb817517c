//! Certificates made in the test (rcgen), and HTTPS clients that trust them.
//!
//! [`Pki::new`] writes, into a temp dir of its own:
//! - `ca.crt` / `ca.key`: a CA (`Tacos test CA`);
//! - `server.crt` / `server.key`: for `localhost` and `127.0.0.1`, signed by
//!   the CA (the client ports);
//! - `client.crt` / `client.key` and `client.pem` (both in one file, what
//!   reqwest, curl and most SDKs take): a client certificate of the CA;
//! - `peer.crt` / `peer.key`: a node certificate for `localhost` and
//!   `127.0.0.1`, signed by the CA (every node of a test cluster uses it).
//!
//! [`Pki::issue`] makes more (expired, of another CA, ...). The harness
//! ([`super::Server`], [`super::cluster::Cluster`]) speaks HTTPS to a server
//! started with `--cert-file`, trusting the `ca.crt` beside that file and
//! presenting `client.pem` from there when `--client-cert-auth` is given.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

/// A CA and the certificates it signed, as PEM files in a temp dir.
pub struct Pki {
    dir: TempDir,
    issuer: Issuer<'static, KeyPair>,
}

/// What a certificate is for (its extended key usage).
#[derive(Debug, Clone, Copy)]
pub enum Usage {
    Server,
    Client,
    /// A node: serves the cluster port and calls the others' with it.
    Both,
}

impl Pki {
    /// A CA named `Tacos test CA` with the standard set of files.
    pub fn new() -> Pki {
        Pki::named("Tacos test CA")
    }

    /// A CA with its own name (a second one shows "another CA" refused).
    pub fn named(ca_name: &str) -> Pki {
        let dir = tempfile::Builder::new()
            .prefix("tacos-pki-")
            .tempdir()
            .expect("pki dir");
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, ca_name);
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        params.not_before = days_from_now(-1);
        params.not_after = days_from_now(365);
        let cert = params.self_signed(&key).expect("CA cert");
        std::fs::write(dir.path().join("ca.crt"), cert.pem()).expect("write ca.crt");
        std::fs::write(dir.path().join("ca.key"), key.serialize_pem()).expect("write ca.key");
        let pki = Pki {
            issuer: Issuer::new(params, key),
            dir,
        };
        pki.issue("server", Usage::Server, -1, 90);
        pki.issue("client", Usage::Client, -1, 90);
        pki.issue("peer", Usage::Both, -1, 90);
        let client = [pki.path("client.crt"), pki.path("client.key")]
            .map(|p| std::fs::read_to_string(p).expect("read"))
            .concat();
        std::fs::write(pki.path("client.pem"), client).expect("write client.pem");
        pki
    }

    /// Issues `{name}.crt` / `{name}.key` for `localhost` and `127.0.0.1`,
    /// valid from `from` to `to` days from now, and returns their paths.
    pub fn issue(&self, name: &str, usage: Usage, from: i64, to: i64) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().expect("key");
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
                .expect("params");
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, name);
        params.distinguished_name = dn;
        params.extended_key_usages = match usage {
            Usage::Server => vec![ExtendedKeyUsagePurpose::ServerAuth],
            Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
            Usage::Both => vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        };
        params.not_before = days_from_now(from);
        params.not_after = days_from_now(to);
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        let (crt, pem_key) = (
            self.path(&format!("{name}.crt")),
            self.path(&format!("{name}.key")),
        );
        std::fs::write(&crt, cert.pem()).expect("write crt");
        std::fs::write(&pem_key, key.serialize_pem()).expect("write key");
        (crt, pem_key)
    }

    /// A file of this PKI's dir.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    pub fn ca(&self) -> PathBuf {
        self.path("ca.crt")
    }

    /// `--cert-file server.crt --key-file server.key`.
    pub fn server_args(&self) -> Vec<String> {
        vec![
            "--cert-file".into(),
            path_arg(&self.path("server.crt")),
            "--key-file".into(),
            path_arg(&self.path("server.key")),
        ]
    }

    /// [`Pki::server_args`] plus client certificates required (mutual TLS
    /// on the client ports).
    pub fn mutual_args(&self) -> Vec<String> {
        let mut args = self.server_args();
        args.extend([
            "--trusted-ca-file".into(),
            path_arg(&self.ca()),
            "--client-cert-auth".into(),
        ]);
        args
    }

    /// Mutual TLS on the cluster port with `peer.crt`.
    pub fn peer_args(&self) -> Vec<String> {
        vec![
            "--peer-cert-file".into(),
            path_arg(&self.path("peer.crt")),
            "--peer-key-file".into(),
            path_arg(&self.path("peer.key")),
            "--peer-trusted-ca-file".into(),
            path_arg(&self.ca()),
        ]
    }

    /// base64(SHA-256(SubjectPublicKeyInfo)) of `server.key`: what Chromium's
    /// `--ignore-certificate-errors-spki-list` pins.
    pub fn server_spki_sha256(&self) -> String {
        use base64::Engine;
        use rcgen::PublicKeyData;
        use sha2::Digest;
        let pem = std::fs::read_to_string(self.path("server.key")).expect("read key");
        let key = KeyPair::from_pem(&pem).expect("key pem");
        let digest = sha2::Sha256::digest(key.subject_public_key_info());
        base64::engine::general_purpose::STANDARD.encode(digest)
    }

    /// An async HTTPS client that trusts this CA (and presents `client.pem`
    /// when `with_client_cert`).
    pub fn client(&self, with_client_cert: bool) -> reqwest::Client {
        https_builder(
            &self.ca(),
            with_client_cert.then(|| self.path("client.pem")),
        )
        .build()
        .expect("https client")
    }
}

impl Default for Pki {
    fn default() -> Self {
        Pki::new()
    }
}

/// A path as a command-line argument.
pub fn path_arg(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// A reqwest builder that trusts only the CA in `ca` and presents the
/// cert+key PEM `identity` if given.
pub fn https_builder(ca: &Path, identity: Option<PathBuf>) -> reqwest::ClientBuilder {
    let ca = std::fs::read(ca).expect("read CA");
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).expect("CA pem"))
        .connect_timeout(Duration::from_secs(2))
        .timeout(super::REQUEST_TIMEOUT);
    if let Some(identity) = identity {
        let pem = std::fs::read(identity).expect("read identity");
        builder = builder.identity(reqwest::Identity::from_pem(&pem).expect("identity pem"));
    }
    builder
}

/// What the harness needs to speak HTTPS to a server started with `args`:
/// the CA beside `--cert-file` and, with `--client-cert-auth`, `client.pem`.
pub fn client_side(args: &[&str]) -> Option<(PathBuf, Option<PathBuf>)> {
    let at = args.iter().position(|a| *a == "--cert-file")?;
    let dir = Path::new(args.get(at + 1)?).parent()?.to_path_buf();
    let identity = args
        .contains(&"--client-cert-auth")
        .then(|| dir.join("client.pem"));
    Some((dir.join("ca.crt"), identity))
}

fn days_from_now(days: i64) -> time::OffsetDateTime {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    time::OffsetDateTime::from_unix_timestamp(now + days * 86_400).expect("time")
}

/// Fails unless plaintext is refused on a TLS server: an HTTP/1.1 request
/// to `http_port` and, when given, a gRPC call (HTTP/2 without TLS, a
/// `ServerCheckRequest`) to `grpc_port`. Without this a client that
/// silently fell back to plaintext would pass against a server that spoke
/// both.
pub async fn assert_plaintext_refused(http_port: u16, grpc_port: Option<u16>) {
    let plain = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let reply = plain
        .get(format!("http://127.0.0.1:{http_port}/health"))
        .send()
        .await;
    assert!(
        reply.is_err(),
        "plaintext HTTP to the TLS port {http_port} was answered: {reply:?}"
    );
    let Some(grpc_port) = grpc_port else {
        return;
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        let endpoint =
            tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{grpc_port}"))
                .expect("endpoint")
                .connect_timeout(Duration::from_secs(5));
        let channel = endpoint.connect().await.map_err(|e| format!("{e:?}"))?;
        let payload = super::grpc_payload(
            "ServerCheckRequest",
            "127.0.0.1",
            &serde_json::json!({"headers": {}, "requestId": "1"}),
        );
        tacos::grpc::pb::request_client::RequestClient::new(channel)
            .request(payload)
            .await
            .map(|_| ())
            .map_err(|e| format!("{e:?}"))
    })
    .await;
    assert!(
        !matches!(answer, Ok(Ok(()))),
        "plaintext gRPC to the TLS port {grpc_port} was answered"
    );
}
