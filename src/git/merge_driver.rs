//! The merge driver for event logs: the union of both sides' lines, each line once, in a
//! stable order: our lines as they were (so that the merge commit's diff against our side holds
//! only what is new), then their new lines ordered by time and event id (the same whatever
//! order their branch wrote them in).
//!
//! A log only grows, with one exception: `gc` rewrites the lines of a purged entry as their
//! tombstones (the content removed, the ids kept). So a whole line whose event a tombstone of
//! the merged log stands for (vouched for by its purge) is left out: purged content never
//! comes back with a merge, a rebase or a cherry-pick. No other line is left out: the common
//! ancestor (`%O`) is not read, since a line one side lacks may be a write that side never saw
//! (a cherry-picked change without its parents, a revert, the virtual ancestor git makes for a
//! criss-cross merge), where dropping it would lose an acknowledged write or orphan its
//! descendants.
//!
//! The driver also drops duplicated lines and never mixes two lines into one.

use crate::error::{Error, Result};
use rustc_hash::FxHashSet;
use std::collections::HashMap;
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
    /// Whole lines left out because a tombstone of the merged log stands for their event.
    pub replaced: usize,
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

/// The tombstones among `lines` that a purge among them vouches for, by the id of the event
/// each stands for (the first, when two purges left one each). A line that only claims to be a
/// tombstone replaces nothing: every reader refuses it, and the event's whole line stays.
fn vouched_tombstones<'a>(lines: &[&'a [u8]]) -> HashMap<String, &'a [u8]> {
    let text = |l: &&'a [u8]| std::str::from_utf8(l).ok();
    let marked: Vec<&str> = lines
        .iter()
        .filter_map(text)
        .filter(|l| crate::log::tombstones::marked(l))
        .collect();
    let mut out = HashMap::new();
    if marked.is_empty() {
        return out;
    }
    let purges: HashMap<String, projections::Event> = lines
        .iter()
        .filter_map(text)
        .filter(|l| l.contains("\"type\":\"purge\""))
        .filter_map(|l| projections::decode_line(l).ok())
        .filter(|e| matches!(e.data, projections::EventData::Purge { .. }))
        .map(|e| (e.id.clone(), e))
        .collect();
    for line in marked {
        let Ok(event) = projections::decode_line(line) else {
            continue;
        };
        let purge_of = |p: &str| Ok(purges.get(p).cloned());
        if matches!(
            crate::log::tombstones::problem(&event.id, line, purge_of),
            Ok(None)
        ) {
            out.entry(event.id).or_insert(line.as_bytes());
        }
    }
    out
}

/// The id of the event `line` holds whole (not as a tombstone), when its content hashes to it.
fn whole_event_id(line: &[u8]) -> Option<&str> {
    if crate::log::tombstones::marked(std::str::from_utf8(line).ok()?) {
        return None;
    }
    match crate::log::line_id::stated_id(line)? {
        (id, true) => Some(id),
        _ => None,
    }
}

