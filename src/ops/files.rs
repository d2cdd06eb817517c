//! Files the operator tools write: durably (temp file, fsync, rename,
//! fsync the directory).

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The directory a path is in ("." for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
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
pub fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot fsync the directory {}", dir.display()))
}
