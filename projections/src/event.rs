//! Events: their JSON shape, canonical line encoding, content address and decoding.
//!
//! A line is the canonical encoding (see [`crate::canonical`]) of an object with exactly the keys
//! `actor`, `at`, `data`, `entry`, `id`, `parents`, `type`, `v`. The `id` is the lowercase hex
//! blake3 hash of [`EVENT_DOMAIN`] followed by the canonical encoding of the same object without
//! `id`. A create event's `entry` is derived from its own content: `m-` followed by the first
//! [`ENTRY_ID_CHARS`] Crockford base32 characters (five bits each) of blake3([`ENTRY_DOMAIN`] +
//! canonical object without `id` and `entry`). Logs written before entry ids grew to 130 bits hold
//! ids of [`LEGACY_ENTRY_ID_CHARS`] characters, the first 50 bits of the same hash; both verify.
//!
//! A supersede event may carry its replacement (`data.replacement`, the data of a create). Then
//! the event also creates the replacement entry, whose id `data.by` is derived the same way from
//! the canonical object without `id` and without `data.by`, so that superseding is one line: it
//! either is in the log, with both of its effects, or it is not.

use crate::canonical::{
    CanonicalError, first_unsafe_integer, map_to_canonical_string, to_canonical_string,
    write_f64_number, write_string,
};
use crate::model::{EntryFields, EventType, Lifecycle, PATCHABLE_FIELDS, Status};
use crate::time::is_event_timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The event format version this build reads and writes.
pub const EVENT_VERSION: u64 = 1;
/// Domain prefix of the event id hash.
pub const EVENT_DOMAIN: &[u8] = b"memlog/event/v1\n";
/// Domain prefix of the entry id hash.
pub const ENTRY_DOMAIN: &[u8] = b"memlog/entry/v1\n";
/// Prefix of every entry id.
pub const ENTRY_PREFIX: &str = "m-";
/// Number of base32 characters after the prefix in the entry ids memlog writes (130 bits).
pub const ENTRY_ID_CHARS: usize = 26;
/// Number of base32 characters after the prefix in entry ids of older logs (50 bits). Still
/// valid: such an id is checked against the first 50 bits of its hash.
pub const LEGACY_ENTRY_ID_CHARS: usize = 10;
/// Longest actor name.
pub const MAX_ACTOR_CHARS: usize = 128;
const CROCKFORD: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The payload of an event, one variant per type.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// A new entry with its fields and initial status (`active` or `draft`).
    Create { fields: EntryFields, status: Status },
    /// A new version: the named fields take the given values.
    Update {
        set: Map<String, Value>,
        reason: Option<String>,
    },
    /// The entry is replaced by entry `by`.
    ///
    /// With a `replacement`, the event also creates entry `by` from those fields: `by` is then
    /// derived from the event's content ([`Event::build`] computes it). Without one, `by` names
    /// an entry created elsewhere in the log (what `resolve` writes for a losing entry).
    Supersede {
        by: String,
        reason: Option<String>,
        replacement: Option<Replacement>,
    },
    /// The entry is historically relevant but no longer current.
    Deprecate { reason: Option<String> },
    /// The entry is exempt from automatic lifecycle transitions.
    Pin { reason: Option<String> },
    /// The entry returns to automatic lifecycle management.
    Unpin { reason: Option<String> },
    /// A lifecycle transition decided by the lifecycle engine at a given time.
    Transition { to: Lifecycle, reason: String },
    /// The entry's content is removed; its audit trail stays.
    ///
    /// `redacted` maps the id of each event of the entry that carries its content to the digest
    /// of that event's tombstone (see [`crate::tombstone`]): what lets `gc` replace those lines
    /// and a verifier accept the replacements.
    Purge {
        reason: String,
        redacted: std::collections::BTreeMap<String, String>,
    },
    /// The entry was merged into entry `into`.
    Consolidate {
        into: String,
        reason: Option<String>,
    },
    /// Evidence was checked; `stale` lists the URIs found unreachable.
    EvidenceChecked { stale: Vec<String> },
    /// Clears a conflict: its parents include every head; `set` optionally picks field values.
    Resolve {
        set: Map<String, Value>,
        reason: Option<String>,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetData {
    set: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReasonData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// The entry a supersede event creates in the same line: the data of a create.
#[derive(Debug, Clone, PartialEq)]
pub struct Replacement {
    pub fields: EntryFields,
    pub status: Status,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SupersedeData {
    by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replacement: Option<Value>,
}

/// The data of a create: the entry fields plus `status`.
fn create_value(fields: &EntryFields, status: Status) -> Result<Value, serde_json::Error> {
    let mut value = serde_json::to_value(fields)?;
    if let Value::Object(map) = &mut value {
        map.insert("status".into(), Value::String(status.as_str().into()));
    }
    Ok(value)
}

/// Reads the data of a create: the entry fields plus `status`.
fn create_from_value(value: Value) -> Result<(EntryFields, Status), serde_json::Error> {
    // `serde(flatten)` cannot deny unknown fields, so split `status` off by hand.
    let mut value = value;
    let status = match &mut value {
        Value::Object(map) => map.remove("status"),
        _ => return Err(serde::de::Error::custom("expected an object")),
    };
    let status = match status {
        Some(s) => serde_json::from_value(s)?,
        None => return Err(serde::de::Error::missing_field("status")),
    };
    Ok((serde_json::from_value(value)?, status))
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsolidateData {
    into: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransitionData {
    to: Lifecycle,
    reason: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PurgeData {
    reason: String,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    redacted: std::collections::BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvidenceCheckedData {
    stale: Vec<String>,
}

impl EventData {
    /// The event type this payload belongs to.
    pub const fn event_type(&self) -> EventType {
        match self {
            Self::Create { .. } => EventType::Create,
            Self::Update { .. } => EventType::Update,
            Self::Supersede { .. } => EventType::Supersede,
            Self::Deprecate { .. } => EventType::Deprecate,
            Self::Pin { .. } => EventType::Pin,
            Self::Unpin { .. } => EventType::Unpin,
            Self::Transition { .. } => EventType::Transition,
            Self::Purge { .. } => EventType::Purge,
            Self::Consolidate { .. } => EventType::Consolidate,
            Self::EvidenceChecked { .. } => EventType::EvidenceChecked,
            Self::Resolve { .. } => EventType::Resolve,
        }
    }

    fn to_value(&self) -> Result<Value, serde_json::Error> {
        let reason = |reason: &Option<String>| ReasonData {
            reason: reason.clone(),
        };
        match self {
            Self::Create { fields, status } => create_value(fields, *status),
            Self::Update { set, reason } | Self::Resolve { set, reason } => {
                serde_json::to_value(SetData {
                    set: set.clone(),
                    reason: reason.clone(),
                })
            }
            Self::Supersede {
                by,
                reason,
                replacement,
            } => serde_json::to_value(SupersedeData {
                by: by.clone(),
                reason: reason.clone(),
                replacement: replacement
                    .as_ref()
                    .map(|r| create_value(&r.fields, r.status))
                    .transpose()?,
            }),
            Self::Deprecate { reason: r } | Self::Pin { reason: r } | Self::Unpin { reason: r } => {
                serde_json::to_value(reason(r))
            }
            Self::Transition { to, reason } => serde_json::to_value(TransitionData {
                to: *to,
                reason: reason.clone(),
            }),
            Self::Purge { reason, redacted } => serde_json::to_value(PurgeData {
                reason: reason.clone(),
                redacted: redacted.clone(),
            }),
            Self::Consolidate { into, reason } => serde_json::to_value(ConsolidateData {
                into: into.clone(),
                reason: reason.clone(),
            }),
            Self::EvidenceChecked { stale } => serde_json::to_value(EvidenceCheckedData {
                stale: stale.clone(),
            }),
        }
    }

    pub(crate) fn from_value(kind: EventType, value: Value) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            EventType::Create => {
                let (fields, status) = create_from_value(value)?;
                Self::Create { fields, status }
            }
            EventType::Update => {
                let d: SetData = serde_json::from_value(value)?;
                Self::Update {
                    set: d.set,
                    reason: d.reason,
                }
            }
            EventType::Resolve => {
                let d: SetData = serde_json::from_value(value)?;
                Self::Resolve {
                    set: d.set,
                    reason: d.reason,
                }
            }
            EventType::Supersede => {
                // An absent replacement is the two-line form; `null` is neither form.
                if matches!(value.get("replacement"), Some(Value::Null)) {
                    return Err(serde::de::Error::custom(
                        "replacement must be an object (the data of a create)",
                    ));
                }
                let d: SupersedeData = serde_json::from_value(value)?;
                let replacement = match d.replacement {
                    Some(r) => {
                        let (fields, status) = create_from_value(r)
                            .map_err(|e| serde::de::Error::custom(format!("replacement: {e}")))?;
                        Some(Replacement { fields, status })
                    }
                    None => None,
                };
                Self::Supersede {
                    by: d.by,
                    reason: d.reason,
                    replacement,
                }
            }
            EventType::Deprecate => Self::Deprecate {
                reason: reason_of(value)?,
            },
            EventType::Pin => Self::Pin {
                reason: reason_of(value)?,
            },
            EventType::Unpin => Self::Unpin {
                reason: reason_of(value)?,
            },
            EventType::Transition => {
                let d: TransitionData = serde_json::from_value(value)?;
                Self::Transition {
                    to: d.to,
                    reason: d.reason,
                }
            }
            EventType::Purge => {
                let d: PurgeData = serde_json::from_value(value)?;
                Self::Purge {
                    reason: d.reason,
                    redacted: d.redacted,
                }
            }
            EventType::Consolidate => {
                let d: ConsolidateData = serde_json::from_value(value)?;
                Self::Consolidate {
                    into: d.into,
                    reason: d.reason,
                }
            }
            EventType::EvidenceChecked => {
                let d: EvidenceCheckedData = serde_json::from_value(value)?;
                Self::EvidenceChecked { stale: d.stale }
            }
        })
    }
}

fn reason_of(value: Value) -> Result<Option<String>, serde_json::Error> {
    Ok(serde_json::from_value::<ReasonData>(value)?.reason)
}

/// One immutable event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Content address: lowercase hex blake3 (64 characters).
    pub id: String,
    /// The entry the event is about.
    pub entry: String,
    /// Who wrote it.
    pub actor: String,
    /// When, in the event timestamp layout.
    pub at: String,
    /// Head events of the entry when this one was written, sorted, without duplicates.
    pub parents: Vec<String>,
    /// What happened.
    pub data: EventData,
}

/// Why an event could not be built or a line could not be read as an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventError {
    /// The line is not JSON at all.
    NotJson(String),
    /// The line is JSON but not an object.
    NotAnObject,
    /// A required key is missing.
    MissingKey(&'static str),
    /// A key is not one of the eight an event has.
    UnknownKey(String),
    /// A key holds the wrong JSON type.
    WrongType {
        key: &'static str,
        expected: &'static str,
    },
    /// The format version is newer (or other) than this build understands.
    UnsupportedVersion(u64),
    /// The type is not in the closed set.
    UnknownType(String),
    /// The data does not match the type's schema.
    BadData {
        event_type: EventType,
        message: String,
    },
    /// `update`/`resolve` names a field that cannot be set.
    UnknownField(String),
    /// `at` is not in the event timestamp layout.
    BadTimestamp(String),
    /// `actor` is empty, too long or has control characters.
    BadActor,
    /// `entry` is not an entry id.
    BadEntryId(String),
    /// A parent is not an event id, or parents are not sorted and unique.
    BadParents(String),
    /// The line is valid JSON but not in canonical form.
    NotCanonical,
    /// A number has no canonical form.
    Canonical(CanonicalError),
    /// `id` is not the hash of the content.
    IdMismatch { stated: String, computed: String },
    /// A create event's `entry` is not derived from its content.
    EntryIdMismatch { stated: String, computed: String },
    /// A supersede event's `by` is not derived from its content although it carries the
    /// replacement entry.
    ReplacementIdMismatch { stated: String, computed: String },
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotJson(m) => write!(f, "not valid JSON: {m}"),
            Self::NotAnObject => f.write_str("not a JSON object"),
            Self::MissingKey(k) => write!(f, "missing key `{k}`"),
            Self::UnknownKey(k) => write!(f, "unknown key `{k}`"),
            Self::WrongType { key, expected } => write!(f, "key `{key}` must be {expected}"),
            Self::UnsupportedVersion(v) => write!(
                f,
                "event format version {v} is not supported by this memlog (it reads version {EVENT_VERSION}); upgrade memlog"
            ),
            Self::UnknownType(t) => write!(
                f,
                "unknown event type `{t}` (known: {}); upgrade memlog if a newer version wrote it",
                EventType::choices()
            ),
            Self::BadData {
                event_type,
                message,
            } => {
                write!(f, "data of `{event_type}` event is invalid: {message}")
            }
            Self::UnknownField(k) => write!(
                f,
                "field `{k}` cannot be set (settable: {})",
                PATCHABLE_FIELDS.join(", ")
            ),
            Self::BadTimestamp(t) => {
                write!(
                    f,
                    "`at` is `{t}`, not a UTC timestamp like 2026-11-22T10:31:12.123Z"
                )
            }
            Self::BadActor => write!(
                f,
                "`actor` must be 1 to {MAX_ACTOR_CHARS} characters without control characters"
            ),
            Self::BadEntryId(e) => write!(
                f,
                "`{e}` is not an entry id like m-s2bgnsgj84zxh4vqk51fq7naym (or m-s2bgnsgj84 in older logs)"
            ),
            Self::BadParents(m) => write!(f, "`parents` {m}"),
            Self::NotCanonical => f.write_str(
                "not in canonical form (sorted keys, no whitespace, RFC 8785 numbers and escapes)",
            ),
            Self::Canonical(e) => write!(f, "{e}"),
            Self::IdMismatch { stated, computed } => write!(
                f,
                "id {stated} does not match the content, whose hash is {computed}: the event was altered"
            ),
            Self::EntryIdMismatch { stated, computed } => write!(
                f,
                "create event names entry {stated} but its content derives {computed}: the event was altered"
            ),
            Self::ReplacementIdMismatch { stated, computed } => write!(
                f,
                "supersede event names its replacement {stated} but its content derives {computed}: the event was altered"
            ),
        }
    }
}

impl std::error::Error for EventError {}

impl From<CanonicalError> for EventError {
    fn from(e: CanonicalError) -> Self {
        Self::Canonical(e)
    }
}

/// True when `s` is a 64-character lowercase hex string.
pub fn is_event_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// True when `s` has the shape of an entry id: `m-` and 26 (or, in older logs, 10) characters of
/// the lowercase Crockford base32 alphabet.
pub fn is_entry_id(s: &str) -> bool {
    s.strip_prefix(ENTRY_PREFIX).is_some_and(|rest| {
        (rest.len() == ENTRY_ID_CHARS || rest.len() == LEGACY_ENTRY_ID_CHARS)
            && rest.bytes().all(|b| CROCKFORD.contains(&b))
    })
}

fn valid_actor(actor: &str) -> bool {
    let n = actor.chars().count();
    (1..=MAX_ACTOR_CHARS).contains(&n) && !actor.chars().any(char::is_control)
}

/// `m-` and the first `chars` five-bit groups of the hash, most significant bit first.
///
/// The legacy ten-character id of a hash is therefore the first twelve characters of its long id.
pub(crate) fn entry_id_from_hash(hash: &blake3::Hash, chars: usize) -> String {
    let bytes = hash.as_bytes();
    let mut id = String::with_capacity(ENTRY_PREFIX.len() + chars);
    id.push_str(ENTRY_PREFIX);
    for i in 0..chars {
        // Bits [5i, 5i + 5) of the hash read as a big-endian bit string: they lie within the
        // two bytes starting at bit 5i / 8 (the hash has 32 bytes, 26 groups need 17).
        let start = 5 * i;
        let hi = u16::from(bytes.get(start / 8).copied().unwrap_or(0));
        let lo = u16::from(bytes.get(start / 8 + 1).copied().unwrap_or(0));
        let window = (hi << 8) | lo;
        let idx = usize::from((window >> (11 - start % 8)) & 0x1f);
        id.push(char::from(CROCKFORD[idx]));
    }
    id
}

/// The id a derived entry id must have, given the length the event states: the legacy form is
/// checked against the first 50 bits, anything else against the full 130.
pub(crate) fn expected_entry_id(hash: &blake3::Hash, stated: &str) -> String {
    let legacy = stated.len() == ENTRY_PREFIX.len() + LEGACY_ENTRY_ID_CHARS;
    entry_id_from_hash(
        hash,
        if legacy {
            LEGACY_ENTRY_ID_CHARS
        } else {
            ENTRY_ID_CHARS
        },
    )
}

/// Removes `data.by` from an event body (the pre-image of a replacement's entry id omits it).
fn without_by(body: &Map<String, Value>) -> Map<String, Value> {
    let mut body = body.clone();
    if let Some(Value::Object(data)) = body.get_mut("data") {
        data.remove("by");
    }
    body
}

/// The canonical encoding of a create's data (the entry fields and `status`), written field by
/// field in key order instead of through a [`Value`]: a bulk import builds one per update, and
/// the detour cost a third of building the event. `None` for a confidence that is not finite,
/// which the general path encodes as JSON gives it. Property-tested against that path
/// (`tests/decode_equivalence.rs`).
fn create_data_canonical(
    fields: &EntryFields,
    status: Status,
) -> Result<Option<String>, CanonicalError> {
    if !fields.confidence.is_finite() {
        return Ok(None);
    }
    let strings = |out: &mut String, items: &[String]| {
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(out, item);
        }
        out.push(']');
    };
    let optional = |out: &mut String, value: &Option<String>| match value {
        Some(s) => write_string(out, s),
        None => out.push_str("null"),
    };
    let mut out = String::with_capacity(
        256 + fields.summary.len() + fields.content.len() + fields.subject.len(),
    );
    out.push_str("{\"confidence\":");
    write_f64_number(&mut out, fields.confidence)?;
    out.push_str(",\"content\":");
    write_string(&mut out, &fields.content);
    out.push_str(",\"evidence\":[");
    for (i, e) in fields.evidence.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"note\":");
        write_string(&mut out, &e.note);
        out.push_str(",\"type\":");
        write_string(&mut out, e.kind.as_str());
        out.push_str(",\"uri\":");
        write_string(&mut out, &e.uri);
        out.push('}');
    }
    out.push_str("],\"kind\":");
    write_string(&mut out, fields.kind.as_str());
    out.push_str(",\"related_entries\":");
    strings(&mut out, &fields.related_entries);
    out.push_str(",\"review_interval\":");
    optional(&mut out, &fields.review_interval);
    out.push_str(",\"scope\":");
    write_string(&mut out, &fields.scope);
    out.push_str(",\"section\":");
    write_string(&mut out, fields.section.as_str());
    out.push_str(",\"status\":");
    write_string(&mut out, status.as_str());
    out.push_str(",\"subject\":");
    write_string(&mut out, &fields.subject);
    out.push_str(",\"summary\":");
    write_string(&mut out, &fields.summary);
    out.push_str(",\"tags\":");
    strings(&mut out, &fields.tags);
    out.push_str(",\"valid_from\":");
    optional(&mut out, &fields.valid_from);
    out.push_str(",\"valid_to\":");
    optional(&mut out, &fields.valid_to);
    out.push('}');
    Ok(Some(out))
}

