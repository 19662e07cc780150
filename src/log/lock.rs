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
    /// How long [`FileLock::acquire`] waited for it.
    waited: Duration,
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

/// A lock file that cannot be created: on a read-only file system or directory, say that memlog
/// writes its local state even to read, and where.
fn unwritable(path: &Path, e: std::io::Error) -> Error {
    use std::io::ErrorKind;
    if fs_err::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        // Only a hand or another tool makes one: say what it is instead of the system's error.
        return Error::Rejected {
            message: format!(
                "{} is a directory where memlog keeps a lock file; a lock file holds nothing \
                 (it is local state, never committed): remove the directory (`rm -r {}`) and \
                 run the command again",
                path.display(),
                path.display()
            ),
        };
    }
    match e.kind() {
        ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied => {
            let dir = path.parent().unwrap_or(path);
            Error::Io(std::io::Error::new(
                e.kind(),
                format!(
                    "{e}; memlog keeps its store and locks in {} and writes there even to \
                     read: make that directory writable (it is local state, not committed), or \
                     work in a writable copy of the repository",
                    dir.display()
                ),
            ))
        }
        _ => Error::Io(e),
    }
}

impl FileLock {
    /// Takes the lock, waiting at most `timeout`. Waiting processes take it in the order they
    /// came (see [`Ticket`]), so no process waits through more holders than were ahead of it.
    ///
    /// # Errors
    /// [`Error::LockTimeout`] naming the lock (`what`) and its path when the wait runs out.
    pub fn acquire(path: &Path, what: &'static str, timeout: Duration) -> Result<Self> {
        let started = Instant::now();
        let queue = queue_path(path);
        let mut ticket = None;
        let mut waiting = None;
        if Ticket::any_in(&queue) && !timeout.is_zero() {
            // Others are waiting: join the line before trying, rather than jump it.
            waiting = Some(Waiting::announce(path));
            ticket = Ticket::take(&queue);
        }
        loop {
            let ahead = ticket.as_ref().map_or(0, Ticket::ahead);
            if ahead == 0
                && let Some(mut lock) = Self::try_acquire(path)?
            {
                lock.waited = started.elapsed();
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
                ticket = Ticket::take(&queue);
            }
            // The first in line looks every millisecond; the others, whose turn is at least a
            // holder away, less often.
            let pause = Duration::from_millis(1 + 2 * ahead.min(10) as u64);
            std::thread::sleep(pause.min(timeout.saturating_sub(waited)));
        }
    }

