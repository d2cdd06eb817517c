//! An in-memory file system for tests that models a crash and injects errors.
//!
//! What survives [`FaultyFs::crash`] is what a real disk promises after power
//! loss: file contents as of their last `sync_data`, and directory entries
//! (creations, renames, removals) as of the last `sync_dir` of their
//! directory. Everything else is dropped. Handles opened before a crash fail
//! afterwards, as the process that held them is gone.
//!
//! Faults: writes can be made to fail with an errno once a byte budget is
//! used up (ENOSPC: a disk filling up, with a partial write first), and
//! fsyncs can be made to fail (EIO).
//!
//! Compiled for unit tests, and for integration tests with the
//! `fault-injection` feature; never in a release binary.

use std::any::Any;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::fs::{AppendFile, Fs};

/// `ENOSPC`: no space left on device.
pub const ENOSPC: i32 = 28;
/// `EIO`: I/O error.
pub const EIO: i32 = 5;

#[derive(Debug, Default)]
struct FileData {
    data: Vec<u8>,
    synced: Vec<u8>,
}

#[derive(Debug, Default)]
struct Inner {
    files: HashMap<u64, FileData>,
    names: BTreeMap<PathBuf, u64>,
    durable: BTreeMap<PathBuf, u64>,
    next_inode: u64,
    locks: HashSet<PathBuf>,
    generation: u64,
    write_budget: Option<(u64, i32)>,
    fail_sync: Option<i32>,
    sync_delay: std::time::Duration,
    syncs: u64,
}

/// The fault-injecting file system; clones share the same disk.
#[derive(Debug, Clone, Default)]
pub struct FaultyFs {
    inner: Arc<Mutex<Inner>>,
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

impl FaultyFs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets `bytes` more bytes be written, then fails writes with `errno`
    /// (the write that crosses the limit is partial).
    pub fn fail_writes_after(&self, bytes: u64, errno: i32) {
        lock(&self.inner).write_budget = Some((bytes, errno));
    }

    /// Makes every later `sync_data` and `sync_dir` fail with `errno`.
    pub fn fail_syncs(&self, errno: i32) {
        lock(&self.inner).fail_sync = Some(errno);
    }

    /// Removes all injected faults.
    pub fn clear_faults(&self) {
        let mut inner = lock(&self.inner);
        inner.write_budget = None;
        inner.fail_sync = None;
    }

    /// Makes every `sync_data` take this long, like a real disk's flush.
    pub fn set_sync_delay(&self, delay: std::time::Duration) {
        lock(&self.inner).sync_delay = delay;
    }

    /// How many successful `sync_data` calls have been made.
    pub fn syncs(&self) -> u64 {
        lock(&self.inner).syncs
    }

    /// Simulates power loss: keeps only synced data and synced directory
    /// entries, releases locks, and invalidates every open handle.
    pub fn crash(&self) {
        let mut inner = lock(&self.inner);
        inner.names = inner.durable.clone();
        let live: HashSet<u64> = inner.names.values().copied().collect();
        inner.files.retain(|inode, _| live.contains(inode));
        for file in inner.files.values_mut() {
            file.data = file.synced.clone();
        }
        inner.locks.clear();
        inner.generation += 1;
        inner.write_budget = None;
        inner.fail_sync = None;
    }

    /// The live contents of a file (for tests that inspect or damage it).
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let inner = lock(&self.inner);
        let inode = inner.names.get(path)?;
        Some(inner.files.get(inode)?.data.clone())
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Arc<Mutex<Inner>>,
    inode: u64,
    generation: u64,
    path: PathBuf,
}

impl FaultyFile {
    fn with<T>(&self, f: impl FnOnce(&mut Inner, u64) -> io::Result<T>) -> io::Result<T> {
        let mut inner = lock(&self.inner);
        if inner.generation != self.generation {
            return Err(io::Error::other(format!(
                "{}: handle from before a crash",
                self.path.display()
            )));
        }
        f(&mut inner, self.inode)
    }
}

