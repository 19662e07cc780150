//! `--as-of`: the events the log held at a time, or when an event was written, as a set that a
//! private store is built from. The project's own store is neither read nor changed.

use crate::error::{Error, Result};
use crate::log::read as event_log;
use crate::project::Project;
use projections::Event;
use std::collections::{BTreeMap, BTreeSet};

/// A point in the log's past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsOf {
    /// Every event written at or before this time (event layout, UTC milliseconds).
    Time(String),
    /// Every event written at or before the time of this event (a full id or a unique prefix
    /// of at least 8 hex characters); the event itself is always included.
    Event(String),
}

impl AsOf {
    /// Reads `--as-of`: an event id (prefix) or an ISO 8601 time.
    ///
    /// # Errors
    /// [`Error::Usage`] naming both accepted forms.
    pub fn parse(s: &str) -> Result<Self> {
        let hex = s.len() >= 8 && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if hex && !s.contains('-') && s.bytes().all(|b| !b.is_ascii_uppercase()) {
            return Ok(Self::Event(s.to_owned()));
        }
        crate::clock::normalize_time(s)
            .map(Self::Time)
            .map_err(|m| {
                Error::Usage(format!(
                    "--as-of: {m}; or give an event id (8 to 64 lowercase hex characters, as \
                     `memlog history` prints)"
                ))
            })
    }
}

/// The events of `project`'s log held at `as_of`, with their lines, and the time they stand
/// for. An event is held when it was written at or before that time and so were all of its
/// parents present in the log (a writer with a clock behind its parents' stays out with them).
///
/// # Errors
/// [`Error::CorruptLog`] for a bad line; [`Error::NotFound`] or [`Error::AmbiguousId`] for an
/// event id that names no event or several.
pub fn events_as_of(project: &Project, as_of: &AsOf) -> Result<(Vec<(Event, String)>, String)> {
    let events = all_events(project)?;
    let (cut, pinned) = match as_of {
        AsOf::Time(t) => (t.clone(), None),
        AsOf::Event(prefix) => {
            let found: BTreeSet<&str> = events
                .iter()
                .map(|(e, _)| e.id.as_str())
                .filter(|id| id.starts_with(prefix.as_str()))
                .collect();
            match found.len() {
                0 => {
                    return Err(Error::NotFound {
                        project: project.name.to_string(),
                        prefix: format!("event {prefix}"),
                    });
                }
                1 => {}
                _ => {
                    return Err(Error::AmbiguousId {
                        project: project.name.to_string(),
                        prefix: prefix.clone(),
                        candidates: found.iter().take(5).map(|s| (*s).to_owned()).collect(),
                    });
                }
            }
            let id = found.first().copied().unwrap_or_default().to_owned();
            let at = events
                .iter()
                .find(|(e, _)| e.id == id)
                .map(|(e, _)| e.at.clone())
                .unwrap_or_default();
            (at, Some(id))
        }
    };
    let purges = purges(&events);
    let held = held(events, &cut, pinned.as_deref());
    Ok((redact_purged(held, &purges)?, cut))
}

/// The entries the log purges, each with the id of (one of) its purge events.
fn purges(events: &[(Event, String)]) -> BTreeMap<String, String> {
    events
        .iter()
        .filter(|(e, _)| matches!(e.data, projections::EventData::Purge { .. }))
        .map(|(e, _)| (e.entry.clone(), e.id.clone()))
        .collect()
}

/// `events` with the content of every entry in `purges` removed, as `gc` removes it (each such
/// event becomes its tombstone): a purge is final, so the log's past does not show what it
/// removed either, whether or not `gc` has run and even before the time of the purge.
fn redact_purged(
    events: Vec<(Event, String)>,
    purges: &BTreeMap<String, String>,
) -> Result<Vec<(Event, String)>> {
    if purges.is_empty() {
        return Ok(events);
    }
    let mut out = Vec::with_capacity(events.len());
    for (event, line) in events {
        let purge = event
            .entries()
            .find_map(|entry| Some((entry, purges.get(entry)?)));
        let redacted = purge
            .and_then(|(entry, by)| Some((projections::tombstone::redact(&event, entry)?, by)));
        match redacted {
            Some((r, by)) => {
                let line = projections::tombstone::line(&r, by)?;
                out.push((r, line));
            }
            None => out.push((event, line)),
        }
    }
    Ok(out)
}

/// Every event of the log with its line, each line verified, and each tombstone vouched for
/// by the purge it names (see [`crate::log::tombstones`]).
///
/// # Errors
/// [`Error::CorruptLog`] for a bad line.
pub fn all_events(project: &Project) -> Result<Vec<(Event, String)>> {
    let path = project.log_path();
    let buf = event_log::read_complete(&path, 0)?;
    let mut events = Vec::new();
    let mut places = Vec::new();
    for line in event_log::lines(&buf, 1, 0).filter(|l| !event_log::is_blank(l)) {
        let event = event_log::decode(&path, &line)?;
        places.push((line.number, line.offset));
        events.push((event, String::from_utf8_lossy(line.bytes).into_owned()));
    }
    let placed: Vec<(&Event, &str, usize, u64)> = events
        .iter()
        .zip(&places)
        .map(|((e, l), (n, o))| (e, l.as_str(), *n, *o))
        .collect();
    crate::log::tombstones::check(&path, &placed, |_| Ok(None))?;
    Ok(events)
}

/// Keeps the events at or before `cut` (and `pinned` with its ancestors) whose parents in the
/// log are kept too.
fn held(events: Vec<(Event, String)>, cut: &str, pinned: Option<&str>) -> Vec<(Event, String)> {
    let all: BTreeMap<&str, &Event> = events.iter().map(|(e, _)| (e.id.as_str(), e)).collect();
    let mut keep: BTreeSet<String> = events
        .iter()
        .filter(|(e, _)| e.at.as_str() <= cut)
        .map(|(e, _)| e.id.clone())
        .collect();
    if let Some(p) = pinned {
        let mut todo = vec![p];
        while let Some(id) = todo.pop() {
            if let Some(e) = all.get(id) {
                keep.insert(e.id.clone());
                todo.extend(e.parents.iter().map(String::as_str));
            }
        }
    }
    loop {
        let dropped: Vec<String> = keep
            .iter()
            .filter(|id| {
                all.get(id.as_str()).is_some_and(|e| {
                    e.parents
                        .iter()
                        .any(|p| all.contains_key(p.as_str()) && !keep.contains(p))
                })
            })
            .cloned()
            .collect();
        if dropped.is_empty() {
            break;
        }
        for id in dropped {
            keep.remove(&id);
        }
    }
    events
        .into_iter()
        .filter(|(e, _)| keep.contains(&e.id))
        .collect()
}