fn hash_with(domain: &[u8], canonical: &str) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(domain);
    hasher.update(canonical.as_bytes());
    hasher.finalize()
}

impl Event {
    /// Builds an event and computes its id (and, for a create, its entry id; for a supersede
    /// with a replacement, the replacement's entry id `by`).
    ///
    /// `entry` is ignored for create events, whose entry id is derived from their content, and
    /// so is `by` of a supersede that carries its replacement. New ids are always the long form.
    ///
    /// # Errors
    /// When a field is malformed (actor, timestamp, parents, data) or a number has no canonical form.
    pub fn build(
        entry: &str,
        actor: &str,
        at: &str,
        parents: Vec<String>,
        data: EventData,
    ) -> Result<Self, EventError> {
        Self::build_with_line(entry, actor, at, parents, data).map(|(event, _)| event)
    }

    /// [`Event::build`], with the event's canonical log line ([`Event::to_line`]) made from
    /// the encoding its id hashes instead of encoding the event once more.
    ///
    /// # Errors
    /// As [`Event::build`].
    pub fn build_with_line(
        entry: &str,
        actor: &str,
        at: &str,
        parents: Vec<String>,
        data: EventData,
    ) -> Result<(Self, String), EventError> {
        let mut parents = parents;
        parents.sort();
        parents.dedup();
        let mut event = Self {
            id: String::new(),
            entry: entry.to_owned(),
            actor: actor.to_owned(),
            at: at.to_owned(),
            parents,
            data,
        };
        if let Some(line) = event.create_line()? {
            return Ok((event, line));
        }
        let mut body = event.body_value()?;
        // The body's canonical encoding when a step below already has it.
        let mut encoded = None;
        if matches!(event.data, EventData::Create { .. }) {
            body.remove("entry");
            let canonical = map_to_canonical_string(&body)?;
            event.entry = entry_id_from_hash(&hash_with(ENTRY_DOMAIN, &canonical), ENTRY_ID_CHARS);
            // `entry` sorts between `data` and `parents`: the full body is this one with the
            // member put back in its place.
            encoded = top_level_key_offsets(&body, &canonical).map(|at| {
                let mut full = String::with_capacity(canonical.len() + event.entry.len() + 12);
                full.push_str(&canonical[..at.parents]);
                full.push_str(",\"entry\":");
                write_string(&mut full, &event.entry);
                full.push_str(&canonical[at.parents..]);
                full
            });
            body.insert("entry".into(), Value::String(event.entry.clone()));
        }
        if let EventData::Supersede {
            by,
            replacement: Some(_),
            ..
        } = &mut event.data
        {
            let canonical = map_to_canonical_string(&without_by(&body))?;
            *by = entry_id_from_hash(&hash_with(ENTRY_DOMAIN, &canonical), ENTRY_ID_CHARS);
            if let Some(Value::Object(data)) = body.get_mut("data") {
                data.insert("by".into(), Value::String(by.clone()));
            }
        }
        event.check_fields()?;
        let canonical = match encoded {
            Some(c) => c,
            None => map_to_canonical_string(&body)?,
        };
        event.id = hash_with(EVENT_DOMAIN, &canonical).to_hex().to_string();
        // `id` sorts between `entry` and `parents`, as in `decode`.
        let line = match top_level_key_offsets(&body, &canonical) {
            Some(TopLevel { parents, .. }) => {
                let mut full = String::with_capacity(canonical.len() + event.id.len() + 8);
                full.push_str(&canonical[..=parents]);
                full.push_str("\"id\":");
                write_string(&mut full, &event.id);
                full.push(',');
                full.push_str(&canonical[parents + 1..]);
                full
            }
            None => event.to_line()?,
        };
        Ok((event, line))
    }

