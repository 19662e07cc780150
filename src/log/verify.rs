//! `verify`: checks every line of a log on its own and the log as a whole, without the store.

use crate::error::Result;
use crate::log::by_offset::LogFile;
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

/// What verification keeps of each event once its line is checked: where it is, what it links
/// to, and what the checks of the log as a whole need. The event itself is read again by its
/// offset when its entry is folded, so that verifying holds this much per event rather than
/// the log and every decoded event (339 MiB at 100,000 entries).
struct Seen {
    number: usize,
    offset: u64,
    len: usize,
    id: String,
    entry: String,
    /// The entry a supersede creates in the same line.
    by: Option<String>,
    parents: Vec<String>,
    /// A purge: the events it covers, with their digests.
    redacted: Option<BTreeMap<String, String>>,
    /// The entries whose content the event carries (what a purge of them must cover).
    carries: Vec<String>,
    secrets: Vec<crate::policy::stored::StoredSecret>,
    /// The event's time, and as Unix milliseconds (0 when it cannot be read).
    at: String,
    at_ms: i64,
}

impl Seen {
    fn of(line: &event_log::Line<'_>, event: &Event) -> Self {
        let redacted = match &event.data {
            projections::EventData::Purge { redacted, .. } => Some(redacted.clone()),
            _ => None,
        };
        Self {
            number: line.number,
            offset: line.offset,
            len: line.bytes.len(),
            id: event.id.clone(),
            entry: event.entry.clone(),
            carries: event
                .entries()
                .filter(|entry| projections::tombstone::redact(event, entry).is_some())
                .map(str::to_owned)
                .collect(),
            // The replacement a supersede creates in the same line (see `Event::entries`).
            by: event.entries().nth(1).map(str::to_owned),
            parents: event.parents.clone(),
            redacted,
            secrets: secrets_in(event),
            at_ms: crate::retrieval::features::unix_millis(&event.at).unwrap_or(0),
            at: event.at.clone(),
        }
    }

    /// The entries the event projects onto (see [`Event::entries`]).
    fn entries(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.entry.as_str()).chain(self.by.as_deref())
    }

    fn event(&self, log: &LogFile) -> Result<Event> {
        let line = log.line_at(self.offset, self.len, &self.id, self.number)?;
        projections::event::decode_verified_line(&line).map_err(|e| {
            crate::error::Error::CorruptLog {
                path: log.path().to_path_buf(),
                line: self.number,
                offset: self.offset,
                problem: e.to_string(),
            }
        })
    }
}

/// Verifies the log at `path`, reading it in chunks: every line is decoded and checked (its
/// hashes, its form) and kept as a [`Seen`]; the checks across events run on those; each
/// entry's events are read again to fold them.
///
/// # Errors
/// Only when the file cannot be read; everything wrong inside it is in the report.
/// Events dated more than this after the clock are named (a writer's clock was wrong).
const FUTURE_TOLERANCE_MS: i64 = 86_400_000;

