//! Advisory file locks with a bounded wait.

use crate::error::{Error, Result};
use std::fs::TryLockError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An exclusive lock held until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: fs_err::File,
    path: PathBuf,
}

/// True when `path` still names the open `file`.
fn same_file(file: &fs_err::File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.file().metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        path.exists()
    }
}

impl FileLock {
    /// Takes the lock, waiting at most `timeout`.
    ///
    /// # Errors
    /// [`Error::LockTimeout`] naming the lock (`what`) and its path when the wait runs out.
    pub fn acquire(path: &Path, what: &'static str, timeout: Duration) -> Result<Self> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        let mut waiting = None;
        loop {
            if let Some(lock) = Self::try_acquire(path)? {
                return Ok(lock);
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Err(Error::LockTimeout {
                    what,
                    path: path.to_path_buf(),
                    waited,
                });
            }
            if waiting.is_none() {
                waiting = Some(Waiting::announce(path));
            }
            std::thread::sleep(pause.min(timeout.saturating_sub(waited)));
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    }

    /// Takes the lock if it is free right now.
    ///
    /// # Errors
    /// When the lock file cannot be opened.
    pub fn try_acquire(path: &Path) -> Result<Option<Self>> {
        if let Some(dir) = path.parent() {
            // The state directory may have been deleted (it is derived data).
            fs_err::create_dir_all(dir)?;
        }
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        match file.file().try_lock() {
            // A lock on a file that was deleted or replaced meanwhile locks nothing that other
            // processes see: only a lock on the file the path names now counts.
            Ok(()) if !same_file(&file, path) => Ok(None),
            Ok(()) => Ok(Some(Self {
                _file: file,
                path: path.to_path_buf(),
            })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(Error::Io(std::io::Error::new(
                e.kind(),
                format!("cannot lock {}: {e}", path.display()),
            ))),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when another process is waiting for this lock (or when that cannot be told): the
    /// holder should then not start optional work that would make it wait longer.
    pub fn is_awaited(&self) -> bool {
        let Ok(file) = std::fs::File::open(wait_path(&self.path)) else {
            // No process has waited for this lock yet.
            return false;
        };
        match file.try_lock() {
            Ok(()) => false,
            Err(TryLockError::WouldBlock | TryLockError::Error(_)) => true,
        }
    }
}

/// The file that processes waiting for the lock at `path` hold a shared lock on.
fn wait_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".wait");
    PathBuf::from(name)
}

/// A shared lock on the wait file, held while a process waits for the lock itself, which is
/// how [`FileLock::is_awaited`] sees it. Best effort: a process that cannot take it waits all
/// the same, unseen.
struct Waiting {
    _file: Option<std::fs::File>,
}

impl Waiting {
    fn announce(path: &Path) -> Self {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(wait_path(path))
            .ok()
            .filter(|f| f.try_lock_shared().is_ok());
        Self { _file: file }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_sees_a_process_waiting_for_its_lock() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("store.lock");
        let held =
            FileLock::acquire(&path, "store", Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert!(!held.is_awaited(), "nobody has waited yet");
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || FileLock::acquire(&path, "store", Duration::from_secs(30)).map(|_| ())
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !held.is_awaited() {
            assert!(Instant::now() < deadline, "the waiter was never seen");
            std::thread::sleep(Duration::from_millis(1));
        }
        drop(held);
        waiter
            .join()
            .unwrap_or_else(|_| panic!("the waiter panicked"))
            .unwrap_or_else(|e| panic!("{e}"));
        let again =
            FileLock::acquire(&path, "store", Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !again.is_awaited(),
            "the waiter stopped waiting when it got the lock"
        );
    }
}