    /// Builds a supersede of `target` that creates its replacement in the same event: one line,
    /// so that a crash or a torn tail keeps both effects or neither. The replacement's entry id
    /// is derived from the event's content; it is the event's `by` and [`Event::created_entry`].
    ///
    /// # Errors
    /// As [`Event::build`]; also when `status` is not `active` or `draft`.
    pub fn supersede_with_replacement(
        target: &str,
        actor: &str,
        at: &str,
        parents: Vec<String>,
        fields: EntryFields,
        status: Status,
        reason: Option<String>,
    ) -> Result<Self, EventError> {
        Self::build(
            target,
            actor,
            at,
            parents,
            EventData::Supersede {
                by: String::new(),
                reason,
                replacement: Some(Replacement { fields, status }),
            },
        )
    }

    /// The event type.
    pub const fn event_type(&self) -> EventType {
        self.data.event_type()
    }

    /// Every entry the event projects onto: its `entry`, and for a supersede that carries its
    /// replacement, the replacement too. Replay must give the event to each of them.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        let replacement = match &self.data {
            EventData::Supersede {
                by,
                replacement: Some(_),
                ..
            } => Some(by.as_str()),
            _ => None,
        };
        std::iter::once(self.entry.as_str()).chain(replacement)
    }

    /// True when the event projects onto `entry` (see [`Event::entries`]).
    pub fn projects_onto(&self, entry: &str) -> bool {
        self.entries().any(|e| e == entry)
    }

    /// The entry this event creates: a create's `entry`, or the replacement of a supersede that
    /// carries one.
    pub fn created_entry(&self) -> Option<&str> {
        match &self.data {
            EventData::Create { .. } => Some(&self.entry),
            EventData::Supersede {
                by,
                replacement: Some(_),
                ..
            } => Some(by),
            _ => None,
        }
    }

    /// The fields and status this event gives `entry` when it creates it (see
    /// [`Event::created_entry`]); `None` when the event does not create `entry`.
    pub fn creation_of(&self, entry: &str) -> Option<(&EntryFields, Status)> {
        match &self.data {
            EventData::Create { fields, status } if self.entry == entry => Some((fields, *status)),
            EventData::Supersede {
                by,
                replacement: Some(r),
                ..
            } if by == entry && self.entry != entry => Some((&r.fields, r.status)),
            _ => None,
        }
    }

    /// For a create, sets its entry id and id and returns its line, encoded directly (see
    /// [`create_data_canonical`]); `None` for any other event, and for a create the general
    /// path must encode.
    fn create_line(&mut self) -> Result<Option<String>, EventError> {
        let EventData::Create { fields, status } = &self.data else {
            return Ok(None);
        };
        let Some(data) = create_data_canonical(fields, *status)? else {
            return Ok(None);
        };
        // `{"actor":…,"at":…,"data":…` + `,"entry":…` + `,"id":…` + `,"parents":[…],…}`: the
        // entry id hashes the body without `entry`, the id the body with it, the line is both.
        let mut head = String::with_capacity(data.len() + self.actor.len() + 200);
        head.push_str("{\"actor\":");
        write_string(&mut head, &self.actor);
        head.push_str(",\"at\":");
        write_string(&mut head, &self.at);
        head.push_str(",\"data\":");
        head.push_str(&data);
        let mut tail = String::from(",\"parents\":[");
        for (i, p) in self.parents.iter().enumerate() {
            if i > 0 {
                tail.push(',');
            }
            write_string(&mut tail, p);
        }
        tail.push_str("],\"type\":");
        write_string(&mut tail, EventType::Create.as_str());
        tail.push_str(&format!(",\"v\":{EVENT_VERSION}}}"));
        let body_len = head.len();
        head.push_str(&tail);
        self.entry = entry_id_from_hash(&hash_with(ENTRY_DOMAIN, &head), ENTRY_ID_CHARS);
        head.truncate(body_len);
        head.push_str(",\"entry\":");
        write_string(&mut head, &self.entry);
        self.check_fields()?;
        let with_entry = head.len();
        head.push_str(&tail);
        self.id = hash_with(EVENT_DOMAIN, &head).to_hex().to_string();
        head.truncate(with_entry);
        head.push_str(",\"id\":");
        write_string(&mut head, &self.id);
        head.push_str(&tail);
        Ok(Some(head))
    }

    fn body_value(&self) -> Result<Map<String, Value>, EventError> {
        let data = self.data.to_value().map_err(|e| EventError::BadData {
            event_type: self.event_type(),
            message: e.to_string(),
        })?;
        let mut map = Map::new();
        map.insert("actor".into(), Value::String(self.actor.clone()));
        map.insert("at".into(), Value::String(self.at.clone()));
        map.insert("data".into(), data);
        map.insert("entry".into(), Value::String(self.entry.clone()));
        map.insert(
            "parents".into(),
            Value::Array(self.parents.iter().cloned().map(Value::String).collect()),
        );
        map.insert(
            "type".into(),
            Value::String(self.event_type().as_str().into()),
        );
        map.insert("v".into(), Value::from(EVENT_VERSION));
        Ok(map)
    }

    /// The event as a JSON object, `id` included.
    ///
    /// # Errors
    /// When the data cannot be represented (never for events from [`Event::build`] or [`decode_line`]).
    pub fn to_value(&self) -> Result<Value, EventError> {
        let mut map = self.body_value()?;
        map.insert("id".into(), Value::String(self.id.clone()));
        Ok(Value::Object(map))
    }

    /// The canonical log line, without the trailing newline.
    ///
    /// # Errors
    /// As [`Event::to_value`].
    pub fn to_line(&self) -> Result<String, EventError> {
        Ok(to_canonical_string(&self.to_value()?)?)
    }

    pub(crate) fn check_fields(&self) -> Result<(), EventError> {
        if !valid_actor(&self.actor) {
            return Err(EventError::BadActor);
        }
        if !is_event_timestamp(&self.at) {
            return Err(EventError::BadTimestamp(self.at.clone()));
        }
        if !is_entry_id(&self.entry) {
            return Err(EventError::BadEntryId(self.entry.clone()));
        }
        if let Some(p) = self.parents.iter().find(|p| !is_event_id(p)) {
            return Err(EventError::BadParents(format!(
                "holds `{p}`, which is not an event id"
            )));
        }
        if self.parents.windows(2).any(|w| w[0] >= w[1]) {
            return Err(EventError::BadParents(
                "must be sorted and without duplicates".into(),
            ));
        }
        match &self.data {
            EventData::Create { status, .. }
            | EventData::Supersede {
                replacement: Some(Replacement { status, .. }),
                ..
            } if !matches!(status, Status::Active | Status::Draft) => {
                return Err(EventError::BadData {
                    event_type: self.event_type(),
                    message: format!("a new entry's status must be active or draft, not {status}"),
                });
            }
            EventData::Create { fields, .. }
            | EventData::Supersede {
                replacement: Some(Replacement { fields, .. }),
                ..
            } if !fields.confidence.is_finite() => {
                return Err(EventError::BadData {
                    event_type: self.event_type(),
                    message: "confidence is not a finite number".into(),
                });
            }
            EventData::Create { .. } if !self.parents.is_empty() => {
                return Err(EventError::BadParents(
                    "must be empty for a create event".into(),
                ));
            }
            EventData::Update { set, .. } | EventData::Resolve { set, .. } => {
                if let Some(k) = set.keys().find(|k| !PATCHABLE_FIELDS.contains(&k.as_str())) {
                    return Err(EventError::UnknownField(k.clone()));
                }
            }
            EventData::Supersede { by: other, .. } | EventData::Consolidate { into: other, .. }
                if !is_entry_id(other) =>
            {
                return Err(EventError::BadEntryId(other.clone()));
            }
            EventData::Supersede {
                by,
                replacement: Some(_),
                ..
            } if by.len() != ENTRY_PREFIX.len() + ENTRY_ID_CHARS || *by == self.entry => {
                return Err(EventError::BadData {
                    event_type: EventType::Supersede,
                    message: format!(
                        "`by` of a supersede that carries its replacement must be the replacement's long entry id, not `{by}`"
                    ),
                });
            }
            _ => {}
        }
        Ok(())
    }
}

