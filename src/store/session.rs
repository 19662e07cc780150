//! A session on one project: the store lock held, the store opened and caught up with the log.
//!
//! Catch-up costs time in proportion to what is new, and always answers for the log on disk:
//!
//! - the log's file stamp equals the one recorded with the store: nothing changed (one `stat`);
//! - this process appended to the log it had caught up with: apply those lines;
//! - otherwise (another tool wrote the file: git, an editor, a crashed writer) the block hashes
//!   of the applied prefix say whether the log only grew, or from where it was rewritten. Lines
//!   after that point are recognised by id and verified by hash without decoding when the store
//!   knows them; new lines are decoded. If none of the store's events went missing, the new ones
//!   are applied; else the store is rebuilt. A line that fails verification is an error naming
//!   file, line and offset, and the store is not touched, so a damaged log is never served from
//!   projections built before the damage.
//!
//! The store is derived data: a store that cannot be opened or read is rebuilt from the log.

use crate::error::{Error, Result};
use crate::log::durable::{self, TornTail};
use crate::log::lock::FileLock;
use crate::log::read as event_log;
use crate::log::stamp::{BlockHashes, FileStamp};
use crate::project::Project;
use crate::store::{Access, Fingerprint, Opened, Store};
use projections::Event;
use serde::Serialize;
use std::collections::HashSet;
use std::time::Duration;

/// What opening the session had to do to bring the store up to date.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SyncReport {
    /// `none`, `append` (log grew), `merge` (log rewritten, events added) or `rebuild`.
    pub mode: &'static str,
    /// Events applied.
    pub applied: usize,
    /// A last line without its newline that was repaired (kept) or set aside (quarantined).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantined: Option<QuarantineNote>,
    /// Why the store was rebuilt, when it was not simply missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuilt_because: Option<String>,
    /// Events whose parents are not in the log (a line deleted by hand, or a partial copy).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_parents: Vec<MissingParent>,
    /// Events the store had applied that a rewritten log no longer holds (a checkout of an
    /// older commit, a reset, a replaced or emptied file): the store now follows the log.
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped: usize,
    /// Where the lines of the dropped events were kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_file: Option<std::path::PathBuf>,
    /// The project whose log lost them, for the command that puts them back.
    pub dropped_project: String,
    /// How many of the dropped events git still holds (in `HEAD` or a branch).
    pub dropped_held: usize,
    /// Active entries that a merge brought in beside an active entry with the same subject,
    /// scope and summary (two branches recorded the same thing): (the less relevant, the more
    /// relevant, which is the one to keep).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub duplicates: Vec<(String, String)>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What git holds of events a rewritten log lost (see `Session::in_git`).
#[derive(Default)]
struct GitHeld {
    held: HashSet<String>,
    checkout: bool,
}

/// How many `.memlog/dropped-<time>.jsonl` files are kept (the newest).
pub const DROPPED_FILES_KEPT: usize = 10;

impl SyncReport {
    /// What the user must hear about this catch-up: a repaired or quarantined last line, events
    /// whose parents are missing from the log, a store rebuilt because it failed.
    pub fn warnings(&self) -> Vec<crate::policy::Warning> {
        let mut out = Vec::new();
        if let Some(q) = &self.quarantined {
            out.push(crate::policy::Warning {
                field: "log".into(),
                rule: if q.kept {
                    "newline_added"
                } else {
                    "quarantined"
                },
                message: q.message(),
            });
        }
        if !self.missing_parents.is_empty() {
            let first = &self.missing_parents[0];
            out.push(crate::policy::Warning {
                field: "log".into(),
                rule: "missing_parent",
                message: format!(
                    "{} event(s) name a parent that is not in the log (e.g. event {} of entry {} \
                     names {}): a line was deleted or the log is a partial copy; restore the log \
                     from git and run `memlog verify`",
                    self.missing_parents.len(),
                    &first.event[..12.min(first.event.len())],
                    first.entry,
                    &first.parent[..12.min(first.parent.len())],
                ),
            });
        }
        if self.dropped > 0 {
            let held = match self.dropped_held {
                0 => String::new(),
                n if n == self.dropped => format!(
                    "; git still holds all of them: if that was a mistake, `git checkout -- \
                     ai-memory/{}/events.jsonl` restores the committed lines",
                    self.dropped_project
                ),
                n => format!(
                    "; git still holds {n} of them (`git checkout -- ai-memory/{}/events.jsonl` \
                     restores the committed lines)",
                    self.dropped_project
                ),
            };
            let kept = match &self.dropped_file {
                Some(f) => format!(
                    "; the lines of the {} that no branch holds now (a revert or a reset may \
                     leave them in older commits only) are kept in {}: if they should not have \
                     gone, put them back with `memlog import {} {}`",
                    self.dropped - self.dropped_held,
                    f.display(),
                    self.dropped_project,
                    f.display()
                ),
                None => String::new(),
            };
            out.push(crate::policy::Warning {
                field: "log".into(),
                rule: "events_dropped",
                message: format!(
                    "{} event(s) that the store had applied are no longer in the log: it was \
                     rewritten (edited or emptied by hand, replaced, or a write a merge \
                     replaced), and the projections now follow it{held}{kept}",
                    self.dropped
                ),
            });
        }
        if let Some((settle, keep)) = self.duplicates.first() {
            out.push(crate::policy::Warning {
                field: "log".into(),
                rule: "duplicate",
                message: format!(
                    "the merged log holds {} pair(s) of active entries with the same subject, \
                     scope and summary (e.g. {keep} and {settle}); keep the more relevant \
                     ({keep}): `memlog deprecate {settle} --reason \"duplicate of {keep}\"`; \
                     `memlog conflicts` lists every pair until they are settled",
                    self.duplicates.len()
                ),
            });
        }
        if let Some(why) = &self.rebuilt_because {
            out.push(crate::policy::Warning {
                field: "store".into(),
                rule: "store_rebuilt",
                message: format!("{why}; it was rebuilt from the log, which is unharmed"),
            });
        }
        out
    }
}

impl QuarantineNote {
    /// What happened to the last line, for the user.
    pub fn message(&self) -> String {
        if self.kept {
            format!(
                "the log's last line ({} bytes at offset {}) was a whole event missing its final \
                 newline; the newline was added and the event kept",
                self.bytes, self.offset
            )
        } else {
            format!(
                "the log ended in an incomplete line ({} bytes at offset {}, e.g. from a killed \
                 writer); it was moved to {} and the log now ends at the last complete event",
                self.bytes, self.offset, self.file
            )
        }
    }
}

/// An event that names a parent the log does not hold.
pub use crate::store::Dangling as MissingParent;

/// A last line without its newline, as reported to the user.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct QuarantineNote {
    pub offset: u64,
    pub bytes: u64,
    /// The quarantine file, when the line was really torn and set aside.
    pub file: String,
    /// True when the line was a whole event missing only its newline: it was kept.
    pub kept: bool,
}

/// Lines this process appended to a log the store had fully applied.
#[derive(Debug, Clone)]
pub struct Growth {
    /// The stamp the store recorded before the append.
    pub before: FileStamp,
    /// The stamp of the file right after the append.
    pub after: FileStamp,
    /// The events appended, with their lines: applied as they are, without decoding the
    /// lines just written.
    pub events: Vec<(Event, String)>,
}

/// An open, caught-up store with its lock.
#[derive(Debug)]
pub struct Session {
    pub project: Project,
    /// Always `Some` outside [`Session::build`], which closes the store to swap in a new one.
    store: Option<Store>,
    pub report: SyncReport,
    /// Events applied through the store's journal in this session (not by a rebuild).
    applied_incrementally: usize,
    /// A private store directory removed when the session ends (see [`Session::detached`]).
    scratch: Option<std::path::PathBuf>,
    /// A kept `--as-of` store, and the stamp the log had when its events were read: removed
    /// when the session ends if the log changed meanwhile (a purge may have removed what it
    /// holds).
    kept: Option<(std::path::PathBuf, Option<FileStamp>)>,
    lock: FileLock,
}

