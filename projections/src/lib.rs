//! The pure core of memlog: the event model, canonical encoding and hashing, deterministic
//! ordering, and the folds from events to entry versions, audit records and statistics.
//!
//! Nothing here performs I/O or reads a clock; the projections it computes are functions of the
//! *set* of events given to it.

pub mod canonical;
pub mod entry_json;
pub mod event;
pub mod fold;
pub mod model;
pub mod order;
pub mod stats;
pub mod time;

pub use event::{Event, EventData, EventError, decode_line};
pub use fold::{AuditRecord, Change, Dimension, Folded, Version, fold_entry};
pub use model::{
    EntryFields, EntryState, EventType, Evidence, EvidenceType, Kind, Lifecycle, Section, Status,
};
pub use stats::Stats;
