//! Online backup: `GET /tacos/v1/admin/backup` on a node
//! ([`crate::backup::encode`]) and
//! `tacos backup --node HOST:PORT --out FILE` ([`run`]).
//!
//! A node whose client ports serve TLS (`--cert-file`) is given as
//! `--node https://HOST:PORT`; its certificate must chain to the system's
//! CAs or to `--cacert`, and `--cert`/`--key` present a client certificate
//! to a node started with `--client-cert-auth` (rustls on ring, the
//! server's own TLS stack: [`tls_config`]).
//!
//! A backup is a snapshot file (src/store/snapshot.rs) of the node's state
//! at its applied index, the same bytes it would write as a snapshot or
//! send to a lagging follower. The state is a point-in-time `Arc`, so the
//! file is consistent however many writes go on meanwhile.
//!
//! With encryption at rest on, the node seals the file before it leaves
//! (`tacos_store::crypt::seal_file`) with a fresh data key wrapped by its
//! key-encryption key, so a backup is never plain where the data dir is
//! not, and it restores on any node given that key.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

use super::decode_snapshot;
use super::files::write_file_durably;
use super::views::{show_log_id, MembershipView, Summary};
use crate::backup::{DIGEST_HEADER, ROUTE};
use tacos_core::types::SnapshotMeta;
use tacos_store::{crypt, Kek};

/// `tacos backup`.
#[derive(Debug, Clone, clap::Args)]
pub struct BackupArgs {
    /// The node's HTTP address, HOST:PORT (or an http:// URL; https://HOST:PORT
    /// for a node serving TLS). Any node works; it serves the state it has
    /// applied.
    #[arg(long, value_name = "HOST:PORT")]
    pub node: String,

    /// A PEM file of CA certificates to trust for an https:// node, in
    /// addition to the system's (the CA that signed the node's --cert-file).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// A client certificate (PEM) to present to an https:// node started
    /// with --client-cert-auth; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,

    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,

    /// Where to write the backup. Written to a temp file beside it, fsynced,
    /// then renamed over it.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,

    /// Have the node first catch up with the leader's commit index (the
    /// backup then holds every write acknowledged before the request).
    #[arg(long)]
    pub linearizable: bool,

    /// Give up if the download takes longer than this.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub timeout: u64,

    /// An admin's name (backups need an admin login).
    #[arg(long, env = "TACOS_USERNAME", default_value = "nacos")]
    pub username: String,

    /// That admin's password.
    #[arg(long, env = "TACOS_PASSWORD", hide_env_values = true)]
    pub password: crate::secret::Secret,
}

/// The backup URL of a node given as HOST:PORT or a URL.
pub fn backup_url(node: &str, linearizable: bool) -> String {
    let base = if node.starts_with("http://") || node.starts_with("https://") {
        node.trim_end_matches('/').to_string()
    } else {
        format!("http://{node}")
    };
    let query = if linearizable {
        "?consistency=linearizable"
    } else {
        ""
    };
    format!("{base}{ROUTE}{query}")
}

/// Whether `url` (from [`backup_url`]) is an HTTPS one.
fn is_https(url: &str) -> bool {
    url.starts_with("https://")
}

/// The TLS config for an https:// node: the system's CAs plus `--cacert`,
/// and the `--cert`/`--key` pair when given (checked as the server checks
/// its own: readable, matching, not expired).
pub fn tls_config(args: &BackupArgs) -> anyhow::Result<tacos_tls::rustls::ClientConfig> {
    let mut roots = tacos_tls::rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(file) = &args.cacert {
        for cert in tacos_tls::identity::read_certificates(file).context("--cacert")? {
            roots
                .add(cert)
                .with_context(|| format!("--cacert: {}", file.display()))?;
        }
    }
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Some(
            tacos_tls::ReloadingIdentity::load(cert, key, &["backup"]).context("--cert/--key")?,
        ),
        _ => None,
    };
    Ok(tacos_tls::client_config(
        roots,
        identity,
        &[b"h2", b"http/1.1"],
    )?)
}

/// The blocking client `run` downloads with: straight to the node (a proxy
/// configured for the outside world, the http_proxy variables, has no
/// business between an operator and a node), over TLS for an https:// URL.
fn client(args: &BackupArgs, url: &str) -> anyhow::Result<reqwest::blocking::Client> {
    let tls_flags = args.cacert.is_some() || args.cert.is_some();
    if !is_https(url) && tls_flags {
        bail!("--cacert, --cert and --key are for an https:// --node (got {url})");
    }
    let builder = reqwest::blocking::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(args.timeout));
    let builder = if is_https(url) {
        tacos_tls::install_default_provider();
        builder.use_preconfigured_tls(tls_config(args)?)
    } else {
        builder
    };
    builder.build().context("building the HTTP client")
}

