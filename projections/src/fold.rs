//! The fold from one entry's events to its state, version history and audit records.

use crate::event::{Event, EventData};
use crate::model::{EntryFields, EntryState, EventType, Lifecycle, Status};
use crate::order::order_events;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One field that an event changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub field: String,
    pub from: Value,
    pub to: Value,
}

/// One version of an entry: the state after one event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub entry: String,
    pub version: u32,
    pub event: String,
    #[serde(rename = "type")]
    pub event_type: EventType,
    pub actor: String,
    pub at: String,
    /// What this version changed. Not stored (it follows from consecutive snapshots):
    /// [`fold_entry`] leaves it empty and [`fill_changes`] computes it for display.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes: Vec<Change>,
    pub state: EntryState,
}

/// Computes `changes` of each version of one entry (in version order) from its snapshot and the
/// snapshot before it.
pub fn fill_changes(versions: &mut [Version]) {
    for i in 0..versions.len() {
        let (before, rest) = versions.split_at_mut(i);
        let current = &mut rest[0];
        current.changes = diff(before.last().map(|v| &v.state), &current.state);
    }
}

/// The dimension an audit record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// active, superseded, deprecated, draft.
    Status,
    /// active, decaying, archived, expired, purged.
    Lifecycle,
    /// pinned or unpinned.
    Pin,
    /// Concurrent writers: none, open, resolved.
    Conflict,
}

/// One status, lifecycle, pin or conflict transition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub entry: String,
    pub seq: u32,
    pub event: String,
    pub dimension: Dimension,
    pub from: String,
    pub to: String,
    pub reason: Option<String>,
    pub actor: String,
    pub at: String,
}

/// Everything one entry's events project to.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Folded {
    /// The current state; `None` when the set holds no create event for the entry.
    pub state: Option<EntryState>,
    pub versions: Vec<Version>,
    pub audit: Vec<AuditRecord>,
    /// Events that could not be applied, with the reason (shown by `verify`).
    pub anomalies: Vec<(String, String)>,
}

/// Folds the events of one entry (any order, duplicates allowed) into its projections.
///
/// The entry is the one every event projects onto (see [`Event::entries`]). A set made only of
/// a supersede that carries its replacement projects onto both entries; it is taken as the
/// replacement's fold, since the superseded entry's fold would lack its create. Prefer
/// [`fold_entry_of`], which is told the entry.
pub fn fold_entry(events: &[Event]) -> Folded {
    let Some(first) = events.first() else {
        return Folded::default();
    };
    let subject = first
        .entries()
        .filter(|c| events.iter().all(|e| e.projects_onto(c)))
        .last()
        .unwrap_or(first.entry.as_str());
    fold_entry_of(subject, events)
}

/// Folds the events of `events` that project onto `entry` (any order, duplicates allowed) into
/// the entry's projections. A supersede that carries its replacement is the replacement's
/// create when `entry` is the replacement, and an ordinary supersede when `entry` is its target.
pub fn fold_entry_of(entry: &str, events: &[Event]) -> Folded {
    let own: Vec<&Event> = events.iter().collect();
    fold_entry_refs(entry, &own)
}

/// [`fold_entry_of`] for events held elsewhere, as a replay that groups a whole log has them.
pub fn fold_entry_refs(entry: &str, events: &[&Event]) -> Folded {
    let mut versions = Vec::new();
    let (state, audit, anomalies) = fold_core(entry, events, |state, event| {
        versions.push(Version {
            entry: state.id.clone(),
            version: state.version,
            event: event.id.clone(),
            event_type: event.event_type(),
            actor: event.actor.clone(),
            at: event.at.clone(),
            changes: Vec::new(),
            state: state.clone(),
        });
    });
    if state.as_ref().is_some_and(|s| s.purged) {
        // A purge removes the content from every version too, so that the fold reads the same
        // from the events and from their tombstones (`crate::tombstone`).
        for v in &mut versions {
            blank_purged(&mut v.state);
        }
    }
    Folded {
        state,
        versions,
        audit,
        anomalies,
    }
}

/// An entry's fold without a snapshot per version: what a store that does not keep snapshots
/// needs.
#[derive(Debug, Clone, PartialEq)]
pub struct LeanFold<'e> {
    /// The current state; `None` when the set holds no create event for the entry.
    pub state: Option<EntryState>,
    /// Each version's number and the event that made it, oldest first.
    pub versions: Vec<(u32, &'e Event)>,
    pub audit: Vec<AuditRecord>,
}

