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
mod files;
pub mod inspect;
mod node_settings;
mod output;
pub mod rekey;
pub mod restore;
pub mod routes;
mod views;

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
pub fn run(command: &Command, settings: &dyn NodeSettings) -> anyhow::Result<()> {
    match command {
        Command::Inspect(args) => inspect::run(args, settings),
        Command::Backup(args) => backup::run(args, settings.kek()?.as_deref()),
        Command::Restore(args) => restore::run(args, settings),
        Command::Routes(args) => routes::run(args),
        Command::Rekey(args) => rekey::run(args, settings),
    }
}

pub use node_settings::NodeSettings;
pub use output::{is_broken_pipe, print_out};
pub use tacos_raft::state_machine::{decode_snapshot, decode_snapshot_from};

#[cfg(test)]
mod tests;
