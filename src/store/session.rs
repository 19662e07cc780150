//! A session on one project: the store lock held, the store opened and caught up with the log.
//!
//! Catch-up costs time in proportion to what is new: if the log only grew since the store last
//! looked (same length prefix, same last line), only the new lines are read. If it was rewritten
//! (a merge, a checkout), every line is read and the events the store lacks are applied, provided
//! none of the store's events went missing; otherwise the store is rebuilt.

use crate::log::durable::{self, TornTail};
use crate::error::{Error, Result};
use crate::log::read as event_log;
use crate::log::lock::FileLock;
use crate::project::Project;
use crate::store::{Fingerprint, Store};
use projections::Event;
use serde::Serialize;
use std::time::Duration;

/// What opening the session had to do to bring the store up to date.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SyncReport {
    /// `none`, `append` (log grew), `merge` (log rewritten, events added) or `rebuild`.
    pub mode: &'static str,
    /// Events applied.
    pub applied: usize,
    /// A torn last line moved to the quarantine file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantined: Option<QuarantineNote>,
}

/// A torn tail that was set aside.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct QuarantineNote {
    pub offset: u64,
    pub bytes: u64,
    pub file: String,
}

/// An open, caught-up store with its lock.
#[derive(Debug)]
pub struct Session {
    pub project: Project,
    /// Always `Some` outside [`Session::build`], which closes the store to swap in a new one.
    store: Option<Store>,
    pub report: SyncReport,
    _lock: FileLock,
}

fn tail_of(buf: &[u8]) -> (u64, String) {
    // `buf` ends with a newline; the last line is everything after the previous one.
    let body = &buf[..buf.len().saturating_sub(1)];
    let start = body.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let tail = &buf[start..];
    (tail.len() as u64, blake3::hash(tail).to_hex().to_string())
}

fn fingerprint_after(prev: Option<&Fingerprint>, base: u64, buf: &[u8]) -> Option<Fingerprint> {
    if buf.is_empty() {
        return prev.cloned();
    }
    let lines = prev.map_or(0, |p| p.lines) + buf.iter().filter(|b| **b == b'\n').count() as u64;
    let (tail_len, tail_hash) = tail_of(buf);
    Some(Fingerprint {
        len: base + buf.len() as u64,
        lines,
        tail_len,
        tail_hash,
    })
}

const EMPTY: Fingerprint = Fingerprint {
    len: 0,
    lines: 0,
    tail_len: 0,
    tail_hash: String::new(),
};

fn decode_with_lines(
    project: &Project,
    buf: &[u8],
    first: usize,
    base: u64,
) -> Result<Vec<(Event, String)>> {
    let path = project.log_path();
    let lines: Vec<event_log::Line<'_>> = event_log::lines(buf, first, base)
        .filter(|l| !event_log::is_blank(l))
        .collect();
    let chunks = crate::parallel::map_chunks(&lines, |chunk| {
        chunk
            .iter()
            .map(|l| {
                let event = event_log::decode(&path, l)?;
                // `decode` proved the line is UTF-8.
                Ok((event, String::from_utf8_lossy(l.bytes).into_owned()))
            })
            .collect::<Result<Vec<_>>>()
    });
    let mut events = Vec::with_capacity(lines.len());
    for chunk in chunks {
        events.extend(chunk?);
    }
    Ok(events)
}

/// Moves a torn tail to quarantine, but only when no writer is appending right now (it waits a
/// moment for one that is).
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
    Ok(
        durable::quarantine_torn_tail(&project.log_path(), &project.quarantine_path())?.map(
            |TornTail { offset, len }| QuarantineNote {
                offset,
                bytes: len,
                file: project.quarantine_path().display().to_string(),
            },
        ),
    )
}

impl Session {
    /// Takes the store lock (waiting at most `timeout`), opens the store and catches it up.
    ///
    /// # Errors
    /// [`Error::LockTimeout`], store errors, and [`Error::CorruptLog`] for a bad line.
    pub fn open(project: &Project, timeout: Duration) -> Result<Self> {
        project.ensure_state_dir()?;
        let lock = FileLock::acquire(&project.store_lock_path(), "store", timeout)?;
        let (store, _fresh) = Store::open(&project.store_dir())?;
        let mut session = Self {
            project: project.clone(),
            store: Some(store),
            report: SyncReport::default(),
            _lock: lock,
        };
        session.report.quarantined = recover_torn_tail(project)?;
        session.catch_up()?;
        Ok(session)
    }

