//! Entries in conflict, with both sides: which events each concurrent writer added after the
//! point the writers shared, who wrote them, when, and which fields each side set.

use crate::error::Result;
use crate::store::Store;
use projections::entry_json::to_flat_map;
use projections::{EntryState, Event, fold_entry_refs};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fields that say when and by whom, not what a writer decided: each side's events show those.
const BOOKKEEPING: &[&str] = &[
    "version",
    "heads",
    "updated_at",
    "updated_by",
    "conflict",
    "superseded_at",
    "pinned_at",
    "pinned_by",
];

/// One event of a side.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SideEvent {
    pub event: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub actor: String,
    pub at: String,
}

/// One concurrent line of changes: the events reachable from one head and not shared by all.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Side {
    /// The head event this side ends with.
    pub head: String,
    /// Who wrote the side's events (sorted, once each).
    pub actors: Vec<String>,
    /// The side's events in replay order.
    pub events: Vec<SideEvent>,
    /// The fields this side changed from the shared state, with the value it set.
    pub set: Map<String, Value>,
}

/// An entry with several heads, and what the deterministic merge shows for it now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Conflict {
    pub entry: String,
    pub summary: String,
    pub status: String,
    /// The newest events every side shares (the fork point); empty when the sides share none.
    pub base: Vec<String>,
    pub sides: Vec<Side>,
    /// Fields that more than one side set, to different values: the real disagreement.
    pub disputed: Vec<String>,
    /// What the entry shows now for the fields any side set (the deterministic merge result).
    pub current: Map<String, Value>,
}

/// Every entry of `store` in conflict, sorted by id. `all_in_conflict` lists every entry in
/// conflict from the events the store was built from; it is called only when the store holds
/// conflicts outside its index.
///
/// # Errors
/// When the store cannot be read, or `all_in_conflict` fails.
pub fn list(
    store: &Store,
    all_in_conflict: impl FnOnce() -> Result<Vec<String>>,
) -> Result<Vec<Conflict>> {
    let mut ids: BTreeSet<String> = store.ids_with("conflict", "true")?.into_iter().collect();
    // The conflict index covers the active (hot) entries; archived ones are counted only in the
    // statistics. When the counts differ, read the events for the others (rare, and exact).
    let counted = usize::try_from(store.stats()?.conflict_count).unwrap_or(0);
    if counted > ids.len() {
        ids.extend(all_in_conflict()?);
    }
    let mut out = Vec::new();
    for id in ids {
        if let Some(state) = store.entry(&id)?
            && state.in_conflict()
        {
            out.push(describe(&state, &store.entry_events(&id)?));
        }
    }
    Ok(out)
}

/// The fields of a side's (or the base's) state, folded from the log's events: a credential
/// that reached the log is shown `[redacted]`, as the store shows the entry.
fn shown(mut state: EntryState) -> Map<String, Value> {
    crate::policy::stored::redact_state(&mut state);
    to_flat_map(&state)
}

/// Both sides of the conflict of `state`, from the entry's events.
pub fn describe(state: &EntryState, events: &[Event]) -> Conflict {
    // A purged entry's sides are shown without its content, whatever event still carries it.
    let redacted: Vec<Event>;
    let events = if state.purged {
        redacted = events
            .iter()
            .map(|e| projections::tombstone::redact(e, &state.id).unwrap_or_else(|| e.clone()))
            .collect();
        &redacted[..]
    } else {
        events
    };
    let by_id: BTreeMap<&str, &Event> = events.iter().map(|e| (e.id.as_str(), e)).collect();
    let ancestry: Vec<BTreeSet<&str>> = state.heads.iter().map(|h| ancestors(h, &by_id)).collect();
    let shared: BTreeSet<&str> = ancestry
        .iter()
        .skip(1)
        .fold(ancestry.first().cloned().unwrap_or_default(), |acc, a| {
            acc.intersection(a).copied().collect()
        });
    let shared_events: Vec<&Event> = shared
        .iter()
        .filter_map(|id| by_id.get(id).copied())
        .collect();
    let base_state = fold_entry_refs(&state.id, &shared_events).state;
    let base_map = base_state.map(shown).unwrap_or_default();
    let mut base: Vec<String> = shared
        .iter()
        .filter(|id| {
            !shared_events
                .iter()
                .any(|e| e.parents.iter().any(|p| p == *id))
        })
        .map(|id| (*id).to_owned())
        .collect();
    base.sort();
    let current_map = to_flat_map(state);
    let mut sides = Vec::new();
    for (head, reach) in state.heads.iter().zip(&ancestry) {
        let all: Vec<&Event> = reach
            .iter()
            .filter_map(|id| by_id.get(id).copied())
            .collect();
        let own: Vec<&Event> = all
            .iter()
            .copied()
            .filter(|e| !shared.contains(e.id.as_str()))
            .collect();
        let ordered = projections::order::order_events(&own);
        let side_map = fold_entry_refs(&state.id, &all)
            .state
            .map(shown)
            .unwrap_or_default();
        let set: Map<String, Value> = side_map
            .into_iter()
            .filter(|(k, v)| !BOOKKEEPING.contains(&k.as_str()) && base_map.get(k) != Some(v))
            .collect();
        let actors: BTreeSet<String> = ordered
            .iter()
            .map(|e| crate::policy::stored::without_secrets(&e.actor))
            .collect();
        sides.push(Side {
            head: head.clone(),
            actors: actors.into_iter().collect(),
            events: ordered
                .iter()
                .map(|e| SideEvent {
                    event: e.id.clone(),
                    event_type: e.event_type().as_str().to_owned(),
                    actor: crate::policy::stored::without_secrets(&e.actor),
                    at: e.at.clone(),
                })
                .collect(),
            set,
        });
    }
    let mut seen: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for side in &sides {
        for (k, v) in &side.set {
            seen.entry(k.as_str()).or_default().push(v);
        }
    }
    let disputed: Vec<String> = seen
        .iter()
        .filter(|(_, vals)| vals.len() > 1 && vals.iter().any(|v| *v != vals[0]))
        .map(|(k, _)| (*k).to_owned())
        .collect();
    let current: Map<String, Value> = seen
        .keys()
        .filter_map(|k| current_map.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect();
    Conflict {
        entry: state.id.clone(),
        summary: state.fields.summary.clone(),
        status: state.status.as_str().to_owned(),
        base,
        sides,
        disputed,
        current,
    }
}

/// `head` and every event it reaches through `parents` within the entry's events.
fn ancestors<'a>(head: &'a str, by_id: &BTreeMap<&'a str, &'a Event>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![head];
    while let Some(id) = todo.pop() {
        let Some(e) = by_id.get(id) else { continue };
        if seen.insert(e.id.as_str()) {
            todo.extend(e.parents.iter().map(String::as_str));
        }
    }
    seen
}

/// Entries in conflict among `events` (any order, duplicates allowed).
pub fn in_conflict(events: &[Event]) -> Vec<String> {
    projections::project(events)
        .entries
        .into_iter()
        .filter(|(_, f)| f.state.as_ref().is_some_and(EntryState::in_conflict))
        .map(|(id, _)| id)
        .collect()
}
