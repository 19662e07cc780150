//! The merge driver for event logs: the union of both sides' lines, each line once, in a
//! stable order: our lines as they were (so that the merge commit's diff against our side holds
//! only what is new), then their new lines ordered by time and event id (the same whatever
//! order their branch wrote them in).
//!
//! Projections depend on the set of events only, so this driver and git's built-in
//! `merge=union` always give byte-identical projections; the driver also drops duplicated
//! lines and never mixes two lines into one.

use crate::error::{Error, Result};
use std::collections::HashSet;
use std::path::Path;

/// What a merge produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    /// The merged log.
    pub bytes: Vec<u8>,
    /// Lines of ours kept.
    pub ours: usize,
    /// Lines of theirs that ours did not hold.
    pub added: usize,
    /// Lines that one side held twice, kept once.
    pub duplicates: usize,
}

/// The lines of a log, without `\r\n` endings, blank lines left out. A last line without its
/// newline is a line too (a merge must not lose it; `verify` judges it).
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
}

/// The sort key of a line: its event's `at` and `id` when it is an event, else the line itself
/// after every event (kept, for `memlog verify` to report).
fn order_key(line: &[u8]) -> (u8, String, String, Vec<u8>) {
    match std::str::from_utf8(line)
        .ok()
        .and_then(|l| projections::decode_line(l).ok())
    {
        Some(e) => (0, e.at, e.id, Vec::new()),
        None => (1, String::new(), String::new(), line.to_vec()),
    }
}

/// Merges two logs: `ours` in its order, then the lines of `theirs` that `ours` lacks, by
/// (time, event id). Every line of both sides is in the result exactly once.
pub fn merge(ours: &[u8], theirs: &[u8]) -> Merged {
    let mut seen: HashSet<&[u8]> = HashSet::new();
    let mut out = Merged::default();
    for line in lines(ours) {
        if seen.insert(line) {
            out.bytes.extend_from_slice(line);
            out.bytes.push(b'\n');
            out.ours += 1;
        } else {
            out.duplicates += 1;
        }
    }
    let mut new: Vec<&[u8]> = Vec::new();
    let mut theirs_seen: HashSet<&[u8]> = HashSet::new();
    for line in lines(theirs) {
        if !theirs_seen.insert(line) {
            out.duplicates += 1;
        } else if !seen.contains(line) {
            new.push(line);
        }
    }
    let mut keyed: Vec<_> = new.into_iter().map(|l| (order_key(l), l)).collect();
    keyed.sort();
    for (_, line) in keyed {
        out.bytes.extend_from_slice(line);
        out.bytes.push(b'\n');
        out.added += 1;
    }
    out
}

/// Why `line` is not an intact event, or `None` when it is one. A `gc` tombstone counts as one:
/// every reader checks that a purge in the merged log vouches for it.
fn damage(line: &[u8]) -> Option<String> {
    if crate::log::read::is_conflict_marker(line) {
        return Some("a merge conflict marker".into());
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Some("not valid UTF-8".into());
    };
    if projections::tombstone::split(text).is_some() {
        return None;
    }
    projections::decode_line(text).err().map(|e| e.to_string())
}

/// The first line of `bytes` that is not an intact event, with its line number (1-based) and
/// why; `only` picks the lines to look at. Bytes after the last newline are a torn line unless
/// they are a whole event (only the final newline missing, which the merge adds).
fn first_damaged(bytes: &[u8], only: impl Fn(&[u8]) -> bool) -> Option<(usize, String)> {
    let mut parts = bytes.split(|b| *b == b'\n').enumerate().peekable();
    while let Some((i, raw)) = parts.next() {
        let last = parts.peek().is_none();
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(u8::is_ascii_whitespace) || !only(line) {
            continue;
        }
        if let Some(why) = damage(line) {
            let why = if last {
                format!("a torn last line, cut short by an interrupted write ({why})")
            } else {
                why
            };
            return Some((i + 1, crate::policy::validate::redact_secrets(&why)));
        }
    }
    None
}

/// Runs the driver as git calls it (`%O %A %B`): merges `ours` (`%A`) with `theirs` (`%B`) and
/// writes the result over `ours`. The ancestor (`%O`) is not needed: the log only grows, so the
/// union of both sides holds everything the ancestor held that either side kept. `name` is the
/// log's path in the repository (`%P`), for messages.
///
/// # Errors
/// When a file cannot be read or written (the error names it), or a line the merge would bring
/// in is not an intact event ([`run_with`]).
pub fn run(ours: &Path, theirs: &Path, name: &str) -> Result<Merged> {
    run_with(ours, theirs, b"", name)
}