fn take_string(map: &mut Map<String, Value>, key: &'static str) -> Result<String, EventError> {
    match map.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(EventError::WrongType {
            key,
            expected: "a string",
        }),
        None => Err(EventError::MissingKey(key)),
    }
}

/// Removes `parents` from an event object: `None` when absent, an error when not an array of
/// strings.
fn take_parents(map: &mut Map<String, Value>) -> Result<Option<Vec<String>>, EventError> {
    let wrong = || EventError::WrongType {
        key: "parents",
        expected: "an array of strings",
    };
    match map.remove("parents") {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|p| match p {
                Value::String(s) => Ok(s),
                _ => Err(wrong()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}

/// Byte offsets in an event body's canonical encoding (without `id`) of the commas that start
/// the top-level `"entry"` and `"parents"` members.
#[derive(Clone, Copy)]
struct TopLevel {
    entry: Option<usize>,
    parents: usize,
}

/// Finds the top-level `entry` and `parents` members in `body`, the canonical encoding of `map`.
///
/// Members are in key order: `actor`, `at`, `data`, `entry`, `parents`, `type`, `v`. When
/// `parents` is an array of strings and `type` a string, nothing after the top-level `parents`
/// key can contain the text `,"parents":` (strings cannot hold an unescaped quote), so the last
/// occurrence is the top-level one; the same holds for a string `entry`, which sits just before
/// `parents`. Anything else returns `None` and the caller encodes the slow way.
fn top_level_key_offsets(map: &Map<String, Value>, body: &str) -> Option<TopLevel> {
    let parents_ok = matches!(map.get("parents"), Some(Value::Array(items))
        if items.iter().all(Value::is_string));
    let tail_ok = map.get("type").is_none_or(Value::is_string)
        && map.get("v").is_none_or(Value::is_number)
        && map.keys().all(|k| {
            matches!(
                k.as_str(),
                "actor" | "at" | "data" | "entry" | "parents" | "type" | "v"
            )
        });
    if !parents_ok || !tail_ok {
        return None;
    }
    let parents = body.rfind(",\"parents\":")?;
    let entry = match map.get("entry") {
        Some(Value::String(_)) => body[..parents]
            .rfind(",\"entry\":")
            .filter(|e| body[e + 1..parents].starts_with("\"entry\":\"")),
        _ => None,
    };
    Some(TopLevel { entry, parents })
}

/// Reads one log line (without its newline) as an event, checking everything a single line can
/// prove: JSON, canonical form, known version and type, schema of the data, id and entry ids.
///
/// A valid line is read in one pass over its bytes ([`crate::fast_decode`]); any other line is
/// left to [`reference_decode_line`], which names the problem.
///
/// # Errors
/// The first problem found, as an [`EventError`].
pub fn decode_line(line: &str) -> Result<Event, EventError> {
    match crate::fast_decode::decode_valid_line(line) {
        Some(event) => Ok(event),
        None => reference_decode_line(line),
    }
}

pub use crate::fast_decode::{Header, trusted_header};

/// Decodes again a line that [`decode_line`] accepted before (the same bytes, still in memory),
/// without hashing it again: a replay that reads each line twice, to group the events by entry
/// and then to fold them, verifies each line once. Lines the one-pass reader does not take get
/// [`decode_line`]'s full checks.
///
/// # Errors
/// As [`decode_line`].
pub fn decode_verified_line(line: &str) -> Result<Event, EventError> {
    match crate::fast_decode::decode_verified_line(line) {
        Some(event) => Ok(event),
        None => decode_line(line),
    }
}

/// [`decode_line`] the straightforward way: parse the line as a JSON value, encode that value
/// canonically and compare, then hash the encodings. It accepts exactly the lines
/// [`decode_line`] accepts; it is what names the problem with a line that is refused, and the
/// reference the one-pass reader is tested against.
///
/// # Errors
/// The first problem found, as an [`EventError`].
pub fn reference_decode_line(line: &str) -> Result<Event, EventError> {
    if line.starts_with('\u{feff}') {
        // An editor's byte order mark: the JSON parser would only say "expected value".
        return Err(EventError::NotJson(
            "the line starts with a UTF-8 byte order mark (EF BB BF, added by an editor): \
             remove those 3 bytes, e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' <log>`"
                .into(),
        ));
    }
    decode(line).map_err(|e| match e {
        // An integer token beyond 64 bits is read as a rounded double: name it as written.
        EventError::NotCanonical | EventError::Canonical(CanonicalError::UnsafeInteger(_)) => {
            first_unsafe_integer(line).map_or(e, |token| {
                EventError::Canonical(CanonicalError::UnsafeInteger(token.to_owned()))
            })
        }
        other => other,
    })
}

fn decode(line: &str) -> Result<Event, EventError> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| EventError::NotJson(e.to_string()))?;
    let Value::Object(mut map) = value else {
        return Err(EventError::NotAnObject);
    };
    // The version decides how to read everything else, so check it first.
    match map.get("v") {
        None => return Err(EventError::MissingKey("v")),
        // An integer past ±(2^53 - 1) is named as such, as in any other key, not as a
        // version or a wrong type.
        Some(v @ Value::Number(_)) if crate::canonical::to_canonical_string(v).is_err() => {
            return Err(crate::canonical::to_canonical_string(v)
                .map_or_else(EventError::Canonical, |_| EventError::NotCanonical));
        }
        Some(v) => match v.as_u64() {
            Some(EVENT_VERSION) => {}
            Some(other) => return Err(EventError::UnsupportedVersion(other)),
            None => {
                return Err(EventError::WrongType {
                    key: "v",
                    expected: "a positive integer",
                });
            }
        },
    }
    if let Some(k) = map.keys().find(|k| {
        !matches!(
            k.as_str(),
            "actor" | "at" | "data" | "entry" | "id" | "parents" | "purged_by" | "type" | "v"
        )
    }) {
        return Err(EventError::UnknownKey(k.clone()));
    }
    // A tombstone (see `crate::tombstone`): an event whose content `gc` removed. Its id cannot
    // be recomputed; the purge event it names vouches for it, which only a check of the whole
    // log can see.
    let tombstone = match map.remove("purged_by") {
        None => None,
        Some(Value::String(p)) if is_event_id(&p) => Some(p),
        Some(_) => {
            return Err(EventError::WrongType {
                key: "purged_by",
                expected: "an event id (64 lowercase hex characters)",
            });
        }
    };
    if let Some(purge) = &tombstone {
        return decode_tombstone(map, purge, line);
    }
    // One canonical encoding serves three checks: the body without `id` is what the id hashes,
    // the line must be that body with `id` in its sorted place, and a create's entry id hashes
    // the body without `entry` as well.
    let stated_id = match map.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(_) if to_canonical_string(&Value::Object(map.clone()))? != line => {
            return Err(EventError::NotCanonical);
        }
        _ => take_string(&mut map, "id")?,
    };
    map.remove("id");
    let body = map_to_canonical_string(&map)?;
    let splice = top_level_key_offsets(&map, &body);
    let canonical_line = match splice {
        Some(TopLevel { parents, .. }) => {
            let mut full = String::with_capacity(body.len() + stated_id.len() + 8);
            full.push_str(&body[..=parents]);
            full.push_str("\"id\":");
            write_string(&mut full, &stated_id);
            full.push(',');
            full.push_str(&body[parents + 1..]);
            full
        }
        None => {
            let mut with_id = map.clone();
            with_id.insert("id".into(), Value::String(stated_id.clone()));
            map_to_canonical_string(&with_id)?
        }
    };
    if canonical_line != line {
        return Err(EventError::NotCanonical);
    }
    let computed = hash_with(EVENT_DOMAIN, &body).to_hex().to_string();

    let derived_by = (map.get("type").and_then(Value::as_str) == Some("supersede")
        && map
            .get("data")
            .is_some_and(|d| d.get("replacement").is_some()))
    .then(|| map_to_canonical_string(&without_by(&map)))
    .transpose()?
    .map(|pre_image| hash_with(ENTRY_DOMAIN, &pre_image));
    let derived_entry = if map.get("type").and_then(Value::as_str) == Some("create") {
        let without_entry = match splice {
            Some(TopLevel {
                entry: Some(entry),
                parents,
            }) => format!("{}{}", &body[..entry], &body[parents..]),
            _ => {
                let mut raw = map.clone();
                raw.remove("entry");
                map_to_canonical_string(&raw)?
            }
        };
        Some(hash_with(ENTRY_DOMAIN, &without_entry))
    } else {
        None
    };
    let type_name = take_string(&mut map, "type")?;
    let kind = EventType::parse(&type_name).ok_or(EventError::UnknownType(type_name))?;
    let entry = take_string(&mut map, "entry")?;
    let actor = take_string(&mut map, "actor")?;
    let at = take_string(&mut map, "at")?;
    let parents = take_parents(&mut map)?.ok_or(EventError::MissingKey("parents"))?;
    let data_value = map.remove("data").ok_or(EventError::MissingKey("data"))?;
    if !data_value.is_object() {
        return Err(EventError::WrongType {
            key: "data",
            expected: "an object",
        });
    }
    let data = EventData::from_value(kind, data_value).map_err(|e| EventError::BadData {
        event_type: kind,
        message: e.to_string(),
    })?;
    let event = Event {
        id: stated_id,
        entry,
        actor,
        at,
        parents,
        data,
    };
    event.check_fields()?;
    if event.id != computed {
        return Err(EventError::IdMismatch {
            stated: event.id,
            computed,
        });
    }
    if let Some(hash) = derived_entry {
        let derived = expected_entry_id(&hash, &event.entry);
        if derived != event.entry {
            return Err(EventError::EntryIdMismatch {
                stated: event.entry,
                computed: derived,
            });
        }
    }
    if let (
        Some(hash),
        EventData::Supersede {
            by,
            replacement: Some(_),
            ..
        },
    ) = (derived_by, &event.data)
    {
        let derived = entry_id_from_hash(&hash, ENTRY_ID_CHARS);
        if derived != *by {
            return Err(EventError::ReplacementIdMismatch {
                stated: by.clone(),
                computed: derived,
            });
        }
    }
    Ok(event)
}