/// Whether [`Session::detached`] may keep the store it builds for the next read of the same
/// events.
#[derive(Debug, Clone)]
pub enum Keep {
    /// A private store, removed when the session ends (events not read from the project's log).
    No,
    /// Keep it if the project's log still has this stamp, taken before its events were read,
    /// when the session ends.
    IfLogIs(Option<FileStamp>),
}

/// Finds an event the store holds (see [`Store::stored_event`]).
type StoredEvent<'a> = &'a dyn Fn(&str) -> Result<Option<Event>>;

/// Decodes the lines of `buf`, the first numbered `first` at byte `base` of the log. A
/// tombstone among them must be vouched for by a purge among them or, when `stored` is given,
/// by one it finds (the store's events, every one of them in the log).
fn decode_with_lines(
    project: &Project,
    buf: &[u8],
    first: usize,
    base: u64,
    stored: Option<StoredEvent<'_>>,
) -> Result<Vec<(Event, String)>> {
    let path = project.log_path();
    let lines: Vec<event_log::Line<'_>> = event_log::lines(buf, first, base)
        .filter(|l| !event_log::is_blank(l))
        .collect();
    decode_lines(&path, &lines, stored)
}

/// Fails on the first tombstone among `events` (decoded from `lines`, one for one) that no purge
/// vouches for: among `events`, or found by `stored`.
fn vouch_tombstones(
    path: &std::path::Path,
    lines: &[event_log::Line<'_>],
    events: &[(Event, String)],
    stored: Option<StoredEvent<'_>>,
) -> Result<()> {
    let placed: Vec<(&Event, &str, usize, u64)> = events
        .iter()
        .zip(lines)
        .map(|((e, text), l)| (e, text.as_str(), l.number, l.offset))
        .collect();
    crate::log::tombstones::check(path, &placed, |p| stored.map_or(Ok(None), |find| find(p)))
}

/// Lines decoded per parallel step: the decoded events of one step are moved into the result
/// and freed before the next, so the result is not held twice.
const DECODE_STEP: usize = 8192;

/// True when applying `new` bytes of log to a store that applied `applied` bytes costs more
/// than replaying all of it: a bulk import into a small project, a pull of a long branch. A
/// replay writes every table once; updating the store entry by entry costs about four times
/// as much per event. The replay then costs at most three times the new lines.
fn is_bulk(new: u64, applied: u64) -> bool {
    new >= crate::store::tuning::bulk_from_bytes() && 2 * new >= applied
}

fn decode_lines(
    path: &std::path::Path,
    lines: &[event_log::Line<'_>],
    stored: Option<StoredEvent<'_>>,
) -> Result<Vec<(Event, String)>> {
    let mut events = Vec::with_capacity(lines.len());
    for step in lines.chunks(DECODE_STEP) {
        let chunks = crate::parallel::map_chunks(step, |chunk| {
            chunk
                .iter()
                .map(|l| {
                    let event = event_log::decode(path, l)?;
                    // `decode` proved the line is UTF-8.
                    let line = std::str::from_utf8(l.bytes).map_or_else(
                        |_| String::from_utf8_lossy(l.bytes).into_owned(),
                        str::to_owned,
                    );
                    Ok((event, line))
                })
                .collect::<Result<Vec<_>>>()
        });
        for chunk in chunks {
            events.extend(chunk?);
        }
    }
    vouch_tombstones(path, lines, &events, stored)?;
    Ok(events)
}

pub(super) fn count_lines(buf: &[u8]) -> u64 {
    buf.iter().filter(|b| **b == b'\n').count() as u64
}

/// Repairs a last line without its newline, but only when no writer is appending right now (it
/// waits a moment for one that is). A line that is a whole, valid event gets its newline back;
/// only a really torn line is moved to quarantine.
///
/// # Errors
/// When the files cannot be read or written.
pub fn recover_torn_tail(project: &Project) -> Result<Option<QuarantineNote>> {
    if !durable::has_torn_tail(&project.log_path())? {
        return Ok(None);
    }
    // A writer holds the lock only for one append; wait briefly for it. If it is still busy,
    // its line is about to complete and nothing needs recovering.
    let _write = match FileLock::acquire(
        &project.write_lock_path(),
        "write",
        Duration::from_millis(250),
    ) {
        Ok(lock) => lock,
        Err(Error::LockTimeout { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    repair_tail_locked(project)
}

/// A line of the log as memlog keeps it aside (`.memlog/quarantine.jsonl`, `dropped-*.jsonl`):
/// with every credential the secret detector finds replaced by `[redacted]`, since nothing
/// memlog stores may hold one (a line that held one cannot be imported again anyway: the write
/// policy refuses it). Bytes that are not UTF-8 are scanned as text with the bad bytes replaced,
/// and kept as they are when that finds nothing.
pub fn without_secrets(line: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&line);
    if crate::policy::secret_scan::scan_text(&text).is_empty() {
        return line;
    }
    crate::policy::validate::redact_secrets(&text).into_bytes()
}

/// Whether the bytes after a log's last newline are a whole event (only the newline is
/// missing), which a repair keeps, rather than a torn write, which it sets aside.
pub fn is_whole_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    std::str::from_utf8(line).is_ok_and(|l| projections::decode_line(l).is_ok())
}

/// [`recover_torn_tail`] for a caller that holds the write lock.
///
/// # Errors
/// When the files cannot be read or written.
pub fn repair_tail_locked(project: &Project) -> Result<Option<QuarantineNote>> {
    Ok(durable::repair_tail(
        &project.log_path(),
        &project.quarantine_path(),
        is_whole_line,
        without_secrets,
    )?
    .map(
        |TornTail {
             offset,
             len,
             completed,
         }| QuarantineNote {
            offset,
            bytes: len,
            file: if completed {
                String::new()
            } else {
                project.quarantine_path().display().to_string()
            },
            kept: completed,
        },
    ))
}

/// Removes what an interrupted rebuild left behind. The caller holds the store lock.
/// Marks the store named by a [`Error::Store`] that found its files damaged, so that the next
/// session rebuilds it (called where a command's error is reported: the command line's and the
/// MCP server's): a damaged block is found by the read that needs it, after the session
/// opened the store fine, and every read of it fails the same way until the store is rebuilt.
pub fn mark_damaged(e: &Error) {
    if let Error::Store { path, message } = e
        && crate::error::store_damaged(message)
    {
        let _ = fs_err::write(damaged_marker(path), message);
    }
}

fn damaged_marker(store: &std::path::Path) -> std::path::PathBuf {
    store.with_extension("damaged")
}

/// True when `e` comes from a full disk (`ENOSPC`), whichever layer reported it.
fn is_disk_full(e: &Error) -> bool {
    let text = e.to_string();
    text.contains("No space left on device") || text.contains("os error 28")
}

fn remove_leftovers(project: &Project) {
    let dir = project.store_dir();
    let mut leftovers = vec![dir.with_extension("building")];
    // `store.retired`, and the `store.retired-…` of rebuilds that could not remove it.
    if let (Some(parent), Some(name)) = (dir.parent(), dir.file_name())
        && let Ok(entries) = std::fs::read_dir(parent)
    {
        let prefix = format!("{}.retired", name.to_string_lossy());
        leftovers.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path()),
        );
    }
    for leftover in leftovers {
        if leftover.exists() {
            // Best effort: a leftover that cannot be removed now is tried again next time.
            let _ = fs_err::remove_dir_all(&leftover);
        }
    }
    crate::store::compact::remove_leftover(project);
}

impl Session {
    /// How long opening the session waited for another process to release the store lock.
    pub fn lock_waited(&self) -> Duration {
        self.lock.waited()
    }

    /// Takes the store lock (waiting at most `timeout`), opens the store and catches it up.
    /// A store that cannot be opened or read is rebuilt from the log.
    ///
    /// # Errors
    /// [`Error::LockTimeout`], [`Error::CorruptLog`] for a bad line, I/O errors.
    pub fn open(project: &Project, timeout: Duration) -> Result<Self> {
        Self::open_as(project, timeout, Access::Writer)
    }

    /// [`Session::open`] for a command that only reads: the store is opened without the store
    /// engine's worker (see [`Access`]) and reopened with it only if the catch-up writes.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn open_reading(project: &Project, timeout: Duration) -> Result<Self> {
        Self::open_as(project, timeout, Access::Reader)
    }

    fn open_as(project: &Project, timeout: Duration, access: Access) -> Result<Self> {
        // The local state can be deleted under a running process (it is derived data, and
        // people do `rm -rf .memlog`): then building the store fails half-way. Start over a few
        // times before giving up; each attempt takes the (re-created) lock anew.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::open_once(project, timeout, access) {
                Err(Error::Store { .. } | Error::Io(_)) if attempt < 8 => {
                    std::thread::sleep(Duration::from_millis(5 * attempt));
                }
                other => return other,
            }
        }
    }

    fn open_once(project: &Project, timeout: Duration, access: Access) -> Result<Self> {
        project.ensure_state_dir()?;
        let lock = FileLock::acquire(&project.store_lock_path(), "store", timeout)?;
        remove_leftovers(project);
        let quarantined = recover_torn_tail(project)?;
        let marker = damaged_marker(&project.store_dir());
        let damaged = marker.exists().then(|| {
            String::from_utf8_lossy(&fs_err::read(&marker).unwrap_or_default()).into_owned()
        });
        // No store yet (first use, or deleted): it is built from the log below, in one step.
        // Opening it first would create an empty database only to replace it.
        let absent = !project.store_dir().exists();
        let odd = (!absent).then(|| odd_entry(&project.store_dir())).flatten();
        let opened =
            (!absent && odd.is_none()).then(|| Store::open_checked(&project.store_dir(), access));
        // Events that only a store of another format still holds (see below).
        let mut witnessed = Vec::new();
        let (store, broken) = match opened {
            None if odd.is_some() => (
                None,
                odd.map(|path| {
                    format!(
                        "the store holds `{}`, which is not what the store engine writes there \
                         (a link, or a directory for a file)",
                        path.display()
                    )
                }),
            ),
            None => (None, None),
            // Another version's store is rebuilt beside it and swapped in, and the user told:
            // at 100,000 entries that first command takes seconds.
            Some(Ok(Opened::OtherFormat(found))) => {
                witnessed = other_format_witness(project);
                (None, Some(Opened::other_format_reason(found.as_deref())))
            }
            Some(Ok(_)) if damaged.is_some() => (
                None,
                damaged.map(|why| format!("an earlier command found the store damaged: {why}")),
            ),
            Some(Ok(Opened::Current(store, _))) => (Some(store), None),
            // The store's own words: the advice of `Error::Store` is for when the rebuild
            // below fails too.
            Some(Err(Error::Store { message, .. })) => (
                None,
                Some(format!("the store could not be opened: {message}")),
            ),
            Some(Err(e)) => (None, Some(format!("the store could not be opened: {e}"))),
        };
        let mut session = Self {
            project: project.clone(),
            store,
            report: SyncReport {
                quarantined,
                ..SyncReport::default()
            },
            applied_incrementally: 0,
            scratch: None,
            kept: None,
            lock,
        };
        match broken {
            None if absent => {
                session.report.mode = "none";
                session.rebuild()?;
            }
            None => match session.catch_up(None) {
                Err(Error::Store { message, .. }) => {
                    session.rebuild_because(format!("the store failed: {message}"))?;
                }
                other => other?,
            },
            Some(why) => {
                session.rebuild_because(why)?;
                let _ = fs_err::remove_file(&marker);
                if !witnessed.is_empty() {
                    session.report.dropped = witnessed.len();
                    session.note_dropped(witnessed);
                }
            }
        }
        Ok(session)
    }

    /// Takes the store lock and builds a new store from the log without reading the old one
    /// (which may be what is broken), then swaps it in.
    ///
    /// # Errors
    /// [`Error::LockTimeout`], [`Error::CorruptLog`] for a bad line, I/O and store errors.
    pub fn open_rebuilt(project: &Project, timeout: Duration) -> Result<Self> {
        match Self::rebuilt_once(project, timeout) {
            // See `open`: the local state may have been deleted during the build.
            Err(Error::Store { .. } | Error::Io(_)) => Self::rebuilt_once(project, timeout),
            other => other,
        }
    }

    fn rebuilt_once(project: &Project, timeout: Duration) -> Result<Self> {
        project.ensure_state_dir()?;
        let lock = FileLock::acquire(&project.store_lock_path(), "store", timeout)?;
        remove_leftovers(project);
        let quarantined = recover_torn_tail(project)?;
        let mut session = Self {
            project: project.clone(),
            store: None,
            report: SyncReport {
                quarantined,
                ..SyncReport::default()
            },
            applied_incrementally: 0,
            scratch: None,
            kept: None,
            lock,
        };
        session.rebuild()?;
        Ok(session)
    }

    fn rebuild_because(&mut self, why: String) -> Result<()> {
        self.rebuild()?;
        self.report.rebuilt_because = Some(why);
        Ok(())
    }

    /// Applies whatever the log holds that the store does not. `growth` describes lines this
    /// process just appended to a log the store had fully applied.
    ///
    /// # Errors
    /// As [`Session::open`]; [`Error::Store`] when the store fails.
    pub fn catch_up(&mut self, growth: Option<&Growth>) -> Result<()> {
        let path = self.project.log_path();
        let stamp = FileStamp::at(&path).map_err(|e| Error::Io(io_context(&path, e)))?;
        if self.report.mode.is_empty() {
            self.report.mode = "none";
        }
        // The common case, a log unchanged since the store caught up, reads only the stamp.
        match self.store().log_stamp()? {
            None => return self.rebuild().map(|_| ()),
            Some(Some(known)) if Some(&known) == stamp.as_ref() => return Ok(()),
            Some(_) => {}
        }
        // A catch-up made slow on purpose, for tests of what is timed around it; in debug
        // builds only.
        if cfg!(debug_assertions)
            && let Some(ms) = std::env::var("MEMLOG_TEST_CATCH_UP_PAUSE_MS")
                .ok()
                .and_then(|ms| ms.parse().ok())
        {
            std::thread::sleep(Duration::from_millis(ms));
        }
        let Some(fp) = self.store().fingerprint()? else {
            return self.rebuild().map(|_| ());
        };
        let trusted = matches!((growth, &fp.stamp, &stamp),
            (Some(g), Some(before), Some(now)) if g.before == *before && g.after == *now);
        if trusted {
            if let Some(now) = &stamp
                && is_bulk(now.size.saturating_sub(fp.len), fp.len)
            {
                // Lines this process wrote, after lines the store verified when it applied
                // them (the stamps say the file has not changed since): nothing to report
                // about them, and nothing to hash again.
                return self.rebuild_verifying(Some(now)).map(|_| ());
            }
            // Only the bytes after the last complete hashed subtree need reading.
            let start = fp.hashes.resume_start() as u64;
            let buf = event_log::read_complete(&path, start)?;
            let applied_in_buf = usize::try_from(fp.len - start).unwrap_or(usize::MAX);
            if buf.len() >= applied_in_buf {
                let new = &buf[applied_in_buf..];
                let ours: usize = growth
                    .map(|g| g.events.iter().map(|(_, l)| l.len() + 1).sum())
                    .unwrap_or(0);
                let known = (ours == new.len())
                    .then(|| growth.map(|g| g.events.clone()))
                    .flatten();
                return self.apply_growth(&fp, new, &buf, stamp, false, known);
            }
        }
        let buf = event_log::read_complete(&path, 0)?;
        let len = usize::try_from(fp.len).unwrap_or(usize::MAX);
        let same = fp.hashes.matching_prefix(&buf, len);
        if same == len && buf.len() >= len {
            let start = fp.hashes.resume_start();
            return self.apply_growth(&fp, &buf[len..], &buf[start..], stamp, true, None);
        }
        self.apply_rewritten(&buf, same, stamp)
    }

    /// Applies `new` (the bytes after the applied prefix); `from_partial` holds the bytes from
    /// the fingerprint's [`BlockHashes::resume_start`] to the end. `external` when the lines came
    /// from elsewhere (a pull or a merge that appended): then new duplicates are reported.
    fn apply_growth(
        &mut self,
        fp: &Fingerprint,
        new: &[u8],
        from_partial: &[u8],
        stamp: Option<FileStamp>,
        external: bool,
        known: Option<Vec<(Event, String)>>,
    ) -> Result<()> {
        let first = usize::try_from(fp.lines).unwrap_or(0) + 1;
        let stored = |id: &str| self.store().stored_event(id);
        if is_bulk(new.len() as u64, fp.len) {
            let created: Vec<String> = match (&known, external) {
                (Some(events), true) => events
                    .iter()
                    .filter_map(|(e, _)| e.created_entry().map(str::to_owned))
                    .collect(),
                _ if external => {
                    { decode_with_lines(&self.project, new, first, fp.len, Some(&stored))? }
                        .iter()
                        .filter_map(|(e, _)| e.created_entry().map(str::to_owned))
                        .collect()
                }
                _ => Vec::new(),
            };
            self.rebuild()?;
            self.report.duplicates = self.duplicates_of(&created)?;
            return Ok(());
        }
        let events = match known {
            Some(events) => events,
            None => decode_with_lines(&self.project, new, first, fp.len, Some(&stored))?,
        };
        let next = Fingerprint {
            len: fp.len + new.len() as u64,
            lines: fp.lines + count_lines(new),
            hashes: fp.hashes.extended(from_partial),
            stamp,
        };
        let created: Vec<String> = if external {
            events
                .iter()
                .filter_map(|(e, _)| e.created_entry().map(str::to_owned))
                .collect()
        } else {
            Vec::new()
        };
        let n = self.apply_noting_missing_parents(events, &next)?;
        self.report.applied += n;
        self.applied_incrementally += n;
        self.report.duplicates = self.duplicates_of(&created)?;
        if self.report.mode == "none" {
            self.report.mode = "append";
        }
        Ok(())
    }

    /// The log was rewritten from around byte `same`: apply the events the store lacks if none
    /// of its events went missing, else rebuild.
    fn apply_rewritten(&mut self, buf: &[u8], same: usize, stamp: Option<FileStamp>) -> Result<()> {
        let path = self.project.log_path();
        // Lines wholly inside the unchanged prefix are known; the rest are checked one by one.
        let split = buf[..same.min(buf.len())]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let mut known: HashSet<&str> = HashSet::new();
        let mut unknown = Vec::new();
        for line in event_log::lines(buf, 1, 0).filter(|l| !event_log::is_blank(l)) {
            let in_prefix = usize::try_from(line.offset).unwrap_or(usize::MAX) < split;
            match crate::log::line_id::stated_id(line.bytes) {
                // Known only as the store holds it: a line restored from git in place of its
                // tombstone (or of a line altered under its id) has the same id but is news.
                Some((id, true)) if in_prefix || self.store().has_line(id, line.bytes)? => {
                    known.insert(id);
                }
                _ => unknown.push(line),
            }
        }
        let stored = |id: &str| self.store().stored_event(id);
        let decoded = decode_lines(&path, &unknown, Some(&stored))?;
        let next = Fingerprint {
            len: buf.len() as u64,
            lines: count_lines(buf),
            hashes: BlockHashes::of(buf),
            stamp,
        };
        if known.len() == self.store().event_count()? {
            let created: Vec<String> = decoded
                .iter()
                .filter_map(|(e, _)| e.created_entry().map(str::to_owned))
                .collect();
            let n = self.apply_noting_missing_parents(decoded, &next)?;
            self.report.applied += n;
            self.applied_incrementally += n;
            self.report.duplicates = self.duplicates_of(&created)?;
            self.report.mode = "merge";
            return Ok(());
        }
        // Events of the store that no line of the log states any more (a line gc replaced by
        // its tombstone keeps its id).
        let mut kept = known.len();
        let mut counted: HashSet<&str> = HashSet::new();
        for (e, _) in &decoded {
            if counted.insert(&e.id)
                && !known.contains(e.id.as_str())
                && self.store().has_event(&e.id)?
            {
                kept += 1;
            }
        }
        self.report.dropped = self.store().event_count()?.saturating_sub(kept);
        if self.report.dropped > 0 {
            // The store may hold the only copy (a write that a merge replaced before anyone
            // committed it): its lines are kept aside, for `memlog import` to put back.
            let in_log: HashSet<&str> = known
                .iter()
                .copied()
                .chain(decoded.iter().map(|(e, _)| e.id.as_str()))
                .collect();
            let lines = self.store().event_lines_except(|id| in_log.contains(id))?;
            self.note_dropped(lines);
        }
        // Entries created by events the store did not have: a merge may have brought a
        // duplicate among them, as in the incremental case above.
        let mut created: Vec<String> = Vec::new();
        for (e, _) in &decoded {
            if let Some(entry) = e.created_entry()
                && !self.store().has_event(&e.id)?
            {
                created.push(entry.to_owned());
            }
        }
        drop(known);
        let events = decode_with_lines(&self.project, buf, 1, 0, None)?;
        self.report.applied += self.build(events, &next)?;
        self.report.duplicates = self.duplicates_of(&created)?;
        self.report.mode = "rebuild";
        Ok(())
    }

    /// Reports the events `lines` (id, line) of the store that the log no longer states
    /// (`report.dropped` of them, counted by the caller), keeping aside those git does not hold.
    fn note_dropped(&mut self, lines: Vec<(String, String)>) {
        let git = self.in_git(&lines);
        if git.checkout {
            // A checkout or reset: the log is a committed one, and every event that went is
            // still in a branch. The projections follow it; nothing to warn about or keep.
            self.report.dropped = 0;
        } else {
            // Edited by hand, or lost beyond git: say so, keeping what git does not hold.
            let unheld: Vec<(String, String)> = lines
                .into_iter()
                .filter(|(id, _)| !git.held.contains(id))
                .collect();
            self.report.dropped_held = self.report.dropped.saturating_sub(unheld.len());
            self.report.dropped_project = self.project.name.to_string();
            if !unheld.is_empty() {
                self.keep_dropped(&unheld);
            }
        }
    }

    /// What git holds of the dropped `lines` (id, line): the ids some branch, remote-tracking
    /// branch or `HEAD` has in its copy of the log, and whether this was a checkout (every one
    /// held, and the log itself as `HEAD` has it: no edit of the working copy).
    fn in_git(&self, lines: &[(String, String)]) -> GitHeld {
        let mut out = GitHeld::default();
        let root = self.project.workspace.root();
        let Ok(rel) = self
            .project
            .log_path()
            .strip_prefix(root)
            .map(std::path::Path::to_path_buf)
        else {
            return out;
        };
        let Ok(repo) = crate::git::repo::Repo::at(root) else {
            return out;
        };
        let rel = rel.to_string_lossy();
        let ids: Vec<&str> = lines.iter().map(|(id, _)| id.as_str()).collect();
        out.held = repo.events_in_refs(&rel, &ids).unwrap_or_default();
        out.checkout = ids.iter().all(|id| out.held.contains(*id))
            && repo
                .output(&["diff", "--quiet", "HEAD", "--", &rel])
                .is_ok_and(|o| o.status.success());
        out
    }

    /// Keeps the dropped `lines` in `.memlog/dropped-<time>.jsonl` (the store may hold the only
    /// copy: a write that a merge replaced before anyone committed it), and only the newest
    /// [`DROPPED_FILES_KEPT`] such files.
    fn keep_dropped(&mut self, lines: &[(String, String)]) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = self.project.state_dir();
        let file = dir.join(format!("dropped-{nanos}.jsonl"));
        let text: String = lines
            .iter()
            .map(|(_, l)| {
                let kept = without_secrets(l.clone().into_bytes());
                format!("{}\n", String::from_utf8_lossy(&kept))
            })
            .collect();
        // Best effort: without the file the warning still says what went.
        if crate::log::durable::write_atomic(&file, text.as_bytes()).is_ok() {
            self.report.dropped_file = Some(file);
        }
        let mut kept: Vec<std::path::PathBuf> = fs_err::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("dropped-") && n.ends_with(".jsonl"))
            })
            .collect();
        // Same-length names sort by time; a shorter number is older.
        kept.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
        let excess = kept.len().saturating_sub(DROPPED_FILES_KEPT);
        for old in kept.into_iter().take(excess) {
            let _ = fs_err::remove_file(old);
        }
    }

    /// Pairs (the less relevant, the more relevant) of active entries with the same subject,
    /// scope and summary, one of them in `created`.
    fn duplicates_of(&self, created: &[String]) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for id in created {
            let Some(s) = self.store().entry(id)? else {
                continue;
            };
            if s.status != projections::Status::Active {
                continue;
            }
            for other in self
                .store()
                .ids_with("duplicate", &crate::store::duplicate_key(&s.fields))?
            {
                if other == *id || out.iter().any(|(a, b)| *a == other && b == id) {
                    continue;
                }
                if let Some(o) = self.store().entry(&other)?
                    && o.status == projections::Status::Active
                    && o.fields.scope == s.fields.scope
                    && o.fields.summary == s.fields.summary
                {
                    // (the one to settle, the one to keep), as `merge-project` chooses.
                    if crate::git::namespace::relevance(&s, &o).is_lt() {
                        out.push((id.clone(), other));
                    } else {
                        out.push((other, id.clone()));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Applies `events` and reports those whose parents the log lacks that this catch-up
    /// found (the store keeps them all: [`Session::report_all_missing_parents`]).
    fn apply_noting_missing_parents(
        &mut self,
        events: Vec<(Event, String)>,
        next: &Fingerprint,
    ) -> Result<usize> {
        let before = self.store().dangling()?;
        let purges = events
            .iter()
            .any(|(e, _)| matches!(e.data, projections::EventData::Purge { .. }));
        let n = self.writer()?.apply(events, next)?;
        if purges {
            forget_kept_as_of(&self.project);
        }
        self.report.missing_parents = self
            .store()
            .dangling()?
            .into_iter()
            .filter(|d| before.binary_search(d).is_err())
            .collect();
        Ok(n)
    }

    /// Puts in the report every event whose parent the log lacks, as long as it does: not only
    /// those this catch-up found, which an earlier command would have reported once. One read
    /// of one record of the store.
    ///
    /// # Errors
    /// When the store cannot be read.
    pub fn report_all_missing_parents(&mut self) -> Result<()> {
        self.report.missing_parents = self.store().dangling()?;
        Ok(())
    }

    /// The store, opened as a writer if it was opened to be read.
    fn writer(&mut self) -> Result<&Store> {
        if let Some(store) = self.store.take() {
            self.store = Some(store.into_writer()?);
        }
        Ok(self.store())
    }

    /// The caught-up store.
    pub fn store(&self) -> &Store {
        self.store
            .as_ref()
            .expect("the store is open whenever a session is visible")
    }

    /// Replays `events` into a new store built beside the current one, then swaps it in.
    ///
    /// The new store is complete and flushed before the old one is removed, so a crash at any
    /// point leaves a usable store (the old one, or the new one) and at worst a stale staging
    /// directory, which the next session removes. The old store is never read.
    fn build(&mut self, events: Vec<(Event, String)>, next: &Fingerprint) -> Result<usize> {
        self.swap_in(|staging| {
            let missing = missing_parents(&events, |_| Ok(false))?;
            Ok((Store::build_at(staging, events, next)?, missing))
        })
    }

    /// Builds a new store with `build_at` in a staging directory beside the current one (see
    /// [`Session::build`]), then swaps it in.
    fn swap_in(
        &mut self,
        build_at: impl FnOnce(&std::path::Path) -> Result<(usize, Vec<MissingParent>)>,
    ) -> Result<usize> {
        let dir = self.project.store_dir();
        let staging = dir.with_extension("building");
        let built = build_at(&staging);
        if let Err(e) = &built {
            // A half-built store must not keep the disk full for the next command; and when
            // the disk is full, neither may the store being replaced (it is behind the log or
            // broken, or it would not be rebuilt): the next command builds into that room.
            let _ = fs_err::remove_dir_all(&staging);
            if is_disk_full(e) {
                drop(self.store.take());
                let _ = fs_err::remove_dir_all(&dir);
            }
        }
        let (n, missing) = built?;
        self.report.missing_parents = missing;
        self.replace_store(&staging)?;
        // A store found damaged earlier is replaced now.
        let _ = fs_err::remove_file(damaged_marker(&dir));
        Ok(n)
    }

    /// Swaps in the store a compaction built in `staging` (see [`crate::store::compact`]) and
    /// catches it up with what was written while it was built; returns the events applied so.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn install(&mut self, staging: &std::path::Path) -> Result<usize> {
        self.replace_store(staging)?;
        self.report.mode = "";
        self.report.applied = 0;
        self.catch_up(None)?;
        Ok(self.report.applied)
    }

    /// Puts the store in `staging` in place of the current one and opens it. The new store is
    /// complete and flushed; a crash between the two renames leaves no store, which the next
    /// session rebuilds.
    fn replace_store(&mut self, staging: &std::path::Path) -> Result<()> {
        let dir = self.project.store_dir();
        drop(self.store.take());
        let mut retired = dir.with_extension("retired");
        if retired.exists() && fs_err::remove_dir_all(&retired).is_err() {
            // An old store that cannot be removed (its permissions were changed by hand) must
            // not block every later rebuild: this one retires under a name of its own, and the
            // next session tries to remove both again.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            retired = dir.with_extension(format!("retired-{}-{nanos}", std::process::id()));
        }
        if dir.exists() {
            fs_err::rename(&dir, &retired)?;
        }
        fs_err::rename(staging, &dir)?;
        let (store, _) = Store::open(&dir)?;
        self.store = Some(store);
        // The old store is garbage now; if it cannot be removed (a background thread of the
        // closed database still finishing), the next session removes it.
        let _ = fs_err::remove_dir_all(&retired);
        Ok(())
    }

    /// Throws the projections away and replays the whole log, without reading the old store.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn rebuild(&mut self) -> Result<usize> {
        self.rebuild_verifying(None)
    }

    /// [`Session::rebuild`]; with `trusted`, the stamp the log had when this process finished
    /// appending to a log the store had verified, the lines are not hashed again if the file
    /// read still has that stamp, before and after the read (else they are).
    fn rebuild_verifying(&mut self, trusted: Option<&FileStamp>) -> Result<usize> {
        let path = self.project.log_path();
        let stamp = FileStamp::at(&path).map_err(|e| Error::Io(io_context(&path, e)))?;
        // Read through this open file to the end: a log replaced after this point is read as
        // it was when opened.
        let log = crate::log::by_offset::LogFile::open(&path)?;
        let after = FileStamp::at(&path).map_err(|e| Error::Io(io_context(&path, e)))?;
        let unchanged = |s: &Option<FileStamp>| trusted.is_some() && s.as_ref() == trusted;
        let verify = if unchanged(&stamp) && unchanged(&after) {
            crate::store::Verify::Trusted
        } else {
            crate::store::Verify::Hashes
        };
        // Lines the store verified were scanned for secrets when it applied them, and this
        // process's own were checked: only the entries found holding one are scanned again.
        let known = match verify {
            crate::store::Verify::Trusted => Some(self.store().secrets()?),
            crate::store::Verify::Hashes => None,
        };
        let n = self.swap_in(|staging| {
            let (built, _) =
                Store::build_from_log_at(staging, &log, stamp, verify, known.as_ref())?;
            Ok((built.applied, built.dangling))
        })?;
        if self.store().stats_totals()?.purged_count > 0 {
            forget_kept_as_of(&self.project);
        }
        self.report.mode = "rebuild";
        self.report.applied = n;
        Ok(n)
    }

    /// A read-only session on a private store built from `events` alone (the log as it was at
    /// some point, for `--as-of`), in a scratch directory under the project's local state that
    /// is removed when the session ends. The project's own store is neither read nor changed.
    ///
    /// # Errors
    /// When the scratch store cannot be built.
    pub fn detached(project: &Project, events: Vec<(Event, String)>, keep: Keep) -> Result<Self> {
        project.ensure_state_dir()?;
        let root = project.state_dir().join("as-of");
        // Scratch stores of sessions that ended without cleaning up (a killed process).
        if let Ok(entries) = fs_err::read_dir(&root) {
            for entry in entries.flatten() {
                let path = entry.path();
                let lock = path.with_extension("lock");
                if path.is_dir()
                    && !is_kept(&path)
                    && let Ok(Some(_held)) = FileLock::try_acquire(&lock)
                {
                    let _ = fs_err::remove_dir_all(&path);
                    let _ = fs_err::remove_file(&lock);
                }
            }
        }
        fs_err::create_dir_all(&root)?;
        let missing = missing_parents(&events, |_| Ok(false))?;
        let report = |applied| SyncReport {
            mode: "as_of",
            applied,
            missing_parents: missing.clone(),
            ..SyncReport::default()
        };
        // The store of a set of events is a function of the set: the store built for the same
        // selection before (the same `--as-of` over the same log) is opened again instead of
        // being built again, unless another session is reading it.
        let kept = root.join(format!("{KEPT_PREFIX}{}", selection_key(&events)));
        if let Keep::IfLogIs(log_was) = keep
            && let Ok(Some(lock)) = FileLock::try_acquire(&kept.with_extension("lock"))
        {
            // Anything but a directory of its own in its place (a link, a file) is no store of
            // memlog's: never followed, never written through.
            if fs_err::symlink_metadata(&kept).is_ok_and(|m| !m.is_dir()) {
                fs_err::remove_file(&kept)?;
            }
            let built = kept.with_extension("built");
            let reopened = if built.is_file() {
                Store::open(&kept).ok().filter(|(_, empty)| !*empty)
            } else {
                None
            };
            let (store, applied) = match reopened {
                Some((store, _)) => {
                    let applied = fs_err::read_to_string(&built)
                        .ok()
                        .and_then(|t| t.trim().parse().ok())
                        .unwrap_or(events.len());
                    (store, applied)
                }
                None => {
                    let _ = fs_err::remove_file(&built);
                    let applied = Self::build_detached(&kept, events)?;
                    let (store, _) = Store::open(&kept)?;
                    (store, applied)
                }
            };
            // Marks it complete, and used now: the least recently used are the ones let go. A
            // marker not written costs only a build next time.
            let _ = crate::log::durable::write_atomic(&built, applied.to_string().as_bytes());
            evict_kept(&root, &kept);
            return Ok(Self {
                project: project.clone(),
                store: Some(store),
                report: report(applied),
                applied_incrementally: 0,
                scratch: None,
                kept: Some((kept, log_was)),
                lock,
            });
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = root.join(format!("{}-{nanos}", std::process::id()));
        let lock = FileLock::acquire(&dir.with_extension("lock"), "store", Duration::ZERO)?;
        let applied = Self::build_detached(&dir, events)?;
        let store = match Store::open(&dir) {
            Ok((store, _)) => store,
            Err(e) => {
                let _ = fs_err::remove_dir_all(&dir);
                return Err(e);
            }
        };
        Ok(Self {
            project: project.clone(),
            store: Some(store),
            report: report(applied),
            applied_incrementally: 0,
            scratch: Some(dir),
            kept: None,
            lock,
        })
    }

    /// Builds the store of `events` alone at `dir` (removed again when that fails).
    fn build_detached(dir: &std::path::Path, events: Vec<(Event, String)>) -> Result<usize> {
        let bytes: u64 = events.iter().map(|(_, l)| l.len() as u64 + 1).sum();
        let next = Fingerprint {
            len: bytes,
            lines: events.len() as u64,
            hashes: BlockHashes::of(&[]),
            stamp: None,
        };
        Store::build_at(dir, events, &next).inspect_err(|_| {
            let _ = fs_err::remove_dir_all(dir);
        })
    }

    /// Resolves a full id or unique prefix (with or without `m-`) to an entry id.
    ///
    /// # Errors
    /// [`Error::Usage`] for an empty prefix; [`Error::NotFound`] (also for a prefix longer than
    /// any id) or [`Error::AmbiguousId`].
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        use projections::event::{ENTRY_ID_CHARS, ENTRY_PREFIX};
        // Ids are shown with their `m-`; people also type the part after it.
        let rest = prefix.strip_prefix(ENTRY_PREFIX).unwrap_or(prefix);
        if rest.is_empty() {
            return Err(Error::Usage(
                "an entry id or a prefix of one is required (e.g. m-9avyae89jr0fnr67sw0cgkjmcg)"
                    .into(),
            ));
        }
        // Ids are lower case: `M-…` (which callers may have prefixed with `m-`) names no entry.
        let (typed, rest) = match rest.strip_prefix("M-") {
            Some(after) => ("M-", after),
            None => (ENTRY_PREFIX, rest),
        };
        let upper = typed == "M-" || rest.chars().any(|c| c.is_ascii_uppercase());
        // Checked before the store is asked: its keys are bounded in length.
        // It names no entry. None of it is echoed: it may be anything pasted, a credential
        // too, and a part of one is not recognised as one.
        let n = rest.chars().count();
        if n > ENTRY_ID_CHARS || upper {
            let form = format!(
                "an id is {ENTRY_PREFIX} and {ENTRY_ID_CHARS} lower-case letters and digits"
            );
            return Err(Error::NotFound {
                project: self.project.name.to_string(),
                prefix: if n > ENTRY_ID_CHARS {
                    format!("{typed}… ({n} characters after {typed}; {form})")
                } else {
                    format!("{typed}… (in upper case; {form}: type it in lower case)")
                },
            });
        }
        let full = format!("{ENTRY_PREFIX}{rest}");
        let ids = self.store().ids_with_prefix(&full, 5)?;
        // A whole id wins over longer ids it happens to begin (an old 10-character id can be
        // the start of a new 26-character one).
        if ids.contains(&full) {
            return Ok(full);
        }
        match ids.len() {
            0 => Err(Error::NotFound {
                project: self.project.name.to_string(),
                prefix: prefix.to_owned(),
            }),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(Error::AmbiguousId {
                project: self.project.name.to_string(),
                prefix: prefix.to_owned(),
                candidates: ids,
            }),
        }
    }
}

/// The events a store of another format holds that the log does not state (lines deleted by
/// hand, say): that store is the only witness of them, and it is about to be rebuilt. Reading
/// them is best effort: a store or log that cannot be read witnesses nothing.
fn other_format_witness(project: &Project) -> Vec<(String, String)> {
    use std::io::BufRead;
    let Ok(file) = fs_err::File::open(project.log_path()) else {
        return Vec::new();
    };
    let mut reader = std::io::BufReader::new(file);
    let mut in_log: HashSet<String> = HashSet::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {
                if let Some(id) = crate::log::line_id::stated_id_unchecked(&line) {
                    in_log.insert(id.to_owned());
                }
            }
            Err(_) => return Vec::new(),
        }
    }
    Store::other_format_events_except(&project.store_dir(), |id| in_log.contains(id))
        .unwrap_or_default()
}

