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
}
