//! `tacos-migrate`: moves data from other Nacos-compatible servers into Tacos.
//!
//! [`run`] does a whole migration in three steps:
//!
//! 1. a reader turns the source into a [`source::Source`], the same plain model whatever
//!    the source: [`rnacos::read`] for an r-nacos 0.4.x data dir (sled 0.34),
//!    [`rnacos_raft::read`] for an r-nacos 0.5–0.8 data dir (its Raft index, log and
//!    snapshot files), [`nacos_mysql::read_with`] and [`nacos_mysql::map::map_with`] for a
//!    Java Nacos database on MySQL/MariaDB (`--from mysql://...`; the history is mapped
//!    row by row as it is read), [`nacos_http::read`] for a
//!    live Nacos-compatible server over its HTTP API (`--from http://...`). Readers never write to the
//!    source (they read through a temporary copy, or read only);
//! 2. [`convert::convert`] turns it into the records of a Tacos snapshot (namespaces,
//!    configs, history, users: plain passwords hashed with argon2id, BCrypt hashes kept
//!    for Tacos to verify and re-hash at first login) and loads each into a
//!    `tacos_state::State` as it is made (taking the source apart as it goes), then
//!    checks the state against the source (the md5 of every config, history order and
//!    ids, user rights);
//! 3. [`write::write`] hands the state to the restore code
//!    (`tacos::ops::restore::install`), which writes it as the snapshot of the data dir of
//!    a one-voter cluster a record at a time; the result is read back and its digest
//!    compared.
//!
//! A dry run stops after step 2 (without hashing passwords) and writes nothing. The
//! [`report`] module renders what was (or would be) moved.
//!
//! # Adding a source
//!
//! [`Input`] names what to read, one variant per reader; [`Input::read`] calls the
//! reader, which returns a [`source::Source`] or its own typed error (wrapped in
//! [`MigrateError`]). A new source is a module with a `read` function, one more `Input`
//! variant and one more `MigrateError` variant; [`detect`] picks between the data dir
//! kinds when the user gives only `--from DIR`.
//!
//! No auth key is written: when Tacos first starts on the new data dir its leader draws
//! one and creates the first admin (`--admin-username`, default `nacos`) unless a user of
//! that name was migrated. See docs/migration.md.

pub mod convert;
pub mod nacos_http;
pub mod nacos_mysql;
pub mod report;
pub mod rnacos;
pub mod rnacos_raft;
pub mod source;
pub mod write;

use std::fmt;
use std::path::{Path, PathBuf};

use convert::{ConvertOptions, Converted, Progress, Report};
pub use source::ReadOptions;
use write::{Target, TargetState, Written};

/// What to read: one variant per reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// An r-nacos 0.4.x data dir: sled 0.34 (`conf` and `db`), read by [`rnacos::read`].
    RnacosSled(PathBuf),
    /// An r-nacos 0.5–0.8 data dir: Raft `index`, `log_*` and `snapshot_*` files, read
    /// by [`rnacos_raft::read`].
    RnacosRaft(PathBuf),
    /// A Java Nacos database on MySQL or MariaDB (`mysql://user:password@host:port/db`),
    /// read by [`nacos_mysql::read_with`] and mapped by [`nacos_mysql::map::map_with`].
    NacosMysql(nacos_mysql::Url),
    /// A live Nacos-compatible server (`http://host:port`: Java Nacos, r-nacos, Tacos),
    /// read over its HTTP open API by [`nacos_http::read`].
    NacosHttp(nacos_http::Endpoint),
}

impl Input {
    /// The source dir, when the source is a dir (the target must not overlap it).
    pub fn dir(&self) -> Option<&Path> {
        match self {
            Input::RnacosSled(dir) | Input::RnacosRaft(dir) => Some(dir),
            Input::NacosMysql(_) | Input::NacosHttp(_) => None,
        }
    }

    /// Reads the source.
    pub fn read(&self, options: &ReadOptions) -> Result<source::Source, MigrateError> {
        Ok(match self {
            Input::RnacosSled(dir) => rnacos::read(dir, options)?,
            Input::RnacosRaft(dir) => rnacos_raft::read(dir, options)?,
            Input::NacosMysql(url) => {
                let map_options = nacos_mysql::map::MapOptions {
                    skip_bad: options.skip_bad,
                    now_s: convert::now_ms() / 1000,
                };
                // The history is mapped as it is read: held as read, it was most of
                // the peak.
                let mut history = nacos_mysql::map::History::new(&map_options);
                let tables = nacos_mysql::read_with(
                    url.as_str(),
                    &nacos_mysql::ReadOptions {
                        skip_bad: options.skip_bad,
                        ..nacos_mysql::ReadOptions::default()
                    },
                    |row| history.add(row).map_err(MigrateError::from),
                )?;
                nacos_mysql::map::map_with(tables, history, &map_options)?
            }
            Input::NacosHttp(endpoint) => nacos_http::read(endpoint, options)?,
        })
    }
}

impl fmt::Display for Input {
    /// `r-nacos 0.4 data dir DIR`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::RnacosSled(dir) => write!(f, "r-nacos 0.4 data dir {}", dir.display()),
            Input::RnacosRaft(dir) => {
                write!(f, "r-nacos 0.5-0.8 data dir {}", dir.display())
            }
            Input::NacosMysql(url) => write!(f, "Java Nacos database {url}"),
            Input::NacosHttp(endpoint) => write!(f, "Nacos-compatible server {endpoint}"),
        }
    }
}

/// The kinds of data dir `--from` may name (`--from-kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind {
    /// r-nacos 0.4.x: sled 0.34 (`conf` and `db` files).
    Rnacos04,
    /// r-nacos 0.5 to 0.8: Raft files (`index`, `log_*`, `snapshot_*`).
    Rnacos,
}

