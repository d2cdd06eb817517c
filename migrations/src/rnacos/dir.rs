//! Checks that a dir holds a sled 0.34 database and copies it, without writing to it.
//!
//! sled 0.34 writes whenever it opens a dir (it creates `blobs/`, may write a `conf`, takes
//! an exclusive `flock` on `db`, writes recovery snapshots and GCs blobs), and if `conf` or
//! `db` is missing it silently starts a fresh, empty database. So the source is only ever
//! read here: we check that `conf` is a sled 0.34 config and that `db` exists, then copy
//! the whole dir and let sled open the copy.

use std::fs::{self, File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

use super::ReadError;

/// The sled on-disk parameters from a `conf` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SledConf {
    pub segment_size: usize,
}

/// Checks `src` without writing to it. On success returns the parameters sled must be
/// opened with (sled refuses to open with a `segment_size` other than the stored one).
pub(crate) fn check_sled_dir(src: &Path) -> Result<SledConf, ReadError> {
    let meta = match fs::metadata(src) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ReadError::NotFound {
                path: src.to_path_buf(),
            })
        }
        Err(e) => return Err(io_err(src, e)),
    };
    if !meta.is_dir() {
        return Err(not_sled(src, "it is not a directory"));
    }
    let conf_path = src.join("conf");
    let conf = match fs::read(&conf_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(not_sled(src, "it has no `conf` file"))
        }
        Err(e) if conf_path.is_dir() => {
            return Err(not_sled(src, &format!("`conf` is not a file ({e})")))
        }
        Err(e) => return Err(io_err(&conf_path, e)),
    };
    let conf = parse_conf(&conf).map_err(|reason| not_sled(src, &reason))?;
    let db_path = src.join("db");
    match fs::metadata(&db_path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(not_sled(src, "`db` is not a file")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(not_sled(src, "it has a `conf` but no `db` file"))
        }
        Err(e) => return Err(io_err(&db_path, e)),
    }
    Ok(conf)
}

/// Parses sled 0.34's `conf`: UTF-8 lines `key: value` followed by a 4-byte crc32 of the
/// text (sled only warns when the crc does not match, so it is not checked here either).
/// sled treats a `conf` of 8 bytes or less as absent and would start a fresh database.
pub(crate) fn parse_conf(bytes: &[u8]) -> Result<SledConf, String> {
    if bytes.len() <= 8 {
        return Err(format!(
            "its `conf` file is {} bytes, too short to be a sled config",
            bytes.len()
        ));
    }
    let text = &bytes[..bytes.len() - 4];
    let text = std::str::from_utf8(text)
        .map_err(|_| "its `conf` file is not a sled config (not UTF-8 text)".to_string())?;
    let mut segment_size = None;
    let mut use_compression = None;
    let mut version = None;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(": ") else {
            return Err(format!(
                "its `conf` file is not a sled config (line {line:?})"
            ));
        };
        match k {
            "segment_size" => segment_size = Some(v),
            "use_compression" => use_compression = Some(v),
            "version" => version = Some(v),
            _ => {}
        }
    }
    let (Some(segment_size), Some(use_compression), Some(version)) =
        (segment_size, use_compression, version)
    else {
        return Err(
            "its `conf` file is not a sled config (needs segment_size, use_compression \
             and version)"
                .to_string(),
        );
    };
    if version != "0.34" {
        return Err(format!(
            "it was written by sled {version}, this tool reads sled 0.34 (r-nacos 0.4.x)"
        ));
    }
    let segment_size: usize = segment_size
        .parse()
        .ok()
        .filter(|s: &usize| s.is_power_of_two() && (256..=1 << 24).contains(s))
        .ok_or_else(|| format!("its `conf` has a bad segment_size {segment_size:?}"))?;
    match use_compression {
        "false" => {}
        "true" => {
            return Err(
                "it uses sled compression, which r-nacos 0.4 does not and this tool \
                 does not support"
                    .to_string(),
            )
        }
        other => return Err(format!("its `conf` has a bad use_compression {other:?}")),
    }
    Ok(SledConf { segment_size })
}

/// Copies `src` (files and subdirs, recursively) into the new dir `dst`.
///
/// While copying, a shared `flock` is held on `src/db` (read-only open, nothing written):
/// a running r-nacos holds an exclusive one, so this fails with [`ReadError::InUse`]
/// instead of copying a dir that is being written. If the file system does not support
/// locks the copy goes ahead without one.
pub(crate) fn copy_sled_dir(src: &Path, dst: &Path) -> Result<(), ReadError> {
    let db_path = src.join("db");
    let db = File::open(&db_path).map_err(|e| io_err(&db_path, e))?;
    match db.try_lock_shared() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(ReadError::InUse {
                path: src.to_path_buf(),
            })
        }
        // Locks unsupported (some network file systems): nothing to learn, carry on.
        Err(TryLockError::Error(_)) => {}
    }
    let result = copy_tree(src, dst);
    // Closing `db` releases the lock.
    drop(db);
    result
}

fn copy_tree(src: &Path, dst: &Path) -> Result<(), ReadError> {
    fs::create_dir(dst).map_err(|e| io_err(dst, e))?;
    let entries = fs::read_dir(src).map_err(|e| io_err(src, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_err(src, e))?;
        let from = entry.path();
        let to = dst.join(entry.file_name());
        // Follows symlinks: what matters is what sled would read.
        let meta = fs::metadata(&from).map_err(|e| io_err(&from, e))?;
        if meta.is_dir() {
            copy_tree(&from, &to)?;
        } else if meta.is_file() {
            fs::copy(&from, &to).map_err(|e| io_err(&from, e))?;
        } else {
            return Err(ReadError::NotSled {
                path: src.to_path_buf(),
                reason: format!("{} is neither a file nor a directory", from.display()),
            });
        }
    }
    Ok(())
}

fn not_sled(path: &Path, reason: &str) -> ReadError {
    ReadError::NotSled {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

fn io_err(path: &Path, source: io::Error) -> ReadError {
    ReadError::Io {
        path: PathBuf::from(path),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(text: &str) -> Vec<u8> {
        let mut bytes = text.as_bytes().to_vec();
        bytes.extend([1, 2, 3, 4]);
        bytes
    }

    #[test]
    fn parses_a_sled_034_conf() {
        let c = parse_conf(&conf(
            "segment_size: 524288\nuse_compression: false\nversion: 0.34\n",
        ));
        assert_eq!(
            c,
            Ok(SledConf {
                segment_size: 524288
            })
        );
        let c = parse_conf(&conf(
            "segment_size: 1048576\nuse_compression: false\nversion: 0.34\n",
        ));
        assert_eq!(
            c,
            Ok(SledConf {
                segment_size: 1 << 20
            })
        );
    }

    #[test]
    fn refuses_other_confs() {
        for text in [
            "",
            "12345",
            "segment_size: 524288\nversion: 0.34\n",
            "segment_size: 524288\nuse_compression: false\nversion: 0.31\n",
            "segment_size: 524288\nuse_compression: true\nversion: 0.34\n",
            "segment_size: 1000\nuse_compression: false\nversion: 0.34\n",
            "segment_size: 524288\nuse_compression: maybe\nversion: 0.34\n",
            "random words\n",
        ] {
            assert!(parse_conf(&conf(text)).is_err(), "{text:?}");
        }
        assert!(parse_conf(b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6").is_err());
    }
}
