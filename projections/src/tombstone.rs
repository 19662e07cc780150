//! Tombstones: what `gc` leaves of an event whose content a purge removed.
//!
//! A purge removes an entry's summary, content and evidence from the projections. The log still
//! holds them in the events that wrote them (the create, updates that set those fields, a
//! supersede that carried the entry as its replacement; evidence checks name its evidence URIs).
//! `gc` replaces each such line by its
//! *tombstone*: the same event with those fields blanked (`""`, `[]`) and one more top-level key,
//! `purged_by`, naming the purge event. The tombstone keeps the event's id, so every later event
//! that names it as a parent still finds it.
//!
//! A tombstone's id can no longer be recomputed from its content. The purge event vouches for
//! it instead: its `data.redacted` maps each event id it covers to [`digest`] of the tombstone
//! without `purged_by`, and the purge event itself is an ordinary, hash-verified event. A
//! verifier accepts a tombstone line when the purge it names is in the log and lists that
//! digest for that id.
//!
//! The fold gives the same projections whether it reads an event or its tombstone: the purge
//! blanks the same three fields in the final state, and every version of a purged entry is
//! shown without them (see [`crate::fold`]).

use crate::event::{Event, EventData};
use serde_json::Value;

/// Domain prefix of a tombstone digest.
pub const TOMBSTONE_DOMAIN: &[u8] = b"memlog/tombstone/v1\n";
/// The top-level key that marks a tombstone line.
pub const KEY: &str = "purged_by";
/// The fields a purge removes (and the URIs of `evidence_checked` events, blanked one by one so
/// that the stale flag stays).
pub const PURGED_FIELDS: [&str; 3] = ["summary", "content", "evidence"];

fn blank(field: &str) -> Value {
    if field == "evidence" {
        Value::Array(Vec::new())
    } else {
        Value::String(String::new())
    }
}

/// The copy of `event` without the content it holds for `entry`, or `None` when it holds none
/// (nothing to remove: the line stays as it is).
pub fn redact(event: &Event, entry: &str) -> Option<Event> {
    let mut out = event.clone();
    let changed = match &mut out.data {
        EventData::Create { fields, .. } if event.entry == entry => blank_fields(fields),
        EventData::Supersede {
            by,
            replacement: Some(r),
            ..
        } if by == entry && event.entry != entry => blank_fields(&mut r.fields),
        EventData::Update { set, .. } | EventData::Resolve { set, .. } if event.entry == entry => {
            let mut changed = false;
            for f in PURGED_FIELDS {
                if let Some(v) = set.get_mut(f)
                    && *v != blank(f)
                {
                    *v = blank(f);
                    changed = true;
                }
            }
            changed
        }
        // Stale evidence URIs name the evidence: keep how many, not what.
        EventData::EvidenceChecked { stale } if event.entry == entry => {
            let changed = stale.iter().any(|u| !u.is_empty());
            stale.iter_mut().for_each(String::clear);
            changed
        }
        _ => false,
    };
    changed.then_some(out)
}

fn blank_fields(fields: &mut crate::model::EntryFields) -> bool {
    let changed =
        !fields.summary.is_empty() || !fields.content.is_empty() || !fields.evidence.is_empty();
    fields.summary.clear();
    fields.content.clear();
    fields.evidence.clear();
    changed
}

/// True when `event` holds no summary, content or evidence of any entry it creates or sets:
/// what a tombstone must look like.
pub fn is_redacted(event: &Event) -> bool {
    let empty = |f: &crate::model::EntryFields| {
        f.summary.is_empty() && f.content.is_empty() && f.evidence.is_empty()
    };
    match &event.data {
        EventData::Create { fields, .. } => empty(fields),
        EventData::Supersede {
            replacement: Some(r),
            ..
        } => empty(&r.fields),
        EventData::Update { set, .. } | EventData::Resolve { set, .. } => PURGED_FIELDS
            .iter()
            .all(|f| set.get(*f).is_none_or(|v| *v == blank(f))),
        EventData::EvidenceChecked { stale } => stale.iter().all(String::is_empty),
        _ => true,
    }
}

/// The digest a purge records for a redacted event: blake3 of [`TOMBSTONE_DOMAIN`] and the
/// redacted event's canonical line (with its original `id`, without `purged_by`).
///
/// # Errors
/// When the event cannot be encoded.
pub fn digest(redacted: &Event) -> Result<String, crate::EventError> {
    Ok(digest_of_line(&redacted.to_line()?))
}

/// [`digest`] of a canonical line without `purged_by`.
pub fn digest_of_line(line: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(TOMBSTONE_DOMAIN);
    h.update(line.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The tombstone line of a redacted event: its canonical line with `purged_by` in its sorted
/// place.
///
/// # Errors
/// When the event cannot be encoded.
pub fn line(redacted: &Event, purge: &str) -> Result<String, crate::EventError> {
    let Value::Object(mut map) = redacted.to_value()? else {
        return Err(crate::EventError::NotAnObject);
    };
    map.insert(KEY.into(), Value::String(purge.to_owned()));
    Ok(crate::canonical::map_to_canonical_string(&map)?)
}

/// For a tombstone line: the purge event it names and the line without `purged_by` (what the
/// purge's digest covers). `None` for any other line.
pub fn split(line: &str) -> Option<(String, String)> {
    if !line.contains("\"purged_by\":") {
        return None;
    }
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    let Some(Value::String(purge)) = map.remove(KEY) else {
        return None;
    };
    let rest = crate::canonical::map_to_canonical_string(&map).ok()?;
    Some((purge, rest))
}
