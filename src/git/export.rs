//! `memlog export`: Memory_Entry records (`json`, `jsonl`) or the raw events (`events`) of the
//! entries that pass the filters.

use crate::error::Result;
use projections::{EntryState, Event, Section};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The fields of a Memory_Entry record, in the schema's order.
pub const RECORD_FIELDS: &[&str] = &[
    "id",
    "section",
    "kind",
    "subject",
    "scope",
    "summary",
    "content",
    "tags",
    "confidence",
    "evidence",
    "status",
    "superseded_by",
    "related_entries",
    "valid_from",
    "valid_to",
    "review_interval",
    "created_by",
    "created_at",
    "updated_at",
];

/// Which entries to export. Every filter given must pass.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    /// Any of these sections (none: every section).
    pub sections: Vec<Section>,
    /// Last changed at or after (event layout).
    pub since: Option<String>,
    /// Last changed at or before (event layout).
    pub until: Option<String>,
    /// Confidence at least.
    pub min_confidence: Option<f64>,
}

impl Filters {
    /// True when `s` passes every filter.
    pub fn passes(&self, s: &EntryState) -> bool {
        (self.sections.is_empty() || self.sections.contains(&s.fields.section))
            && self
                .since
                .as_deref()
                .is_none_or(|t| s.updated_at.as_str() >= t)
            && self
                .until
                .as_deref()
                .is_none_or(|t| s.updated_at.as_str() <= t)
            && self.min_confidence.is_none_or(|c| s.fields.confidence >= c)
    }
}

/// The Memory_Entry record of an entry: the schema's fields, nothing of memlog's bookkeeping.
pub fn record(s: &EntryState) -> Map<String, Value> {
    let flat = projections::entry_json::to_flat_map(s);
    RECORD_FIELDS
        .iter()
        .map(|k| {
            (
                (*k).to_owned(),
                flat.get(*k).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// What an export holds.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Entries that pass the filters (purged ones left out: their content is gone), by id.
    pub entries: Vec<EntryState>,
    /// For `events`: every event of those entries and of the purged entries that pass the
    /// filters, and of the entries they share an event with (the target of a supersede that
    /// created one of them), in (time, id) order, with lines. An event a purge covers is its
    /// tombstone, as `gc` writes it, whether `gc` has run or not: the purge travels with the
    /// export, and the purged content never does.
    pub events: Vec<(Event, String)>,
}

/// Selects from `events` (the log, or the log as of some time).
pub fn select(events: Vec<(Event, String)>, filters: &Filters) -> Result<Selection> {
    let plain: Vec<Event> = events.iter().map(|(e, _)| e.clone()).collect();
    let projection = projections::project(&plain);
    let entries: Vec<EntryState> = projection
        .entries
        .values()
        .filter_map(|f| f.state.clone())
        .filter(|s| !s.purged && filters.passes(s))
        .map(|mut s| {
            // As the store does: a secret that reached the log without memlog's checks is
            // never written out.
            crate::policy::stored::redact_state(&mut s);
            s
        })
        .collect();
    let mut by_entry: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (e, _)) in events.iter().enumerate() {
        for entry in e.entries() {
            by_entry.entry(entry).or_default().push(i);
        }
    }
    let purged: Vec<&str> = projection
        .entries
        .values()
        .filter_map(|f| f.state.as_ref())
        .filter(|s| s.purged && filters.passes(s))
        .map(|s| s.id.as_str())
        .collect();
    let mut wanted: BTreeSet<&str> = entries.iter().map(|s| s.id.as_str()).collect();
    wanted.extend(purged);
    let mut todo: Vec<&str> = wanted.iter().copied().collect();
    let mut picked: BTreeSet<usize> = BTreeSet::new();
    while let Some(entry) = todo.pop() {
        for &i in by_entry.get(entry).into_iter().flatten() {
            if picked.insert(i) {
                for other in events[i].0.entries() {
                    if wanted.insert(other) {
                        todo.push(other);
                    }
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut chosen: Vec<(Event, String)> = picked
        .into_iter()
        .map(|i| events[i].clone())
        .filter(|(e, _)| seen.insert(e.id.clone()))
        .collect();
    chosen.sort_by(|a, b| (&a.0.at, &a.0.id).cmp(&(&b.0.at, &b.0.id)));
    tombstone_purged(&mut chosen)?;
    Ok(Selection {
        entries,
        events: chosen,
    })
}

/// Replaces the line of each event of `events` that a purge among them covers by its
/// tombstone, as `gc` writes it (a line that is a tombstone already stays; one that does not
/// match the digest its purge recorded stays too, and `verify` names it).
///
/// # Errors
/// When a tombstone cannot be encoded.
fn tombstone_purged(events: &mut [(Event, String)]) -> Result<()> {
    // Event id -> (purge id, entry purged, digest).
    let mut covered: BTreeMap<String, (String, String, String)> = BTreeMap::new();
    for (e, _) in events.iter() {
        if let projections::EventData::Purge { redacted, .. } = &e.data {
            for (id, digest) in redacted {
                covered.insert(id.clone(), (e.id.clone(), e.entry.clone(), digest.clone()));
            }
        }
    }
    if covered.is_empty() {
        return Ok(());
    }
    for (e, line) in events.iter_mut() {
        let Some((purge, entry, digest)) = covered.get(&e.id) else {
            continue;
        };
        if projections::tombstone::split(line).is_some() {
            continue;
        }
        let redacted = projections::tombstone::redact(e, entry).unwrap_or_else(|| e.clone());
        if projections::tombstone::digest(&redacted)? == *digest {
            *line = projections::tombstone::line(&redacted, purge)?;
        }
    }
    Ok(())
}

/// Canonical JSON of a record (keys sorted), for `jsonl`.
pub fn record_line(r: &Map<String, Value>) -> String {
    projections::canonical::map_to_canonical_string(r)
        .unwrap_or_else(|_| Value::Object(r.clone()).to_string())
}

/// True when `text` is what an export writes, in any format, so that a new export may replace
/// it: a JSON array of records, one record (a file of a directory export), JSON Lines of records
/// or of events, or nothing at all.
pub fn is_export(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items.iter().all(is_record),
        Ok(v) if is_record(&v) => true,
        _ => text.lines().filter(|l| !l.trim().is_empty()).all(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| is_record(&v))
                || projections::decode_line(l).is_ok()
        }),
    }
}

/// True when `v` is a Memory_Entry record as [`record`] makes them (or as an earlier memlog
/// made them, with fewer fields).
fn is_record(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.get("id")
            .and_then(Value::as_str)
            .is_some_and(projections::event::is_entry_id)
            && m.keys().all(|k| RECORD_FIELDS.contains(&k.as_str()))
    })
}