/// [`fold_entry_refs`] without the snapshots: the same state, versions and audit records.
pub fn fold_entry_lean<'e>(entry: &str, events: &[&'e Event]) -> LeanFold<'e> {
    let mut versions = Vec::new();
    let (state, audit, _) = fold_core(entry, events, |state, event| {
        versions.push((state.version, event));
    });
    LeanFold {
        state,
        versions,
        audit,
    }
}

/// What [`transitions`] compares: the dimensions an audit record is about.
#[derive(Clone, Copy)]
struct Dimensions {
    status: Status,
    lifecycle: Lifecycle,
    purged: bool,
    pinned: bool,
}

impl Dimensions {
    fn of(s: &EntryState) -> Self {
        Self {
            status: s.status,
            lifecycle: s.lifecycle,
            purged: s.purged,
            pinned: s.pinned,
        }
    }
}

type Anomalies = Vec<(String, String)>;

/// The fold itself; `on_version` sees the state after each event that made a version.
fn fold_core<'e>(
    entry: &str,
    events: &[&'e Event],
    mut on_version: impl FnMut(&EntryState, &'e Event),
) -> (Option<EntryState>, Vec<AuditRecord>, Anomalies) {
    let own: Vec<&Event> = events
        .iter()
        .copied()
        .filter(|e| e.projects_onto(entry))
        .collect();
    let ordered = order_events(&own);
    let mut state: Option<EntryState> = None;
    let mut versions: u32 = 0;
    let mut audit_out: Vec<AuditRecord> = Vec::new();
    let mut anomalies = Vec::new();
    // The heads are structural: every event of the entry that no other names as a parent,
    // including events that cannot be applied (a second create is a head).
    let mut heads: BTreeSet<&str> = BTreeSet::new();
    // While there are several heads: whether every event since the fork changed nothing the
    // entry did not already show (see `EntryState::agreed`).
    let mut agreed = true;
    // A purged entry's events may be whole or tombstones (after `gc`), which replay alike but
    // for the content they carry: comparing outcomes would tell the two apart, so a fork of a
    // purged entry is never an agreement, whether `gc` ran or not.
    let purged = ordered
        .iter()
        .any(|e| matches!(e.data, EventData::Purge { .. }));
    for event in ordered {
        // A fork: the event builds on something that is no longer a head, so another writer
        // got there first. (Extending one head of an open conflict is not a new fork.)
        let concurrent = event.parents.iter().any(|p| !heads.contains(p.as_str()));
        let was_conflict = heads.len() > 1 && !agreed;
        for p in &event.parents {
            heads.remove(p.as_str());
        }
        heads.insert(event.id.as_str());
        if heads.len() < 2 {
            agreed = true;
        }
        let before = state.as_ref().map(Dimensions::of);
        // Kept only while forked (rare): every event of a replay would copy its state.
        let shown_before = if heads.len() > 1 && agreed {
            state.clone()
        } else {
            None
        };
        match apply(entry, state.take(), event) {
            Ok(next) => {
                if heads.len() > 1 && agreed {
                    agreed = !purged
                        && shown_before
                            .as_ref()
                            .is_some_and(|now| same_outcome(now, &next));
                }
                state = Some(next);
            }
            Err(boxed) => {
                let (kept, problem) = *boxed;
                // An event that cannot be applied (a second create) is no agreement.
                agreed &= heads.len() < 2;
                state = kept;
                anomalies.push((event.id.clone(), problem));
                continue;
            }
        }
        let Some(current) = state.as_mut() else {
            continue;
        };
        versions = versions.saturating_add(1);
        current.version = versions;
        current.heads = heads.iter().map(|h| (*h).to_owned()).collect();
        current.agreed = heads.len() > 1 && agreed;
        let mut audit = transitions(before, current, event);
        let is_conflict = heads.len() > 1 && !agreed;
        let creates = event.creation_of(entry).is_some();
        if is_conflict && (!was_conflict || concurrent) && !creates {
            audit.push((Dimension::Conflict, "none".into(), "open".into(), None));
        } else if was_conflict && !is_conflict {
            audit.push((
                Dimension::Conflict,
                "open".into(),
                "resolved".into(),
                reason_of(event),
            ));
        }
        for (dimension, from, to, reason) in audit {
            audit_out.push(AuditRecord {
                entry: current.id.clone(),
                seq: u32::try_from(audit_out.len()).unwrap_or(u32::MAX),
                event: event.id.clone(),
                dimension,
                from,
                to,
                reason,
                actor: event.actor.clone(),
                at: event.at.clone(),
            });
        }
        on_version(current, event);
    }
    if let Some(current) = state.as_mut() {
        // An event that could not be applied made no version but is still a head.
        current.heads = heads.iter().map(|h| (*h).to_owned()).collect();
        current.agreed = heads.len() > 1 && agreed;
        if current.purged {
            // A purge is final whatever follows it in the order: an update written beside it
            // on another branch, which a merge brought in, does not show its content again.
            blank_purged(current);
        }
    }
    (state, audit_out, anomalies)
}

/// Whether `next` (the state after an event) shows what `now` shows: the same fields, status,
/// successor, lifecycle, pin, purge and evidence check, whoever wrote them, when and why.
fn same_outcome(now: &EntryState, next: &EntryState) -> bool {
    next.fields == now.fields
        && next.status == now.status
        && next.superseded_by == now.superseded_by
        && next.lifecycle == now.lifecycle
        && next.pinned == now.pinned
        && next.purged == now.purged
        && next.evidence_stale == now.evidence_stale
}

/// Removes what a purge removes: the summary, the content and the evidence.
fn blank_purged(state: &mut EntryState) {
    state.fields.summary.clear();
    state.fields.content.clear();
    state.fields.evidence.clear();
}

type Applied = Result<EntryState, Box<(Option<EntryState>, String)>>;

fn apply(entry: &str, state: Option<EntryState>, event: &Event) -> Applied {
    let mut state = match (state, event.creation_of(entry)) {
        (None, Some((fields, status))) => {
            let mut created = EntryState {
                id: entry.to_owned(),
                fields: fields.clone(),
                status,
                superseded_by: None,
                superseded_at: None,
                created_by: event.actor.clone(),
                created_at: event.at.clone(),
                updated_at: event.at.clone(),
                updated_by: event.actor.clone(),
                lifecycle: Lifecycle::Active,
                pinned: false,
                pinned_by: None,
                pinned_at: None,
                status_reason: None,
                evidence_stale: false,
                purged: false,
                version: 0,
                heads: Vec::new(),
                agreed: false,
                ended_at: None,
            };
            if created.is_ended() {
                created.ended_at = Some(event.at.clone());
            }
            return Ok(created);
        }
        (Some(s), Some(_)) => {
            return Err(Box::new((
                Some(s),
                "a second create event for this entry id".into(),
            )));
        }
        (None, _) => {
            return Err(Box::new((
                None,
                "no create event precedes this event".into(),
            )));
        }
        (Some(s), _) => s,
    };
    let touches_content = !matches!(
        event.data,
        EventData::Pin { .. }
            | EventData::Unpin { .. }
            | EventData::Transition { .. }
            | EventData::EvidenceChecked { .. }
    );
    match &event.data {
        EventData::Create { .. } => {}
        EventData::Update { set, reason } | EventData::Resolve { set, reason } => {
            match apply_set(&state, set) {
                Ok((fields, status)) => {
                    state.fields = fields;
                    if let Some(status) = status
                        && status != state.status
                    {
                        state.status = status;
                        state.status_reason.clone_from(reason);
                    }
                }
                Err(problem) => return Err(Box::new((Some(state), problem))),
            }
        }
        EventData::Supersede {
            by: other, reason, ..
        }
        | EventData::Consolidate {
            into: other,
            reason,
        } => {
            if state.status != Status::Superseded {
                state.superseded_at = Some(event.at.clone());
            }
            state.status = Status::Superseded;
            state.superseded_by = Some(other.clone());
            state.status_reason = reason.clone().or_else(|| {
                (event.event_type() == EventType::Consolidate)
                    .then(|| format!("consolidated into {other}"))
            });
        }
        EventData::Deprecate { reason } => {
            state.status = Status::Deprecated;
            state.status_reason.clone_from(reason);
        }
        EventData::Pin { .. } => {
            state.pinned = true;
            state.pinned_by = Some(event.actor.clone());
            state.pinned_at = Some(event.at.clone());
        }
        EventData::Unpin { .. } => {
            state.pinned = false;
            state.pinned_by = None;
            state.pinned_at = None;
        }
        EventData::Transition { to, reason } => {
            state.lifecycle = *to;
            state.status_reason = Some(reason.clone());
        }
        EventData::Purge { reason, .. } => {
            state.purged = true;
            blank_purged(&mut state);
            state.status_reason = Some(reason.clone());
        }
        EventData::EvidenceChecked { stale } => state.evidence_stale = !stale.is_empty(),
    }
    if state.status != Status::Superseded {
        state.superseded_by = None;
        state.superseded_at = None;
    }
    if touches_content {
        state.updated_at.clone_from(&event.at);
        state.updated_by.clone_from(&event.actor);
    }
    if !state.is_ended() {
        state.ended_at = None;
    } else if state.ended_at.is_none() {
        state.ended_at = Some(event.at.clone());
    }
    Ok(state)
}

/// Applies a `set` map to the fields, returning the new fields and the new status, if set.
/// The fields and (if `set` names one) the status after applying an update's `set` to `state`.
///
/// # Errors
/// When a value has the wrong type for its field.
pub fn apply_set(
    state: &EntryState,
    set: &Map<String, Value>,
) -> Result<(EntryFields, Option<Status>), String> {
    apply_set_to(&state.fields, set)
}

/// [`apply_set`] to the fields `fields`: what an `update` or `resolve` makes of them.
///
/// # Errors
/// When a value has the wrong type for its field.
pub fn apply_set_to(
    fields: &EntryFields,
    set: &Map<String, Value>,
) -> Result<(EntryFields, Option<Status>), String> {
    let mut fields = serde_json::to_value(fields).map_err(|e| e.to_string())?;
    let mut status = None;
    for (key, value) in set {
        if key == "status" {
            status = Some(
                serde_json::from_value::<Status>(value.clone())
                    .map_err(|e| format!("status: {e}"))?,
            );
        } else if let Value::Object(map) = &mut fields {
            map.insert(key.clone(), value.clone());
        }
    }
    let fields: EntryFields =
        serde_json::from_value(fields).map_err(|e| format!("cannot set fields: {e}"))?;
    if !fields.confidence.is_finite() {
        return Err("confidence is not a finite number".into());
    }
    Ok((fields, status))
}

fn reason_of(event: &Event) -> Option<String> {
    match &event.data {
        EventData::Update { reason, .. }
        | EventData::Resolve { reason, .. }
        | EventData::Supersede { reason, .. }
        | EventData::Deprecate { reason }
        | EventData::Pin { reason }
        | EventData::Unpin { reason }
        | EventData::Consolidate { reason, .. } => reason.clone(),
        EventData::Transition { reason, .. } | EventData::Purge { reason, .. } => {
            Some(reason.clone())
        }
        EventData::Create { .. } | EventData::EvidenceChecked { .. } => None,
    }
}

type Transition = (Dimension, String, String, Option<String>);

fn transitions(before: Option<Dimensions>, after: &EntryState, event: &Event) -> Vec<Transition> {
    let reason = || after.status_reason.clone().or_else(|| reason_of(event));
    let mut out = Vec::new();
    let Some(before) = before else {
        out.push((
            Dimension::Status,
            "none".into(),
            after.status.as_str().into(),
            None,
        ));
        return out;
    };
    if before.status != after.status {
        out.push((
            Dimension::Status,
            before.status.as_str().into(),
            after.status.as_str().into(),
            reason(),
        ));
    }
    if before.lifecycle != after.lifecycle {
        out.push((
            Dimension::Lifecycle,
            before.lifecycle.as_str().into(),
            after.lifecycle.as_str().into(),
            reason(),
        ));
    }
    if !before.purged && after.purged {
        out.push((
            Dimension::Lifecycle,
            after.lifecycle.as_str().into(),
            "purged".into(),
            reason(),
        ));
    }
    if before.pinned != after.pinned {
        let name = |p: bool| if p { "pinned" } else { "unpinned" };
        out.push((
            Dimension::Pin,
            name(before.pinned).into(),
            name(after.pinned).into(),
            reason_of(event),
        ));
    }
    out
}

/// Fields whose change is not news: bookkeeping that every event moves.
const BOOKKEEPING: &[&str] = &["version", "heads", "updated_at", "updated_by"];

fn diff(before: Option<&EntryState>, after: &EntryState) -> Vec<Change> {
    let flat = |s: &EntryState| crate::entry_json::to_flat_map(s);
    let after_map = flat(after);
    let before_map = before.map(flat).unwrap_or_default();
    after_map
        .iter()
        .filter(|(k, _)| !BOOKKEEPING.contains(&k.as_str()))
        .filter(|(k, v)| before_map.get(*k) != Some(*v))
        .map(|(k, v)| Change {
            field: k.clone(),
            from: before_map.get(k).cloned().unwrap_or(Value::Null),
            to: v.clone(),
        })
        .collect()
}
