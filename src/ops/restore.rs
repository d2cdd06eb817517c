//! `tacos restore --from FILE`: a fresh data dir from a backup.
//!
//! The new dir holds the backup as its only snapshot and a `meta` that makes
//! the node start from it:
//!
//! * the snapshot's membership is replaced by one voter, this node
//!   (`--node-id`, with the cluster and HTTP addresses its settings give),
//!   so the node starts as a one-node cluster that others can `--join`;
//! * `meta.last_purged` is the snapshot's last log id: the log is empty and
//!   starts right after the snapshot, as after a purge, so the log store's
//!   state (purged = last log id = snapshot) is consistent and the node's
//!   "purged past the snapshot" check passes;
//! * `meta.vote` is this node in the snapshot's term (not committed): the
//!   node is initialized (openraft sees a vote and a last log id), and its
//!   first election is for a later term than any entry it holds.
//!
//! The dir is built in a temp dir beside the target and renamed into place,
//! so a crash leaves either no data dir or a whole one. The backup is
//! verified before anything is touched, and the result is read back the way
//! `tacos inspect` reads a data dir.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};

use super::backup::contents;
use super::files::{parent_dir, sync_dir};
use super::node_settings::NodeSettings;
use super::views::Summary;
use super::{decode_snapshot, decode_snapshot_from};
use tacos_core::types::{LogId, Membership, NodeInfo, SnapshotMeta, StoredMembership, Vote};
use tacos_state::State;
use tacos_store::log::{lock_data_dir, LOCK_FILE, LOG_DIR};
use tacos_store::meta::{self, Meta};
use tacos_store::{crypt, Fs, Kek, SnapshotFiles, StdFs, StoreError};

/// `tacos restore`.
#[derive(Debug, Clone, clap::Args)]
pub struct RestoreArgs {
    /// The backup file (from `tacos backup` or GET /tacos/v1/admin/backup).
    /// The data dir, node id and addresses come from the usual settings
    /// (--data-dir, --node-id, --http-port, --cluster-port, --advertise,
    /// --bind, or their TACOS_* variables or --config file).
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,

    /// Replace a data dir that is not empty. Its old contents are not
    /// deleted: the dir is renamed to DATA_DIR.before-restore-TIME.
    #[arg(long)]
    pub force: bool,
}

/// What is at the target path now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Missing,
    Empty,
    NotEmpty,
}

fn classify(dir: &Path) -> anyhow::Result<Target> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(if entries.next().is_none() {
            Target::Empty
        } else {
            Target::NotEmpty
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Target::Missing),
        Err(e) if dir.exists() && !dir.is_dir() => {
            Err(anyhow!("{} is not a directory ({e})", dir.display()))
        }
        Err(e) => Err(anyhow!(e).context(format!("cannot read {}", dir.display()))),
    }
}

/// Why a data dir could not be replaced, when it is likely a mount point.
fn mount_point_hint(error: &io::Error) -> &'static str {
    match error.kind() {
        io::ErrorKind::CrossesDevices | io::ErrorKind::ResourceBusy => {
            " (a data dir that is a mount point, e.g. a container volume, cannot be replaced: \
             restore into a new directory inside it and point --data-dir there)"
        }
        _ => "",
    }
}

/// A rename, with a hint when the data dir cannot be replaced by renaming.
fn rename(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        anyhow!(
            "cannot rename {} to {}: {e}{}",
            from.display(),
            to.display(),
            mount_point_hint(&e)
        )
    })
}

/// Restores `--from` into the data dir of `settings`.
pub fn run(args: &RestoreArgs, settings: &dyn NodeSettings) -> anyhow::Result<()> {
    settings.validate()?;
    let kek = settings.kek()?;
    let state = read_backup(&args.from, kek.as_deref())?;
    let installed = install(
        state,
        &args.from.display().to_string(),
        args.force,
        settings,
    )?;
    super::output::print_out(&installed.text)?;
    Ok(())
}

