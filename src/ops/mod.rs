//! Operator tools: subcommands that run and exit instead of serving.
//!
//! * `tacos inspect [DATA_DIR] [--json]` ([`inspect`]): what a stopped
//!   node's data dir holds, read-only: the log, the commit point, the vote,
//!   the newest snapshot, and the state rebuilt from them (counts and the
//!   same digest `GET /tacos/v1/admin/digest` reports).
//! * `tacos backup --node HOST:PORT --out FILE` ([`backup`]; a TLS node as
//!   `https://HOST:PORT` with `--cacert`, `--cert`/`--key`): downloads
//!   `GET /tacos/v1/admin/backup` (a snapshot file of the node's applied
//!   state), checks it decodes and matches the digest the node sent, and
//!   writes it durably.
//! * `tacos restore --from FILE` ([`restore`]): turns a backup into a fresh
//!   data dir for this node (`--data-dir`, `--node-id`, its addresses), a
//!   one-voter cluster that other nodes can then `--join`.
//! * `tacos rekey --new-key-file NEW` ([`rekey`]): rotates the key that
//!   wraps an encrypted data dir's data key (docs/security.md).
//!
//! * `tacos routes [--json]` ([`routes`]): every HTTP route and what it
//!   needs.
//!
//! See docs/operations.md, "Backup, restore and inspect".

pub mod backup;
pub mod inspect;
pub mod rekey;
pub mod restore;
pub mod routes;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use tacos_core::types::{LogId, NodeId, StoredMembership, Vote};
use tacos_state::State;

/// The operator subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Command {
    /// Print what a data dir holds (log, commit point, vote, snapshot, and
    /// the state rebuilt from them), without starting a node or changing a
    /// file. Refuses while a node uses the dir.
    Inspect(inspect::InspectArgs),
    /// Download a consistent backup of a running node's state
    /// (GET /tacos/v1/admin/backup), verify it and write it to a file.
    Backup(backup::BackupArgs),
    /// Make a fresh data dir (--data-dir) from a backup file, with this node
    /// (--node-id and its addresses) as the only voter.
    Restore(restore::RestoreArgs),
    /// List every HTTP route and what it needs (public, open API, login,
    /// admin).
    Routes(routes::RoutesArgs),
    /// Rotate the key-encryption key of a stopped node's encrypted data dir:
    /// rewrap its data key from --encryption-key-file (the current key) to
    /// --new-key-file. The log and snapshots are not rewritten and load as
    /// before; start the node with the new key afterwards.
    Rekey(rekey::RekeyArgs),
}

impl Command {
    /// The subcommand's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Inspect(_) => "inspect",
            Command::Backup(_) => "backup",
            Command::Restore(_) => "restore",
            Command::Routes(_) => "routes",
            Command::Rekey(_) => "rekey",
        }
    }
}

