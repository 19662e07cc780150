//! The memory entry: its closed vocabularies, its writable fields and its projected state.

use serde::{Deserialize, Serialize};

macro_rules! closed_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The spelling used in events, configuration and output.
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }

            /// Parses the spelling used in events and on the command line.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($text => Some(Self::$variant),)+ _ => None }
            }

            /// The accepted spellings, for error messages.
            pub fn choices() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

closed_enum!(
    /// Where an entry belongs: the four sections of memory.
    Section { Decisions => "decisions", State => "state", Observations => "observations", Learnings => "learnings" }
);

closed_enum!(
    /// What kind of knowledge an entry holds.
    Kind {
        Decision => "decision", Requirement => "requirement", Invariant => "invariant",
        Incident => "incident", Metric => "metric", Hypothesis => "hypothesis",
        RunbookStep => "runbook_step", Other => "other",
    }
);

closed_enum!(
    /// The status dimension: whether the entry is the current word on its subject.
    Status { Active => "active", Superseded => "superseded", Deprecated => "deprecated", Draft => "draft" }
);

closed_enum!(
    /// The lifecycle dimension, beside status: how fresh the entry is in storage.
    Lifecycle { Active => "active", Decaying => "decaying", Archived => "archived", Expired => "expired" }
);

closed_enum!(
    /// The kinds of supporting material an entry can cite.
    EvidenceType {
        Artifact => "artifact", Code => "code", Log => "log", Screenshot => "screenshot",
        Assumption => "assumption", Ticket => "ticket", Doc => "doc",
    }
);

impl EvidenceType {
    /// Ranking weight of the requirements: code/artifact > ticket/doc > log/screenshot > assumption.
    pub const fn quality(self) -> f64 {
        match self {
            Self::Code | Self::Artifact => 1.0,
            Self::Ticket | Self::Doc => 0.8,
            Self::Log | Self::Screenshot => 0.6,
            Self::Assumption => 0.4,
        }
    }
}

/// A reference to supporting material.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// What the material is.
    #[serde(rename = "type")]
    pub kind: EvidenceType,
    /// Where it is: a permalink, a workspace path, a URL.
    pub uri: String,
    /// Why it supports the entry.
    pub note: String,
}

/// The fields an author writes: everything of a Memory_Entry that is not bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntryFields {
    pub section: Section,
    pub kind: Kind,
    pub subject: String,
    pub scope: String,
    pub summary: String,
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub confidence: f64,
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    #[serde(default)]
    pub related_entries: Vec<String>,
    #[serde(default)]
    pub valid_from: Option<String>,
    #[serde(default)]
    pub valid_to: Option<String>,
    #[serde(default)]
    pub review_interval: Option<String>,
}

/// Field names an `update` event may set.
pub const PATCHABLE_FIELDS: &[&str] = &[
    "section",
    "kind",
    "subject",
    "scope",
    "summary",
    "content",
    "tags",
    "confidence",
    "evidence",
    "related_entries",
    "valid_from",
    "valid_to",
    "review_interval",
    "status",
];

/// Confidence as integer millionths, so that sums are exact and order-independent.
pub fn confidence_micros(confidence: f64) -> i64 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "confidence is validated to [0, 1]"
    )]
    let micros = (confidence.clamp(0.0, 1.0) * 1_000_000.0).round() as i64;
    micros
}

/// The projected state of one entry: the Memory_Entry of the requirements plus lifecycle,
/// pinning and conflict bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryState {
    pub id: String,
    pub fields: EntryFields,
    pub status: Status,
    pub superseded_by: Option<String>,
    /// When the entry became superseded (for the superseded-per-day series).
    pub superseded_at: Option<String>,
    pub created_by: String,
    pub created_at: String,
    pub updated_at: String,
    pub updated_by: String,
    pub lifecycle: Lifecycle,
    pub pinned: bool,
    pub pinned_by: Option<String>,
    pub pinned_at: Option<String>,
    /// Why the entry was last deprecated, superseded, consolidated, transitioned or purged.
    pub status_reason: Option<String>,
    /// Set when `memlog validate-evidence` found an evidence URI unreachable.
    pub evidence_stale: bool,
    /// Content removed by an explicit, logged purge; the audit trail stays.
    pub purged: bool,
    /// Number of distinct events folded into this state.
    pub version: u32,
    /// Head event ids of the entry's event DAG; more than one means an unresolved conflict,
    /// unless [`EntryState::agreed`].
    pub heads: Vec<String>,
    /// Set when the entry has several heads whose writers agreed: each event written
    /// concurrently with another changed nothing the entry did not already show (two branches
    /// that archived, pinned or deprecated it, or set a field to the same value), and nothing
    /// was changed on one line alone since. No conflict: the next write joins the heads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub agreed: bool,
    /// When the entry stopped being live (see [`EntryState::is_ended`]): the time of the event
    /// that ended it, kept while it stays ended (a later archival or purge of a superseded entry
    /// does not move it) and cleared when it becomes live again. Its lifespan is
    /// `ended_at - created_at`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

impl EntryState {
    /// True when concurrent writers left more than one head and did not agree.
    pub fn in_conflict(&self) -> bool {
        self.heads.len() > 1 && !self.agreed
    }

    /// True when the entry's life has ended: superseded or deprecated, archived or expired, or
    /// purged.
    pub fn is_ended(&self) -> bool {
        matches!(self.status, Status::Superseded | Status::Deprecated) || self.is_cold()
    }

    /// The entry's lifespan in milliseconds (`ended_at - created_at`, at least 0) once it has
    /// ended.
    pub fn lifespan_ms(&self) -> Option<i64> {
        let end = crate::time::millis_of(self.ended_at.as_deref()?)?;
        let start = crate::time::millis_of(&self.created_at)?;
        Some((end - start).max(0))
    }

    /// True when the entry lives in the cold keyspace rather than the active indexes.
    pub fn is_cold(&self) -> bool {
        matches!(self.lifecycle, Lifecycle::Archived | Lifecycle::Expired) || self.purged
    }
}

closed_enum!(
    /// The closed, versioned set of event types.
    EventType {
        Create => "create", Update => "update", Supersede => "supersede", Deprecate => "deprecate",
        Pin => "pin", Unpin => "unpin", Transition => "transition", Purge => "purge",
        Consolidate => "consolidate", EvidenceChecked => "evidence_checked", Resolve => "resolve",
    }
);