impl AppendFile for FaultyFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.with(|inner, inode| {
            let mut take = buf.len();
            let mut fail = None;
            if let Some((budget, errno)) = inner.write_budget.as_mut() {
                if (*budget as usize) < take {
                    take = *budget as usize;
                    fail = Some(*errno);
                }
                *budget -= take as u64;
            }
            let file = inner
                .files
                .get_mut(&inode)
                .ok_or_else(|| io::Error::other("gone"))?;
            file.data.extend_from_slice(&buf[..take]);
            match fail {
                Some(errno) => Err(io::Error::from_raw_os_error(errno)),
                None => Ok(()),
            }
        })
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let delay = lock(&self.inner).sync_delay;
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        self.with(|inner, inode| {
            if let Some(errno) = inner.fail_sync {
                return Err(io::Error::from_raw_os_error(errno));
            }
            inner.syncs += 1;
            let file = inner
                .files
                .get_mut(&inode)
                .ok_or_else(|| io::Error::other("gone"))?;
            file.synced = file.data.clone();
            Ok(())
        })
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.with(|inner, inode| {
            let file = inner
                .files
                .get_mut(&inode)
                .ok_or_else(|| io::Error::other("gone"))?;
            file.data.resize(len as usize, 0);
            Ok(())
        })
    }

    fn len(&self) -> u64 {
        self.with(|inner, inode| Ok(inner.files.get(&inode).map_or(0, |f| f.data.len() as u64)))
            .unwrap_or(0)
    }
}

struct LockGuard {
    inner: Arc<Mutex<Inner>>,
    path: PathBuf,
    generation: u64,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let mut inner = lock(&self.inner);
        if inner.generation == self.generation {
            inner.locks.remove(&self.path);
        }
    }
}

impl Fs for FaultyFs {
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let inner = lock(&self.inner);
        Ok(inner
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect())
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.contents(path).ok_or_else(|| not_found(path))
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let inner = lock(&self.inner);
        let data = inner
            .names
            .get(path)
            .and_then(|inode| inner.files.get(inode))
            .map(|file| &file.data)
            .ok_or_else(|| not_found(path))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        data.get(start..start.saturating_add(len))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end"))
    }

    fn exists(&self, path: &Path) -> bool {
        lock(&self.inner).names.contains_key(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let mut inner = lock(&self.inner);
        let inode = match inner.names.get(path) {
            Some(&inode) => {
                if let Some(file) = inner.files.get_mut(&inode) {
                    file.data.clear();
                }
                inode
            }
            None => {
                inner.next_inode += 1;
                let inode = inner.next_inode;
                inner.files.insert(inode, FileData::default());
                inner.names.insert(path.to_path_buf(), inode);
                inode
            }
        };
        Ok(Box::new(FaultyFile {
            inner: self.inner.clone(),
            inode,
            generation: inner.generation,
            path: path.to_path_buf(),
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        let inner = lock(&self.inner);
        let inode = *inner.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(Box::new(FaultyFile {
            inner: self.inner.clone(),
            inode,
            generation: inner.generation,
            path: path.to_path_buf(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut inner = lock(&self.inner);
        let inode = inner.names.remove(from).ok_or_else(|| not_found(from))?;
        inner.names.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut inner = lock(&self.inner);
        inner.names.remove(path).ok_or_else(|| not_found(path))?;
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut inner = lock(&self.inner);
        if let Some(errno) = inner.fail_sync {
            return Err(io::Error::from_raw_os_error(errno));
        }
        inner.durable.retain(|p, _| p.parent() != Some(dir));
        let live: Vec<(PathBuf, u64)> = inner
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, i)| (p.clone(), *i))
            .collect();
        inner.durable.extend(live);
        Ok(())
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        let mut inner = lock(&self.inner);
        if !inner.locks.insert(path.to_path_buf()) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "already locked by another process",
            ));
        }
        Ok(Box::new(LockGuard {
            inner: self.inner.clone(),
            path: path.to_path_buf(),
            generation: inner.generation,
        }))
    }
}