/// Runs an operator subcommand; what it prints goes to stdout.
/// Writes `text` to stdout. A reader that went away (`tacos routes | head`)
/// is an error of kind `BrokenPipe`, which `main` treats as a quiet end
/// (`println!` would panic).
pub fn print_out(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Whether an operator tool's error is only that stdout's reader went away.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// What the operator tools need of the node's settings. The settings
/// implement it (`crate::settings`), so the tools do not know the settings
/// type, and the settings, which hold the subcommand, are the one side of
/// the arrow between them.
pub trait NodeSettings {
    /// The node's data dir.
    fn data_dir(&self) -> &Path;
    /// The node's Raft id.
    fn node_id(&self) -> NodeId;
    /// How other nodes reach this one (the cluster port).
    fn cluster_addr(&self) -> String;
    /// How clients reach this one (the HTTP port).
    fn http_addr(&self) -> String;
    /// The key-encryption key, when encryption at rest is on.
    fn kek(&self) -> anyhow::Result<Option<std::sync::Arc<tacos_store::Kek>>>;
    /// The settings' own checks (a restore makes a node of them).
    fn validate(&self) -> anyhow::Result<()>;
}

pub fn run(command: &Command, settings: &dyn NodeSettings) -> anyhow::Result<()> {
    match command {
        Command::Inspect(args) => inspect::run(args, settings),
        Command::Backup(args) => backup::run(args, settings.kek()?.as_deref()),
        Command::Restore(args) => restore::run(args, settings),
        Command::Routes(args) => routes::run(args),
        Command::Rekey(args) => rekey::run(args, settings),
    }
}

pub use tacos_raft::state_machine::decode_snapshot;

/// Snapshot record kinds, as `State::snapshot_records` writes them
/// (src/state/snapshot.rs); counted, never decoded, here.
const NAMESPACE_RECORD: u8 = 2;
const CONFIG_RECORD: u8 = 3;
const HISTORY_RECORD: u8 = 5;

/// What a state holds, in numbers, and its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub configs: usize,
    /// The public namespace first, then the custom ones.
    pub namespaces: Vec<NamespaceSummary>,
    /// Gray versions (betas and tags) of all configs.
    pub grays: usize,
    pub history_rows: usize,
    /// `State::digest()`: what `GET /tacos/v1/admin/digest` reports.
    pub digest: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceSummary {
    /// "public" for the public namespace.
    pub id: String,
    pub name: String,
    pub configs: usize,
}

impl Summary {
    pub fn of(state: &State) -> Summary {
        let (mut configs, mut namespaces, mut history_rows) = (0, 0, 0);
        for record in state.snapshot_records() {
            match record.first() {
                Some(&CONFIG_RECORD) => configs += 1,
                Some(&NAMESPACE_RECORD) => namespaces += 1,
                Some(&HISTORY_RECORD) => history_rows += 1,
                _ => {}
            }
        }
        debug_assert_eq!(configs, state.config_count());
        debug_assert_eq!(namespaces, state.namespaces().count());
        let mut listed = vec![NamespaceSummary {
            id: tacos_state::PUBLIC_NAMESPACE.to_string(),
            name: tacos_state::PUBLIC_NAMESPACE.to_string(),
            configs: state.configs_in("").count(),
        }];
        listed.extend(state.namespaces().map(|n| NamespaceSummary {
            id: n.id.clone(),
            name: n.name.clone(),
            configs: state.configs_in(&n.id).count(),
        }));
        Summary {
            configs: state.config_count(),
            namespaces: listed,
            grays: state.all_grays().map(|(_, grays)| grays.len()).sum(),
            history_rows,
            digest: state.digest(),
        }
    }

    /// The namespaces as one line: `public (3 configs), dev "Dev" (1 config)`.
    pub fn namespaces_line(&self) -> String {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        self.namespaces
            .iter()
            .map(|n| {
                let name = if n.name.is_empty() || n.name == n.id {
                    String::new()
                } else {
                    format!(" {:?}", n.name)
                };
                format!("{}{name} ({} config{})", n.id, n.configs, plural(n.configs))
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A log id for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LogIdView {
    pub index: u64,
    pub term: u64,
    /// The node that led the term.
    pub leader: NodeId,
}

impl From<LogId> for LogIdView {
    fn from(id: LogId) -> Self {
        LogIdView {
            index: id.index,
            term: id.leader_id.term,
            leader: id.leader_id.node_id,
        }
    }
}

/// `index 42 (term 3, leader 1)`, or `none`.
pub fn show_log_id(id: Option<LogId>) -> String {
    match id {
        Some(id) => format!(
            "index {} (term {}, leader {})",
            id.index, id.leader_id.term, id.leader_id.node_id
        ),
        None => "none".to_string(),
    }
}

/// A vote for JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VoteView {
    pub term: u64,
    pub node: NodeId,
    /// Whether a quorum granted it (the node led that term).
    pub committed: bool,
}

impl From<Vote> for VoteView {
    fn from(vote: Vote) -> Self {
        VoteView {
            term: vote.leader_id.term,
            node: vote.leader_id.node_id,
            committed: vote.committed,
        }
    }
}

/// A membership for JSON output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    /// The log entry that set it.
    pub log_id: Option<LogIdView>,
    pub voters: Vec<MemberView>,
    pub learners: Vec<MemberView>,
    /// More than one voter set: a membership change was in progress.
    pub joint: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: NodeId,
    pub cluster_addr: String,
    pub http_addr: String,
}

impl From<&StoredMembership> for MembershipView {
    fn from(stored: &StoredMembership) -> Self {
        let membership = stored.membership();
        let member = |id: NodeId| {
            let node = membership.get_node(&id).cloned().unwrap_or_default();
            MemberView {
                id,
                cluster_addr: node.cluster_addr,
                http_addr: node.http_addr,
            }
        };
        MembershipView {
            log_id: stored.log_id().map(LogIdView::from),
            voters: membership.voter_ids().map(member).collect(),
            learners: membership.learner_ids().map(member).collect(),
            joint: membership.get_joint_config().len() > 1,
        }
    }
}

impl MembershipView {
    /// `voters node 1 (cluster 127.0.0.1:9849, http 127.0.0.1:8848); learners none`.
    pub fn line(&self) -> String {
        let list = |members: &[MemberView]| {
            if members.is_empty() {
                return "none".to_string();
            }
            members
                .iter()
                .map(|m| {
                    format!(
                        "node {} (cluster {}, http {})",
                        m.id, m.cluster_addr, m.http_addr
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let joint = if self.joint {
            " [joint: a membership change was in progress]"
        } else {
            ""
        };
        format!(
            "voters {}; learners {}{joint}",
            list(&self.voters),
            list(&self.learners)
        )
    }
}

/// The directory a path is in ("." for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or
/// the whole new one: a temp file beside it, fsync, rename, fsync the dir.
pub fn write_file_durably(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = parent_dir(path);
    let name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?;
    let temp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    tacos_store::fs::write_atomically(&tacos_store::StdFs, path, &temp, bytes)?;
    Ok(())
}

/// Makes creations, renames and removals in `dir` durable.
fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot fsync the directory {}", dir.display()))
}

#[cfg(test)]
mod tests;
