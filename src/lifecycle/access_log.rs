//! The access log: one small line per read that returned entries, in `.memlog/access.jsonl`
//! (local, never committed, not in `events.jsonl`). Recording is best-effort and unsynced: a
//! lost line costs a little precision in importance, a failed append never fails a read, and a
//! sync on every read would slow reads down.
//!
//! When the file grows past [`COMPACT_BYTES`], the read whose line takes it there (or else the
//! next `lifecycle run`) folds it into the summary (`access-summary.tsv`, see
//! [`super::access_summary`]: per entry, count, first and last access) and empties it, so what
//! `stats` and the lifecycle engine read is bounded by the number of entries, not by the number
//! of reads ever made.

use super::access_summary::{self, Histogram, Summary};
use crate::error::Result;
use crate::log::durable;
use crate::project::Project;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The log of accesses inside a project's state directory.
pub const FILE: &str = "access.jsonl";
/// Size past which the log is folded into the summary.
pub const COMPACT_BYTES: u64 = 256 * 1024;
/// Held by the process folding the log, so two readers do not fold it at once.
const COMPACT_LOCK: &str = "access.lock";

/// One read that returned `entries`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    at: String,
    /// `show`, `query`, `context`.
    via: String,
    entries: Vec<String>,
}

/// What the log knows about one entry's accesses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessStats {
    pub count: u64,
    pub first: String,
    pub last: String,
}

impl AccessStats {
    fn add(&mut self, at: &str) {
        self.count += 1;
        if self.first.is_empty() || at < self.first.as_str() {
            at.clone_into(&mut self.first);
        }
        if at > self.last.as_str() {
            at.clone_into(&mut self.last);
        }
    }
}

/// Records that a read at `at` (event timestamp layout) returned `entries`. Never fails: the
/// error, if any, is returned for the caller to ignore or report, and nothing else is done.
///
/// # Errors
/// When the line cannot be appended.
pub fn record(project: &Project, entries: &[&str], at: &str, via: &str) -> Result<()> {
    record_in(&project.state_dir(), entries, at, via)
}

fn record_in(state: &Path, entries: &[&str], at: &str, via: &str) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let line = Line {
        at: at.to_owned(),
        via: via.to_owned(),
        entries: entries.iter().map(|e| (*e).to_owned()).collect(),
    };
    let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
    bytes.push(b'\n');
    if !state.is_dir() {
        fs_err::create_dir_all(state)?;
    }
    let (stamp, _unsynced) = durable::append_record(&state.join(FILE), &bytes)?;
    // A line appended by another reader while the log is folded may be lost: the log is a
    // hint, and that loss is the price of never making a read wait.
    if (stamp.size > COMPACT_BYTES || state.join(access_summary::OLD_FILE).exists())
        && let Some(_folding) = crate::log::lock::FileLock::try_acquire(&state.join(COMPACT_LOCK))?
    {
        compact_if_large(state)?;
    }
    Ok(())
}

/// [`record`], ignoring any failure: what a read command calls.
pub fn record_best_effort(project: &Project, entries: &[&str], at: &str, via: &str) {
    let _ = record(project, entries, at, via);
}

/// Access statistics per entry, counting only accesses at or before `now` (so that an
/// evaluation at a given time gives the same answer whenever it runs). Unreadable lines are
/// skipped: the log is a hint, not a record.
///
/// # Errors
/// When a file exists but cannot be read.
pub fn load(state_dir: &Path, now: &str) -> Result<BTreeMap<String, AccessStats>> {
    let mut out: BTreeMap<String, AccessStats> = Summary::read(state_dir, true)?
        .entries()
        .map(|(id, stats)| (id.to_owned(), stats))
        .collect();
    let bytes = read_log(state_dir)?;
    for raw in bytes.split(|b| *b == b'\n') {
        let Ok(line) = serde_json::from_slice::<Line>(raw) else {
            continue;
        };
        if line.at.as_str() > now {
            continue;
        }
        for e in line.entries {
            out.entry(e).or_default().add(&line.at);
        }
    }
    Ok(out)
}

/// The lines of the log (empty when there is none).
fn read_log(state_dir: &Path) -> Result<Vec<u8>> {
    match fs_err::read(state_dir.join(FILE)) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

/// Visits each entry of each read in `bytes` (the log) made at or before `now`.
fn for_each_read<'a>(bytes: &'a [u8], now: &str, mut visit: impl FnMut(std::borrow::Cow<'a, str>)) {
    #[derive(Deserialize)]
    struct Read<'a> {
        #[serde(borrow)]
        at: std::borrow::Cow<'a, str>,
        #[serde(borrow)]
        entries: Vec<std::borrow::Cow<'a, str>>,
    }
    for raw in bytes.split(|b| *b == b'\n') {
        let Ok(line) = serde_json::from_slice::<Read<'_>>(raw) else {
            continue;
        };
        if line.at.as_ref() > now {
            continue;
        }
        line.entries.into_iter().for_each(&mut visit);
    }
}

