//! Failpoints on the real file system, so fault tests can make a running
//! `tacos` binary see a full disk (ENOSPC) or a failing one (EIO).
//!
//! Compiled only with the `fault-injection` feature, and active only when
//! the `TACOS_FAILPOINTS` environment variable names a control file. A
//! thread re-reads that file every 50 ms; each line arms one failpoint:
//!
//! ```text
//! write=enospc   every later write to an append file fails with ENOSPC
//! write=eio      ... with EIO
//! sync=eio       every later fdatasync / directory fsync fails with EIO
//! ```
//!
//! An empty or missing file disarms them all. Reads, renames and the lock
//! are never failed: the point is what the node does when it can no longer
//! persist (it must stop, not go on acknowledging).

use std::any::Any;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::fs::{AppendFile, Fs, StdFs};

const ENOSPC: i32 = 28;
const EIO: i32 = 5;

/// The armed failpoints (0 = none).
#[derive(Debug, Default)]
struct Armed {
    write: AtomicI32,
    sync: AtomicI32,
}

impl Armed {
    fn load(&self, text: &str) {
        let (mut write, mut sync) = (0, 0);
        for line in text.lines().map(str::trim) {
            match line {
                "write=enospc" => write = ENOSPC,
                "write=eio" => write = EIO,
                "sync=eio" => sync = EIO,
                _ => {}
            }
        }
        let before = (
            self.write.swap(write, Ordering::SeqCst),
            self.sync.swap(sync, Ordering::SeqCst),
        );
        if before != (write, sync) {
            tracing::warn!(write, sync, "failpoints changed (errno; 0 = off)");
        }
    }

    fn check(errno: &AtomicI32) -> io::Result<()> {
        match errno.load(Ordering::SeqCst) {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

/// [`StdFs`] with failpoints.
#[derive(Debug, Clone)]
pub struct FailpointFs {
    armed: Arc<Armed>,
}

impl FailpointFs {
    /// A file system whose failpoints follow the control file `control`.
    pub fn watching(control: PathBuf) -> Self {
        let armed = Arc::new(Armed::default());
        let watched = armed.clone();
        let spawned = std::thread::Builder::new()
            .name("failpoints".into())
            .spawn(move || loop {
                watched.load(&std::fs::read_to_string(&control).unwrap_or_default());
                std::thread::sleep(Duration::from_millis(50));
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the failpoint watcher: {e}");
        }
        FailpointFs { armed }
    }
}

#[derive(Debug)]
struct FailpointFile {
    inner: Box<dyn AppendFile>,
    armed: Arc<Armed>,
}

impl AppendFile for FailpointFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        Armed::check(&self.armed.write)?;
        self.inner.write_all(buf)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        Armed::check(&self.armed.sync)?;
        self.inner.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

impl Fs for FailpointFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdFs.create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        StdFs.list(dir)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdFs.read(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn std::io::Read + Send>> {
        StdFs.open_read(path)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        StdFs.read_at(path, offset, len)
    }

    fn exists(&self, path: &Path) -> bool {
        StdFs.exists(path)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        Armed::check(&self.armed.write)?;
        Ok(Box::new(FailpointFile {
            inner: StdFs.create(path)?,
            armed: self.armed.clone(),
        }))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn AppendFile>> {
        Ok(Box::new(FailpointFile {
            inner: StdFs.open_append(path)?,
            armed: self.armed.clone(),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        StdFs.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        Armed::check(&self.armed.sync)?;
        StdFs.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        StdFs.lock(path)
    }
}

/// The file system a node uses: [`FailpointFs`] when `TACOS_FAILPOINTS` is
/// set, else [`StdFs`].
pub fn from_env() -> Arc<dyn Fs> {
    match std::env::var_os("TACOS_FAILPOINTS") {
        Some(control) => {
            tracing::warn!(control = ?control, "fault-injection build: failpoints active");
            Arc::new(FailpointFs::watching(PathBuf::from(control)))
        }
        None => Arc::new(StdFs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_file_arms_and_disarms() {
        let armed = Armed::default();
        armed.load("write=enospc\nsync=eio\n");
        let error = Armed::check(&armed.write).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(ENOSPC));
        assert_eq!(
            Armed::check(&armed.sync).unwrap_err().raw_os_error(),
            Some(EIO)
        );
        armed.load("");
        Armed::check(&armed.write).unwrap();
        Armed::check(&armed.sync).unwrap();
    }
}
