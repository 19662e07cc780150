//! Statistics read-outs and the terminal dashboard.
//!
//! Everything here reads the delta-maintained statistics projection (`projections::stats`) and
//! a few bounded index ranges of the store; nothing scans entries, so a read-out costs the same
//! at 100 and at 1,000,000 entries. The query patterns come from the local query log.

pub mod dashboard;
pub mod health;
pub mod query_patterns;
pub mod range;
pub mod statistics;

pub use range::{DateRange, RangeSpec};
pub use statistics::{LifecycleInputs, MemoryStatistics, ProjectPart};