/// The state a backup file holds. A plain file is decoded as it is read
/// (a large backup is never held whole in memory); a sealed one is read
/// whole and opened with `kek`.
fn read_backup(path: &Path, kek: Option<&Kek>) -> anyhow::Result<State> {
    let unusable = |reason: String| {
        anyhow!(
            "{} is not a usable tacos backup: {reason}; nothing was changed",
            path.display()
        )
    };
    let sealed = crypt::is_sealed_path(path)
        .with_context(|| format!("cannot read the backup {}", path.display()))?;
    let (_, state) = if sealed {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read the backup {}", path.display()))?;
        let bytes = super::backup::open(&bytes, kek).with_context(|| {
            format!("{} cannot be restored; nothing was changed", path.display())
        })?;
        decode_snapshot(&bytes).map_err(|e| unusable(e.to_string()))?
    } else {
        let file = std::fs::File::open(path)
            .with_context(|| format!("cannot read the backup {}", path.display()))?;
        decode_snapshot_from(std::io::BufReader::new(file)).map_err(|e| unusable(e.to_string()))?
    };
    Ok(state)
}

/// Makes `state` the data dir of `settings` (see the module docs): what
/// [`run`] does once the backup is decoded, and what `tacos-migrate` does
/// with the state it converted. `from` names where the state came from in
/// the output; the state must carry its last applied log id. The state is
/// dropped before the result is read back, so the two are never held
/// together.
pub fn install(
    state: State,
    from: &str,
    force: bool,
    settings: &dyn NodeSettings,
) -> anyhow::Result<Installed> {
    settings.validate()?;
    let kek = settings.kek()?;
    let last = state.last_applied.with_context(|| {
        format!(
            "{from} holds no applied log entry (a backup of a node that never started?); nothing was changed"
        )
    })?;
    let summary = Summary::of(&state);

    let target = settings.data_dir();
    let name = target.file_name().with_context(|| {
        format!(
            "--data-dir {} must name a directory (not . or ..)",
            target.display()
        )
    })?;
    let parent = parent_dir(target);
    let existing = classify(target)?;
    if existing == Target::NotEmpty && !force {
        bail!(
            "{} is not empty; restore only fills a new or empty data dir unless --force is given (the old contents are then moved to {}.before-restore-TIME, not deleted); nothing was changed",
            target.display(),
            target.display()
        );
    }
    // A node running on the dir holds its lock: refuse, and keep others out
    // until the old dir is moved aside.
    let old_lock = if existing == Target::NotEmpty && target.join(LOCK_FILE).exists() {
        Some(lock_data_dir(&StdFs, target).map_err(|e| match e {
            StoreError::Locked { reason, .. } => anyhow!(
                "cannot restore into {} while a tacos process uses it ({reason}); stop that node first; nothing was changed",
                target.display()
            ),
            other => anyhow!(other),
        })?)
    } else {
        None
    };

    std::fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create {}", parent.display()))?;
    let staging = target.with_file_name(format!(
        ".{}.restore-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    if staging.exists() {
        // Left by an earlier restore that died (pids are reused).
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("cannot remove the leftover {}", staging.display()))?;
    }
    let built = build(&staging, settings, kek.as_deref(), &state, last);
    drop(state);
    let meta = match built {
        Ok(meta) => meta,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error.context(format!(
                "building the restored data dir in {}; {} was not changed",
                staging.display(),
                target.display()
            )));
        }
    };

    let cleared = match existing {
        Target::Missing => Ok(None),
        Target::Empty => std::fs::remove_dir(target).map(|()| None).map_err(|e| {
            anyhow!(
                "cannot replace the empty {}: {e}{}",
                target.display(),
                mount_point_hint(&e)
            )
        }),
        Target::NotEmpty => {
            let aside = aside_path(target, &name.to_string_lossy());
            rename(target, &aside).map(|()| Some(aside))
        }
    };
    let moved_aside = match cleared {
        Ok(moved_aside) => moved_aside,
        Err(error) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error);
        }
    };
    if let Err(error) = rename(&staging, target) {
        if let Some(aside) = &moved_aside {
            let _ = std::fs::rename(aside, target);
        }
        let _ = std::fs::remove_dir_all(&staging);
        return Err(error);
    }
    sync_dir(&parent)?;
    drop(old_lock);

    // Read the result back as `inspect` (and so a starting node) reads it.
    let check = super::inspect::inspect(target, kek.as_deref())
        .with_context(|| format!("reading back the restored {}", target.display()))?;
    if check.summary.digest != summary.digest || check.applied.map(|a| a.index) != Some(last.index)
    {
        bail!(
            "the restored {} reads back as digest {} at {:?}, not {} at index {}",
            target.display(),
            check.summary.digest,
            check.applied,
            summary.digest,
            last.index
        );
    }

    let mut out = format!(
        "restored {} from {from}\n{}",
        target.display(),
        contents(&meta, &summary)
    );
    if let Some(aside) = &moved_aside {
        out.push_str(&format!(
            "the previous contents of {} are in {} (delete it once the restored node is fine)\n",
            target.display(),
            aside.display()
        ));
    }
    out.push_str(&format!(
        "next: start tacos with the same settings (--data-dir {}, --node-id {}); it is the only voter of a new cluster. \
         Add other nodes with empty data dirs and --join {}\n",
        target.display(),
        settings.node_id(),
        settings.cluster_addr()
    ));
    Ok(Installed {
        text: out,
        read_back: check,
        moved_aside,
    })
}

