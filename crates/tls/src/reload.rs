//! The identity a port serves, swapped for a rotated one without a restart.
//!
//! rustls asks a resolver for the certificate at every handshake, so the
//! pair lives behind an `ArcSwap` and a new handshake sees the newest pair
//! at once; a connection already made keeps the keys it negotiated. The
//! files are polled (their modification time and size: a secret mounted by
//! Kubernetes changes by a symlink swap, which a watch on the directory
//! would miss and `stat` through the link sees) and reread on `SIGHUP`. A
//! new pair passes the same checks as at start; one that does not (a key
//! written before its certificate, an expired certificate) is refused with
//! a log line, the old pair stays, and the next change of the files is
//! tried again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::client::ResolvesClientCert;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;

use crate::{Identity, TlsError};

/// A certificate expiring within this many days is warned about daily.
pub const WARN_DAYS: i64 = 30;

/// A file's modification time and size: what changes when it is rewritten.
type Stamp = Option<(SystemTime, u64)>;

/// A certificate/key pair that follows its files on disk.
#[derive(Debug)]
pub struct ReloadingIdentity {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: ArcSwap<Identity>,
    /// The ports it serves, as the metric's `port` label.
    ports: Vec<&'static str>,
    /// The files' stamps when they were last read (loaded or refused).
    seen: Mutex<(Stamp, Stamp)>,
}

impl ReloadingIdentity {
    /// Loads and checks the pair (see [`Identity::load`]).
    pub fn load(
        cert_file: &Path,
        key_file: &Path,
        ports: &[&'static str],
    ) -> Result<Arc<ReloadingIdentity>, TlsError> {
        let seen = (stamp(cert_file), stamp(key_file));
        let identity = Identity::load(cert_file, key_file)?;
        let this = ReloadingIdentity {
            cert_file: cert_file.to_path_buf(),
            key_file: key_file.to_path_buf(),
            current: ArcSwap::from_pointee(identity),
            ports: ports.to_vec(),
            seen: Mutex::new(seen),
        };
        this.publish(&this.current());
        Ok(Arc::new(this))
    }

    pub fn current(&self) -> Arc<Identity> {
        self.current.load_full()
    }

    /// Rereads the files; a pair that passes the checks serves every new
    /// connection from now on.
    pub fn reload(&self) -> Result<(), TlsError> {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) =
            (stamp(&self.cert_file), stamp(&self.key_file));
        let identity = Identity::load(&self.cert_file, &self.key_file)?;
        self.publish(&identity);
        self.current.store(Arc::new(identity));
        metrics::counter!("tacos_tls_reloads_total", "result" => "loaded").increment(1);
        tracing::info!(
            cert = %self.cert_file.display(),
            "TLS certificate reloaded: new connections use it"
        );
        Ok(())
    }

    /// Reloads if either file changed since it was last read.
    pub fn reload_if_changed(&self) {
        let now = (stamp(&self.cert_file), stamp(&self.key_file));
        let changed = *self.seen.lock().unwrap_or_else(|e| e.into_inner()) != now;
        if changed {
            self.reload_or_keep();
        }
    }

    fn reload_or_keep(&self) {
        if let Err(e) = self.reload() {
            metrics::counter!("tacos_tls_reloads_total", "result" => "refused").increment(1);
            tracing::error!("TLS certificate not reloaded, the previous one stays: {e}");
        }
    }

    /// Polls the files every `every` and rereads them on `SIGHUP`, on the
    /// current tokio runtime, until the process ends.
    pub fn watch(self: &Arc<Self>, every: Duration) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut hangup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            let mut poll = tokio::time::interval(every);
            poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut warned = tokio::time::Instant::now();
            loop {
                let hung_up = async {
                    match hangup.as_mut() {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = poll.tick() => this.reload_if_changed(),
                    _ = hung_up => {
                        tracing::info!(cert = %this.cert_file.display(), "SIGHUP: rereading the TLS certificate");
                        this.reload_or_keep();
                    }
                }
                if warned.elapsed() >= Duration::from_secs(86_400) {
                    warned = tokio::time::Instant::now();
                    this.warn_if_expiring(&this.current());
                }
            }
        });
    }

    /// The expiry metric, and a warning when it is near.
    fn publish(&self, identity: &Identity) {
        for port in &self.ports {
            metrics::gauge!("tacos_tls_cert_expiry_timestamp_seconds", "port" => *port)
                .set(identity.not_after as f64);
        }
        self.warn_if_expiring(identity);
    }

    fn warn_if_expiring(&self, identity: &Identity) {
        let days = identity.days_left();
        if days < WARN_DAYS {
            tracing::warn!(
                cert = %identity.cert_file.display(),
                ports = ?self.ports,
                "the TLS certificate expires in {days} days: rotate it (the new files are picked up without a restart)"
            );
        }
    }
}

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl ResolvesServerCert for ReloadingIdentity {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load().key.clone())
    }
}

impl ResolvesClientCert for ReloadingIdentity {
    fn resolve(&self, _hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load().key.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::tests::self_signed;

    #[test]
    fn a_rotated_pair_is_picked_up_and_a_bad_one_keeps_the_old() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key, _) = self_signed(dir.path(), "a", -1, 10);
        let id = ReloadingIdentity::load(&cert, &key, &["http"]).expect("loads");
        let first = id.current().not_after;
        // Rotated: a new pair in the same files.
        let (new_cert, new_key, _) = self_signed(dir.path(), "b", -1, 90);
        std::fs::copy(&new_cert, &cert).expect("copy");
        std::fs::copy(&new_key, &key).expect("copy");
        id.reload_if_changed();
        let second = id.current().not_after;
        assert!(second > first + 60 * 86_400, "{first} -> {second}");
        // Half rotated: a certificate whose key is not there yet.
        let (third_cert, _, _) = self_signed(dir.path(), "c", -1, 200);
        std::fs::copy(&third_cert, &cert).expect("copy");
        id.reload_if_changed();
        assert_eq!(id.current().not_after, second, "the old pair stays");
        assert!(id.reload().is_err());
    }
}
