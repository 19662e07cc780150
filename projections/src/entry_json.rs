//! The flat Memory_Entry JSON of the requirements, built from a projected state.

use crate::model::EntryState;
use serde_json::{Map, Value};

/// The entry as one flat JSON object: every Memory_Entry field of the schema (`id`, `section`,
/// `kind`, `subject`, `scope`, `summary`, `content`, `tags`, `confidence`, `evidence`, `status`,
/// `superseded_by`, `related_entries`, `valid_from`, `valid_to`, `created_by`, `created_at`,
/// `updated_at`, `review_interval`) plus memlog's lifecycle, pin and conflict fields.
pub fn to_flat_map(state: &EntryState) -> Map<String, Value> {
    let mut map = match serde_json::to_value(&state.fields) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let s = |v: &str| Value::String(v.to_owned());
    let opt = |v: &Option<String>| v.as_deref().map_or(Value::Null, s);
    map.insert("id".into(), s(&state.id));
    map.insert("status".into(), s(state.status.as_str()));
    map.insert("superseded_by".into(), opt(&state.superseded_by));
    map.insert("superseded_at".into(), opt(&state.superseded_at));
    map.insert("created_by".into(), s(&state.created_by));
    map.insert("created_at".into(), s(&state.created_at));
    map.insert("updated_at".into(), s(&state.updated_at));
    map.insert("updated_by".into(), s(&state.updated_by));
    map.insert("lifecycle".into(), s(state.lifecycle.as_str()));
    map.insert("pinned".into(), Value::Bool(state.pinned));
    map.insert("pinned_by".into(), opt(&state.pinned_by));
    map.insert("pinned_at".into(), opt(&state.pinned_at));
    map.insert("status_reason".into(), opt(&state.status_reason));
    map.insert("evidence_stale".into(), Value::Bool(state.evidence_stale));
    map.insert("purged".into(), Value::Bool(state.purged));
    map.insert("version".into(), Value::from(state.version));
    map.insert("conflict".into(), Value::Bool(state.in_conflict()));
    map.insert(
        "heads".into(),
        Value::Array(state.heads.iter().map(|h| s(h)).collect()),
    );
    map
}
