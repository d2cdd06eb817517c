//! `tacos inspect`: what a data dir holds, without starting a node and
//! without changing a file.
//!
//! It takes the dir's LOCK (so it refuses while a node runs on it), then
//! reads what recovery reads, the same way, but never repairs:
//!
//! 1. `meta` (vote, last purged log id);
//! 2. every log segment with [`segment::scan`]: a torn tail of the last
//!    segment is reported (a node would cut it off when it opens the dir),
//!    damage anywhere else is an error naming file and offset; entries must
//!    follow each other, and the commit markers give the committed log id;
//! 3. the newest snapshot whose framing is whole (an older one when the
//!    newest is damaged, as the node does), decoded into a state;
//! 4. every log entry after the snapshot up to the commit point applied to
//!    that state as the state machine applies it.
//!
//! The state's digest is `State::digest()`, the value
//! `GET /tacos/v1/admin/digest` reports for the same applied index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use openraft::EntryPayload;
use serde::Serialize;

use super::node_settings::NodeSettings;
use super::views::{show_log_id, LogIdView, MembershipView, Summary, VoteView};
use super::{decode_snapshot, decode_snapshot_from};
use tacos_core::types::{Entry, LogId, StoredMembership};
use tacos_state::State;
use tacos_store::log::{lock_data_dir, LOG_DIR};
use tacos_store::scan::read_log;
use tacos_store::snapshot::{self, Unsealed, SNAPSHOT_DIR};
use tacos_store::{crypt, meta, DataKey, Fs, Kek, StdFs, StoreError};

/// The metadata file's name (src/store/meta.rs).
const META_FILE: &str = "meta";