/// The plain snapshot file in a backup: opened with `kek` when the backup
/// is encrypted, a clear error when it is and no key is given.
pub fn open(bytes: &[u8], kek: Option<&Kek>) -> anyhow::Result<Vec<u8>> {
    if !crypt::is_sealed_file(bytes) {
        return Ok(bytes.to_vec());
    }
    crypt::open_file(bytes, None, kek).map_err(|reason| anyhow!("the backup {reason}"))
}

/// Downloads, verifies and writes a backup, then prints what it holds. An
/// encrypted backup is written as it came, after it was opened (with
/// `--encryption-key-file`) to verify it.
pub fn run(args: &BackupArgs, kek: Option<&Kek>) -> anyhow::Result<()> {
    let url = backup_url(&args.node, args.linearizable);
    let client = client(args, &url)?;
    let response = client
        .get(&url)
        .basic_auth(&args.username, Some(&args.password.0))
        .send()
        .map_err(|e| send_error(e, &url, args.cert.is_some()))?;
    let status = response.status();
    if !status.is_success() {
        let body = response.text().unwrap_or_default();
        let body: String = body.chars().take(500).collect();
        bail!("GET {url} answered {status}: {body}");
    }
    let sent_digest = response
        .headers()
        .get(DIGEST_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .with_context(|| {
            format!("GET {url} answered without an {DIGEST_HEADER} header: is this a tacos node?")
        })?;
    let bytes = response
        .bytes()
        .with_context(|| format!("reading the backup from {url}"))?;
    let plain = open(&bytes, kek).with_context(|| format!("verifying the backup from {url}"))?;
    let (meta, state) = decode_snapshot(&plain)
        .map_err(|reason| anyhow!("the backup from {url} does not decode: {reason}"))?;
    let summary = Summary::of(&state);
    if summary.digest != sent_digest {
        bail!(
            "the backup from {url} does not match the node's digest: it holds {}, the node sent {sent_digest}",
            summary.digest
        );
    }
    write_file_durably(&args.out, &bytes)?;
    super::output::print_out(&format!(
        "wrote {} ({} bytes)\n{}",
        args.out.display(),
        bytes.len(),
        contents(&meta, &summary)
    ))?;
    Ok(())
}

/// A failed request, with every cause (reqwest's own message hides the TLS
/// reason: "error sending request") and a hint at the flag that may be
/// missing.
fn send_error(e: reqwest::Error, url: &str, with_cert: bool) -> anyhow::Error {
    let mut causes = Vec::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&e);
    while let Some(cause) = source {
        causes.push(cause.to_string());
        source = cause.source();
    }
    let reasons = causes.join(": ");
    // A node that requires client certificates refuses a client without one
    // after the handshake (TLS 1.3): with an alert, or by closing the
    // connection before the alert is read.
    let closed = ["connection closed", "reset", "broken pipe", "stream closed"]
        .iter()
        .any(|s| reasons.contains(s));
    let hint = if reasons.contains("CertificateRequired") || (closed && !with_cert) {
        if is_https(url) {
            "; a node started with --client-cert-auth requires a client certificate: give --cert and --key"
        } else {
            "; does the node serve TLS? then give --node https://HOST:PORT"
        }
    } else if reasons.contains("certificate") || reasons.contains("UnknownIssuer") {
        "; is the node's certificate signed by a CA of --cacert (or the system's), and for this host name?"
    } else {
        ""
    };
    anyhow!("GET {url}: {e}: {reasons}{hint}")
}

/// The lines `backup` and `restore` print about a backup (aligned as
/// `inspect` aligns its lines).
pub(super) fn contents(meta: &SnapshotMeta, summary: &Summary) -> String {
    let line = |label: &str, value: String| format!("{label:<12} {value}\n");
    [
        line("applied", show_log_id(meta.last_log_id)),
        line(
            "membership",
            MembershipView::from(&meta.last_membership).line(),
        ),
        line("configs", summary.configs.to_string()),
        line("namespaces", summary.namespaces_line()),
        line("history", format!("{} rows", summary.history_rows)),
        line("digest", summary.digest.clone()),
    ]
    .concat()
}