/// How many times each entry was read, counting only accesses at or before `now`: [`load`]
/// without the first and last times, for `stats` over a range of days (which counts the reads
/// of the entries created in it).
///
/// # Errors
/// When a file exists but cannot be read.
pub fn counts(state_dir: &Path, now: &str) -> Result<BTreeMap<String, u64>> {
    // With its times: the whole summary is read, and damaged lines are put in order.
    let mut out: BTreeMap<String, u64> = Summary::read(state_dir, true)?
        .entries()
        .map(|(id, stats)| (id.to_owned(), stats.count))
        .collect();
    let bytes = read_log(state_dir)?;
    for_each_read(&bytes, now, |e| match out.get_mut(e.as_ref()) {
        Some(n) => *n += 1,
        None => {
            out.insert(e.into_owned(), 1);
        }
    });
    Ok(out)
}

/// How many entries were read how often (count, entries), counting only accesses at or before
/// `now`: what [`counts`] gives, counted by count. The summary states its own histogram, and
/// only the entries read since the fold are looked up in it, so this costs the size of the
/// log, not the number of entries ever read (`stats` after every one of 100,000 entries was
/// read: 130 ms when each was parsed).
///
/// # Errors
/// When a file exists but cannot be read.
pub fn histogram(state_dir: &Path, now: &str) -> Result<Histogram> {
    let bytes = read_log(state_dir)?;
    let mut reads: rustc_hash::FxHashMap<std::borrow::Cow<'_, str>, u64> =
        rustc_hash::FxHashMap::default();
    for_each_read(&bytes, now, |e| *reads.entry(e).or_insert(0) += 1);
    if reads.is_empty()
        && let Some(stated) = Summary::stated_histogram(state_dir)?
    {
        return Ok(stated);
    }
    let mut reads: Vec<(&str, u64)> = reads.iter().map(|(k, v)| (k.as_ref(), *v)).collect();
    reads.sort_unstable();
    Ok(access_summary::add_reads(
        &Summary::read(state_dir, false)?,
        &reads,
    ))
}

/// Folds the log into the summary when it is larger than [`COMPACT_BYTES`]; returns whether
/// it did. The summary is written atomically before the log is emptied, so a crash between
/// the two counts some accesses twice, never loses them.
///
/// # Errors
/// When the files cannot be read or written.
pub fn compact_if_large(state_dir: &Path) -> Result<bool> {
    let log = state_dir.join(FILE);
    let old = state_dir.join(access_summary::OLD_FILE);
    if fs_err::metadata(&log).map_or(true, |m| m.len() <= COMPACT_BYTES) && !old.exists() {
        return Ok(false);
    }
    let all = load(state_dir, "9999")?;
    durable::write_atomic(
        &state_dir.join(access_summary::FILE),
        &access_summary::render(&all),
    )?;
    if old.exists() {
        fs_err::remove_file(&old)?;
    }
    durable::write_atomic(&log, b"")?;
    Ok(true)
}

