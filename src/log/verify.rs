//! `verify`: checks every line of a log on its own and the log as a whole, without the store.

use crate::error::Result;
use crate::log::read as event_log;
use projections::{Event, fold_entry_refs};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// A problem at a place in the log.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Finding {
    pub line: usize,
    pub offset: u64,
    pub problem: String,
}

/// The outcome of verifying one log.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub file: String,
    pub ok: bool,
    pub lines: usize,
    pub events: usize,
    pub duplicate_lines: usize,
    pub entries: usize,
    pub problems: Vec<Finding>,
    pub warnings: Vec<Finding>,
    /// Entries with more than one head (concurrent writes not yet resolved): not an error.
    pub conflicts: Vec<String>,
    /// The log file does not exist (deleted): nothing to verify, which is no problem in the
    /// log itself but must be said.
    pub missing: bool,
}

/// True when `tail` (the bytes after the log's last newline) is a whole, valid event, as the
/// tail repair judges it.
fn whole_event(tail: &[u8]) -> bool {
    let line = tail.strip_suffix(b"\r").unwrap_or(tail);
    std::str::from_utf8(line).is_ok_and(|l| projections::decode_line(l).is_ok())
}

/// Verifies the log at `path`.
///
/// # Errors
/// Only when the file cannot be read; everything wrong inside it is in the report.
pub fn verify_log(path: &Path) -> Result<Report> {
    let mut missing = false;
    let bytes = match fs_err::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            missing = true;
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    // A whole event that lacks only its final newline is no torn write: the next command adds
    // the newline and keeps it (see `repair_tail_locked`), so it is verified as a line.
    let mut bytes = bytes;
    let unterminated = (complete < bytes.len() && whole_event(&bytes[complete..])).then(|| {
        let offset = complete as u64;
        bytes.push(b'\n');
        complete = bytes.len();
        offset
    });
    let all: Vec<event_log::Line<'_>> = event_log::lines(&bytes[..complete], 1, 0).collect();
    let lines = all.len();
    // Decoding (parse, canonical check, hashes) is the expensive part: spread it over the cores,
    // then look at the results in line order.
    let decoded = crate::parallel::map_chunks(&all, |chunk| {
        chunk
            .iter()
            .map(|l| (!event_log::is_blank(l)).then(|| event_log::decode(path, l)))
            .collect::<Vec<_>>()
    });
    let mut events: Vec<(usize, u64, Event)> = Vec::new();
    // The first line of each event id, and a hash of that line to tell duplicates from clashes.
    let mut by_id: HashMap<String, (usize, blake3::Hash)> = HashMap::new();
    let mut duplicate_lines = 0;
    // Tombstones: line, offset, event id, the line.
    let mut tombstones: Vec<(usize, u64, String, &str)> = Vec::new();
    let mut original_of_tombstone: std::collections::HashSet<String> =
        std::collections::HashSet::new();
    for (line, result) in all.iter().zip(decoded.into_iter().flatten()) {
        let Some(result) = result else {
            warnings.push(Finding {
                line: line.number,
                offset: line.offset,
                problem: "blank line".into(),
            });
            continue;
        };
        match result {
            Ok(event) => {
                let hash = blake3::hash(line.bytes);
                let tomb = std::str::from_utf8(line.bytes)
                    .ok()
                    .filter(|l| projections::tombstone::split(l).is_some());
                let is_tomb = tomb.is_some();
                if let Some(text) = tomb {
                    tombstones.push((line.number, line.offset, event.id.clone(), text));
                }
                if is_tomb || original_of_tombstone.contains(&event.id) {
                    // Both an event and its tombstone: a merge brought back a copy from
                    // before `gc`. Each verifies on its own; `gc` removes the copy.
                    if by_id.contains_key(&event.id) {
                        warnings.push(Finding {
                            line: line.number,
                            offset: line.offset,
                            problem: format!(
                                "event {} appears both whole and as a tombstone: purged content came back with a merge; run `memlog gc`",
                                event.id
                            ),
                        });
                        continue;
                    }
                    original_of_tombstone.insert(event.id.clone());
                }
                if let Some((first, seen)) = by_id.get(&event.id) {
                    if *seen == hash {
                        duplicate_lines += 1;
                    } else {
                        problems.push(Finding {
                            line: line.number,
                            offset: line.offset,
                            problem: format!(
                                "event {} also appears on line {first} with different content",
                                event.id
                            ),
                        });
                    }
                    continue;
                }
                by_id.insert(event.id.clone(), (line.number, hash));
                events.push((line.number, line.offset, event));
            }
            Err(crate::error::Error::CorruptLog { problem, .. }) => {
                problems.push(Finding {
                    line: line.number,
                    offset: line.offset,
                    problem,
                });
            }
            Err(e) => return Err(e),
        }
    }
    if let Some(offset) = unterminated {
        warnings.push(Finding {
            line: lines,
            offset,
            problem: "the last line is a complete event without its final newline (an editor or \
                      a tool dropped it): nothing is lost, the next memlog command adds the \
                      newline"
                .into(),
        });
    }
    if complete < bytes.len() {
        problems.push(Finding {
            line: lines + 1,
            offset: complete as u64,
            problem: format!(
                "torn last line ({} bytes without a newline): a write was cut off; any memlog command moves it to .memlog/quarantine.jsonl",
                bytes.len() - complete
            ),
        });
    }
    drop(by_id);
    // Content of a purged entry that no purge covers: written beside the purge on another
    // branch and brought in by a merge. `gc` cannot remove it until a purge names it.
    let mut covered: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut purged: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for (_, _, e) in &events {
        if let projections::EventData::Purge { redacted, .. } = &e.data {
            purged.insert(&e.entry);
            covered.extend(redacted.keys().map(String::as_str));
        }
    }
    for (line, offset, e) in &events {
        for entry in e.entries() {
            if purged.contains(entry)
                && !covered.contains(e.id.as_str())
                && projections::tombstone::redact(e, entry).is_some()
            {
                warnings.push(Finding {
                    line: *line,
                    offset: *offset,
                    problem: format!(
                        "event {} carries content of purged entry {entry} that no purge covers \
                         (it was written beside the purge and a merge brought it in); run \
                         `memlog purge {entry} --reason ...` again to cover it, then `memlog gc`",
                        e.id
                    ),
                });
            }
        }
    }
    // Where each event is, and the event itself: a parent must project onto the entry of the
    // event naming it (a supersede that creates its replacement belongs to both entries).
    let where_is: HashMap<&str, (usize, u64, &Event)> = events
        .iter()
        .map(|(n, o, e)| (e.id.as_str(), (*n, *o, e)))
        .collect();
    // A replacement made beside a purge of the entry it replaces (a supersede on another
    // branch that the purge never saw): it was made from the content the purge removed, and no
    // purge of the old entry covers it.
    let mut before_purge: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut todo: Vec<&str> = events
        .iter()
        .filter(|(_, _, e)| matches!(e.data, projections::EventData::Purge { .. }))
        .flat_map(|(_, _, e)| e.parents.iter().map(String::as_str))
        .collect();
    while let Some(id) = todo.pop() {
        if before_purge.insert(id)
            && let Some((_, _, e)) = where_is.get(id)
        {
            todo.extend(e.parents.iter().map(String::as_str));
        }
    }
    for (n, o, e) in &events {
        if let projections::EventData::Supersede {
            by,
            replacement: Some(_),
            ..
        } = &e.data
            && purged.contains(e.entry.as_str())
            && !purged.contains(by.as_str())
            && !before_purge.contains(e.id.as_str())
        {
            warnings.push(Finding {
                line: *n,
                offset: *o,
                problem: format!(
                    "event {} made {by} to replace purged entry {} beside the purge (a merge \
                     brought it in): {by} may carry the purged content; check with `memlog \
                     show {by}`, and if it does, `memlog purge {by} --reason ...` then \
                     `memlog gc`",
                    e.id, e.entry
                ),
            });
        }
    }
    for (n, o, e) in &events {
        for p in &e.parents {
            match where_is.get(p.as_str()) {
                None => problems.push(Finding {
                    line: *n,
                    offset: *o,
                    problem: format!("parent {p} is not in the log: an event was removed or the log is incomplete"),
                }),
                Some((_, _, parent)) => {
                    if let Some(problem) = parent_problem(e, parent) {
                        problems.push(Finding {
                            line: *n,
                            offset: *o,
                            problem,
                        });
                    }
                }
            }
        }
    }
    // A tombstone stands for an event whose content `gc` removed: the purge it names must be
    // in the log and list the tombstone's digest for that event id.
    for (n, o, id, line) in &tombstones {
        let purge_of = |p: &str| Ok(where_is.get(p).map(|(_, _, e)| (*e).clone()));
        if let Some(problem) = super::tombstones::problem(id, line, purge_of)? {
            problems.push(Finding {
                line: *n,
                offset: *o,
                problem,
            });
        }
    }
    // A credential that reached the log without memlog's checks (another clone without the
    // hooks, `--no-verify`): the reads redact it, but the log in git still holds it.
    let found = crate::parallel::map_chunks(&events, |chunk| {
        chunk
            .iter()
            .map(|(n, o, e)| (*n, *o, e.id.clone(), e.entry.clone(), secrets_in(e)))
            .collect::<Vec<_>>()
    });
    for (n, o, id, entry, secrets) in found.into_iter().flatten() {
        for s in secrets {
            let fix = if purged.contains(entry.as_str()) {
                "rotate the credential; the entry is purged: run `memlog gc` to remove it from \
                 the log"
                    .to_owned()
            } else {
                crate::policy::stored::fix(&entry)
            };
            problems.push(Finding {
                line: n,
                offset: o,
                problem: format!(
                    "event {} of entry {} holds a secret in `{}` (rule {}), redacted in every \
                     output: {fix}",
                    id, entry, s.field, s.rule
                ),
            });
        }
    }
    drop(where_is);
    let event_count = events.len();
    // Each entry's events by their place in `events`, in log order: the events themselves are
    // not copied (a copy per entry doubled the memory of verifying a large log).
    let mut per_entry: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (_, _, e)) in events.iter().enumerate() {
        for entry in e.entries() {
            per_entry.entry(entry).or_default().push(i);
        }
    }
    let place: HashMap<&str, (usize, u64)> = events
        .iter()
        .map(|(n, o, e)| (e.id.as_str(), (*n, *o)))
        .collect();
    let place = |id: &str| place.get(id).copied().unwrap_or((0, 0));
    let mut conflicts = Vec::new();
    for (entry, at) in &per_entry {
        let evs: Vec<&Event> = at.iter().map(|i| &events[*i].2).collect();
        if has_cycle(&evs) {
            let (n, o) = place(evs[0].id.as_str());
            problems.push(Finding {
                line: n,
                offset: o,
                problem: format!("the events of entry {entry} form a cycle"),
            });
        }
        let folded = fold_entry_refs(entry, &evs);
        for (id, why) in folded.anomalies {
            let (n, o) = place(id.as_str());
            problems.push(Finding {
                line: n,
                offset: o,
                problem: format!("event {id} of entry {entry}: {why}"),
            });
        }
        if folded
            .state
            .as_ref()
            .is_some_and(projections::EntryState::in_conflict)
        {
            conflicts.push((*entry).to_owned());
        }
    }
    let entries = per_entry.len();
    problems.sort_by_key(|f| (f.line, f.offset));
    Ok(Report {
        file: path.display().to_string(),
        ok: problems.is_empty(),
        lines,
        events: event_count,
        duplicate_lines,
        entries,
        problems,
        warnings,
        conflicts,
        missing,
    })
}