/// What [`install`] did.
#[derive(Debug)]
pub struct Installed {
    /// What `tacos restore` prints.
    pub text: String,
    /// The new data dir as `tacos inspect` reads it (its digest is the
    /// installed state's).
    pub read_back: super::inspect::Report,
    /// Where the previous contents of the data dir went (`force`).
    pub moved_aside: Option<PathBuf>,
}

/// `DIR.before-restore-<unix seconds>` beside `target`, unused so far.
fn aside_path(target: &Path, name: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut aside = target.with_file_name(format!("{name}.before-restore-{now}"));
    let mut n = 1;
    while aside.exists() {
        aside = target.with_file_name(format!("{name}.before-restore-{now}-{n}"));
        n += 1;
    }
    aside
}

/// Writes the restored data dir into `staging` (which must not exist), all
/// of it durable; returns the snapshot metadata written. With `kek` the new
/// dir is encrypted (a new keyring, a sealed snapshot).
fn build(
    staging: &Path,
    settings: &dyn NodeSettings,
    kek: Option<&Kek>,
    state: &State,
    last: LogId,
) -> anyhow::Result<SnapshotMeta> {
    std::fs::create_dir(staging).with_context(|| format!("cannot create {}", staging.display()))?;
    let fs: Arc<dyn Fs> = Arc::new(StdFs);

    let id = settings.node_id();
    let me = NodeInfo {
        cluster_addr: settings.cluster_addr(),
        http_addr: settings.http_addr(),
    };
    let membership = Membership::new(vec![BTreeSet::from([id])], BTreeMap::from([(id, me)]));
    let meta = SnapshotMeta {
        last_log_id: Some(last),
        last_membership: StoredMembership::new(Some(last), membership),
        snapshot_id: format!("restore-{}-{}", last.leader_id.term, last.index),
    };
    let data_key = crypt::open_data_key(fs.as_ref(), staging, kek)?;
    SnapshotFiles::open(fs.clone(), staging)?
        .with_key(data_key)
        .save_records(&meta, state.snapshot_records())?;
    let log_dir = staging.join(LOG_DIR);
    fs.create_dir_all(&log_dir)
        .map_err(StoreError::io("create", &log_dir))?;
    // Last: stores `meta` and fsyncs the dir, which makes log/ and
    // snapshots/ durable too.
    meta::store(
        fs.as_ref(),
        staging,
        &Meta {
            vote: Some(Vote::new(last.leader_id.term, id)),
            last_purged: Some(last),
        },
    )?;
    Ok(meta)
}