/// How many entries were accessed how often (buckets `1`, `2-4`, `5-9`, `10-49`, `50+`), from
/// a [`histogram`].
pub fn frequency_distribution(histogram: &Histogram) -> BTreeMap<&'static str, u64> {
    let mut out = BTreeMap::new();
    for (n, entries) in histogram {
        let bucket = match n {
            0 => "0",
            1 => "1",
            2..=4 => "2-4",
            5..=9 => "5-9",
            10..=49 => "10-49",
            _ => "50+",
        };
        let n: &mut u64 = out.entry(bucket).or_insert(0);
        *n = n.saturating_add(*entries);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The counts the read-outs take are those of the whole statistics, at any time:
        /// from the summary (of the older form here) and from the lines, later reads left out;
        /// and so is the histogram of those counts, before and after a fold.
        #[test]
        fn counts_are_those_of_the_whole_statistics(
            reads in proptest::collection::vec((0u8..6, 0u32..40, proptest::collection::vec(0usize..8, 1..4)), 0..30),
            folded in proptest::collection::btree_map(0usize..8, 1u64..50, 0..6),
            now in 0u32..45,
        ) {
            let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
            let id = |i: usize| format!("m-{i:026}");
            let summary: BTreeMap<String, AccessStats> = folded
                .iter()
                .map(|(i, n)| (id(*i), AccessStats { count: *n, first: "2026-11-01T00:00:00.000Z".into(), last: "2026-11-02T00:00:00.000Z".into() }))
                .collect();
            if !summary.is_empty() {
                fs_err::write(dir.path().join(access_summary::OLD_FILE), serde_json::to_vec(&summary).unwrap_or_default())
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            for (via, minute, entries) in &reads {
                let at = format!("2026-11-23T10:{minute:02}:00.000Z");
                let ids: Vec<String> = entries.iter().map(|i| id(*i)).collect();
                let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                record_in(dir.path(), &refs, &at, if *via % 2 == 0 { "query" } else { "show" })
                    .unwrap_or_else(|e| panic!("{e}"));
            }
            let now = format!("2026-11-23T10:{now:02}:00.000Z");
            let whole: BTreeMap<String, u64> = load(dir.path(), &now)
                .unwrap_or_else(|e| panic!("{e}"))
                .into_iter()
                .map(|(k, v)| (k, v.count))
                .collect();
            proptest::prop_assert_eq!(counts(dir.path(), &now).unwrap_or_else(|e| panic!("{e}")), whole.clone());
            let mut by_count = Histogram::new();
            for n in whole.values() {
                *by_count.entry(*n).or_insert(0) += 1;
            }
            proptest::prop_assert_eq!(histogram(dir.path(), &now).unwrap_or_else(|e| panic!("{e}")), by_count.clone());
            // Folded into the summary of the current form, the same reads count the same.
            if fs_err::metadata(dir.path().join(FILE)).is_ok() || dir.path().join(access_summary::OLD_FILE).exists() {
                let all = load(dir.path(), &now).unwrap_or_else(|e| panic!("{e}"));
                fs_err::write(dir.path().join(access_summary::FILE), access_summary::render(&all))
                    .unwrap_or_else(|e| panic!("{e}"));
                let _ = fs_err::remove_file(dir.path().join(FILE));
                proptest::prop_assert_eq!(histogram(dir.path(), "9999").unwrap_or_else(|e| panic!("{e}")), by_count);
            }
        }
    }

    /// Reads keep the log bounded: the read that takes it past [`COMPACT_BYTES`] folds it into
    /// the summary, and the counts, first and last accesses are those of every read.
    #[test]
    fn reads_fold_a_large_log_and_lose_no_access() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let state = dir.path();
        let ids: Vec<String> = (0..50).map(|i| format!("m-{i:026}")).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut reads = 0u64;
        while !state.join(access_summary::FILE).exists() {
            let at = format!(
                "2026-11-23T10:{:02}:{:02}.000Z",
                reads / 60 % 60,
                reads % 60
            );
            record_in(state, &refs, &at, "query").unwrap_or_else(|e| panic!("{e}"));
            reads += 1;
            assert!(reads < 10_000, "never folded");
        }
        let log = fs_err::metadata(state.join(FILE)).map_or(0, |m| m.len());
        assert!(log < COMPACT_BYTES / 2, "{log} bytes left in the log");
        // One more read after the fold: counted on top of the summary.
        record_in(state, &refs[..1], "2026-11-23T23:59:59.000Z", "show")
            .unwrap_or_else(|e| panic!("{e}"));
        let all = load(state, "9999").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all.len(), 50);
        let first = &all[&ids[0]];
        assert_eq!(first.count, reads + 1);
        assert_eq!(first.first, "2026-11-23T10:00:00.000Z");
        assert_eq!(first.last, "2026-11-23T23:59:59.000Z");
        assert_eq!(all[&ids[1]].count, reads);
    }

    /// A reader killed mid-append leaves a torn line: the next record starts on a line of its
    /// own, and is counted, instead of being glued onto the fragment.
    #[test]
    fn a_record_after_a_torn_line_is_not_lost() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let state = dir.path();
        let id = "m-00000000000000000000000000";
        record_in(state, &[id], "2026-11-23T10:00:00.000Z", "show")
            .unwrap_or_else(|e| panic!("{e}"));
        durable::append_unsynced(
            &state.join(FILE),
            br#"{"at":"2026-11-23T10:00:01.000Z","via":"sh"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        record_in(state, &[id], "2026-11-23T10:00:02.000Z", "query")
            .unwrap_or_else(|e| panic!("{e}"));
        let all = load(state, "9999").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all[id].count, 2);
        assert_eq!(all[id].last, "2026-11-23T10:00:02.000Z");
        let text = fs_err::read_to_string(state.join(FILE)).unwrap_or_default();
        assert_eq!(text.lines().count(), 3, "{text}");
    }
}
