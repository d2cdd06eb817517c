//! Writes a synthetic r-nacos 0.8 data dir for measuring `tacos-migrate` at scale:
//!
//! ```text
//! cargo run --release -p tacos-migrate --example gen_rnacos08 -- DIR [CONFIGS] [HISTORY]
//! ```
//!
//! `CONFIGS` configs (default 100,000) with `HISTORY` versions each (default 10), three
//! users (password `admin`) and two namespaces, in the format r-nacos 0.8 writes (see
//! `tests/common/gen08.rs`). docs/migration.md has the numbers measured with it.

#[path = "../tests/common/gen08.rs"]
mod gen08;

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or_else(|| anyhow::anyhow!("usage: gen_rnacos08 DIR [CONFIGS] [HISTORY]"))?,
    );
    let configs = args.next().map_or(Ok(100_000), |s| s.parse())?;
    let history = args.next().map_or(Ok(10), |s| s.parse())?;
    if dir.exists() {
        anyhow::bail!("{} exists; give a new dir", dir.display());
    }
    let started = std::time::Instant::now();
    let written = gen08::write(
        &dir,
        &gen08::Spec {
            configs,
            history,
            records_per_file: u64::MAX,
            snapshot_after: None,
        },
    );
    println!(
        "wrote {} in {:.1?}: {written:?}",
        dir.display(),
        started.elapsed()
    );
    Ok(())
}