    /// Takes the lock if it is free right now.
    ///
    /// # Errors
    /// When the lock file cannot be opened.
    pub fn try_acquire(path: &Path) -> Result<Option<Self>> {
        if let Some(dir) = path.parent() {
            // The state directory may have been deleted (it is derived data).
            fs_err::create_dir_all(dir).map_err(|e| unwritable(path, e))?;
        }
        // Opened to be created, a link would create or lock the file it names.
        crate::log::durable::refuse_link(path)?;
        let file = fs_err::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| unwritable(path, e))?;
        match file.file().try_lock() {
            // A lock on a file that was deleted or replaced meanwhile locks nothing that other
            // processes see: only a lock on the file the path names now counts.
            Ok(()) if !same_file(&file, path) => Ok(None),
            Ok(()) => Ok(Some(Self {
                _file: file,
                path: path.to_path_buf(),
                waited: Duration::ZERO,
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

    /// How long taking the lock waited for other processes to release it.
    pub fn waited(&self) -> Duration {
        self.waited
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

/// `path` with `suffix` appended to its file name: the lock's wait file and queue folder.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The folder of the tickets of the processes waiting for the lock at `path`.
fn queue_path(path: &Path) -> PathBuf {
    beside(path, ".queue")
}

/// A waiting process's place in line: a file in the lock's queue folder, named by the time the
/// process began to wait, and locked by it while it waits. Only the process whose ticket is the
/// oldest tries the lock, so the lock goes to waiters in the order they came. Without a queue,
/// waiters that polled the lock took it in random order: with 20 processes waiting, one in a
/// hundred waited through about a hundred holders, and the slowest writes took 1.2 to 2.4 s
/// where the queue itself was 0.3 s long.
///
/// A ticket whose file nobody holds locked belongs to a process that died waiting, and is
/// removed by the next process that finds it ahead of its own. A process that cannot take a
/// ticket (a read-only folder) waits all the same, out of line.
///
/// Nothing is followed through a symbolic link: a repository can commit one in `.memlog/`
/// (which a merge driver's lock reaches without the checks of a project's links), and a queue
/// folder that led elsewhere would have its files taken for dead tickets and removed. A queue
/// folder that is a link is not used (its process waits out of line), and a link among the
/// tickets is removed without being opened.
struct Ticket {
    file: std::fs::File,
    queue: PathBuf,
    name: std::ffi::OsString,
}

impl Ticket {
    /// True when some process may be waiting in the queue.
    fn any_in(queue: &Path) -> bool {
        is_own_folder(queue)
            && std::fs::read_dir(queue).is_ok_and(|entries| {
                entries
                    .filter_map(std::result::Result::ok)
                    .any(|e| !e.file_name().as_encoded_bytes().starts_with(TEMPORARY))
            })
    }

    /// Joins the queue, best effort. The ticket is made and locked under a temporary name
    /// (which sorts after every ticket), then renamed, so no other process sees it unlocked.
    fn take(queue: &Path) -> Option<Self> {
        static TAKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        std::fs::create_dir_all(queue).ok()?;
        if !is_own_folder(queue) {
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let taken = TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{nanos:024}-{:010}-{taken:06}", std::process::id());
        let temporary = queue.join(format!("~{name}"));
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&temporary)
            .ok()?;
        let placed =
            file.try_lock().is_ok() && std::fs::rename(&temporary, queue.join(&name)).is_ok();
        if !placed {
            let _ = std::fs::remove_file(&temporary);
            return None;
        }
        Some(Self {
            file,
            queue: queue.to_path_buf(),
            name: name.into(),
        })
    }

    /// Live tickets ahead of this one (0 when it is first, or when the queue cannot be read);
    /// the tickets of dead processes found ahead are removed. Counting stops at a few: past
    /// that, the number only sets how long to wait before looking again.
    fn ahead(&self) -> usize {
        if !is_own_folder(&self.queue) {
            return 0;
        }
        let Ok(entries) = std::fs::read_dir(&self.queue) else {
            return 0;
        };
        let mut older: Vec<std::ffi::OsString> = entries
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .filter(|n| *n < self.name)
            .collect();
        older.sort_unstable();
        let mut live = 0;
        for name in older {
            let path = self.queue.join(&name);
            // A ticket gone meanwhile was its holder's, who has the lock now.
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            // memlog makes no links: one here is no ticket, and is removed unopened (removing
            // a link leaves what it names alone). Whatever else is not a file is passed.
            if meta.file_type().is_symlink() {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            let Ok(file) = std::fs::File::open(&path) else {
                continue;
            };
            match file.try_lock_shared() {
                Ok(()) => {
                    let _ = std::fs::remove_file(&path);
                }
                Err(_) => {
                    live += 1;
                    if live > 10 {
                        break;
                    }
                }
            }
        }
        live
    }
}

/// True when `queue` is a folder itself, not a symbolic link to one (nor anything else).
fn is_own_folder(queue: &Path) -> bool {
    std::fs::symlink_metadata(queue).is_ok_and(|m| m.is_dir())
}

/// How the name of a ticket not yet in line begins.
const TEMPORARY: &[u8] = b"~";

impl Drop for Ticket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.queue.join(&self.name));
        let _ = self.file.unlock();
    }
}

/// The file that processes waiting for the lock at `path` hold a shared lock on.
fn wait_path(path: &Path) -> PathBuf {
    beside(path, ".wait")
}

/// A shared lock on the wait file, held while a process waits for the lock itself, which is
/// how [`FileLock::is_awaited`] sees it. Best effort: a process that cannot take it waits all
/// the same, unseen.
struct Waiting {
    _file: Option<std::fs::File>,
}

impl Waiting {
    fn announce(path: &Path) -> Self {
        let wait = wait_path(path);
        // A link is not followed: this process waits unseen instead.
        if std::fs::symlink_metadata(&wait).is_ok_and(|m| m.file_type().is_symlink()) {
            return Self { _file: None };
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&wait)
            .ok()
            .filter(|f| f.try_lock_shared().is_ok());
        Self { _file: file }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock that cannot be created on a read-only file system says where memlog writes and
    /// what to do; other errors are passed on as they are.
    #[test]
    fn an_unwritable_state_directory_is_named_with_the_fix() {
        let path = Path::new("/repo/ai-memory/demo/.memlog/store.lock");
        for kind in [
            std::io::ErrorKind::ReadOnlyFilesystem,
            std::io::ErrorKind::PermissionDenied,
        ] {
            let e = unwritable(path, std::io::Error::new(kind, "read-only"));
            let text = e.to_string();
            assert!(text.contains("/repo/ai-memory/demo/.memlog"), "{text}");
            assert!(text.contains("make that directory writable"), "{text}");
        }
        let other = unwritable(path, std::io::Error::other("disk on fire")).to_string();
        assert!(!other.contains("writable"), "{other}");
    }

    /// A directory where the lock file belongs is named, with the fix, and left as it is.
    #[test]
    fn a_directory_in_place_of_the_lock_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("write.lock");
        fs_err::create_dir(&path).unwrap_or_else(|e| panic!("{e}"));
        let e = FileLock::acquire(&path, "write", Duration::from_millis(10))
            .err()
            .unwrap_or_else(|| panic!("locked a directory"));
        assert!(matches!(e, Error::Rejected { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("is a directory where memlog keeps a lock file"),
            "{text}"
        );
        assert!(
            text.contains(&format!("`rm -r {}`", path.display())),
            "{text}"
        );
        assert!(path.is_dir());
    }
    use std::sync::{Arc, Mutex};

    /// A temporary folder with `store.lock` in it, held.
    fn held() -> (tempfile::TempDir, PathBuf, FileLock) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("store.lock");
        let lock =
            FileLock::acquire(&path, "store", Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        (dir, path, lock)
    }

    /// A thread that waits for the lock, then notes `label` in `order` and holds it 3 ms.
    fn waiter<T: Send + 'static>(
        path: &Path,
        order: &Arc<Mutex<Vec<T>>>,
        label: T,
    ) -> std::thread::JoinHandle<Result<()>> {
        let (path, order) = (path.to_path_buf(), Arc::clone(order));
        std::thread::spawn(move || {
            let lock = FileLock::acquire(&path, "store", Duration::from_secs(30))?;
            order.lock().unwrap_or_else(|e| panic!("{e}")).push(label);
            std::thread::sleep(Duration::from_millis(3));
            drop(lock);
            Ok(())
        })
    }

    /// Waits (at most 30 s) until `ready`.
    fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ready() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn join(handle: std::thread::JoinHandle<Result<()>>) {
        handle
            .join()
            .unwrap_or_else(|_| panic!("a waiter panicked"))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_holder_sees_a_process_waiting_for_its_lock() {
        let (_dir, path, held) = held();
        assert!(!held.is_awaited(), "nobody has waited yet");
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || FileLock::acquire(&path, "store", Duration::from_secs(30)).map(|_| ())
        });
        wait_until("the waiter being seen", || held.is_awaited());
        drop(held);
        join(waiter);
        let again =
            FileLock::acquire(&path, "store", Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !again.is_awaited(),
            "the waiter stopped waiting when it got the lock"
        );
    }

    /// Processes that wait take the lock in the order they came, whoever polls first.
    #[test]
    fn waiters_take_the_lock_in_the_order_they_came() {
        let (_dir, path, held) = held();
        let queue = queue_path(&path);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..4 {
            waiters.push(waiter(&path, &order, i));
            wait_until("the waiter joining the queue", || {
                std::fs::read_dir(&queue).map_or(0, Iterator::count) > i
            });
        }
        drop(held);
        waiters.into_iter().for_each(join);
        assert_eq!(
            *order.lock().unwrap_or_else(|e| panic!("{e}")),
            [0, 1, 2, 3]
        );
        assert!(!Ticket::any_in(&queue), "every ticket left with its waiter");
    }

    /// A process that arrives while others wait queues behind them, even when it finds the
    /// lock free for a moment between two holders.
    #[test]
    fn a_newcomer_does_not_jump_the_line() {
        let (_dir, path, held) = held();
        let order = Arc::new(Mutex::new(Vec::new()));
        let first = waiter(&path, &order, "waiter");
        wait_until("the waiter joining the queue", || {
            Ticket::any_in(&queue_path(&path))
        });
        drop(held);
        let lock = FileLock::acquire(&path, "store", Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}"));
        order
            .lock()
            .unwrap_or_else(|e| panic!("{e}"))
            .push("newcomer");
        drop(lock);
        join(first);
        assert_eq!(
            *order.lock().unwrap_or_else(|e| panic!("{e}")),
            ["waiter", "newcomer"]
        );
    }

    /// The ticket of a process that died waiting (a file nobody holds locked) neither blocks
    /// the line nor stays.
    #[test]
    fn a_dead_waiters_ticket_is_passed_and_removed() {
        let (_dir, path, held) = held();
        let queue = queue_path(&path);
        fs_err::create_dir_all(&queue).unwrap_or_else(|e| panic!("{e}"));
        fs_err::write(queue.join(format!("{:024}-0000000001-000000", 1)), "")
            .unwrap_or_else(|e| panic!("{e}"));
        let order = Arc::new(Mutex::new(Vec::new()));
        let second = waiter(&path, &order, ());
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        join(second);
        assert!(!Ticket::any_in(&queue), "the dead ticket was removed");
    }

    /// A queue folder that is a symbolic link (to a folder outside the workspace, say) is not
    /// used: nothing is created in what it names, and a file there that looks like a dead
    /// waiter's ticket is not removed. The waiter still gets the lock.
    #[cfg(unix)]
    #[test]
    fn a_queue_folder_that_is_a_link_is_not_used() {
        let (dir, path, held) = held();
        let outside = dir.path().join("outside");
        fs_err::create_dir_all(&outside).unwrap_or_else(|e| panic!("{e}"));
        let victim = outside.join(format!("{:024}-0000000001-000000", 1));
        fs_err::write(&victim, "precious").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&outside, queue_path(&path)).unwrap_or_else(|e| panic!("{e}"));
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiter = waiter(&path, &order, ());
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        join(waiter);
        let left: Vec<_> = fs_err::read_dir(&outside)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert_eq!(left, [victim.file_name().unwrap_or_default()]);
        assert_eq!(fs_err::read(&victim).unwrap_or_default(), b"precious");
    }

    /// A symbolic link among the tickets is not opened: one that names a file some other
    /// program holds locked is no live waiter that the line waits behind, and it is removed
    /// (the link only).
    #[cfg(unix)]
    #[test]
    fn a_link_among_the_tickets_is_not_followed() {
        let (dir, path, held) = held();
        let outside = dir.path().join("elsewhere");
        let busy = fs_err::File::create(&outside).unwrap_or_else(|e| panic!("{e}"));
        busy.file().lock().unwrap_or_else(|e| panic!("{e}"));
        let queue = queue_path(&path);
        fs_err::create_dir_all(&queue).unwrap_or_else(|e| panic!("{e}"));
        let link = queue.join(format!("{:024}-0000000001-000000", 1));
        std::os::unix::fs::symlink(&outside, &link).unwrap_or_else(|e| panic!("{e}"));
        let started = Instant::now();
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || FileLock::acquire(&path, "store", Duration::from_secs(5)).map(|_| ())
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        join(waiter);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            std::fs::symlink_metadata(&link).is_err(),
            "the link is removed"
        );
        assert!(outside.is_file(), "what it named stays");
    }
}