/// [`run`], with the lines of `written` too: what memlog appended to the working copy of the
/// log after git read it (a write acknowledged while the merge runs). git replaces the working
/// copy with the driver's result, so a line only there would otherwise be lost. The caller
/// has moved a torn last line of the working copy to the quarantine.
///
/// # Errors
/// As [`run`]; [`Error::Rejected`] when their side adds a line that is not an intact event, or
/// either side ends in a torn line: merged in, it would sit in mid-log, where every memlog
/// command refuses it, instead of at the end, where the next command sets it aside. `ours` then
/// holds our lines and the working copy's, which git leaves in the working tree, and git
/// reports the log as conflicted.
pub fn run_with(ours: &Path, theirs: &Path, written: &[u8], name: &str) -> Result<Merged> {
    let a = fs_err::read(ours)?;
    let b = fs_err::read(theirs)?;
    // The lines only the working copy holds join theirs, so that they are ordered together by
    // event time. (Lines it shares with either side are not added twice, nor counted as
    // duplicates.)
    let known: HashSet<&[u8]> = lines(&a).chain(lines(&b)).collect();
    let only_written: Vec<&[u8]> = lines(written).filter(|l| !known.contains(l)).collect();
    let ours_set: HashSet<&[u8]> = lines(&a).collect();
    // Our lines are in our branch already: only a torn tail of ours is new harm.
    let a_tail = a.rsplit(|b| *b == b'\n').next().unwrap_or_default();
    let a_tail = a_tail.strip_suffix(b"\r").unwrap_or(a_tail);
    let found = first_damaged(&a, |l| l == a_tail)
        .map(|(n, why)| ("our version", n, why))
        .or_else(|| {
            first_damaged(&b, |l| !ours_set.contains(l)).map(|(n, why)| ("their version", n, why))
        })
        .or_else(|| {
            first_damaged(written, |l| only_written.contains(&l))
                .map(|(n, why)| ("the working copy", n, why))
        });
    if let Some((side, line, why)) = found {
        if !only_written.is_empty() {
            crate::log::durable::write_atomic(ours, &with_lines(&a, &only_written))?;
        }
        return Err(Error::Rejected {
            message: format!(
                "{name}: {side}, line {line}: {why}. Nothing was merged: in the merged log the \
                 line would stop every memlog command. Abort the merge (`git merge --abort`), \
                 repair the log on the branch that holds the line and commit there (`memlog \
                 verify` names each damaged line; any other memlog command moves a torn last \
                 line to .memlog/quarantine.jsonl), then merge again"
            ),
        });
    }
    let mut b = b;
    if !only_written.is_empty() && !b.is_empty() && !b.ends_with(b"\n") {
        b.push(b'\n');
    }
    for line in only_written {
        b.extend_from_slice(line);
        b.push(b'\n');
    }
    let merged = merge(&a, &b);
    crate::log::durable::write_atomic(ours, &merged.bytes)?;
    Ok(merged)
}

/// `log` with `lines` appended after its last complete line; a torn tail stays last.
fn with_lines(log: &[u8], lines: &[&[u8]]) -> Vec<u8> {
    let cut = log.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut out = log[..cut].to_vec();
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(&log[cut..]);
    out
}

#[cfg(test)]
mod tests {
    use super::merge;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn set(bytes: &[u8]) -> BTreeSet<Vec<u8>> {
        super::lines(bytes).map(<[u8]>::to_vec).collect()
    }

