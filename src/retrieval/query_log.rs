//! The local query log: one JSON line per query in `.memlog/queries.jsonl` (local, never
//! committed), for the statistics of query patterns and for slow-query warnings. Past
//! [`FOLD_BYTES`] the query that finds it so folds it into per-day counts
//! (`crate::analytics::query_patterns::fold_if_large`), so the statistics read a file bounded
//! by the days, not by every query ever made.

use crate::error::Result;
use serde::Serialize;
use std::path::Path;

/// Size past which the log is folded into per-day counts.
pub const FOLD_BYTES: u64 = 1024 * 1024;
/// File name inside the project's state directory.
pub const FILE: &str = "queries.jsonl";
/// The log of earlier versions, which rotated it to this name past 10 MB: still read, and
/// folded with the log.
pub const ROTATED: &str = "queries.1.jsonl";

/// One logged query.
#[derive(Debug, Clone, Serialize)]
pub struct QueryLogEntry {
    pub timestamp: String,
    pub project: String,
    /// `query`, `list` or `context`.
    pub command: &'static str,
    /// The filters as given (flags and their values), the text included.
    pub filters: serde_json::Value,
    pub result_count: usize,
    pub execution_time_ms: f64,
    /// Above the project's `slow_query_ms`.
    pub slow: bool,
}

/// Appends `entry` to the query log in `state_dir` and returns the log's size. Not synced: a
/// query log line lost in a crash costs nothing, a sync on every read would. A credential in
/// the filters (a token pasted as the query text) is redacted first: the log keeps no secret.
///
/// # Errors
/// When the file cannot be written.
pub fn append(state_dir: &Path, mut entry: QueryLogEntry) -> Result<u64> {
    crate::policy::validate::redact_secrets_in(&mut entry.filters);
    let mut line = serde_json::to_vec(&entry).unwrap_or_default();
    line.push(b'\n');
    let (stamp, _unsynced) = crate::log::durable::append_record(&state_dir.join(FILE), &line)?;
    Ok(stamp.size)
}
