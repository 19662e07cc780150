//! Query patterns from the local query log (`.memlog/queries.jsonl` and its rotated
//! predecessor): subjects and scopes asked for, and queries per day. The log is bounded by its
//! rotation (10 MB each), so reading it does not grow with the number of entries.

use super::range::DateRange;
use crate::error::Result;
use crate::retrieval::query_log;
use std::collections::BTreeMap;
use std::path::Path;

/// Counts over the logged queries of a date range.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryCounts {
    pub subjects: BTreeMap<String, i64>,
    pub scopes: BTreeMap<String, i64>,
    pub per_day: BTreeMap<String, i64>,
    pub total: i64,
    /// Lines that were not a query record (a line cut by a crash, say); left out of the counts.
    pub unreadable_lines: i64,
}

impl QueryCounts {
    /// Adds the counts of another project.
    pub fn merge(&mut self, other: &Self) {
        for (mine, theirs) in [
            (&mut self.subjects, &other.subjects),
            (&mut self.scopes, &other.scopes),
            (&mut self.per_day, &other.per_day),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_insert(0) += v;
            }
        }
        self.total += other.total;
        self.unreadable_lines += other.unreadable_lines;
    }

    /// Counts one log line.
    fn add_line(&mut self, line: &str, range: &DateRange) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            self.unreadable_lines += 1;
            return;
        };
        let Some(ts) = v.get("timestamp").and_then(|t| t.as_str()) else {
            self.unreadable_lines += 1;
            return;
        };
        let day = projections::time::day_of(ts);
        if !range.contains_day(day) {
            return;
        }
        self.total += 1;
        *self.per_day.entry(day.to_owned()).or_insert(0) += 1;
        let filters = v.get("filters");
        for (key, map) in [("subject", &mut self.subjects), ("scope", &mut self.scopes)] {
            if let Some(value) = filters.and_then(|f| f.get(key)).and_then(|s| s.as_str()) {
                *map.entry(value.to_owned()).or_insert(0) += 1;
            }
        }
    }
}

/// Reads the query logs of the project state directory `state_dir` (a missing log is no
/// query yet).
///
/// # Errors
/// When a log exists but cannot be read.
pub fn read(state_dir: &Path, range: &DateRange) -> Result<QueryCounts> {
    let mut counts = QueryCounts::default();
    for name in ["queries.1.jsonl", query_log::FILE] {
        let path = state_dir.join(name);
        let text = match fs_err::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            counts.add_line(line, range);
        }
    }
    Ok(counts)
}
