//! Query patterns from the local query log (`.memlog/queries.jsonl`) and the per-day counts
//! it is folded into past 1 MiB (`.memlog/queries-summary.json`): subjects and scopes asked
//! for, and queries per day. What is read is bounded by the log's size and the number of days,
//! not by the number of queries ever made.

use super::range::DateRange;
use crate::error::Result;
use crate::retrieval::query_log;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The per-day counts of the queries folded out of the log.
pub const SUMMARY: &str = "queries-summary.json";
/// Held by the process folding the log, so two queries do not fold it at once.
const FOLD_LOCK: &str = "queries.lock";

/// The counts of one day's queries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct DayCounts {
    total: i64,
    subjects: BTreeMap<String, i64>,
    scopes: BTreeMap<String, i64>,
}

/// What `queries-summary.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Summary {
    days: BTreeMap<String, DayCounts>,
    unreadable_lines: i64,
}

impl Summary {
    fn add_line(&mut self, line: &str) {
        match parse_line(line) {
            None => self.unreadable_lines += 1,
            Some((day, subject, scope)) => {
                let d = self.days.entry(day).or_default();
                d.total += 1;
                for (value, map) in [(subject, &mut d.subjects), (scope, &mut d.scopes)] {
                    if let Some(v) = value {
                        *map.entry(v).or_insert(0) += 1;
                    }
                }
            }
        }
    }
}

/// The day, subject and scope of a logged query; `None` when the line is not a query record.
fn parse_line(line: &str) -> Option<(String, Option<String>, Option<String>)> {
    let v = serde_json::from_str::<serde_json::Value>(line).ok()?;
    let ts = v.get("timestamp")?.as_str()?;
    let filters = v.get("filters");
    let field = |key: &str| {
        filters
            .and_then(|f| f.get(key))
            .and_then(|s| s.as_str())
            .map(str::to_owned)
    };
    Some((
        projections::time::day_of(ts).to_owned(),
        field("subject"),
        field("scope"),
    ))
}

fn load_summary(state_dir: &Path) -> Result<Summary> {
    match fs_err::read(state_dir.join(SUMMARY)) {
        // A damaged summary counts as empty: the query log is a hint, like the access log.
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_default()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Summary::default()),
        Err(e) => Err(e.into()),
    }
}

