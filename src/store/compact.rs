//! Compaction: a store grown by single writes is rebuilt beside itself and swapped in.
//!
//! Writes update the store by delta. For most projections that is the layout a rebuild writes
//! too, but not for the text index: a rebuild writes each term's postings in blocks and every
//! entry's id and features once, while a write adds its entry's postings one record each,
//! features included, and masks the entry in the blocks (see `retrieval::text_index`). A store
//! grown to 100,000 entries by imports of 500 held 402 MB instead of 168, and a query took twice
//! as long as on a rebuilt one. So once the log lines applied since the store was last built
//! reach a quarter of those it was built from (and at least
//! [`crate::store::tuning::compact_from_lines`]), the process that applied them notes that the
//! project is due ([`note_due`]); the command line then starts `memlog compact` in the
//! background. That builds a new store from the log beside the current one without holding the
//! store lock, then takes the lock only to swap it in and catch it up with what was written
//! meanwhile. The work is a rebuild's, once per quarter of growth: a small share of the writes'
//! own cost.

use super::session::Session;
use super::{Fingerprint, FingerprintHead, Store, meta_key};
use crate::error::{Error, Result};
use crate::log::lock::FileLock;
use crate::log::read as event_log;
use crate::log::stamp::FileStamp;
use crate::project::Project;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Meta record: the log lines the store was last built from.
pub const BUILT: &str = "built";

/// Lines applied since the last build, over the lines built from, from which a store is due.
const DUE_SHARE: u64 = 4;

/// How far a store is from its last build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct State {
    /// Log lines the store was last built from (0 for a store built before it kept count).
    pub built_from_lines: u64,
    /// Log lines the store has applied.
    pub lines: u64,
    pub due: bool,
}

impl Store {
    /// Where the store stands since it was last built; `None` for a store that applied no log.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn compaction_state(&self) -> Result<Option<State>> {
        let Some(head) = self.get_json::<FingerprintHead>(&meta_key("log"))? else {
            return Ok(None);
        };
        let built = self.get_json::<u64>(&meta_key(BUILT))?.unwrap_or(0);
        Ok(Some(State {
            built_from_lines: built,
            lines: head.lines,
            due: due(built, head.lines),
        }))
    }

    /// True when enough log lines were applied one by one since the store was built that
    /// compacting it is due.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn compaction_due(&self) -> Result<bool> {
        Ok(self.compaction_state()?.is_some_and(|s| s.due))
    }
}

/// Whether a store built from `built` lines that has applied `lines` is due for compaction.
fn due(built: u64, lines: u64) -> bool {
    let since = lines.saturating_sub(built);
    since >= super::tuning::compact_from_lines() && since >= built / DUE_SHARE
}

/// Projects found due in this process, by their directory.
static DUE: Mutex<Vec<Project>> = Mutex::new(Vec::new());

/// Notes that `project` is due for compaction (see [`take_due`]).
pub fn note_due(project: &Project) {
    if let Ok(mut due) = DUE.lock()
        && !due.iter().any(|p| p.dir == project.dir)
    {
        due.push(project.clone());
    }
}

/// The projects this process found due for compaction, each once, forgotten as they are taken.
pub fn take_due() -> Vec<Project> {
    DUE.lock()
        .map(|mut due| std::mem::take(&mut *due))
        .unwrap_or_default()
}

/// What [`run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Another process is compacting the project: nothing done.
    Busy,
    Compacted {
        /// Events the new store was built from.
        built: usize,
        /// Events written while it was built, applied after the swap.
        caught_up: usize,
    },
    /// The log was rewritten while the new store was built (a checkout, a `gc`), not only
    /// appended to: the new store was thrown away, since what it holds may no longer be in the
    /// log (content a `gc` removed, say). The next write that finds the store due starts over.
    Stale,
}

/// The staging directory of a compaction.
fn staging(project: &Project) -> PathBuf {
    project.store_dir().with_extension("compacting")
}

/// The lock a compaction holds from start to end.
fn lock_path(project: &Project) -> PathBuf {
    project.state_dir().join("compact.lock")
}

/// Marks a compaction that failed (a log that does not verify): see [`failed_lately`].
fn failed_path(project: &Project) -> PathBuf {
    project.state_dir().join("compact.failed")
}

/// How long after a failed compaction no other is started by itself.
const RETRY_AFTER: Duration = Duration::from_secs(600);

/// True when a compaction of `project` failed less than ten minutes ago: a damaged log fails
/// every build until it is repaired, and each would read the whole log again.
pub fn failed_lately(project: &Project) -> bool {
    failed_at(project).is_some_and(|t| t.elapsed().is_ok_and(|age| age < RETRY_AFTER))
}

/// When the last compaction of `project` failed, unless one succeeded since.
pub fn failed_at(project: &Project) -> Option<std::time::SystemTime> {
    std::fs::metadata(failed_path(project))
        .and_then(|m| m.modified())
        .ok()
}

/// True while a compaction of `project` runs (in any process).
pub fn running(project: &Project) -> bool {
    matches!(FileLock::try_acquire(&lock_path(project)), Ok(None))
}

