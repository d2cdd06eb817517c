//! `tacos rekey --new-key-file NEW`: rotates the key-encryption key (KEK)
//! of a stopped node's encrypted data dir.
//!
//! Only `<data-dir>/keyring` changes: the data key in it is opened with the
//! current KEK (`--encryption-key-file`) and wrapped again with the new one,
//! then the file is replaced atomically (temp file, fsync, rename, fsync of
//! the dir). The data key itself stays, so every log segment and snapshot
//! sealed with it loads as before, and a crash leaves either the old or the
//! new keyring, never neither. The node's LOCK is held meanwhile, so a
//! running node is refused. Backups carry their own wrapped key: one taken
//! before the rotation restores with the old KEK.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};

use super::node_settings::NodeSettings;
use tacos_store::log::lock_data_dir;
use tacos_store::{crypt, Kek, StdFs, StoreError};

/// `tacos rekey`.
#[derive(Debug, Clone, clap::Args)]
pub struct RekeyArgs {
    /// The file with the new key-encryption key (same forms as
    /// --encryption-key-file, which names the current one). The data dir is
    /// --data-dir.
    #[arg(long, value_name = "FILE")]
    pub new_key_file: PathBuf,
}

/// Rewraps the data key of `--data-dir` from the current KEK to the new one.
pub fn run(args: &RekeyArgs, settings: &dyn NodeSettings) -> anyhow::Result<()> {
    let dir = settings.data_dir();
    let old = settings.kek()?.context(
        "give the current key with --encryption-key-file (and the new one with --new-key-file)",
    )?;
    let new = Kek::load(&args.new_key_file).map_err(|e| anyhow!("--new-key-file: {e}"))?;
    if !dir.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let _lock = lock_data_dir(&StdFs, dir).map_err(|e| match e {
        StoreError::Locked { reason, .. } => anyhow!(
            "cannot rekey {} while a tacos process uses it ({reason}); stop that node first",
            dir.display()
        ),
        other => anyhow!(other),
    })?;
    if old.id() == new.id() {
        bail!(
            "the new key is the current key (id {}); nothing was changed",
            old.id()
        );
    }
    let wrapped =
        crypt::rekey(&StdFs, dir, &old, &new).map_err(|e| anyhow!("{e}; nothing was changed"))?;
    super::output::print_out(&format!(
        "rekeyed {}: data key {} is now wrapped by key id {} (was {})\nnext: start the node with --encryption-key-file {}\n",
        dir.display(),
        wrapped.dek_id,
        new.id(),
        old.id(),
        args.new_key_file.display()
    ))?;
    Ok(())
}
