//! Writes the converted state as a Tacos data dir, as `tacos restore` writes one.
//!
//! [`tacos::ops::restore::install`] does for the converted state what
//! `tacos restore --from FILE` does for a backup once decoded: the node (`--node-id` and
//! its addresses) becomes the only voter of a new cluster; the dir is built in a
//! temporary dir beside the target (its snapshot written a record at a time) and renamed
//! into place; a target that is not empty is refused unless `force`, and then renamed to
//! `TARGET.before-restore-TIME` (never deleted). Afterwards the dir is read back the way
//! `tacos inspect` reads it, and its digest must equal the converted state's.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use clap::Parser as _;
use tacos::ops::restore;
use tacos::settings::Settings;
use tacos_core::types::LogId;

use crate::convert::Converted;

/// What the restore output says the data came from.
const FROM: &str = "the migrated data";

/// Where and for which node to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The Tacos data dir to create.
    pub data_dir: PathBuf,
    /// Replace a data dir that is not empty (it is moved aside, not deleted).
    pub force: bool,
    /// As tacos's settings of the same name: the node that will serve the dir.
    pub node_id: u64,
    pub bind: IpAddr,
    pub http_port: u16,
    pub grpc_port: Option<u16>,
    pub cluster_port: Option<u16>,
    pub advertise: Option<String>,
}

impl Target {
    /// A target with tacos's defaults for node 1 on 127.0.0.1:8848.
    pub fn new(data_dir: impl Into<PathBuf>) -> Target {
        Target {
            data_dir: data_dir.into(),
            force: false,
            node_id: 1,
            bind: IpAddr::from([127, 0, 0, 1]),
            http_port: 8848,
            grpc_port: None,
            cluster_port: None,
            advertise: None,
        }
    }

    /// The tacos settings for this node, as `tacos restore` would get them from the same
    /// flags (`TACOS_*` environment variables apply to what no flag sets, as for tacos).
    pub fn settings(&self) -> Result<Settings, WriteError> {
        let mut args: Vec<String> = vec![
            "tacos".into(),
            "--data-dir".into(),
            self.data_dir.display().to_string(),
            "--node-id".into(),
            self.node_id.to_string(),
            "--bind".into(),
            self.bind.to_string(),
            "--http-port".into(),
            self.http_port.to_string(),
        ];
        if let Some(port) = self.grpc_port {
            args.extend(["--grpc-port".into(), port.to_string()]);
        }
        if let Some(port) = self.cluster_port {
            args.extend(["--cluster-port".into(), port.to_string()]);
        }
        if let Some(host) = &self.advertise {
            args.extend(["--advertise".into(), host.clone()]);
        }
        let settings = Settings::try_parse_from(&args).map_err(|e| WriteError::Settings {
            reason: e.to_string().trim().to_string(),
        })?;
        settings.validate().map_err(|e| {
            let mut reason = e.to_string();
            if e.name == "cluster-token" {
                reason.push_str(
                    " (set TACOS_CLUSTER_TOKEN for tacos-migrate as for tacos: it is only \
                     checked here, not stored)",
                );
            }
            WriteError::Settings { reason }
        })?;
        Ok(settings)
    }
}

/// What is at the target path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    Missing,
    Empty,
    /// Not empty: writing needs `force`.
    NotEmpty,
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub data_dir: PathBuf,
    /// Where the previous contents of the target went (with `force`).
    pub moved_aside: Option<PathBuf>,
    /// The state's digest, as read back from the data dir (`tacos inspect` shows the same,
    /// and so does `GET /tacos/v1/admin/digest` once the node runs).
    pub digest: String,
}

/// Why the data dir could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The target holds something and `force` was not given.
    #[error(
        "{} is not empty; the migration only fills a new or empty dir unless --force is \
         given (the old contents are then moved to {}.before-restore-TIME, not deleted); \
         nothing was written",
        path.display(),
        path.display()
    )]
    TargetNotEmpty { path: PathBuf },
    /// The target exists and is not a directory.
    #[error("{} exists and is not a directory; nothing was written", path.display())]
    TargetNotADirectory { path: PathBuf },
    /// The target is the source, inside it, or holds it.
    #[error(
        "the Tacos data dir {} must be outside the source data dir {} (and not hold it); \
         nothing was written",
        target.display(),
        source_dir.display()
    )]
    Overlap {
        target: PathBuf,
        source_dir: PathBuf,
    },
    /// The node settings are not valid for tacos.
    #[error("invalid node settings: {reason}")]
    Settings { reason: String },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `tacos restore` refused or failed (it says whether the target was changed).
    #[error("writing the Tacos data dir {} failed: {reason}", target.display())]
    Restore { target: PathBuf, reason: String },
    /// The written dir does not read back as what was converted.
    #[error("the written data dir {} does not read back as expected: {reason}", target.display())]
    ReadBack { target: PathBuf, reason: String },
}

/// Checks the target before anything is converted: not overlapping `source` (the source
/// dir, when the source is one), a directory if it exists, empty unless `force`, and valid
/// node settings.
pub fn check_target(target: &Target, source: Option<&Path>) -> Result<TargetState, WriteError> {
    target.settings()?;
    let dir = &target.data_dir;
    if dir.file_name().is_none() {
        return Err(WriteError::Settings {
            reason: format!("--to {} must name a directory (not . or ..)", dir.display()),
        });
    }
    if let Some(source) = source.filter(|source| overlaps(dir, source)) {
        return Err(WriteError::Overlap {
            target: dir.clone(),
            source_dir: source.to_path_buf(),
        });
    }
    let state = match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_none() {
                TargetState::Empty
            } else {
                TargetState::NotEmpty
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => TargetState::Missing,
        Err(_) if dir.exists() && !dir.is_dir() => {
            return Err(WriteError::TargetNotADirectory { path: dir.clone() })
        }
        Err(source) => {
            return Err(WriteError::Io {
                path: dir.clone(),
                source,
            })
        }
    };
    if state == TargetState::NotEmpty && !target.force {
        return Err(WriteError::TargetNotEmpty { path: dir.clone() });
    }
    Ok(state)
}