/// The secrets in the text an event carries (its `data`: fields, patches, reasons; and its
/// `actor`), each by its path in `data` (`content`, `patch.tags[0]`,
/// `replacement.evidence[1].uri`), or `actor`, and rule.
pub fn secrets_in(event: &Event) -> Vec<crate::policy::stored::StoredSecret> {
    fn walk(
        path: &str,
        key: &str,
        v: &serde_json::Value,
        out: &mut Vec<crate::policy::stored::StoredSecret>,
    ) {
        match v {
            serde_json::Value::String(s) => {
                let mut text = s.clone();
                crate::policy::stored::redact_field(path, &mut text, key == "uri", out);
            }
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(&format!("{path}[{i}]"), key, item, out);
                }
            }
            serde_json::Value::Object(map) => {
                for (k, item) in map {
                    let inner = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(&inner, k, item, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(serde_json::Value::Object(mut whole)) = event.to_value()
        && let Some(data) = whole.remove("data")
    {
        walk("", "", &data, &mut out);
    }
    // The actor becomes the entry's `created_by` or `pinned_by`, which the store redacts too.
    let mut actor = event.actor.clone();
    crate::policy::stored::redact_field("actor", &mut actor, false, &mut out);
    out
}

/// Rule 9.2 of docs/EVENT_FORMAT.md for `parent`, one of `event`'s parents: it must project
/// onto the event's entry. What is wrong when it does not.
pub fn parent_problem(event: &Event, parent: &Event) -> Option<String> {
    (!parent.projects_onto(&event.entry)).then(|| {
        format!(
            "parent {} belongs to entry {}, not {}",
            parent.id, parent.entry, event.entry
        )
    })
}

fn has_cycle(events: &[&Event]) -> bool {
    // Kahn's algorithm over the parents present in the set.
    let ids: HashMap<&str, usize> = events
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.as_str(), i))
        .collect();
    let mut indegree = vec![0usize; events.len()];
    let mut children = vec![Vec::new(); events.len()];
    for (i, e) in events.iter().enumerate() {
        for p in &e.parents {
            if let Some(&j) = ids.get(p.as_str()) {
                indegree[i] += 1;
                children[j].push(i);
            }
        }
    }
    let mut ready: Vec<usize> = (0..events.len()).filter(|i| indegree[*i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop() {
        seen += 1;
        for &c in &children[i] {
            indegree[c] -= 1;
            if indegree[c] == 0 {
                ready.push(c);
            }
        }
    }
    seen < events.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use projections::{EntryFields, EventData, Kind, Section, Status};
    use serde_json::{Map, Value};

    /// A log written before entry ids grew (the example of docs/EVENT_FORMAT.md, section 12).
    const LEGACY: &[&str] = &[
        r#"{"actor":"agent-7","at":"2026-11-22T10:31:12.123Z","data":{"confidence":0.9,"content":"Tokens live 15 minutes.","evidence":[{"note":"token issuing","type":"code","uri":"src/auth/token.rs#L10-L40"}],"kind":"decision","related_entries":[],"review_interval":null,"scope":"service:auth","section":"decisions","status":"active","subject":"auth.tokens","summary":"Use short-lived JWTs","tags":[],"valid_from":null,"valid_to":null},"entry":"m-s2bgnsgj84","id":"e305c1ff9917a031aa8ed0809a69d0e5d1a5d26e0860b19bce1d7f5a6f1c881b","parents":[],"type":"create","v":1}"#,
        r#"{"actor":"agent-a","at":"2026-11-23T09:00:00.000Z","data":{"reason":"load test confirms","set":{"confidence":0.95}},"entry":"m-s2bgnsgj84","id":"fcee479bac45ac4e256f63738f5034e2436569d7bbb9d555525f208a0a7a1b62","parents":["e305c1ff9917a031aa8ed0809a69d0e5d1a5d26e0860b19bce1d7f5a6f1c881b"],"type":"update","v":1}"#,
    ];
    const LEGACY_HEAD: &str = "fcee479bac45ac4e256f63738f5034e2436569d7bbb9d555525f208a0a7a1b62";

    fn fields() -> EntryFields {
        EntryFields {
            section: Section::Decisions,
            kind: Kind::Decision,
            subject: "auth.tokens".into(),
            scope: "service:auth".into(),
            summary: "Use 10-minute JWTs".into(),
            content: "Tokens live 10 minutes.".into(),
            tags: vec![],
            confidence: 0.9,
            evidence: vec![],
            related_entries: vec![],
            valid_from: None,
            valid_to: None,
            review_interval: None,
        }
    }

    fn check(events: &[Event]) -> Report {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("events.jsonl");
        let mut text: String = LEGACY.iter().map(|l| format!("{l}\n")).collect();
        for e in events {
            text.push_str(&e.to_line().unwrap_or_else(|e| panic!("{e}")));
            text.push('\n');
        }
        fs_err::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
        verify_log(&path).unwrap_or_else(|e| panic!("{e}"))
    }

    fn update(entry: &str, parent: &str) -> Event {
        let mut set = Map::new();
        set.insert("confidence".into(), Value::from(0.8));
        Event::build(
            entry,
            "agent-8",
            "2026-11-25T09:00:00.000Z",
            vec![parent.to_owned()],
            EventData::Update { set, reason: None },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_one_line_supersede_of_a_legacy_entry_verifies() {
        let sup = Event::supersede_with_replacement(
            "m-s2bgnsgj84",
            "agent-8",
            "2026-11-24T09:00:00.000Z",
            vec![LEGACY_HEAD.to_owned()],
            fields(),
            Status::Active,
            Some("security review".into()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let b = sup.created_entry().unwrap_or_default().to_owned();
        // The replacement's later events build on the supersede event.
        let report = check(&[sup.clone(), update(&b, &sup.id)]);
        assert!(report.ok, "{:?}", report.problems);
        assert_eq!((report.events, report.entries), (4, 2));
        assert!(report.conflicts.is_empty());
        // An event of the replacement cannot build on an event of the superseded entry only.
        let report = check(&[sup, update(&b, LEGACY_HEAD)]);
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert!(
            report.problems[0]
                .problem
                .contains(&format!("belongs to entry m-s2bgnsgj84, not {b}")),
            "{:?}",
            report.problems
        );
    }
}