/// Verifies the log at `path`; `now_ms` is the time of the check (Unix milliseconds), to name
/// events dated after it.
///
/// # Errors
/// When the log cannot be read.
pub fn verify_log(path: &Path, now_ms: i64) -> Result<Report> {
    let log = LogFile::open(path)?;
    let missing = log.is_missing();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let mut seen: Vec<Seen> = Vec::new();
    // The first line of each event id, and a hash of that line to tell duplicates from clashes.
    let mut by_id: HashMap<String, (usize, blake3::Hash)> = HashMap::new();
    let mut duplicate_lines = 0;
    // Tombstones: their place in `seen`.
    let mut tombstones: Vec<usize> = Vec::new();
    let mut original_of_tombstone: std::collections::HashSet<String> =
        std::collections::HashSet::new();
    let mut number = 1;
    let mut check = |chunk: &[u8], offset: u64, number: &mut usize| -> Result<()> {
        let all: Vec<event_log::Line<'_>> = event_log::lines(chunk, *number, offset).collect();
        *number += all.len();
        // Decoding (parse, canonical check, hashes) and the secret scan are the expensive
        // part: spread over the cores, then looked at in line order.
        let decoded = crate::parallel::map_chunks(&all, |part| {
            part.iter()
                .map(|l| {
                    (!event_log::is_blank(l)).then(|| {
                        event_log::decode(path, l).map(|event| {
                            let tomb = std::str::from_utf8(l.bytes)
                                .ok()
                                .is_some_and(|t| projections::tombstone::split(t).is_some());
                            (Seen::of(l, &event), blake3::hash(l.bytes), tomb)
                        })
                    })
                })
                .collect::<Vec<_>>()
        });
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
                Ok((s, hash, is_tomb)) => {
                    let both_tombstones = is_tomb && original_of_tombstone.contains(&s.id);
                    if both_tombstones && by_id.get(&s.id).is_some_and(|(_, known)| *known != hash)
                    {
                        // Two tombstones of one event: two branches purged the entry and ran
                        // `gc`, then merged. No content came back.
                        warnings.push(Finding {
                            line: line.number,
                            offset: line.offset,
                            problem: format!(
                                "event {} appears as two tombstones (the entry was purged on two \
                                 branches, then merged): no content came back; `memlog gc` \
                                 keeps one",
                                s.id
                            ),
                        });
                        continue;
                    }
                    if !both_tombstones && (is_tomb || original_of_tombstone.contains(&s.id)) {
                        // Both an event and its tombstone: a merge brought back a copy from
                        // before `gc`. Each verifies on its own; `gc` removes the copy.
                        if by_id.contains_key(&s.id) {
                            warnings.push(Finding {
                                line: line.number,
                                offset: line.offset,
                                problem: format!(
                                    "event {} appears both whole and as a tombstone: purged content came back with a merge; run `memlog gc`",
                                    s.id
                                ),
                            });
                            continue;
                        }
                        original_of_tombstone.insert(s.id.clone());
                    }
                    if let Some((first, known)) = by_id.get(&s.id) {
                        if *known == hash {
                            duplicate_lines += 1;
                        } else {
                            problems.push(Finding {
                                line: line.number,
                                offset: line.offset,
                                problem: format!(
                                    "event {} also appears on line {first} with different content",
                                    s.id
                                ),
                            });
                        }
                        continue;
                    }
                    by_id.insert(s.id.clone(), (line.number, hash));
                    if is_tomb {
                        tombstones.push(seen.len());
                    }
                    seen.push(s);
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
        Ok(())
    };
    log.for_each_chunk(|_| {}, |offset, chunk| check(chunk, offset, &mut number))?;
    // After the last newline: a whole event that lacks only its final newline is no torn
    // write (the next command adds the newline and keeps it, see `repair_tail_locked`), so it
    // is verified as a line; anything else is a torn write.
    let tail = log.tail()?;
    if !tail.is_empty() {
        if whole_event(&tail) {
            let mut line = tail.clone();
            line.push(b'\n');
            check(&line, log.len(), &mut number)?;
            warnings.push(Finding {
                line: number - 1,
                offset: log.len(),
                problem: "the last line is a complete event without its final newline (an \
                          editor or a tool dropped it): nothing is lost, the next memlog \
                          command adds the newline"
                    .into(),
            });
        } else {
            problems.push(Finding {
                line: number,
                offset: log.len(),
                problem: format!(
                    "torn last line ({} bytes without a newline): a write was cut off; any memlog command moves it to .memlog/quarantine.jsonl",
                    tail.len()
                ),
            });
        }
    }
    let lines = number - 1;
    drop(by_id);
    drop(original_of_tombstone);
    // Content of a purged entry that no purge covers: written beside the purge on another
    // branch and brought in by a merge. `gc` cannot remove it until a purge names it.
    let mut covered: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut purged: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for s in &seen {
        if let Some(redacted) = &s.redacted {
            purged.insert(&s.entry);
            covered.extend(redacted.keys().map(String::as_str));
        }
    }
    for s in &seen {
        for entry in &s.carries {
            if purged.contains(entry.as_str()) && !covered.contains(s.id.as_str()) {
                warnings.push(Finding {
                    line: s.number,
                    offset: s.offset,
                    problem: format!(
                        "event {} carries content of purged entry {entry} that no purge covers \
                         (it was written beside the purge and a merge brought it in); run \
                         `memlog purge {entry} --reason ...` again to cover it, then `memlog gc`",
                        s.id
                    ),
                });
            }
        }
    }
    // Dated in the future: a writer's clock was wrong (it was warned as it wrote), and a merge
    // brought the events here, where every later change to their entries must be dated after
    // them and they count as the newest everywhere.
    for s in seen
        .iter()
        .filter(|s| s.at_ms > now_ms + FUTURE_TOLERANCE_MS)
    {
        warnings.push(Finding {
            line: s.number,
            offset: s.offset,
            problem: format!(
                "event {} of entry {} is dated {}, {} days after this machine's clock: its \
                 writer's clock was wrong; it counts as the newest change wherever times are \
                 compared (the merge of a conflict, statistics), and a later change to the \
                 entry must be dated after it (`--now`), or wait for the clock to pass it",
                s.id,
                s.entry,
                s.at,
                (s.at_ms - now_ms) / 86_400_000
            ),
        });
    }
    // Where each event is: a parent must project onto the entry of the event naming it (a
    // supersede that creates its replacement belongs to both entries).
    let where_is: HashMap<&str, &Seen> = seen.iter().map(|s| (s.id.as_str(), s)).collect();
    // A replacement made beside a purge of the entry it replaces (a supersede on another
    // branch that the purge never saw): it was made from the content the purge removed, and no
    // purge of the old entry covers it.
    let mut before_purge: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut todo: Vec<&str> = seen
        .iter()
        .filter(|s| s.redacted.is_some())
        .flat_map(|s| s.parents.iter().map(String::as_str))
        .collect();
    while let Some(id) = todo.pop() {
        if before_purge.insert(id)
            && let Some(s) = where_is.get(id)
        {
            todo.extend(s.parents.iter().map(String::as_str));
        }
    }
    for s in &seen {
        if let Some(by) = &s.by
            && purged.contains(s.entry.as_str())
            && !purged.contains(by.as_str())
            && !before_purge.contains(s.id.as_str())
        {
            warnings.push(Finding {
                line: s.number,
                offset: s.offset,
                problem: format!(
                    "event {} made {by} to replace purged entry {} beside the purge (a merge \
                     brought it in): {by} may carry the purged content; check with `memlog \
                     show {by}`, and if it does, `memlog purge {by} --reason ...` then \
                     `memlog gc`",
                    s.id, s.entry
                ),
            });
        }
    }
    for s in &seen {
        for p in &s.parents {
            match where_is.get(p.as_str()) {
                None => problems.push(Finding {
                    line: s.number,
                    offset: s.offset,
                    problem: format!("parent {p} is not in the log: an event was removed or the log is incomplete"),
                }),
                Some(parent) => {
                    if !parent.entries().any(|e| e == s.entry) {
                        problems.push(Finding {
                            line: s.number,
                            offset: s.offset,
                            problem: parent_elsewhere(&parent.id, &parent.entry, &s.entry),
                        });
                    }
                }
            }
        }
    }
    // A tombstone stands for an event whose content `gc` removed: the purge it names must be
    // in the log and list the tombstone's digest for that event id.
    for t in &tombstones {
        let s = &seen[*t];
        let line = log.line_at(s.offset, s.len, &s.id, s.number)?;
        let purge_of = |p: &str| where_is.get(p).map(|purge| purge.event(&log)).transpose();
        if let Some(problem) = super::tombstones::problem(&s.id, &line, purge_of)? {
            problems.push(Finding {
                line: s.number,
                offset: s.offset,
                problem,
            });
        }
    }
    // A credential that reached the log without memlog's checks (another clone without the
    // hooks, `--no-verify`): the reads redact it, but the log in git still holds it.
    for s in &seen {
        for secret in &s.secrets {
            let fix = if purged.contains(s.entry.as_str()) {
                "rotate the credential; the entry is purged: run `memlog gc` to remove it from \
                 the log"
                    .to_owned()
            } else {
                crate::policy::stored::fix(&s.entry)
            };
            problems.push(Finding {
                line: s.number,
                offset: s.offset,
                problem: format!(
                    "event {} of entry {} holds a secret in `{}` (rule {}), redacted in every \
                     output: {fix}",
                    s.id, s.entry, secret.field, secret.rule
                ),
            });
        }
    }
    drop(where_is);
    let event_count = seen.len();
    // Each entry's events by their place in `seen`, in log order; read again to be folded, an
    // entry's at a time on the cores.
    let mut per_entry: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in seen.iter().enumerate() {
        for entry in s.entries() {
            per_entry.entry(entry).or_default().push(i);
        }
    }
    let groups: Vec<(&str, Vec<usize>)> = per_entry.into_iter().collect();
    let folded = crate::parallel::map_chunks(&groups, |part| {
        part.iter()
            .map(|(entry, at)| {
                let events = at
                    .iter()
                    .map(|i| seen[*i].event(&log))
                    .collect::<Result<Vec<Event>>>()?;
                let refs: Vec<&Event> = events.iter().collect();
                let cycle = has_cycle(&refs);
                let folded = fold_entry_refs(entry, &refs);
                let conflict = folded
                    .state
                    .as_ref()
                    .is_some_and(projections::EntryState::in_conflict);
                Ok((cycle, folded.anomalies, conflict))
            })
            .collect::<Result<Vec<_>>>()
    });
    let place: HashMap<&str, (usize, u64)> = seen
        .iter()
        .map(|s| (s.id.as_str(), (s.number, s.offset)))
        .collect();
    let place = |id: &str| place.get(id).copied().unwrap_or((0, 0));
    let mut conflicts = Vec::new();
    let mut outcomes = Vec::with_capacity(groups.len());
    for part in folded {
        outcomes.extend(part?);
    }
    for ((entry, at), (cycle, anomalies, conflict)) in groups.iter().zip(outcomes) {
        if cycle {
            let first = &seen[at[0]];
            problems.push(Finding {
                line: first.number,
                offset: first.offset,
                problem: format!("the events of entry {entry} form a cycle"),
            });
        }
        for (id, why) in anomalies {
            let (n, o) = place(id.as_str());
            problems.push(Finding {
                line: n,
                offset: o,
                problem: format!("event {id} of entry {entry}: {why}"),
            });
        }
        if conflict {
            conflicts.push((*entry).to_owned());
        }
    }
    let entries = groups.len();
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
    (!parent.projects_onto(&event.entry))
        .then(|| parent_elsewhere(&parent.id, &parent.entry, &event.entry))
}

/// What [`parent_problem`] says of parent `id`, an event of entry `its`, named by an event of
/// `entry`.
fn parent_elsewhere(id: &str, its: &str, entry: &str) -> String {
    format!("parent {id} belongs to entry {its}, not {entry}")
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
        verify_log(&path, i64::MAX / 2).unwrap_or_else(|e| panic!("{e}"))
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
