//! The pure core of memlog: the event model, canonical encoding and hashing, deterministic
//! ordering, and the folds from events to entry versions, audit records and statistics.
//!
//! Nothing here performs I/O or reads a clock; the projections it computes are functions of the
//! *set* of events given to it.

pub mod canonical;
pub mod entry_json;
pub mod event;
mod fast_decode;
pub mod fold;
pub mod model;
pub mod order;
pub mod stats;
pub mod time;
pub mod tombstone;

pub use event::{Event, EventData, EventError, Replacement, decode_line};
pub use fold::{
    AuditRecord, Change, Dimension, Folded, LeanFold, Version, fill_changes, fold_entry,
    fold_entry_lean, fold_entry_of, fold_entry_refs,
};
pub use model::{
    EntryFields, EntryState, EventType, Evidence, EvidenceType, Kind, Lifecycle, Section, Status,
};
pub use stats::{RecentOperations, Stats};

/// The projections of a whole set of events: every entry's fold and the statistics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    pub entries: std::collections::BTreeMap<String, Folded>,
    pub stats: Stats,
    /// The latest create, supersede and deprecate operations.
    pub recent_operations: RecentOperations,
}

/// Projects a set of events (any order, duplicates allowed). This is the pure function the
/// store materializes: the store must always equal `project` of the log's events.
///
/// Each event is folded into every entry it projects onto ([`Event::entries`]): a supersede that
/// carries its replacement changes the superseded entry and creates the replacement.
pub fn project(events: &[Event]) -> Projection {
    let mut by_entry: std::collections::BTreeMap<&str, Vec<Event>> =
        std::collections::BTreeMap::new();
    let mut out = Projection::default();
    for e in events {
        out.recent_operations.note_event(e);
        for entry in e.entries() {
            by_entry.entry(entry).or_default().push(e.clone());
        }
    }
    for (entry, evs) in by_entry {
        let folded = fold_entry_of(entry, &evs);
        if let Some(s) = &folded.state {
            out.stats.apply(s, 1);
        }
        out.entries.insert(entry.to_owned(), folded);
    }
    out
}