/// Decodes a tombstone line: `map` is its object without `purged_by`.
fn decode_tombstone(
    mut map: Map<String, Value>,
    purge: &str,
    line: &str,
) -> Result<Event, EventError> {
    let mut full = map.clone();
    full.insert("purged_by".into(), Value::String(purge.to_owned()));
    if map_to_canonical_string(&full)? != line {
        return Err(EventError::NotCanonical);
    }
    let id = take_string(&mut map, "id")?;
    let type_name = take_string(&mut map, "type")?;
    let kind = EventType::parse(&type_name).ok_or(EventError::UnknownType(type_name))?;
    let entry = take_string(&mut map, "entry")?;
    let actor = take_string(&mut map, "actor")?;
    let at = take_string(&mut map, "at")?;
    let parents = take_parents(&mut map)?.ok_or(EventError::WrongType {
        key: "parents",
        expected: "an array of strings",
    })?;
    let data_value = map.remove("data").ok_or(EventError::MissingKey("data"))?;
    let data = EventData::from_value(kind, data_value).map_err(|e| EventError::BadData {
        event_type: kind,
        message: e.to_string(),
    })?;
    if !is_event_id(&id) {
        return Err(EventError::WrongType {
            key: "id",
            expected: "an event id (64 lowercase hex characters)",
        });
    }
    let event = Event {
        id,
        entry,
        actor,
        at,
        parents,
        data,
    };
    event.check_fields()?;
    if !crate::tombstone::is_redacted(&event) {
        return Err(EventError::BadData {
            event_type: kind,
            message: "a tombstone (a line with `purged_by`) must carry no summary, content or \
                      evidence: only `gc` writes tombstones"
                .into(),
        });
    }
    Ok(event)
}