/// `tacos inspect`.
#[derive(Debug, Clone, clap::Args)]
pub struct InspectArgs {
    /// The data dir to read (default: the --data-dir setting). Nothing in it
    /// is changed; a node must not be running on it.
    #[arg(value_name = "DATA_DIR")]
    pub dir: Option<PathBuf>,

    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `tacos inspect` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub data_dir: PathBuf,
    pub segments: Segments,
    pub entries: Entries,
    /// The newest commit marker in the log (or the purge point).
    pub committed: Option<LogIdView>,
    pub vote: Option<VoteView>,
    pub purged: Option<LogIdView>,
    pub snapshot: Option<SnapshotView>,
    /// Snapshot files that do not decode (skipped, as a node skips them).
    pub damaged_snapshots: Vec<DamagedFile>,
    /// The state below is as of this entry: the snapshot plus the committed log.
    pub applied: Option<LogIdView>,
    /// Entries after the commit point (not applied here).
    pub uncommitted_entries: usize,
    /// The membership as of `applied`.
    pub membership: MembershipView,
    #[serde(flatten)]
    pub summary: Summary,
    /// Damage at the end of the last segment that a node would cut off.
    pub torn_tail: Option<TornTail>,
    /// Encryption at rest (absent: the data dir is plain).
    pub encryption: Option<Encryption>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Segments {
    pub count: usize,
    pub bytes: u64,
    pub files: Vec<SegmentFile>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentFile {
    pub file: PathBuf,
    pub bytes: u64,
    pub entries: usize,
    pub commit_markers: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entries {
    /// Entries in the log after the purge point.
    pub count: usize,
    pub first: Option<u64>,
    pub last: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotView {
    pub id: String,
    pub file: PathBuf,
    pub last_log_id: Option<LogIdView>,
    /// Plain bytes (after opening a sealed file).
    pub bytes: u64,
    /// Stored encrypted.
    pub sealed: bool,
}

/// Encryption at rest, when the data dir has a keyring.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Encryption {
    /// The id of the key-encryption key that wraps the data key.
    pub kek_id: String,
    pub data_key_id: String,
    /// Log entries (in the segments) whose body is stored encrypted.
    pub sealed_entries: usize,
    /// Log entries with commands or membership stored plain: written before
    /// encryption was switched on (gone once the log is purged past them).
    pub plain_entries: usize,
    /// Whether the snapshot loaded is stored encrypted (none: no snapshot).
    pub snapshot_sealed: Option<bool>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DamagedFile {
    pub file: PathBuf,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TornTail {
    pub file: PathBuf,
    /// Where the intact records end (what a node would cut the file to).
    pub offset: u64,
    /// Bytes after `offset`.
    pub bytes: u64,
    pub reason: String,
}

/// Runs `tacos inspect`: prints the report as text or JSON.
pub fn run(args: &InspectArgs, settings: &dyn NodeSettings) -> anyhow::Result<()> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| settings.data_dir().to_path_buf());
    let report = inspect(&dir, settings.kek()?.as_deref())?;
    if args.json {
        super::output::print_out(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        super::output::print_out(&report.text())?;
    }
    Ok(())
}

/// Turns the store's errors into messages for someone inspecting, not
/// starting, a node.
fn explain(dir: &Path, error: StoreError) -> anyhow::Error {
    match error {
        StoreError::Locked { reason, .. } => anyhow!(
            "cannot inspect {} while a tacos process uses it ({reason}); stop that node first, or take an online backup (tacos backup / GET /tacos/v1/admin/backup)",
            dir.display()
        ),
        StoreError::Corrupt {
            path,
            offset,
            reason,
        } => anyhow!(
            "corrupt data in {} at offset {offset}: {reason} (a node would refuse to start on this data dir)",
            path.display()
        ),
        StoreError::Io {
            action: "lock",
            path,
            source,
        } => anyhow!(
            "cannot take the lock {} ({source}): inspect holds the data dir's LOCK while it reads, so run it as the user the node runs as",
            path.display()
        ),
        other => anyhow!(other),
    }
}

/// Reads a data dir and rebuilds its state; changes nothing but holding
/// the LOCK while it runs. An encrypted data dir needs its key (`kek`).
pub fn inspect(dir: &Path, kek: Option<&Kek>) -> anyhow::Result<Report> {
    let fs = StdFs;
    let metadata =
        std::fs::metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !metadata.is_dir() {
        bail!("{} is not a directory", dir.display());
    }
    let has = |name: &str| dir.join(name).exists();
    if !has(META_FILE) && !has(LOG_DIR) && !has(SNAPSHOT_DIR) {
        bail!(
            "{} is not a tacos data dir: it has no {META_FILE}, {LOG_DIR}/ or {SNAPSHOT_DIR}/",
            dir.display()
        );
    }
    // Checked before locking, so that no LOCK file is created in a dir that
    // is not a data dir.
    let _lock = lock_data_dir(&fs, dir).map_err(|e| explain(dir, e))?;
    let meta = meta::load(&fs, dir).map_err(|e| explain(dir, e))?;
    // Read-only: unlike a starting node, inspect never makes a keyring.
    let keyring = crypt::read_keyring(&fs, dir).map_err(|e| explain(dir, e))?;
    let key =
        match (&keyring, kek) {
            (Some(keyring), Some(kek)) => Some(kek.unwrap(&keyring.key).map_err(|reason| {
                anyhow!("cannot read the encrypted {}: {reason}", dir.display())
            })?),
            (Some(keyring), None) => bail!(
                "{} is encrypted (key id {}): give its key with --encryption-key-file",
                dir.display(),
                keyring.key.kek_id
            ),
            (None, _) => None,
        };

    let log = scan_log(&fs, dir, meta.last_purged, key.as_ref()).map_err(|e| explain(dir, e))?;
    let (snapshot, damaged_snapshots, mut state) = load_snapshot(&fs, dir, key.as_ref())?;
    let encryption = keyring.map(|keyring| Encryption {
        kek_id: keyring.key.kek_id,
        data_key_id: keyring.key.dek_id,
        sealed_entries: log.sealed_entries,
        plain_entries: log.plain_entries,
        snapshot_sealed: snapshot.as_ref().map(|s| s.sealed),
    });

    let applied_at_snapshot = state.last_applied;
    if meta.last_purged.map(|p| p.index) > applied_at_snapshot.map(|a| a.index) {
        bail!(
            "the log in {} was purged up to {} but no snapshot covers it (newest usable snapshot: {}); a node would refuse to start with missing data",
            dir.display(),
            show_log_id(meta.last_purged),
            show_log_id(applied_at_snapshot)
        );
    }
    // As openraft does: what the snapshot holds counts as committed.
    let committed = log.committed.max(applied_at_snapshot);
    let start = applied_at_snapshot.map_or(0, |id| id.index + 1);
    let end = committed.map_or(0, |id| id.index + 1);
    for index in start..end {
        let entry = log.entries.get(&index).ok_or_else(|| {
            anyhow!(
                "entry {index} is missing from the log in {}: the snapshot ends at {} and the log was committed up to {}",
                dir.display(),
                show_log_id(applied_at_snapshot),
                show_log_id(committed)
            )
        })?;
        apply(&mut state, entry);
    }
    let applied = state.last_applied;
    let uncommitted_entries = log.entries.range(end..).count();

    Ok(Report {
        data_dir: dir.to_path_buf(),
        entries: Entries {
            count: log.entries.len(),
            first: log.entries.keys().next().copied(),
            last: log.entries.keys().next_back().copied(),
        },
        segments: log.segments,
        committed: log.committed.map(LogIdView::from),
        vote: meta.vote.map(VoteView::from),
        purged: meta.last_purged.map(LogIdView::from),
        snapshot,
        damaged_snapshots,
        applied: applied.map(LogIdView::from),
        uncommitted_entries,
        membership: MembershipView::from(&state.membership),
        summary: Summary::of(&state),
        torn_tail: log.torn_tail,
        encryption,
    })
}

/// Applies one committed entry the way the state machine does.
pub(super) fn apply(state: &mut State, entry: &Entry) {
    state.last_applied = Some(entry.log_id);
    match &entry.payload {
        EntryPayload::Blank => {}
        EntryPayload::Normal(batch) => {
            let mut changed = Vec::new();
            for command in &batch.commands {
                state.apply(command, &mut changed);
            }
        }
        EntryPayload::Membership(membership) => {
            state.membership = StoredMembership::new(Some(entry.log_id), membership.clone());
        }
    }
}

/// What the log segments hold.
struct ScannedLog {
    segments: Segments,
    /// Entries after the purge point, by index.
    entries: BTreeMap<u64, Entry>,
    sealed_entries: usize,
    plain_entries: usize,
    committed: Option<LogId>,
    torn_tail: Option<TornTail>,
}

/// Reads every segment with the log store's own checks
/// ([`tacos_store::scan::read_log`]), reporting a torn tail instead of
/// cutting it off.
fn scan_log(
    fs: &dyn Fs,
    dir: &Path,
    last_purged: Option<LogId>,
    key: Option<&DataKey>,
) -> Result<ScannedLog, StoreError> {
    let scan = read_log(fs, &dir.join(LOG_DIR), last_purged, key)?;
    let sealed_entries = scan.segments.iter().map(|s| s.sealed_entries).sum();
    let plain_entries = scan.segments.iter().map(|s| s.plain_entries).sum();
    let files: Vec<SegmentFile> = scan
        .segments
        .iter()
        .map(|s| SegmentFile {
            file: s.path.clone(),
            bytes: s.bytes,
            entries: s.entries.len(),
            commit_markers: s.commit_markers,
        })
        .collect();
    Ok(ScannedLog {
        segments: Segments {
            count: files.len(),
            bytes: files.iter().map(|f| f.bytes).sum(),
            files,
        },
        entries: scan.entries,
        sealed_entries,
        plain_entries,
        committed: scan.committed,
        torn_tail: scan.torn_tail.map(|t| TornTail {
            file: t.path,
            offset: t.valid_len,
            bytes: t.len - t.valid_len,
            reason: t.reason,
        }),
    })
}

/// The newest snapshot whose framing is whole (the file a node would load),
/// decoded; damaged newer files are listed. Without one, the empty state.
fn load_snapshot(
    fs: &dyn Fs,
    dir: &Path,
    key: Option<&DataKey>,
) -> anyhow::Result<(Option<SnapshotView>, Vec<DamagedFile>, State)> {
    let snap_dir = dir.join(SNAPSHOT_DIR);
    let mut paths: Vec<PathBuf> = if snap_dir.is_dir() {
        fs.list(&snap_dir)
            .with_context(|| format!("cannot list {}", snap_dir.display()))?
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "snap"))
            .collect()
    } else {
        Vec::new()
    };
    paths.sort();
    let mut damaged = Vec::new();
    for path in paths.into_iter().rev() {
        let cannot_read = || format!("cannot read {}", path.display());
        let does_not_decode = |reason: String| {
            anyhow!(
                "snapshot {} does not decode: {reason} (a node would refuse to start on this data dir)",
                path.display()
            )
        };
        let sealed = crypt::is_sealed_path(&path).with_context(cannot_read)?;
        // The node picks the newest file whose records are whole, then
        // decodes it (see SnapshotFiles::latest and StateMachine::open). A
        // plain file is decoded as it is read, never held whole.
        let open = || -> anyhow::Result<_> {
            let file = std::fs::File::open(&path).with_context(cannot_read)?;
            Ok(std::io::BufReader::new(file))
        };
        // The plain bytes of a sealed file; `None` for a plain file.
        let opened = if sealed {
            let bytes = fs.read(&path).with_context(cannot_read)?;
            match snapshot::open_file(bytes, key) {
                Ok(bytes) => Some(bytes),
                Err(Unsealed::Damaged(reason)) => {
                    damaged.push(DamagedFile { file: path, reason });
                    continue;
                }
                Err(Unsealed::Key(reason)) => bail!(
                    "snapshot {}: {reason} (a node would refuse to start on this data dir)",
                    path.display()
                ),
            }
        } else {
            None
        };
        let whole = |_: &[u8]| Ok::<(), String>(());
        let framing = match &opened {
            Some(bytes) => snapshot::decode(bytes, whole),
            None => snapshot::decode_from(open()?, whole),
        };
        if let Err(reason) = framing {
            damaged.push(DamagedFile {
                file: path,
                reason: reason.to_string(),
            });
            continue;
        }
        let (meta, state) = match &opened {
            Some(bytes) => decode_snapshot(bytes),
            None => decode_snapshot_from(open()?),
        }
        .map_err(|reason| does_not_decode(reason.to_string()))?;
        let bytes = match &opened {
            Some(bytes) => bytes.len() as u64,
            None => std::fs::metadata(&path).with_context(cannot_read)?.len(),
        };
        let view = SnapshotView {
            id: meta.snapshot_id.clone(),
            file: path,
            last_log_id: meta.last_log_id.map(LogIdView::from),
            bytes,
            sealed,
        };
        return Ok((Some(view), damaged, state));
    }
    Ok((None, damaged, State::default()))
}

impl Report {
    /// The report for people, one `label  value` line per item.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let id =
            |view: Option<LogIdView>| {
                show_log_id(view.map(|v| {
                    LogId::new(openraft::CommittedLeaderId::new(v.term, v.leader), v.index)
                }))
            };
        let mut out = String::new();
        let mut line = |label: &str, value: String| {
            let _ = writeln!(out, "{label:<12} {value}");
        };
        line("data dir", self.data_dir.display().to_string());
        line(
            "segments",
            format!(
                "{} file{}, {} bytes",
                self.segments.count,
                if self.segments.count == 1 { "" } else { "s" },
                self.segments.bytes
            ),
        );
        line(
            "entries",
            match (self.entries.first, self.entries.last) {
                (Some(first), Some(last)) => {
                    let count = self.entries.count;
                    let plural = if count == 1 { "entry" } else { "entries" };
                    format!("{first}..{last} ({count} {plural})")
                }
                _ => "none".to_string(),
            },
        );
        line("committed", id(self.committed));
        line(
            "vote",
            match self.vote {
                Some(vote) => format!(
                    "term {}, node {}{}",
                    vote.term,
                    vote.node,
                    if vote.committed { ", committed" } else { "" }
                ),
                None => "none".to_string(),
            },
        );
        line("purged", id(self.purged));
        line(
            "snapshot",
            match &self.snapshot {
                Some(s) => format!(
                    "{}: up to {}, {} bytes ({})",
                    s.id,
                    id(s.last_log_id),
                    s.bytes,
                    s.file.display()
                ),
                None => "none".to_string(),
            },
        );
        line(
            "encryption",
            match &self.encryption {
                Some(e) => format!(
                    "on (key id {}, data key {}): {} log entries encrypted, {} plain (from before), snapshot {}",
                    e.kek_id,
                    e.data_key_id,
                    e.sealed_entries,
                    e.plain_entries,
                    match e.snapshot_sealed {
                        Some(true) => "encrypted",
                        Some(false) => "plain (from before)",
                        None => "none",
                    }
                ),
                None => "off".to_string(),
            },
        );
        for damaged in &self.damaged_snapshots {
            line(
                "  skipped",
                format!("{} (damaged: {})", damaged.file.display(), damaged.reason),
            );
        }
        line("applied", id(self.applied));
        if self.uncommitted_entries > 0 {
            line(
                "uncommitted",
                format!(
                    "{} entries after the commit point (not applied)",
                    self.uncommitted_entries
                ),
            );
        }
        line("membership", self.membership.line());
        line("configs", self.summary.configs.to_string());
        line("namespaces", self.summary.namespaces_line());
        line("grays", self.summary.grays.to_string());
        line("history", format!("{} rows", self.summary.history_rows));
        line("digest", self.summary.digest.clone());
        line(
            "torn tail",
            match &self.torn_tail {
                Some(t) => format!(
                    "{}: {}; {} bytes after offset {} were never acknowledged and a node would cut them off",
                    t.file.display(),
                    t.reason,
                    t.bytes,
                    t.offset
                ),
                None => "none".to_string(),
            },
        );
        out
    }
}
