//! `tacos-migrate`: moves data from other Nacos-compatible servers into Tacos.
//!
//! One source so far: r-nacos 0.4.x. [`run`] does a whole migration in three steps:
//!
//! 1. [`rnacos::read`] reads an r-nacos 0.4.x data dir (sled 0.34) into a
//!    [`rnacos::Source`], through a temporary copy (the dir itself is never written);
//! 2. [`convert::convert`] turns it into the records of a Tacos snapshot (namespaces,
//!    configs, history, users with argon2id password hashes), loads them into a
//!    `tacos_state::State` and checks it against the source (the md5 of every config,
//!    history order and ids, user rights);
//! 3. [`write::write`] encodes the records as a Tacos snapshot file and hands it to
//!    `tacos restore`, which builds the data dir of a one-voter cluster; the result is
//!    read back and its digest compared.
//!
//! A dry run stops after step 2 (without hashing passwords) and writes nothing. The
//! [`report`] module renders what was (or would be) moved.
//!
//! No auth key is written: when Tacos first starts on the new data dir its leader draws
//! one and creates the first admin (`--admin-username`, default `nacos`) unless a user of
//! that name was migrated. See docs/migration.md.
//!
//! Errors are typed: [`MigrateError`] wraps [`rnacos::ReadError`],
//! [`convert::ConvertError`] and [`write::WriteError`].

pub mod convert;
pub mod nacos_mysql;
pub mod report;
pub mod rnacos;
pub mod write;

use std::path::PathBuf;

use convert::{ConvertOptions, Converted, Progress, Report};
use rnacos::ReadOptions;
use write::{Target, TargetState, Written};

/// What to migrate, and where to.
#[derive(Debug, Clone)]
pub struct Options {
    /// The r-nacos data dir (`nacos_db`).
    pub from: PathBuf,
    /// How to read it (`skip_bad` also applies to the conversion).
    pub read: ReadOptions,
    /// Where to write. Required unless `dry_run`.
    pub target: Option<Target>,
    /// Read and convert, check, report; write nothing (and hash no password).
    pub dry_run: bool,
}

/// What a migration did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub from: PathBuf,
    pub dry_run: bool,
    pub target: Option<Target>,
    /// What was at the target before (when there is one).
    pub target_state: Option<TargetState>,
    /// What was (or would be) carried over.
    pub report: Report,
    /// What was written (`None` for a dry run).
    pub written: Option<Written>,
}

/// Why a migration failed. Nothing was written, unless the error says otherwise
/// ([`write::WriteError::Restore`] and [`write::WriteError::ReadBack`] say what happened
/// to the target).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrateError {
    #[error("reading the r-nacos data dir: {0}")]
    Read(#[from] rnacos::ReadError),
    #[error("converting: {0}")]
    Convert(#[from] convert::ConvertError),
    #[error(transparent)]
    Write(#[from] write::WriteError),
    /// Not a dry run, and no target.
    #[error("no Tacos data dir to write to (--to), and not a dry run")]
    NoTarget,
}

/// Runs a migration (see the crate docs). `progress` hears about the conversion.
pub fn run(options: &Options, progress: &mut dyn Progress) -> Result<Outcome, MigrateError> {
    let target_state = match (&options.target, options.dry_run) {
        (None, false) => return Err(MigrateError::NoTarget),
        (None, true) => None,
        // Fail before the (slow) work if the target will be refused anyway.
        (Some(target), false) => Some(write::check_target(target, &options.from)?),
        // A dry run reports a target that needs --force instead of failing.
        (Some(target), true) => {
            let forced = Target {
                force: true,
                ..target.clone()
            };
            Some(write::check_target(&forced, &options.from)?)
        }
    };

    progress.phase("reading");
    let source = rnacos::read(&options.from, &options.read)?;
    let convert_options = ConvertOptions {
        skip_bad: options.read.skip_bad,
        hash_passwords: !options.dry_run,
        now_ms: convert::now_ms(),
    };
    let converted = convert::convert(&source, &convert_options, progress);
    progress.finish();
    let converted: Converted = converted?;
    let written = match (&options.target, options.dry_run) {
        (Some(target), false) => Some(write::write(&converted, target)?),
        _ => None,
    };
    Ok(Outcome {
        from: options.from.clone(),
        dry_run: options.dry_run,
        target: options.target.clone(),
        target_state,
        report: converted.report,
        written,
    })
}
