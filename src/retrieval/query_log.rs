//! The local query log: one JSON line per query in `.memlog/queries.jsonl` (local, never
//! committed), for the statistics of query patterns and for slow-query warnings. The file is
//! rotated to `queries.1.jsonl` past 10 MB.

use crate::error::Result;
use serde::Serialize;
use std::path::Path;

/// Size past which the log is rotated.
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;
/// File name inside the project's state directory.
pub const FILE: &str = "queries.jsonl";

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

/// Appends `entry` to the query log in `state_dir`, rotating it when it is large. Not synced: a
/// query log line lost in a crash costs nothing, a sync on every read would.
///
/// # Errors
/// When the file cannot be written.
pub fn append(state_dir: &Path, entry: &QueryLogEntry) -> Result<()> {
    let path = state_dir.join(FILE);
    if fs_err::metadata(&path).is_ok_and(|m| m.len() > ROTATE_BYTES) {
        fs_err::rename(&path, state_dir.join("queries.1.jsonl"))?;
    }
    let mut line = serde_json::to_vec(entry).unwrap_or_default();
    line.push(b'\n');
    let _unsynced = crate::log::durable::append_unsynced(&path, &line)?;
    Ok(())
}
