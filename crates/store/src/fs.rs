//! The file operations the store needs, behind a trait.
//!
//! Production uses [`StdFs`]: plain `std::fs` files, called from the store's
//! own threads (never `tokio::fs`). Tests swap in
//! [`FaultyFs`](super::faulty_fs::FaultyFs), which models what a crash keeps
//! (only synced bytes and synced directory entries) and can fail a write or an
//! fsync with ENOSPC or EIO.
//!
//! The surface is deliberately small: whole-file reads (recovery reads each
//! file once), append-only writers, truncation, rename, remove, directory
//! fsync, and an exclusive lock.

use std::any::Any;
use std::fmt::Debug;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A file system as the store sees it.
pub trait Fs: Send + Sync + Debug + 'static {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Lists the files (not directories) directly in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Opens a file to read it from the start, a piece at a time (a large
    /// snapshot decoded as it is read). By default the whole file is read
    /// first ([`Fs::read`]).
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(io::Cursor::new(self.read(path)?)))
    }
    /// Reads exactly `len` bytes of a file from `offset` (the log reads
    /// older entries back from their segment this way).
    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> bool;
    /// Creates (or empties) a file and opens it for appending.
    fn create(&self, path: &Path) -> io::Result<Box<dyn AppendFile>>;
    /// Opens an existing file for appending at its end.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>>;
    /// Atomically replaces `to` with `from` (durable only after [`Fs::sync_dir`]).
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file (durable only after [`Fs::sync_dir`]).
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes creations, renames and removals in `dir` durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Takes an exclusive lock on `path`, held until the guard is dropped.
    /// Fails with [`io::ErrorKind::WouldBlock`] when someone else holds it;
    /// the error message then says who, if known.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>>;
}

/// A file open for appending.
pub trait AppendFile: Send + Debug {
    /// Appends all of `buf`.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes the data written so far durable (`fdatasync`).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Cuts (or extends) the file to `len` bytes; later writes go after it.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// The current length.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or
/// the whole new one: write `temp` (beside `path`), fsync it, rename it over
/// `path`, fsync the directory. Every durable file replacement (metadata,
/// snapshots, backups) goes through here, and so through [`Fs`], where the
/// fault tests inject errors. A failed step removes the temp file.
pub fn write_atomically(
    fs: &dyn Fs,
    path: &Path,
    temp: &Path,
    bytes: &[u8],
) -> Result<(), crate::StoreError> {
    write_atomically_with(fs, path, temp, |file| file.write_all(bytes))
}

/// [`write_atomically`] with the contents written by `write`, a piece at a
/// time (a snapshot too large to hold whole as bytes).
pub fn write_atomically_with(
    fs: &dyn Fs,
    path: &Path,
    temp: &Path,
    write: impl FnOnce(&mut dyn AppendFile) -> io::Result<()>,
) -> Result<(), crate::StoreError> {
    use crate::StoreError;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let written = (|| {
        let mut file = fs.create(temp).map_err(StoreError::io("create", temp))?;
        write(file.as_mut()).map_err(StoreError::io("write", temp))?;
        file.sync_data().map_err(StoreError::io("fsync", temp))?;
        drop(file);
        fs.rename(temp, path)
            .map_err(StoreError::io("rename", temp))?;
        fs.sync_dir(&dir).map_err(StoreError::io("fsync", &dir))
    })();
    if written.is_err() {
        let _ = fs.remove(temp);
    }
    written
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile {
    file: File,
    len: u64,
}

impl AppendFile for StdFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)?;
        self.len += buf.len() as u64;
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.file.seek(SeekFrom::Start(len))?;
        self.len = len;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Fs for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                files.push(entry.path());
            }
        }
        files.sort();
        Ok(files)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0; len];
        File::open(path)?.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(io::BufReader::new(File::open(path)?)))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(StdFile { file, len: 0 }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        // Not O_APPEND: `set_len` followed by a seek decides where writes go.
        let mut file = OpenOptions::new().write(true).open(path)?;
        let len = file.seek(SeekFrom::End(0))?;
        Ok(Box::new(StdFile { file, len }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // Best effort: the holder wrote its pid into the file.
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let who = if holder.is_empty() {
                    String::new()
                } else {
                    format!(" (pid {holder})")
                };
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!("already locked by another process{who}"),
                ));
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        writeln!(file, "{}", std::process::id())?;
        Ok(Box::new(file))
    }
}