/// The lines of the query logs in `state_dir` (the one earlier versions rotated first), as
/// text; a missing log has none.
fn log_texts(state_dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for name in [query_log::ROTATED, query_log::FILE] {
        match fs_err::read(state_dir.join(name)) {
            Ok(bytes) => out.push(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// Folds the query log into the per-day summary when it is larger than
/// [`query_log::FOLD_BYTES`] and no other process is folding it; returns whether it did. The
/// summary is written atomically before the log is emptied: a crash between the two counts
/// some queries twice, never loses them. A line another query appends during the fold may be
/// lost; a query never waits for the fold.
///
/// # Errors
/// When the files cannot be read or written.
pub fn fold_if_large(state_dir: &Path) -> Result<bool> {
    let Some(_folding) = crate::log::lock::FileLock::try_acquire(&state_dir.join(FOLD_LOCK))?
    else {
        return Ok(false);
    };
    let log = state_dir.join(query_log::FILE);
    if fs_err::metadata(&log).map_or(true, |m| m.len() <= query_log::FOLD_BYTES) {
        return Ok(false);
    }
    let mut summary = load_summary(state_dir)?;
    for text in log_texts(state_dir)? {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            summary.add_line(line);
        }
    }
    let bytes = serde_json::to_vec(&summary).unwrap_or_default();
    crate::log::durable::write_atomic(&state_dir.join(SUMMARY), &bytes)?;
    match fs_err::remove_file(state_dir.join(query_log::ROTATED)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => {}
    }
    crate::log::durable::write_atomic(&log, b"")?;
    Ok(true)
}

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
        let Some((day, subject, scope)) = parse_line(line) else {
            self.unreadable_lines += 1;
            return;
        };
        if !range.contains_day(&day) {
            return;
        }
        self.total += 1;
        *self.per_day.entry(day).or_insert(0) += 1;
        for (value, map) in [(subject, &mut self.subjects), (scope, &mut self.scopes)] {
            if let Some(v) = value {
                *map.entry(v).or_insert(0) += 1;
            }
        }
    }

    /// Adds the days of `summary` that are in `range`.
    fn add_days(&mut self, summary: &Summary, range: &DateRange) {
        for (day, counts) in summary.days.iter().filter(|(d, _)| range.contains_day(d)) {
            self.total += counts.total;
            *self.per_day.entry(day.clone()).or_insert(0) += counts.total;
            for (mine, theirs) in [
                (&mut self.subjects, &counts.subjects),
                (&mut self.scopes, &counts.scopes),
            ] {
                for (k, v) in theirs {
                    *mine.entry(k.clone()).or_insert(0) += v;
                }
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
    let summary = load_summary(state_dir)?;
    counts.add_days(&summary, range);
    counts.unreadable_lines += summary.unreadable_lines;
    for text in log_texts(state_dir)? {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            counts.add_line(line, range);
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(from: Option<&str>, to: Option<&str>) -> DateRange {
        DateRange {
            label: "test".into(),
            from: from.map(str::to_owned),
            to: to.map(str::to_owned),
            today: chrono::NaiveDate::default(),
        }
    }

    /// Folding the log into per-day counts changes no count of any range, and leaves the log
    /// empty; queries logged after a fold add to the folded counts.
    #[test]
    fn folding_the_log_changes_no_count() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let state = dir.path();
        let mut lines = String::new();
        let mut i = 0u32;
        while lines.len() as u64 <= query_log::FOLD_BYTES {
            let day = 10 + i % 7;
            let subject = format!("svc{}.db", i % 5);
            let filters = match i % 3 {
                0 => serde_json::json!({"text": "pool", "subject": subject}),
                1 => serde_json::json!({"text": "pool", "scope": "service:auth"}),
                _ => serde_json::json!({"text": "pool"}),
            };
            let line = serde_json::json!({
                "timestamp": format!("2026-11-{day:02}T08:00:00.000Z"),
                "project": "p", "command": "query", "filters": filters,
                "result_count": 3, "execution_time_ms": 1.5, "slow": false,
            });
            lines.push_str(&format!("{line}\n"));
            if i.is_multiple_of(97) {
                lines.push_str("{\"cut by a crash\n");
            }
            i += 1;
        }
        fs_err::write(state.join(query_log::FILE), &lines).unwrap_or_else(|e| panic!("{e}"));
        let ranges = [
            range(None, None),
            range(Some("2026-11-12"), Some("2026-11-14")),
            range(Some("2026-11-16"), None),
        ];
        let before: Vec<QueryCounts> = ranges
            .iter()
            .map(|r| read(state, r).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert!(before[0].total > 1000 && before[0].unreadable_lines > 0);
        assert!(fold_if_large(state).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(
            fs_err::metadata(state.join(query_log::FILE)).map_or(1, |m| m.len()),
            0
        );
        let after: Vec<QueryCounts> = ranges
            .iter()
            .map(|r| read(state, r).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(before, after);
        // A small log is not folded; its queries add to the folded days.
        let one =
            "{\"timestamp\":\"2026-11-12T09:00:00.000Z\",\"filters\":{\"subject\":\"svc0.db\"}}\n";
        fs_err::write(state.join(query_log::FILE), one).unwrap_or_else(|e| panic!("{e}"));
        assert!(!fold_if_large(state).unwrap_or_else(|e| panic!("{e}")));
        let all = read(state, &ranges[0]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all.total, before[0].total + 1);
        assert_eq!(all.subjects["svc0.db"], before[0].subjects["svc0.db"] + 1);
    }
}