    /// Applies whatever the log holds that the store does not.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn catch_up(&mut self) -> Result<()> {
        let path = self.project.log_path();
        let len = match fs_err::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e.into()),
        };
        let fp = self.store().fingerprint()?;
        if let Some(fp) = &fp
            && fp.len <= len
            && self.prefix_matches(fp)?
        {
            let buf = event_log::read_complete(&path, fp.len)?;
            if buf.is_empty() {
                self.report.mode = if self.report.mode.is_empty() {
                    "none"
                } else {
                    self.report.mode
                };
                return Ok(());
            }
            let events = decode_with_lines(
                &self.project,
                &buf,
                usize::try_from(fp.lines).unwrap_or(0) + 1,
                fp.len,
            )?;
            let next = fingerprint_after(Some(fp), fp.len, &buf).unwrap_or(EMPTY);
            self.report.applied += self.store().apply(events, &next)?;
            self.report.mode = "append";
            return Ok(());
        }
        // No fingerprint, or the log was rewritten: read it all.
        let buf = event_log::read_complete(&path, 0)?;
        let events = decode_with_lines(&self.project, &buf, 1, 0)?;
        let next = fingerprint_after(None, 0, &buf).unwrap_or(EMPTY);
        let stored = self.store().event_count()?;
        if fp.is_some() && stored > 0 {
            let mut present = std::collections::BTreeSet::new();
            for (e, _) in &events {
                if self.store().has_event(&e.id)? {
                    present.insert(e.id.as_str());
                }
            }
            if present.len() == stored {
                self.report.applied += self.store().apply(events, &next)?;
                self.report.mode = "merge";
                return Ok(());
            }
        }
        self.report.applied += self.build(events, &next)?;
        self.report.mode = "rebuild";
        Ok(())
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
    /// directory, which the next build removes.
    fn build(&mut self, events: Vec<(Event, String)>, next: &Fingerprint) -> Result<usize> {
        let dir = self.project.store_dir();
        let staging = dir.with_extension("building");
        let n = Store::build_at(&staging, events, next)?;
        drop(self.store.take());
        let retired = dir.with_extension("retired");
        if retired.exists() {
            fs_err::remove_dir_all(&retired)?;
        }
        if dir.exists() {
            fs_err::rename(&dir, &retired)?;
        }
        fs_err::rename(&staging, &dir)?;
        let (store, _) = Store::open(&dir)?;
        self.store = Some(store);
        // The old store is garbage now; if it cannot be removed (a background thread of the
        // closed database still finishing), the next build removes it.
        let _ = fs_err::remove_dir_all(&retired);
        Ok(n)
    }

    fn prefix_matches(&self, fp: &Fingerprint) -> Result<bool> {
        if fp.len == 0 {
            return Ok(true);
        }
        let start = fp.len - fp.tail_len;
        let mut file = fs_err::File::open(self.project.log_path())?;
        let mut buf = vec![0u8; usize::try_from(fp.tail_len).unwrap_or(0)];
        use std::io::{Read, Seek, SeekFrom};
        file.seek(SeekFrom::Start(start))?;
        if file.read_exact(&mut buf).is_err() {
            return Ok(false);
        }
        Ok(blake3::hash(&buf).to_hex().as_str() == fp.tail_hash)
    }

    /// Throws the projections away and replays the whole log.
    ///
    /// # Errors
    /// As [`Session::open`].
    pub fn rebuild(&mut self) -> Result<usize> {
        let path = self.project.log_path();
        let buf = event_log::read_complete(&path, 0)?;
        let events = decode_with_lines(&self.project, &buf, 1, 0)?;
        let next = fingerprint_after(None, 0, &buf).unwrap_or(EMPTY);
        let n = self.build(events, &next)?;
        self.report = SyncReport {
            mode: "rebuild",
            applied: n,
            quarantined: self.report.quarantined.take(),
        };
        Ok(n)
    }

    /// Resolves a full id or unique prefix (with or without `m-`) to an entry id.
    ///
    /// # Errors
    /// [`Error::NotFound`] or [`Error::AmbiguousId`].
    pub fn resolve(&self, prefix: &str) -> Result<String> {
        // Ids are shown with their `m-`; people also type the part after it.
        let full = if prefix.starts_with(projections::event::ENTRY_PREFIX) {
            prefix.to_owned()
        } else {
            format!("{}{prefix}", projections::event::ENTRY_PREFIX)
        };
        let ids = self.store().ids_with_prefix(&full, 5)?;
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