impl DirKind {
    fn input(self, dir: PathBuf) -> Input {
        match self {
            DirKind::Rnacos04 => Input::RnacosSled(dir),
            DirKind::Rnacos => Input::RnacosRaft(dir),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            DirKind::Rnacos04 => "an r-nacos 0.4 data dir (sled: `conf` and `db`)",
            DirKind::Rnacos => "an r-nacos 0.5-0.8 data dir (Raft: `index` and `log_*`)",
        }
    }

    /// The `--from-kind` value.
    pub fn name(self) -> &'static str {
        match self {
            DirKind::Rnacos04 => "rnacos04",
            DirKind::Rnacos => "rnacos",
        }
    }
}

/// Why `--from` names no dir of the kind wanted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DetectError {
    #[error("{}: no such directory", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a directory", path.display())]
    NotADir { path: PathBuf },
    /// Auto-detection found no known kind.
    #[error(
        "{} is neither an r-nacos 0.4 data dir (sled: `conf` and `db`) nor an r-nacos \
         0.5-0.8 data dir (Raft: `index` and `log_*`); it holds: {found}",
        path.display()
    )]
    Unknown { path: PathBuf, found: String },
    /// Auto-detection found both kinds.
    #[error(
        "{} holds both an r-nacos 0.4 sled database and r-nacos 0.5+ Raft files ({found}); \
         say which to read with --from-kind rnacos04 or --from-kind rnacos",
        path.display()
    )]
    Ambiguous { path: PathBuf, found: String },
    /// `--from-kind` named another kind than the dir is.
    #[error(
        "{} is not {}: it looks like {} ({found}); use --from-kind {} (or leave \
         --from-kind out)",
        path.display(),
        wanted.describe(),
        found_kind.describe(),
        found_kind.name()
    )]
    WrongKind {
        path: PathBuf,
        wanted: DirKind,
        found_kind: DirKind,
        found: String,
    },
}

/// Picks the reader for the dir `dir`: `kind` when given (refused if the dir is plainly
/// of the other kind), else by its files: `conf` and `db` make an r-nacos 0.4 sled dir,
/// `index` (with `log_*` files) an r-nacos 0.5–0.8 Raft dir. Reads names only.
pub fn detect(dir: &Path, kind: Option<DirKind>) -> Result<Input, DetectError> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DetectError::NotFound {
                path: dir.to_path_buf(),
            })
        }
        Err(source) => {
            return Err(DetectError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    if !meta.is_dir() {
        return Err(DetectError::NotADir {
            path: dir.to_path_buf(),
        });
    }
    let entries = std::fs::read_dir(dir).map_err(|source| DetectError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| DetectError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    let has = |name: &str| names.iter().any(|n| n == name);
    let sled = has("conf") && has("db");
    let raft = has("index");
    let found = || {
        if names.is_empty() {
            "nothing".to_string()
        } else {
            let mut shown: Vec<&str> = names.iter().take(12).map(String::as_str).collect();
            if names.len() > shown.len() {
                shown.push("...");
            }
            shown.join(", ")
        }
    };
    let path = dir.to_path_buf();
    let found_kind = match (sled, raft) {
        (true, false) => Some(DirKind::Rnacos04),
        (false, true) => Some(DirKind::Rnacos),
        (true, true) => None,
        (false, false) => None,
    };
    match (kind, found_kind) {
        (Some(wanted), Some(found_kind)) if wanted != found_kind => Err(DetectError::WrongKind {
            path,
            wanted,
            found_kind,
            found: found(),
        }),
        // The reader says precisely what is missing.
        (Some(wanted), _) => Ok(wanted.input(path)),
        (None, Some(found_kind)) => Ok(found_kind.input(path)),
        (None, None) if sled && raft => Err(DetectError::Ambiguous {
            path,
            found: found(),
        }),
        (None, None) => Err(DetectError::Unknown {
            path,
            found: found(),
        }),
    }
}

/// What to migrate, and where to.
#[derive(Debug, Clone)]
pub struct Options {
    /// What to read.
    pub from: Input,
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
    pub from: Input,
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
    #[error("reading the r-nacos 0.4 data dir: {0}")]
    Read(#[from] rnacos::ReadError),
    #[error("reading the r-nacos 0.5-0.8 data dir: {0}")]
    ReadRaft(#[from] rnacos_raft::ReadError),
    #[error("reading the Java Nacos database: {0}")]
    ReadMysql(#[from] nacos_mysql::ReadError),
    #[error("reading the Java Nacos database: {0}")]
    MapMysql(#[from] nacos_mysql::map::MapError),
    #[error("reading the server over HTTP: {0}")]
    ReadHttp(#[from] nacos_http::ReadError),
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
        (Some(target), false) => Some(write::check_target(target, options.from.dir())?),
        // A dry run reports a target that needs --force instead of failing.
        (Some(target), true) => {
            let forced = Target {
                force: true,
                ..target.clone()
            };
            Some(write::check_target(&forced, options.from.dir())?)
        }
    };

    progress.phase("reading");
    let source = options.from.read(&options.read)?;
    let convert_options = ConvertOptions {
        skip_bad: options.read.skip_bad,
        hash_passwords: !options.dry_run,
        now_ms: convert::now_ms(),
    };
    // The source is taken apart as it is converted; the state holds everything after.
    let converted = convert::convert(source, &convert_options, progress);
    progress.finish();
    let converted: Converted = converted?;
    let report = converted.report.clone();
    let written = match (&options.target, options.dry_run) {
        (Some(target), false) => Some(write::write(converted, target)?),
        _ => None,
    };
    Ok(Outcome {
        from: options.from.clone(),
        dry_run: options.dry_run,
        target: options.target.clone(),
        target_state,
        report,
        written,
    })
}