/// Writes `converted` as the data dir of `target` (see the module docs). Prints what
/// `tacos restore` prints to stdout.
///
/// Takes the conversion by value: the state is written a record at a time and dropped
/// before the new dir is read back, so the two are never held together.
pub fn write(converted: Converted, target: &Target) -> Result<Written, WriteError> {
    let Converted { mut state, report } = converted;
    let settings = target.settings()?;
    let dir = &target.data_dir;
    // The name was checked before converting (check_target); install makes the parent.
    // As if the state were a snapshot at log index 1 (restore gives it this node's
    // one-voter membership).
    state.last_applied = Some(LogId::new(
        openraft::CommittedLeaderId::new(1, target.node_id),
        1,
    ));
    give_back_freed_memory();
    let installed = restore::install(state, FROM, target.force, &settings).map_err(|e| {
        WriteError::Restore {
            target: dir.clone(),
            reason: format!("{e:#}"),
        }
    })?;
    print!("{}", installed.text);
    std::io::stdout().flush().ok();

    let summary = &installed.read_back.summary;
    if summary.configs != report.configs || summary.history_rows != report.history_rows {
        return Err(WriteError::ReadBack {
            target: dir.clone(),
            reason: format!(
                "it holds {} configs and {} history rows, not {} and {}",
                summary.configs, summary.history_rows, report.configs, report.history_rows
            ),
        });
    }
    Ok(Written {
        data_dir: dir.clone(),
        moved_aside: installed.moved_aside,
        digest: summary.digest.clone(),
    })
}

/// Returns the heap's free pages to the system. Converting frees the source's strings
/// in small blocks that glibc keeps; without this the install's copies come on top of
/// them (100,000 configs x 10 rows: 880 MiB of freed blocks were still resident).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Whether `a` and `b` are the same dir or one holds the other (symlinks resolved as far
/// as the paths exist).
fn overlaps(a: &Path, b: &Path) -> bool {
    let (a, b) = (resolve(a), resolve(b));
    a.starts_with(&b) || b.starts_with(&a)
}

/// An absolute path with symlinks resolved for its longest existing prefix.
fn resolve(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let mut rest = Vec::new();
    let mut current = absolute.as_path();
    loop {
        if let Ok(real) = current.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                current = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_is_found_both_ways_and_through_relative_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("nacos_db");
        std::fs::create_dir(&src).unwrap();
        assert!(overlaps(&src, &src));
        assert!(overlaps(&src.join("tacos"), &src));
        assert!(overlaps(tmp.path(), &src));
        assert!(overlaps(&src.join("a/../b"), &src));
        assert!(!overlaps(&tmp.path().join("tacos_data"), &src));
        assert!(!overlaps(&tmp.path().join("nacos_db2"), &src));
    }

    #[test]
    fn target_settings_follow_the_flags_and_are_validated() {
        let mut target = Target::new("/x/data");
        let s = target.settings().unwrap();
        assert_eq!(s.node_id, 1);
        assert_eq!(s.cluster_addr(), "127.0.0.1:9849");
        target.node_id = 3;
        target.http_port = 9000;
        target.cluster_port = Some(9500);
        target.advertise = Some("localhost".into());
        let s = target.settings().unwrap();
        assert_eq!(s.cluster_addr(), "localhost:9500");
        assert_eq!(s.http_addr(), "localhost:9000");
        target.advertise = Some("10.1.2.3".into());
        if std::env::var_os("TACOS_CLUSTER_TOKEN").is_none() {
            let e = target.settings().unwrap_err().to_string();
            assert!(e.contains("TACOS_CLUSTER_TOKEN"), "{e}");
        }
        target.advertise = None;
        target.node_id = 0;
        let e = target.settings().unwrap_err().to_string();
        assert!(e.contains("node-id"), "{e}");
    }

    #[test]
    fn check_target_refuses_a_non_empty_dir_without_force_and_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let source = tmp.path().join("nacos_db");
        let mut target = Target::new(tmp.path().join("data"));
        assert_eq!(
            check_target(&target, Some(&source)).unwrap(),
            TargetState::Missing
        );
        std::fs::create_dir(&target.data_dir).unwrap();
        assert_eq!(
            check_target(&target, Some(&source)).unwrap(),
            TargetState::Empty
        );
        std::fs::write(target.data_dir.join("x"), "x").unwrap();
        assert!(matches!(
            check_target(&target, Some(&source)),
            Err(WriteError::TargetNotEmpty { .. })
        ));
        target.force = true;
        assert_eq!(
            check_target(&target, Some(&source)).unwrap(),
            TargetState::NotEmpty
        );
        let file = Target::new(target.data_dir.join("x"));
        assert!(matches!(
            check_target(&file, Some(&source)),
            Err(WriteError::TargetNotADirectory { .. })
        ));
        let inside = Target::new(source.join("tacos"));
        assert!(matches!(
            check_target(&inside, Some(&source)),
            Err(WriteError::Overlap { .. })
        ));
    }
}