/// Removes what a compaction that did not finish left behind, unless one is running.
pub(super) fn remove_leftover(project: &Project) {
    let dir = staging(project);
    if dir.exists()
        && let Ok(Some(_running)) = FileLock::try_acquire(&lock_path(project))
    {
        // Best effort, like the other leftovers: tried again next time.
        let _ = fs_err::remove_dir_all(&dir);
    }
}

/// Rebuilds the store of `project` from the log beside the current one, then takes the store
/// lock (waiting at most `timeout`) to swap it in and catch it up: [`build`], then [`install`].
/// Readers and writers go on meanwhile; the store they use is never modified by this.
///
/// `pause` waits that long between the build and the swap (for tests that change the log in
/// between; zero otherwise).
///
/// # Errors
/// [`Error::CorruptLog`] for a bad line (the current store is left alone),
/// [`Error::LockTimeout`] when the swap cannot take the lock, I/O and store errors.
pub fn run(project: &Project, timeout: Duration, pause: Duration) -> Result<Outcome> {
    let Some(built) = build(project)? else {
        return Ok(Outcome::Busy);
    };
    std::thread::sleep(pause);
    install(project, built, timeout)
}

/// A new store built beside the current one, not yet swapped in; the compaction lock is held
/// as long as it lives.
pub struct Built {
    staging: PathBuf,
    /// The log prefix it was built from.
    next: Fingerprint,
    events: usize,
    _running: FileLock,
}

/// Builds a new store from the log in the staging directory, without the store lock; `None`
/// when another process is compacting the project.
///
/// # Errors
/// [`Error::CorruptLog`] for a bad line (then nothing is left behind, and a marker keeps
/// compactions started by themselves off for a while: [`failed_lately`]); I/O and store errors.
pub fn build(project: &Project) -> Result<Option<Built>> {
    project.ensure_state_dir()?;
    let Some(running) = FileLock::try_acquire(&lock_path(project))? else {
        return Ok(None);
    };
    let staging = staging(project);
    let log = project.log_path();
    let stamp = |path: &std::path::Path| {
        FileStamp::at(path).map_err(|e| Error::Io(super::session::io_context(path, e)))
    };
    let before = stamp(&log)?;
    let file = crate::log::by_offset::LogFile::open(&log)?;
    let after = stamp(&log)?;
    // The stamp lets a later catch-up skip reading an unchanged log, so it must describe these
    // very bytes: writers append meanwhile.
    let unchanged = before == after && before.as_ref().is_some_and(|s| s.size == file.len());
    let built = Store::build_from_log_at(
        &staging,
        &file,
        if unchanged { before } else { None },
        super::Verify::Hashes,
        None,
    );
    drop(file);
    match built {
        Ok((b, next)) => {
            let _ = fs_err::remove_file(failed_path(project));
            Ok(Some(Built {
                staging,
                next,
                events: b.applied,
                _running: running,
            }))
        }
        Err(e) => {
            let _ = fs_err::remove_dir_all(&staging);
            // So that writes do not start the same doomed build again and again (see
            // [`failed_lately`]); an empty file: the error itself is the caller's to report.
            let _ = fs_err::write(failed_path(project), b"");
            Err(e)
        }
    }
}

/// Takes the store lock (waiting at most `timeout`) and swaps `built` in, then applies what was
/// written since it was built; unless the log was rewritten meanwhile ([`Outcome::Stale`]).
///
/// # Errors
/// [`Error::LockTimeout`], I/O and store errors; the new store is removed then.
pub fn install(project: &Project, built: Built, timeout: Duration) -> Result<Outcome> {
    let Built {
        staging,
        next,
        events,
        _running,
    } = built;
    let installed = Session::open(project, timeout).and_then(|mut session| {
        // Under the lock, nobody rewrites the log: it must still begin with the bytes the new
        // store was built from.
        let now = event_log::read_complete(&project.log_path(), 0)?;
        let len = usize::try_from(next.len).unwrap_or(usize::MAX);
        if now.len() < len || next.hashes.matching_prefix(&now, len) != len {
            return Ok(None);
        }
        drop(now);
        session.install(&staging).map(Some)
    });
    if !matches!(installed, Ok(Some(_))) && staging.exists() {
        // Not swapped in (the lock not had in time, a rewritten log): the next write that
        // finds the store due starts over.
        let _ = fs_err::remove_dir_all(&staging);
    }
    Ok(match installed? {
        Some(caught_up) => Outcome::Compacted {
            built: events,
            caught_up,
        },
        None => Outcome::Stale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_due_after_a_quarter_of_growth_and_a_minimum() {
        let from = crate::store::tuning::compact_from_lines();
        assert!(!due(0, from - 1));
        assert!(due(0, from));
        assert!(!due(100 * from, 125 * from - 1));
        assert!(due(100 * from, 125 * from));
        // A log rewritten shorter than the store was built from.
        assert!(!due(10 * from, 5 * from));
    }
}
