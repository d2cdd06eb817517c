//! Gives the heap's free pages back to the system after the few moments
//! that free a lot at once.
//!
//! glibc returns memory only from the top of its heap (and whole mmapped
//! blocks); pages freed in the middle stay in the process until something
//! asks. Rebuilding the state from a snapshot decodes every record into
//! short-lived buffers between long-lived rows, and building or installing
//! a snapshot does the same: with 100,000 configs × 10 versions a restarted
//! node held about 270 MiB two seconds after start and about 170 MiB once
//! the free pages went back (docs/benchmarks.md). `malloc_trim(0)` walks
//! the free lists and hands every free page back (`MADV_DONTNEED`); it is
//! run on a blocking thread when the start's replay is done and after the
//! snapshots the node builds or installs (at most one per
//! [`SNAPSHOT_TRIM_EVERY`]) — rare moments, never per request.

use std::sync::Arc;
use std::time::Duration;

use tacos_raft::Node;

/// Snapshots come every few seconds under a heavy write load, and a trim
/// holds each malloc arena's lock while it walks it (2-6 ms with a 200 MiB
/// heap here): at most one trim for snapshots per this long, the last one
/// when it has passed.
const SNAPSHOT_TRIM_EVERY: Duration = Duration::from_secs(30);

/// Trims once the node has applied what its log held at start, then after
/// new snapshots, until the process ends.
pub fn spawn(node: Arc<Node>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::spawn(async move {
        let mut metrics = node.raft.metrics();
        let replayed_at = metrics.borrow().last_log_index.unwrap_or(0);
        let mut replayed = false;
        let mut snapshot = metrics.borrow().snapshot;
        let mut pending = false;
        let mut last_trim: Option<std::time::Instant> = None;
        loop {
            let (applied, now) = {
                let m = metrics.borrow_and_update();
                (m.last_applied.map_or(0, |l| l.index), m.snapshot)
            };
            pending |= now != snapshot;
            snapshot = now;
            let start_done = !replayed && applied >= replayed_at;
            replayed |= start_done;
            let due = pending && last_trim.is_none_or(|t| t.elapsed() >= SNAPSHOT_TRIM_EVERY);
            if start_done || due {
                let why = if start_done { "start" } else { "snapshot" };
                if tokio::task::spawn_blocking(move || trim(why))
                    .await
                    .is_err()
                {
                    return;
                }
                last_trim = Some(std::time::Instant::now());
                pending = false;
            }
            let wake = last_trim
                .filter(|_| pending)
                .map(|t| t + SNAPSHOT_TRIM_EVERY);
            tokio::select! {
                changed = metrics.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = sleep_until(wake), if wake.is_some() => {}
            }
        }
    });
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = node;
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
async fn sleep_until(at: Option<std::time::Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at.into()).await;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim(why: &str) {
    let before = crate::metrics::process_usage().map_or(0, |(rss, _)| rss);
    let started = std::time::Instant::now();
    // SAFETY: malloc_trim only releases free memory; any thread may call it.
    unsafe {
        libc::malloc_trim(0);
    }
    let after = crate::metrics::process_usage().map_or(0, |(rss, _)| rss);
    tracing::debug!(
        why,
        took_ms = started.elapsed().as_secs_f64() * 1000.0,
        released_mib = before.saturating_sub(after) as f64 / (1 << 20) as f64,
        "gave free heap pages back"
    );
}