/// Events applied incrementally in one session past which the store is checkpointed when the
/// session ends, so the next process does not replay a long journal (a bulk `apply`, a pull).
const CHECKPOINT_AFTER_EVENTS: usize = 256;

/// Events applied incrementally in one session past which the checkpoint also merges what the
/// session left in level 0 ([`crate::store::Store::checkpoint_settled`]): a pull of thousands of
/// events, whose merge would otherwise stall some later process for most of a second. Below
/// this, that merge costs a later process less than a tenth of a second and is left to it.
const SETTLE_AFTER_EVENTS: usize = 2048;

/// Name prefix of the `--as-of` stores kept for the next read of the same selection.
const KEPT_PREFIX: &str = "kept-";
/// `--as-of` stores kept besides the one just used: each is as large as the project's store
/// (166 MB at 100,000 entries), so only the last selection's is kept.
const KEPT_STORES: usize = 0;

/// A name for the store of `events`: a hash of the store's format and of the lines, in id
/// order (the lines, not only the ids: a purge redacts an event's line under the same id).
fn selection_key(events: &[(Event, String)]) -> String {
    let mut order: Vec<&(Event, String)> = events.iter().collect();
    order.sort_unstable_by(|a, b| a.0.id.cmp(&b.0.id));
    let mut hasher = blake3::Hasher::new();
    hasher.update(crate::store::STORE_FORMAT.as_bytes());
    hasher.update(b"\n");
    for (_, line) in order {
        hasher.update(line.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

/// Removes every kept `--as-of` store of `project` that no session is reading: once a purge is
/// in the log, a store kept from before it may hold what the purge removed (a purge is final,
/// for the log's past too; see `crate::git::as_of`). One that a session is reading at that
/// moment stays until a later purge, rebuild or eviction finds it free.
pub fn forget_kept_as_of(project: &Project) {
    let Ok(entries) = fs_err::read_dir(project.state_dir().join("as-of")) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if is_kept(&path) && path.extension().is_none() {
            let_go_if_free(&path);
        }
    }
}

/// True for the path of a kept `--as-of` store or of one of its files.
fn is_kept(path: &std::path::Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(KEPT_PREFIX))
}

/// Removes a kept store's directory and its marker (the caller holds its lock).
fn remove_kept(dir: &std::path::Path) {
    let _ = fs_err::remove_file(dir.with_extension("built"));
    let _ = fs_err::remove_dir_all(dir);
}

/// Removes a kept store, its marker and its lock file, unless a session is reading it.
fn let_go_if_free(dir: &std::path::Path) {
    if let Ok(Some(_held)) = FileLock::try_acquire(&dir.with_extension("lock")) {
        remove_kept(dir);
        let _ = fs_err::remove_file(dir.with_extension("lock"));
    }
}

/// Removes the kept `--as-of` stores of `root` but `current` and the [`KEPT_STORES`] most
/// recently used before it, skipping any another session is reading; and the lock files of
/// kept stores gone (removed by hand, or by a session that could not remove its lock file).
fn evict_kept(root: &std::path::Path, current: &std::path::Path) {
    let Ok(entries) = fs_err::read_dir(root) else {
        return;
    };
    let mut kept: Vec<(std::time::SystemTime, std::path::PathBuf)> = Vec::new();
    for path in entries.flatten().map(|e| e.path()).filter(|p| is_kept(p)) {
        if path.is_dir() {
            if path != current {
                let used = fs_err::metadata(path.with_extension("built"))
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                kept.push((used, path));
            }
        } else if path.extension().is_some_and(|x| x == "lock") {
            let store = path.with_extension("");
            if !store.exists()
                && store != current
                && let Ok(Some(_held)) = FileLock::try_acquire(&path)
            {
                let _ = fs_err::remove_file(&path);
            }
        }
    }
    kept.sort_by_key(|k| std::cmp::Reverse(k.0));
    for (_, path) in kept.into_iter().skip(KEPT_STORES) {
        let_go_if_free(&path);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some((dir, log_was)) = self.kept.take() {
            drop(self.store.take());
            // The log changed while the store was built or read: a purge among the changes may
            // have removed what it holds (the purge's own removal of kept stores skipped it, as
            // this session was reading it). Best effort, like the scratch stores'.
            let log_is = FileStamp::at(&self.project.log_path()).ok().flatten();
            if log_is != log_was {
                remove_kept(&dir);
            }
            return;
        }
        if let Some(dir) = self.scratch.take() {
            drop(self.store.take());
            // Best effort: a leftover is removed by the next detached session of the project.
            let _ = fs_err::remove_dir_all(&dir);
            let _ = fs_err::remove_file(dir.with_extension("lock"));
            // The scratch stores' directory too, once no other session uses it.
            if let Some(root) = dir.parent() {
                let _ = std::fs::remove_dir(root);
            }
            return;
        }
        if self.applied_incrementally > 0
            && self
                .store
                .as_ref()
                .is_some_and(|s| s.compaction_due().unwrap_or(false))
        {
            crate::store::compact::note_due(&self.project);
        }
        let quiet = |store: &Store| {
            store.journal_bytes() > crate::store::QUIET_CHECKPOINT_BYTES && !self.lock.is_awaited()
        };
        // Failing costs only speed: the journal stays and is replayed next time.
        if self.applied_incrementally >= SETTLE_AFTER_EVENTS
            && let Some(store) = self.store.take()
        {
            let _ = store.checkpoint_settled();
        } else if self.applied_incrementally >= CHECKPOINT_AFTER_EVENTS
            && let Some(store) = self.store.take()
        {
            let _ = store.checkpoint();
        } else if self.applied_incrementally > 0
            && self.store.as_ref().is_some_and(quiet)
            && let Some(store) = self.store.take()
        {
            let _ = store.checkpoint();
        }
    }
}

/// Events among `events` whose parents are neither among them nor `known`, by entry and event.
fn missing_parents(
    events: &[(Event, String)],
    mut known: impl FnMut(&str) -> Result<bool>,
) -> Result<Vec<MissingParent>> {
    let ids: HashSet<&str> = events.iter().map(|(e, _)| e.id.as_str()).collect();
    let mut out = Vec::new();
    for (e, _) in events {
        for p in &e.parents {
            if !ids.contains(p.as_str()) && !known(p)? {
                out.push(MissingParent {
                    entry: e.entry.clone(),
                    event: e.id.clone(),
                    parent: p.clone(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

pub(crate) fn io_context(path: &std::path::Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// The first entry under a store's directory that the store engine would trip over (it asserts
/// rather than fails on them): a symbolic link or special file anywhere, or a directory where
/// it keeps a file (a journal `*.jnl`, a table, `version`, `current`, `lock`). The store is then
/// rebuilt from the log, as when it cannot be opened. A few dozen entries: one `lstat` each.
fn odd_entry(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let in_tables = dir.file_name().is_some_and(|n| n == "tables");
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let file_named = in_tables
            || name.ends_with(".jnl")
            || matches!(name.as_ref(), "version" | "current" | "lock");
        if meta.is_dir() {
            if file_named {
                return Some(path);
            }
            if let Some(odd) = odd_entry(&path) {
                return Some(odd);
            }
        } else if !meta.is_file() {
            return Some(path);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use projections::{EntryFields, EventData, Status};

    fn create(n: usize) -> String {
        let fields: EntryFields = serde_json::from_value(serde_json::json!({
            "section": "decisions", "kind": "decision", "subject": format!("s.{n}"),
            "scope": "repo", "summary": format!("summary {n}"), "content": "content",
            "tags": [], "confidence": 0.9, "evidence": [], "related_entries": [],
            "valid_from": null, "valid_to": null, "review_interval": null,
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let data = EventData::Create {
            fields,
            status: Status::Active,
        };
        Event::build("", "tester", "2026-01-01T00:00:00.000Z", vec![], data)
            .and_then(|e| e.to_line())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A project in a temporary workspace whose log holds three creates (its lines).
    fn project_of_three() -> (tempfile::TempDir, Project, Vec<String>) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workspace =
            crate::workspace::Workspace::at(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let name = crate::workspace::ProjectName::new("p").unwrap_or_else(|e| panic!("{e}"));
        let project = Project::new(&workspace, name);
        fs_err::create_dir_all(&project.dir).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = (0..3).map(create).collect();
        fs_err::write(project.log_path(), format!("{}\n", lines.join("\n")))
            .unwrap_or_else(|e| panic!("{e}"));
        (dir, project, lines)
    }

    /// A rebuild trusts the lines without hashing them only while the log has the stamp it was
    /// trusted at: a line edited since (whatever its stamp then) is verified and refused.
    #[test]
    fn a_trusted_rebuild_verifies_a_log_changed_since() {
        let (_dir, project, lines) = project_of_three();
        let log = project.log_path();
        let mut session = Session::open(&project, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        let trusted = FileStamp::at(&log).ok().flatten();
        assert!(trusted.is_some());
        // Unchanged: built without hashing, and the same store as a verified rebuild.
        assert_eq!(session.rebuild_verifying(trusted.as_ref()).ok(), Some(3));
        // A summary edited in place (its id no longer matches): refused, trusted or not.
        let tampered = lines[1].replace("summary 1", "summary X");
        fs_err::write(&log, format!("{}\n{tampered}\n{}\n", lines[0], lines[2]))
            .unwrap_or_else(|e| panic!("{e}"));
        let err = session.rebuild_verifying(trusted.as_ref());
        assert!(matches!(err, Err(Error::CorruptLog { .. })), "{err:?}");
    }

    /// A session opened to read leaves a caught-up store as it found it, without the store
    /// engine's worker (and refusing to be written), and catches up a log that grew by
    /// reopening the store as a writer: the new event is applied, and the next reader finds
    /// the store caught up.
    #[test]
    fn a_reading_session_writes_only_to_catch_up() {
        let (_dir, project, _) = project_of_three();
        drop(Session::open(&project, Duration::ZERO).unwrap_or_else(|e| panic!("{e}")));
        let read = |project: &Project| {
            Session::open_reading(project, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"))
        };
        let session = read(&project);
        assert_eq!(session.store().access(), Access::Reader);
        assert_eq!(session.store().event_count().ok(), Some(3));
        assert!(session.store().flush().is_err());
        drop(session);

        let mut log = fs_err::OpenOptions::new()
            .append(true)
            .open(project.log_path())
            .unwrap_or_else(|e| panic!("{e}"));
        std::io::Write::write_all(&mut log, format!("{}\n", create(3)).as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let session = read(&project);
        assert_eq!(session.report.mode, "append");
        assert_eq!(session.store().access(), Access::Writer);
        assert_eq!(session.store().event_count().ok(), Some(4));
        drop(session);

        let session = read(&project);
        assert_eq!(session.report.mode, "none");
        assert_eq!(session.store().access(), Access::Reader);
        assert_eq!(session.store().event_count().ok(), Some(4));
    }

    /// The events of `project`'s log with their lines, as `--as-of` selects them.
    fn events_of(project: &Project) -> Vec<(Event, String)> {
        let text = fs_err::read_to_string(project.log_path()).unwrap_or_default();
        text.lines()
            .map(|l| {
                let e = projections::decode_line(l).unwrap_or_else(|e| panic!("{e}"));
                (e, l.to_owned())
            })
            .collect()
    }

    fn kept_dirs(project: &Project) -> Vec<std::path::PathBuf> {
        let root = project.state_dir().join("as-of");
        fs_err::read_dir(&root)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_none())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A kept `--as-of` store outlives its session only while the log is as it was when the
    /// events were read: a purge may come while it is built or read, and the purge's own
    /// removal skips a store a session holds.
    #[test]
    fn a_kept_store_is_let_go_when_the_log_changed_meanwhile() {
        let (_dir, project, lines) = project_of_three();
        let stamp = || FileStamp::at(&project.log_path()).ok().flatten();
        let session = Session::detached(&project, events_of(&project), Keep::IfLogIs(stamp()))
            .unwrap_or_else(|e| panic!("{e}"));
        drop(session);
        assert_eq!(kept_dirs(&project).len(), 1, "kept: the log did not change");
        // Read again: the same store, opened; the log changes while it is read.
        let was = stamp();
        let session = Session::detached(&project, events_of(&project), Keep::IfLogIs(was))
            .unwrap_or_else(|e| panic!("{e}"));
        fs_err::write(
            project.log_path(),
            format!("{}\n{}\n", lines.join("\n"), create(7)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        drop(session);
        assert!(kept_dirs(&project).is_empty(), "{:?}", kept_dirs(&project));
        // Events not read from the log are never kept.
        let session = Session::detached(&project, events_of(&project), Keep::No)
            .unwrap_or_else(|e| panic!("{e}"));
        drop(session);
        assert!(kept_dirs(&project).is_empty());
    }

    /// A link (or a file) where a kept store would be is removed, never followed: nothing is
    /// written where it points.
    #[test]
    fn a_kept_store_is_never_written_through_a_link() {
        let (dir, project, _) = project_of_three();
        let events = events_of(&project);
        let stamp = FileStamp::at(&project.log_path()).ok().flatten();
        let kept = project
            .state_dir()
            .join("as-of")
            .join(format!("{KEPT_PREFIX}{}", selection_key(&events)));
        fs_err::create_dir_all(kept.parent().unwrap_or(dir.path()))
            .unwrap_or_else(|e| panic!("{e}"));
        let elsewhere = dir.path().join("elsewhere");
        fs_err::create_dir_all(&elsewhere).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&elsewhere, &kept).unwrap_or_else(|e| panic!("{e}"));
        let session = Session::detached(&project, events.clone(), Keep::IfLogIs(stamp.clone()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(session.store().hot_count().ok(), Some(3));
        drop(session);
        assert!(fs_err::read_dir(&elsewhere).map_or(0, Iterator::count) == 0);
        assert!(fs_err::symlink_metadata(&kept).is_ok_and(|m| m.is_dir()));
        // A file in its place: removed, and the store built.
        fs_err::remove_dir_all(&kept).unwrap_or_else(|e| panic!("{e}"));
        fs_err::remove_file(kept.with_extension("built")).unwrap_or_else(|e| panic!("{e}"));
        fs_err::write(&kept, b"hi").unwrap_or_else(|e| panic!("{e}"));
        let session = Session::detached(&project, events, Keep::IfLogIs(stamp))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(session.store().hot_count().ok(), Some(3));
    }

    /// A build that fails leaves no half-built store behind, and one that failed for a full
    /// disk removes the store it was to replace too, so that the next command has the room; the
    /// next session rebuilds it from the log.
    #[test]
    fn a_failed_build_leaves_the_disk_as_it_found_it() {
        let (_dir, project, _) = project_of_three();
        let store = project.store_dir();
        let staging = store.with_extension("building");
        let mut session = Session::open(&project, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        for (why, store_kept) in [
            ("a bad line", true),
            ("No space left on device (os error 28)", false),
        ] {
            let failed = session.swap_in(|at| {
                fs_err::create_dir_all(at.join("keyspaces"))?;
                fs_err::write(at.join("keyspaces/table"), vec![0u8; 4096])?;
                Err(Error::store(at, why))
            });
            assert!(failed.is_err());
            assert!(!staging.exists(), "{why}");
            assert_eq!(store.exists(), store_kept, "{why}");
        }
        drop(session);
        let mut again = Session::open(&project, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.rebuild().ok(), Some(3));
    }
}
