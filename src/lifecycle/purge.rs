//! Purge and garbage collection.
//!
//! `purge` appends a `purge` event: the entry's summary, content and evidence leave the
//! projections at once, and the event lists the tombstone digest of every event that still
//! carries them. `gc` then rewrites `events.jsonl` under the write lock, replacing each of
//! those lines by its tombstone (see `projections::tombstone`), atomically, and rebuilds the
//! projections. Every remaining line still verifies.

use crate::error::Result;
use crate::log::durable;
use crate::log::lock::FileLock;
use crate::project::Project;
use crate::store::Store;
use crate::store::session::Session;
use projections::{Event, EventData, tombstone};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

/// The tombstone digests of the events of `entry` that carry its content.
///
/// # Errors
/// When the store cannot be read or an event cannot be encoded.
pub fn redactions(store: &Store, entry: &str) -> Result<BTreeMap<String, String>> {
    digests(&store.entry_events(entry)?, entry, |_| true)
}

/// The tombstone digests of those of `events` that carry `entry`'s content and pass `keep`.
fn digests(
    events: &[Event],
    entry: &str,
    keep: impl Fn(&Event) -> bool,
) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for e in events.iter().filter(|e| keep(e)) {
        if let Some(r) = tombstone::redact(e, entry) {
            out.insert(e.id.clone(), tombstone::digest(&r)?);
        }
    }
    Ok(out)
}

/// [`redactions`] of the events that no purge of `entry` covers yet: content written beside
/// the purge on another branch, which a merge brought in. A purge of an already purged entry
/// covers them, so that `gc` can remove them too.
///
/// # Errors
/// As [`redactions`].
pub fn uncovered(store: &Store, entry: &str) -> Result<BTreeMap<String, String>> {
    let events = store.entry_events(entry)?;
    let covered: HashSet<&str> = events
        .iter()
        .filter(|e| e.entry == entry)
        .filter_map(|e| match &e.data {
            EventData::Purge { redacted, .. } => Some(redacted.keys().map(String::as_str)),
            _ => None,
        })
        .flatten()
        .collect();
    digests(&events, entry, |e| !covered.contains(e.id.as_str()))
}

/// What `gc` did (or would do, with `dry_run`).
#[derive(Debug, Clone, Serialize)]
pub struct GcReport {
    pub project: String,
    pub dry_run: bool,
    /// Purge events whose content was (or will be) removed from the log.
    pub purges: usize,
    /// Lines replaced by their tombstones.
    pub tombstoned: usize,
    /// Extra copies of a tombstoned event (a merge brought an old line back) dropped.
    pub duplicates_dropped: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Lines that a purge names but whose content does not match its digest: left as they are.
    pub problems: Vec<String>,
}

/// Rewrites the log of `project` without the content of purged entries.
///
/// # Errors
/// Lock timeouts, an unreadable or corrupt log, I/O errors.
pub fn gc(project: &Project, lock_timeout: Duration, dry_run: bool) -> Result<GcReport> {
    project.ensure_state_dir()?;
    let mut session = Session::open(project, lock_timeout)?;
    let _write = FileLock::acquire(&project.write_lock_path(), "write", lock_timeout)?;
    session.catch_up(None)?;
    let path = project.log_path();
    let bytes = crate::log::read::read_complete(&path, 0)?;
    let lines: Vec<crate::log::read::Line<'_>> = crate::log::read::lines(&bytes, 1, 0).collect();
    let mut decoded: Vec<Option<Event>> = Vec::with_capacity(lines.len());
    // Event id -> (purge id, entry purged, digest).
    let mut covered: HashMap<String, (String, String, String)> = HashMap::new();
    for l in &lines {
        if crate::log::read::is_blank(l) {
            decoded.push(None);
            continue;
        }
        let e = crate::log::read::decode(&path, l)?;
        if let EventData::Purge { redacted, .. } = &e.data {
            for (id, digest) in redacted {
                covered.insert(id.clone(), (e.id.clone(), e.entry.clone(), digest.clone()));
            }
        }
        decoded.push(Some(e));
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut emitted: HashSet<String> = HashSet::new();
    let mut report = GcReport {
        project: project.name.to_string(),
        dry_run,
        purges: 0,
        tombstoned: 0,
        duplicates_dropped: 0,
        bytes_before: bytes.len() as u64,
        bytes_after: 0,
        problems: Vec::new(),
    };
    let mut purges_used: HashSet<String> = HashSet::new();
    for (l, e) in lines.iter().zip(&decoded) {
        let Some(e) = e else {
            out.extend_from_slice(l.bytes);
            out.push(b'\n');
            continue;
        };
        let Some((purge, entry, digest)) = covered.get(&e.id) else {
            out.extend_from_slice(l.bytes);
            out.push(b'\n');
            continue;
        };
        if !emitted.insert(e.id.clone()) {
            report.duplicates_dropped += 1;
            continue;
        }
        let text = std::str::from_utf8(l.bytes).unwrap_or_default();
        if tombstone::split(text).is_some() {
            out.extend_from_slice(l.bytes);
            out.push(b'\n');
            continue;
        }
        let redacted = tombstone::redact(e, entry).unwrap_or_else(|| e.clone());
        if tombstone::digest(&redacted)? != *digest {
            report.problems.push(format!(
                "line {}: event {} does not match the digest purge {} recorded; left as it is",
                l.number, e.id, purge
            ));
            out.extend_from_slice(l.bytes);
            out.push(b'\n');
            continue;
        }
        out.extend_from_slice(tombstone::line(&redacted, purge)?.as_bytes());
        out.push(b'\n');
        report.tombstoned += 1;
        purges_used.insert(purge.clone());
    }
    // Lines after the last complete one (a torn tail) are left to the torn-tail recovery.
    let whole = fs_err::read(&path)?;
    out.extend_from_slice(whole.get(bytes.len()..).unwrap_or_default());
    report.purges = purges_used.len();
    report.bytes_after = out.len() as u64;
    if dry_run || (report.tombstoned == 0 && report.duplicates_dropped == 0) {
        return Ok(report);
    }
    durable::write_atomic(&path, &out)?;
    // The store holds the old lines: build it again from the rewritten log.
    session.rebuild()?;
    Ok(report)
}
