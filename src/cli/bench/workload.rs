//! The entries the bench writes: realistic field sizes (a 300-character content, a code
//! permalink with a note, two tags), all four sections, all eight kinds, five scopes. Entry `i`
//! is the same whether it is written by `apply` of a JSON Lines file or by `add`.

use crate::error::Result;
use serde_json::{Value, json};
use std::path::Path;

const SECTIONS: [&str; 4] = ["decisions", "state", "observations", "learnings"];
const KINDS: [&str; 8] = [
    "decision",
    "requirement",
    "invariant",
    "incident",
    "metric",
    "hypothesis",
    "runbook_step",
    "other",
];
const SCOPES: [&str; 5] = [
    "repo",
    "org",
    "service:auth",
    "service:billing",
    "environment:prod",
];

/// Index ranges of the entries written by each phase, so that no two phases write the same one.
pub const SETUP_ADDS: usize = 1_000_000;
pub const PULLED: usize = 2_000_000;
pub const TIMED_ADDS: usize = 3_000_000;
pub const CONCURRENT_ADDS: usize = 4_000_000;

/// The fields of entry `i`, as `apply` takes them.
pub fn entry(i: usize) -> Value {
    let section = SECTIONS[i % SECTIONS.len()];
    let mut entry = json!({
        "section": section,
        "kind": KINDS[i % KINDS.len()],
        "subject": format!("component-{}.queue", i % 500),
        "scope": SCOPES[i % SCOPES.len()],
        "summary": summary(i),
        "content": CONTENT,
        "tags": [format!("t{}", i % 20), "bench"],
        "confidence": confidence(i),
        "evidence": [evidence(i)],
    });
    if section == "state"
        && let Some(map) = entry.as_object_mut()
    {
        map.insert("valid_from".into(), VALID_FROM.into());
        map.insert("valid_to".into(), VALID_TO.into());
    }
    entry
}

const CONTENT: &str = "The service retries failed calls three times with exponential backoff \
    starting at 200 ms. Observed during load tests; queue depth stayed under the configured \
    bound of 1024 items. The retry budget is shared by all callers of the component, so a \
    burst from one caller delays the others by up to two seconds.";
const VALID_FROM: &str = "2026-01-01T00:00:00Z";
const VALID_TO: &str = "2036-01-01T00:00:00Z";

fn summary(i: usize) -> String {
    format!("Synthetic memory {i}: the component keeps a bounded queue and retries with backoff")
}

fn confidence(i: usize) -> f64 {
    0.6 + (i % 40) as f64 / 100.0
}

fn evidence(i: usize) -> Value {
    json!({
        "type": "code",
        "uri": format!("src/component_{}/queue.rs#L10-L40", i % 100),
        "note": "where the retry loop is implemented",
    })
}

/// One JSON Lines line creating entry `i`.
pub fn create_line(i: usize) -> String {
    json!({"operation": "create", "entry": entry(i)}).to_string()
}

/// Writes a JSON Lines file creating the entries `range`.
///
/// # Errors
/// When the file cannot be written.
pub fn write_creates(path: &Path, range: std::ops::Range<usize>) -> Result<()> {
    let mut text = String::with_capacity(range.len() * 700);
    for i in range {
        text.push_str(&create_line(i));
        text.push('\n');
    }
    crate::log::durable::write_atomic(path, text.as_bytes())
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

/// `add` of entry `i`, with the same fields as [`entry`].
pub fn add(i: usize) -> Vec<String> {
    let section = SECTIONS[i % SECTIONS.len()];
    let mut args = owned(&[
        "add",
        "--section",
        section,
        "--kind",
        KINDS[i % KINDS.len()],
        "--subject",
        &format!("component-{}.queue", i % 500),
        "--scope",
        SCOPES[i % SCOPES.len()],
        "--summary",
        &summary(i),
        "--content",
        CONTENT,
        "--confidence",
        &confidence(i).to_string(),
        "--evidence",
        &evidence(i).to_string(),
        "--tag",
        &format!("t{}", i % 20),
        "--tag",
        "bench",
    ]);
    if section == "state" {
        args.extend(owned(&["--valid-from", VALID_FROM, "--valid-to", VALID_TO]));
    }
    args
}

/// `supersede` of `id` with a new summary (the other fields are inherited).
pub fn supersede(id: &str, i: usize) -> Vec<String> {
    owned(&[
        "supersede",
        id,
        "--summary",
        &format!("Replacement {i}: the queue is bounded at 2048 items since the last release"),
        "--reason",
        "measured again after the release",
    ])
}

pub fn pin(id: &str) -> Vec<String> {
    owned(&["pin", id, "--reason", "referenced by the runbook"])
}

pub fn deprecate(id: &str) -> Vec<String> {
    owned(&["deprecate", id, "--reason", "the component was removed"])
}

pub fn show(id: &str) -> Vec<String> {
    owned(&["show", id])
}

pub fn list() -> Vec<String> {
    owned(&["list"])
}

pub fn stats() -> Vec<String> {
    owned(&["stats"])
}