/// Merges two logs: `ours` in its order, then the lines of `theirs` that `ours` lacks, by
/// (time, event id). Every line of both sides is in the result exactly once, except a whole
/// event whose tombstone (vouched for by its purge) the result holds: the tombstone takes the
/// whole line's place. No other line is ever left out, whatever either side removed: a line
/// one side lacks may be a write it never saw (a cherry-pick, a revert, the virtual ancestor
/// of a criss-cross merge), and the log only grows but for `gc`'s tombstones.
pub fn merge(ours: &[u8], theirs: &[u8]) -> Merged {
    let mut out = Merged::default();
    let mut ours_once: Vec<&[u8]> = Vec::new();
    let mut seen: FxHashSet<&[u8]> = FxHashSet::default();
    for line in lines(ours) {
        if seen.insert(line) {
            ours_once.push(line);
        } else {
            out.duplicates += 1;
        }
    }
    let mut new: Vec<&[u8]> = Vec::new();
    let mut theirs_seen: FxHashSet<&[u8]> = FxHashSet::default();
    for line in lines(theirs) {
        if !theirs_seen.insert(line) {
            out.duplicates += 1;
        } else if !seen.contains(line) {
            new.push(line);
        }
    }
    let candidates: Vec<&[u8]> = ours_once.iter().chain(&new).copied().collect();
    let tombstones = vouched_tombstones(&candidates);
    // Only the lines that state a tombstone's id are hashed (most logs hold a tombstone).
    let tombstone_of = |line: &[u8]| {
        if tombstones.is_empty() {
            return None;
        }
        let stated = crate::log::line_id::stated_id_unchecked(line)?;
        let tombstone = tombstones.get(stated)?;
        (whole_event_id(line) == Some(stated)).then_some(*tombstone)
    };
    let push = |bytes: &mut Vec<u8>, line: &[u8]| {
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
    };
    let mut placed: FxHashSet<&[u8]> = FxHashSet::default();
    for line in ours_once {
        let Some(tombstone) = tombstone_of(line) else {
            push(&mut out.bytes, line);
            out.ours += 1;
            continue;
        };
        out.replaced += 1;
        // Their tombstone of the event takes the line's place, as `gc` rewrites a line in
        // place: the merge commit's diff against our side shows that rewrite.
        if !seen.contains(tombstone) && placed.insert(tombstone) {
            push(&mut out.bytes, tombstone);
            out.added += 1;
        }
    }
    let mut keyed = Vec::new();
    for line in new {
        if placed.contains(line) {
            continue;
        }
        if tombstone_of(line).is_some() {
            out.replaced += 1;
            continue;
        }
        keyed.push((order_key(line), line));
    }
    keyed.sort();
    for (_, line) in keyed {
        push(&mut out.bytes, line);
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

/// Runs the driver as git calls it (`%O %A %B %P`): merges `ours` (the file `%A`) with
/// `theirs` (`%B`'s bytes) and writes the result over `ours`. The ancestor (`%O`) is not read:
/// a line one side lacks is no line to drop (see [`merge`]). `written` holds the lines of the working copy of the log (`%P`), which
/// memlog may have appended to after git read it (a write acknowledged while the merge runs):
/// git replaces the working copy with the driver's result, so a line only there would
/// otherwise be lost. The caller has moved a torn last line of the working copy to the
/// quarantine. `name` is the log's path in the repository, for messages.
///
/// # Errors
/// When `ours` cannot be read or written (the error names it); [`Error::Rejected`] when their
/// side adds a line that is not an intact event, or either side ends in a torn line: merged
/// in, it would sit in mid-log, where every memlog command refuses it, instead of at the end,
/// where the next command sets it aside. `ours` then holds our lines and the working copy's,
/// which git leaves in the working tree, and git reports the log as conflicted.
pub fn run(ours: &Path, theirs: &[u8], written: &[u8], name: &str) -> Result<Merged> {
    let a = fs_err::read(ours)?;
    let b = theirs;
    // The lines only the working copy holds join theirs, so that they are ordered together by
    // event time. (Lines it shares with either side are not added twice, nor counted as
    // duplicates.)
    let known: FxHashSet<&[u8]> = lines(&a).chain(lines(b)).collect();
    let only_written: Vec<&[u8]> = lines(written).filter(|l| !known.contains(l)).collect();
    let ours_set: FxHashSet<&[u8]> = lines(&a).collect();
    // Our lines are in our branch already: only a torn tail of ours is new harm.
    let a_tail = a.rsplit(|b| *b == b'\n').next().unwrap_or_default();
    let a_tail = a_tail.strip_suffix(b"\r").unwrap_or(a_tail);
    let found = first_damaged(&a, |l| l == a_tail)
        .map(|(n, why)| ("our version", n, why))
        .or_else(|| {
            first_damaged(b, |l| !ours_set.contains(l)).map(|(n, why)| ("their version", n, why))
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
    let mut b = b.to_vec();
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
        let a = dir.path().join("a");
        std::fs::write(&a, format!("{ours}\n")).unwrap_or_else(|e| panic!("{e}"));
        // The working copy holds our line too (and theirs, had git written it already).
        let report = super::run(
            &a,
            theirs.as_bytes(),
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
        let a = dir.path().join("a");
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
            let e = super::run(
                &a,
                theirs.as_bytes(),
                written.as_bytes(),
                "ai-memory/p/events.jsonl",
            )
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

    /// An entry's create, its purge, the tombstone `gc` writes for the create, and another
    /// entry's create.
    fn purged() -> (String, String, String, String) {
        let create = event("2026-01-01T00:00:00.000Z");
        let other = event("2026-01-01T00:00:01.000Z");
        let e = projections::decode_line(&create).unwrap_or_else(|e| panic!("{e}"));
        let redacted =
            projections::tombstone::redact(&e, &e.entry).unwrap_or_else(|| panic!("no content"));
        let digest = projections::tombstone::digest(&redacted).unwrap_or_else(|e| panic!("{e}"));
        let purge = projections::Event::build(
            &e.entry,
            "sec",
            "2026-01-02T00:00:00.000Z",
            vec![e.id.clone()],
            projections::EventData::Purge {
                reason: "credential".into(),
                redacted: [(e.id.clone(), digest)].into_iter().collect(),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let tombstone =
            projections::tombstone::line(&redacted, &purge.id).unwrap_or_else(|e| panic!("{e}"));
        let purge = purge.to_line().unwrap_or_else(|e| panic!("{e}"));
        (create, purge, tombstone, other)
    }

    fn text(lines: &[&str]) -> Vec<u8> {
        lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect()
    }

    /// A rebase onto a branch that purged an entry and ran `gc`: the replayed side still holds
    /// the create whole; the merge keeps the tombstone only, either way round, the tombstone
    /// taking the whole line's place.
    #[test]
    fn a_line_gc_rewrote_on_one_side_does_not_come_back_from_the_other() {
        let (create, purge, tombstone, other) = purged();
        let later = event("2026-01-03T00:00:00.000Z");
        let gcd = text(&[&tombstone, &other, &purge]);
        let feature = text(&[&create, &other, &later]);
        let merged = merge(&gcd, &feature);
        assert_eq!(merged.bytes, text(&[&tombstone, &other, &purge, &later]));
        assert_eq!((merged.ours, merged.added, merged.replaced), (3, 1, 1));
        let merged = merge(&feature, &gcd);
        assert_eq!(merged.bytes, text(&[&tombstone, &other, &later, &purge]));
        assert_eq!((merged.ours, merged.added, merged.replaced), (2, 2, 1));
    }

    /// A line one side lacks is kept from the other whatever the common ancestor held: a
    /// cherry-picked update without its entry's create, a reverted write, the virtual ancestor
    /// of a criss-cross merge. Dropping it would orphan the update or lose the write.
    #[test]
    fn a_line_one_side_lacks_is_kept() {
        let (create, _, _, other) = purged();
        let update = event("2026-01-03T00:00:00.000Z");
        let picked = text(&[&other, &create, &update]);
        let target = text(&[&other]);
        let merged = merge(&target, &picked);
        assert_eq!(set(&merged.bytes), set(&picked));
        let merged = merge(&picked, &target);
        assert_eq!(set(&merged.bytes), set(&picked));
    }

    /// The tombstone a purge vouches for wins over the whole line, on either side; one that no
    /// purge in the merged log vouches for replaces nothing.
    #[test]
    fn a_vouched_tombstone_replaces_the_whole_line_without_an_ancestor() {
        let (create, purge, tombstone, other) = purged();
        let gcd = text(&[&tombstone, &other, &purge]);
        let whole = text(&[&create, &other]);
        let merged = merge(&whole, &gcd);
        assert_eq!(merged.bytes, text(&[&tombstone, &other, &purge]));
        assert_eq!((merged.ours, merged.added, merged.replaced), (1, 2, 1));
        let merged = merge(&gcd, &whole);
        assert_eq!(merged.bytes, gcd);
        assert_eq!((merged.ours, merged.added, merged.replaced), (3, 0, 1));
        // The purge is on neither side: the tombstone is not vouched for, nothing is replaced.
        let merged = merge(&text(&[&create]), &text(&[&tombstone]));
        assert_eq!(merged.bytes, text(&[&create, &tombstone]));
        assert_eq!(merged.replaced, 0);
    }

    /// Through [`super::run`], as git calls the driver: the tombstone wins.
    #[test]
    fn the_driver_keeps_the_tombstone() {
        let (create, purge, tombstone, other) = purged();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let a = dir.path().join("a");
        std::fs::write(&a, text(&[&create, &other])).unwrap_or_else(|e| panic!("{e}"));
        let gcd = text(&[&tombstone, &other, &purge]);
        let report = super::run(&a, &gcd, b"", "log").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read(&a).unwrap_or_default(), gcd);
        assert_eq!(report.replaced, 1);
    }
}