    fn log(lines: &[String]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    proptest! {
        /// The merge laws at line level: the result is the union of both sides, each line
        /// once, ours first and unchanged; union is commutative, associative and idempotent
        /// as a set, and merging a merged log with itself changes no byte.
        #[test]
        fn merge_is_a_deduplicated_union(
            a in prop::collection::vec("[abc]{1,2}", 0..12),
            b in prop::collection::vec("[abc]{1,2}", 0..12),
            c in prop::collection::vec("[abc]{1,2}", 0..12),
        ) {
            let (a, b, c) = (log(&a), log(&b), log(&c));
            let ab = merge(&a, &b).bytes;
            let union: BTreeSet<Vec<u8>> = set(&a).union(&set(&b)).cloned().collect();
            prop_assert_eq!(set(&ab), union);
            prop_assert_eq!(super::lines(&ab).count(), set(&ab).len());
            let ours_once = merge(&a, b"").bytes;
            prop_assert!(ab.starts_with(&ours_once));
            prop_assert_eq!(set(&merge(&b, &a).bytes), set(&ab));
            prop_assert_eq!(
                set(&merge(&ab, &c).bytes),
                set(&merge(&a, &merge(&b, &c).bytes).bytes)
            );
            prop_assert_eq!(merge(&ab, &ab).bytes, ab.clone());
        }
    }

    #[test]
    fn their_new_lines_follow_in_time_then_id_order_and_a_torn_line_is_kept() {
        let merged = merge(b"x\n", b"z\ny\nx\npartial");
        // Lines that are not events sort by their bytes, after every event.
        assert_eq!(merged.bytes, b"x\npartial\ny\nz\n");
        assert_eq!((merged.ours, merged.added, merged.duplicates), (1, 3, 0));
    }

    fn event(at: &str) -> String {
        projections::Event::build(
            "",
            "a",
            at,
            Vec::new(),
            projections::EventData::Create {
                fields: serde_json::from_value(serde_json::json!({
                    "section": "learnings", "kind": "other", "subject": "s", "scope": "repo",
                    "summary": at, "content": "c", "tags": [], "confidence": 0.9,
                    "evidence": [], "related_entries": []
                }))
                .unwrap_or_else(|e| panic!("{e}")),
                status: projections::Status::Active,
            },
        )
        .and_then(|e| e.to_line())
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Lines only the working copy holds are ordered with theirs, by event time; their last
    /// event without its newline is whole and gets one.
    #[test]
    fn the_working_copy_lines_are_ordered_with_theirs() {
        let (ours, theirs, written) = (
            event("2026-01-01T00:00:00.000Z"),
            event("2026-01-03T00:00:00.000Z"),
            event("2026-01-02T00:00:00.000Z"),
        );
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, format!("{ours}\n")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&b, &theirs).unwrap_or_else(|e| panic!("{e}"));
        // The working copy holds our line too (and theirs, had git written it already).
        let report = super::run_with(
            &a,
            &b,
            format!("{ours}\n{theirs}\n{written}\n").as_bytes(),
            "log",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let merged = std::fs::read_to_string(&a).unwrap_or_default();
        assert_eq!(merged, format!("{ours}\n{written}\n{theirs}\n"));
        assert_eq!((report.ours, report.added, report.duplicates), (1, 2, 0));
    }

    /// A line their side adds that is no intact event, or a torn last line of either side, is
    /// refused, naming the version and the line: merged in, it would sit in mid-log, where
    /// every command refuses it. Ours keeps its bytes, with the working copy's new lines.
    #[test]
    fn a_damaged_or_torn_line_is_refused_and_ours_keeps_the_working_copy_lines() {
        let (one, two, three) = (
            event("2026-01-01T00:00:00.000Z"),
            event("2026-01-02T00:00:00.000Z"),
            event("2026-01-03T00:00:00.000Z"),
        );
        let torn = &two[..two.len() / 2];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for (ours, theirs, written, said) in [
            (
                format!("{one}\n"),
                format!("{one}\ngarbage\0\n{two}\n"),
                String::new(),
                "their version, line 2: ",
            ),
            (
                format!("{one}\n"),
                format!("{one}\n{torn}"),
                String::new(),
                "their version, line 2: a torn last line",
            ),
            (
                format!("{one}\n{torn}"),
                format!("{one}\n"),
                format!("{one}\n{three}\n"),
                "our version, line 2: a torn last line",
            ),
        ] {
            std::fs::write(&a, &ours).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&b, &theirs).unwrap_or_else(|e| panic!("{e}"));
            let e = super::run_with(&a, &b, written.as_bytes(), "ai-memory/p/events.jsonl")
                .err()
                .unwrap_or_else(|| panic!("{theirs:?} was merged"));
            assert!(matches!(e, crate::Error::Rejected { .. }), "{e}");
            let e = e.to_string();
            assert!(e.starts_with("ai-memory/p/events.jsonl: "), "{e}");
            assert!(e.contains(said), "{e}");
            assert!(e.contains("git merge --abort"), "{e}");
            let expected = if written.is_empty() {
                ours.clone()
            } else {
                // The working copy's new line before the torn tail, which stays last.
                format!("{one}\n{three}\n{torn}")
            };
            assert_eq!(std::fs::read_to_string(&a).unwrap_or_default(), expected);
        }
    }
}
