//! `verify`: checks every line of a log on its own and the log as a whole, without the store.

use crate::error::Result;
use crate::log::read as event_log;
use projections::{Event, fold_entry};
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
}

/// Verifies the log at `path`.
///
/// # Errors
/// Only when the file cannot be read; everything wrong inside it is in the report.
pub fn verify_log(path: &Path) -> Result<Report> {
    let bytes = match fs_err::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
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
    let where_is: HashMap<String, (usize, u64, String)> = events
        .iter()
        .map(|(n, o, e)| (e.id.clone(), (*n, *o, e.entry.clone())))
        .collect();
    for (n, o, e) in &events {
        for p in &e.parents {
            match where_is.get(p.as_str()) {
                None => problems.push(Finding {
                    line: *n,
                    offset: *o,
                    problem: format!("parent {p} is not in the log: an event was removed or the log is incomplete"),
                }),
                Some((_, _, entry)) if *entry != e.entry => problems.push(Finding {
                    line: *n,
                    offset: *o,
                    problem: format!("parent {p} belongs to entry {entry}, not {}", e.entry),
                }),
                Some(_) => {}
            }
        }
    }
    let event_count = events.len();
    let mut per_entry: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for (_, _, e) in events {
        per_entry.entry(e.entry.clone()).or_default().push(e);
    }
    let place = |id: &str| where_is.get(id).map_or((0, 0), |(n, o, _)| (*n, *o));
    let mut conflicts = Vec::new();
    for (entry, evs) in &per_entry {
        if has_cycle(evs) {
            let (n, o) = place(evs[0].id.as_str());
            problems.push(Finding {
                line: n,
                offset: o,
                problem: format!("the events of entry {entry} form a cycle"),
            });
        }
        let folded = fold_entry(evs);
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
            conflicts.push(entry.clone());
        }
    }
    problems.sort_by_key(|f| (f.line, f.offset));
    Ok(Report {
        file: path.display().to_string(),
        ok: problems.is_empty(),
        lines,
        events: event_count,
        duplicate_lines,
        entries: per_entry.len(),
        problems,
        warnings,
        conflicts,
    })
}

fn has_cycle(events: &[Event]) -> bool {
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
