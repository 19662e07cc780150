//! `memlog import`: Memory_Entry records (a JSON array, JSON Lines, or a directory of
//! `*.json` files) or raw events. Every record goes through the write policy (a
//! [`crate::log::writer::Batch`]); an id that the project already holds is settled by the strategy.

use crate::error::{Error, Result};
use crate::log::writer::{Batch, Change, WriteContext};
use crate::policy::validate::{EntryInput, check_create, check_patch, entry_input_from_json};
use crate::project::Project;
use projections::{EntryFields, EntryState, Event, EventData, Status};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// What to do with a record whose entry the project already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Strategy {
    /// Keep the project's entry; ignore the record.
    Skip,
    /// Replace the entry's fields with the record's (a new version of the entry).
    Overwrite,
    /// Higher confidence wins the fields; evidence and tags are united.
    Merge,
}

/// An event of an input file and its line, or why the line is no event.
pub type InputEvent = std::result::Result<(Event, String), String>;

/// What was read from the input.
#[derive(Debug, Clone)]
pub enum Input {
    /// Memory_Entry records, each with where it came from (`line 3`, `x.json`, `item 2`);
    /// an `Err` is a part of the input that is not a record, with the reason.
    Records(Vec<(String, std::result::Result<Value, String>)>),
    /// Raw events, each with its line.
    /// Each with where it was and its line.
    Events(Vec<(String, InputEvent)>),
}

impl Input {
    /// Whether some record or event of the input could be read (it may still be refused).
    pub fn has_any(&self) -> bool {
        match self {
            Self::Records(r) => r.iter().any(|(_, v)| v.is_ok()),
            Self::Events(e) => e.iter().any(|(_, v)| v.is_ok()),
        }
    }
}

fn is_event(v: &Value) -> bool {
    v.get("parents").is_some() && v.get("v").is_some() && v.get("type").is_some()
}

/// Largest input an import reads: it holds its input whole.
const MAX_IMPORT_BYTES: u64 = 512 * 1024 * 1024;

/// An import's input (`what` names it), whole, unless it is larger than [`MAX_IMPORT_BYTES`]
/// (an endless one, `/dev/zero`, included).
///
/// # Errors
/// When reading fails or the input is too large.
pub fn read_bounded(reader: impl std::io::Read, what: &str) -> Result<Vec<u8>> {
    crate::cli::invoke::read_at_most(reader, MAX_IMPORT_BYTES)?.ok_or_else(|| {
        Error::Usage(format!(
            "{what} is larger than 512 MiB, more than an import reads at once; split it \
             (JSON Lines can be split at any line) and import the parts"
        ))
    })
}

/// Reads an export: a directory of `*.json` records, a JSON array, one JSON object, or JSON
/// Lines of records or of events. With `within` (a directory, its links resolved), a file of a
/// directory that leads outside it through a link is not read: it is a rejected record.
///
/// # Errors
/// When the input cannot be read, or mixes records and events.
pub fn read(path: &Path, bytes: Option<Vec<u8>>, within: Option<&Path>) -> Result<Input> {
    if bytes.is_none() && path.is_dir() {
        let mut files: Vec<_> = fs_err::read_dir(path)?
            .filter_map(std::result::Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut out = Vec::new();
        for f in files {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let Some(root) = within
                && !fs_err::canonicalize(&f).is_ok_and(|real| real.starts_with(root))
            {
                out.push((
                    name,
                    Err("a link that leads outside the workspace: not read".to_owned()),
                ));
                continue;
            }
            let text = fs_err::read_to_string(&f)?;
            out.push((
                name,
                serde_json::from_str::<Value>(&text).map_err(|e| format!("not JSON: {e}")),
            ));
        }
        return Ok(Input::Records(out));
    }
    let bytes = match bytes {
        Some(b) => b,
        None => {
            let file = fs_err::File::open(path).map_err(|e| Error::input(path, e))?;
            read_bounded(file, &format!("`{}`", path.display()))?
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => {
            return Ok(Input::Records(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| (format!("item {}", i + 1), Ok(v)))
                    .collect(),
            ));
        }
        Ok(v @ Value::Object(_)) if !is_event(&v) => {
            return Ok(Input::Records(vec![("record".into(), Ok(v))]));
        }
        _ => {}
    }
    let mut records = Vec::new();
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        match serde_json::from_str::<Value>(line) {
            Ok(v) if is_event(&v) => events.push((
                at,
                projections::decode_line(line)
                    .map(|e| (e, line.to_owned()))
                    .map_err(|e| e.to_string()),
            )),
            Ok(v) => records.push((at, Ok(v))),
            Err(e) => records.push((at, Err(format!("not JSON: {e}")))),
        }
    }
    match (records.is_empty(), events.is_empty()) {
        (_, true) => Ok(Input::Records(records)),
        (true, false) => Ok(Input::Events(events)),
        (false, false) => Err(Error::Usage(format!(
            "{} mixes Memory_Entry records and events; import them from separate files",
            path.display()
        ))),
    }
}

/// One record's fate.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Outcome {
    /// Where in the input: `line 3`, `item 2`, a file name.
    pub source: String,
    /// The id the record (or event) carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The project's entry it became or met.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Report {
    pub imported: Vec<Outcome>,
    pub merged: Vec<Outcome>,
    pub overwritten: Vec<Outcome>,
    pub skipped: Vec<Outcome>,
    pub rejected: Vec<Outcome>,
}

/// What the input said is echoed redacted: a record's id, an event's entry or a file name is
/// anything the input holds, and the report is printed.
fn outcome(
    source: &str,
    record: Option<&str>,
    entry: Option<&str>,
    reason: Option<String>,
) -> Outcome {
    use crate::policy::validate::redact_secrets;
    Outcome {
        source: redact_secrets(source),
        record: record.map(redact_secrets),
        entry: entry.map(redact_secrets),
        reason: reason.as_deref().map(redact_secrets),
    }
}

/// The record's creator and creation time, when they are usable as an event's actor and time:
/// then the entry's id is the same wherever the record is imported.
fn provenance(v: &Value, base: &WriteContext) -> WriteContext {
    let mut ctx = base.clone();
    if let Some(a) = v.get("created_by").and_then(Value::as_str) {
        let n = a.chars().count();
        let visible = !a
            .chars()
            .any(|c| c.is_control() || crate::safe_text::is_invisible(c));
        if n > 0 && n <= projections::event::MAX_ACTOR_CHARS && visible {
            ctx.actor = a.to_owned();
        }
    }
    if let Some(t) = v.get("created_at").and_then(Value::as_str)
        && let Ok(t) = crate::clock::normalize_time(t)
    {
        ctx.at = t;
    }
    ctx
}

/// The merge of a record into an entry: the higher confidence wins the fields (the entry on a
/// tie), evidence and tags are united (the entry's first).
fn merged(existing: &EntryFields, incoming: &EntryFields) -> EntryFields {
    let mut out = if incoming.confidence > existing.confidence {
        incoming.clone()
    } else {
        existing.clone()
    };
    out.confidence = existing.confidence.max(incoming.confidence);
    let mut evidence = existing.evidence.clone();
    for e in &incoming.evidence {
        if !evidence.iter().any(|x| x.kind == e.kind && x.uri == e.uri) {
            evidence.push(e.clone());
        }
    }
    out.evidence = evidence;
    let mut tags = existing.tags.clone();
    for t in &incoming.tags {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    out.tags = tags;
    out
}

fn reason_of(e: &Error) -> String {
    crate::policy::validate::redact_secrets(&e.to_string())
}

/// Imports Memory_Entry records, in one batch (one lock, appends grouped). A new entry's create
/// event carries the record's `created_by` and `created_at`.
///
/// # Errors
/// Only when the project cannot be written at all (a lock, I/O); a record that fails is
/// reported in [`Report::rejected`].
pub fn import_records(
    project: &Project,
    base: &WriteContext,
    records: Vec<(String, std::result::Result<Value, String>)>,
    strategy: Strategy,
) -> Result<Report> {
    let mut report = Report::default();
    let mut batch = Batch::open(project, base)?;
    // The entry ids and duplicate keys of what this import created so far.
    let mut this_import: std::collections::HashSet<String> = std::collections::HashSet::new();
    // Record id -> the project's entry it became or met, for the related_entries of later
    // records: an imported entry's id is derived anew, so a reference to the record's id would
    // name nothing in this project.
    let mut ids: HashMap<String, String> = HashMap::new();
    // Each outcome with the record's place in the input, to report them in input order.
    let mut done: Vec<(usize, Fate, Outcome)> = Vec::new();
    for (at, (source, value)) in related_first(records) {
        let value = match value {
            Ok(v) => v,
            Err(why) => {
                done.push((at, Fate::Rejected, outcome(&source, None, None, Some(why))));
                continue;
            }
        };
        let record_id = value.get("id").and_then(Value::as_str).map(str::to_owned);
        let rid = record_id.as_deref();
        match import_one(&mut batch, base, &value, strategy, &mut this_import, &ids) {
            Ok((fate, entry, reason)) => {
                if let (Some(rid), Some(entry)) = (rid, entry.as_deref()) {
                    ids.insert(rid.to_owned(), entry.to_owned());
                }
                done.push((at, fate, outcome(&source, rid, entry.as_deref(), reason)));
            }
            Err(e @ (Error::LockTimeout { .. } | Error::Io(_) | Error::CorruptLog { .. })) => {
                return Err(e);
            }
            Err(e) => done.push((
                at,
                Fate::Rejected,
                outcome(&source, rid, None, Some(reason_of(&e))),
            )),
        }
    }
    batch.finish()?;
    done.sort_by_key(|(at, _, _)| *at);
    for (_, fate, o) in done {
        match fate {
            Fate::Imported => report.imported.push(o),
            Fate::Merged => report.merged.push(o),
            Fate::Overwritten => report.overwritten.push(o),
            Fate::Skipped => report.skipped.push(o),
            Fate::Rejected => report.rejected.push(o),
        }
    }
    Ok(report)
}

/// A record of the input: where it is, and its JSON or why it is none.
type Record = (String, std::result::Result<Value, String>);

/// The records in an order where a record comes after those its `related_entries` name (in the
/// input's order otherwise; a cycle keeps it), so that the ids they got are known when it is
/// imported.
fn related_first(records: Vec<Record>) -> Vec<(usize, Record)> {
    let id_of = |r: &Record| {
        r.1.as_ref()
            .ok()
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let index: HashMap<String, usize> = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| id_of(r).map(|id| (id, i)))
        .collect();
    let related: Vec<Vec<usize>> = records
        .iter()
        .map(|r| {
            r.1.as_ref()
                .ok()
                .and_then(|v| v.get("related_entries"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|id| id.as_str().and_then(|id| index.get(id)).copied())
                .collect()
        })
        .collect();
    let order = crate::git::parents_first::dependencies_first(&related);
    let mut slots: Vec<Option<_>> = records.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|i| slots[i].take().map(|r| (i, r)))
        .collect()
}

enum Fate {
    Imported,
    Merged,
    Overwritten,
    Skipped,
    Rejected,
}

fn import_one(
    batch: &mut Batch<'_>,
    base: &WriteContext,
    value: &Value,
    strategy: Strategy,
    this_import: &mut std::collections::HashSet<String>,
    ids: &HashMap<String, String>,
) -> Result<(Fate, Option<String>, Option<String>)> {
    // A record refused by the schema checks logs the secrets they found, as the write policy
    // logs those it finds.
    let (project, wctx) = batch.context();
    let refused = |e| crate::log::writer::refused(project, wctx, "import", e);
    let mut input = entry_input_from_json(value, "").map_err(refused)?;
    if let Some(related) = input.related_entries.as_mut() {
        let mut imported = false;
        for id in related.iter_mut() {
            if let Some(new) = ids.get(id.as_str()) {
                imported = true;
                new.clone_into(id);
            }
        }
        // The write policy looks related entries up in the store: what this import staged
        // must be there, whether or not the entry kept the record's id.
        if imported {
            batch.flush()?;
        }
    }
    let status = input.status.clone().unwrap_or_else(|| "active".into());
    if status == Status::Superseded.as_str() {
        return Ok((
            Fate::Skipped,
            None,
            Some(format!(
                "superseded by {}: replaced entries are history, which Memory_Entry records do \
                 not carry; export and import with --format events to keep it",
                value
                    .get("superseded_by")
                    .and_then(Value::as_str)
                    .unwrap_or("another entry")
            )),
        ));
    }
    let deprecated = status == Status::Deprecated.as_str();
    if deprecated {
        // Created as the entry must have been: a draft when it has no evidence (an active
        // entry needs some), active otherwise.
        let no_evidence = input.evidence.as_ref().is_none_or(Vec::is_empty);
        let created = if no_evidence {
            Status::Draft
        } else {
            Status::Active
        };
        input.status = Some(created.as_str().into());
    }
    let (fields, create_status) = check_create(&input).map_err(refused)?;
    let ctx = provenance(value, base);
    let derived = Event::build(
        "",
        &ctx.actor,
        &ctx.at,
        Vec::new(),
        EventData::Create {
            fields: fields.clone(),
            status: create_status,
        },
    )?
    .entry;
    if this_import.contains(&derived) {
        return Ok((
            Fate::Skipped,
            Some(derived),
            Some("the same record appears earlier in the input".into()),
        ));
    }
    let record_id = value.get("id").and_then(Value::as_str);
    let mut existing: Option<EntryState> = None;
    for id in record_id.into_iter().chain([derived.as_str()]) {
        if projections::event::is_entry_id(id)
            && let Some(s) = batch.session().store().entry(id)?
        {
            existing = Some(s);
            break;
        }
    }
    // The same entry under another id: an active entry with the record's subject, scope and
    // summary (the write policy's duplicate) is the record's entry too.
    let key = crate::store::duplicate_key(&fields);
    if existing.is_none() && create_status == Status::Active {
        if this_import.contains(&key) {
            batch.flush()?;
        }
        let store = batch.session().store();
        for other in store.ids_with("duplicate", &key)? {
            if let Some(s) = store.entry(&other)?
                && s.status == Status::Active
                && s.fields.subject == fields.subject
                && s.fields.scope == fields.scope
                && s.fields.summary == fields.summary
            {
                existing = Some(s);
                break;
            }
        }
    }
    let Some(existing) = existing else {
        // The create is built here with the record's creator and time, then passes the write
        // policy like any create (schema, evidence, credentials, duplicates in the store).
        let create = Event::build(
            "",
            &ctx.actor,
            &ctx.at,
            Vec::new(),
            EventData::Create {
                fields,
                status: create_status,
            },
        )?;
        let created = create.id.clone();
        batch.stage_foreign(create, None)?;
        this_import.insert(derived.clone());
        this_import.insert(key);
        if deprecated {
            let mut at = ctx.at.clone();
            if let Some(t) = value.get("updated_at").and_then(Value::as_str)
                && let Ok(t) = crate::clock::normalize_time(t)
                && t > at
            {
                at = t;
            }
            let deprecate = Event::build(
                &derived,
                &ctx.actor,
                &at,
                vec![created],
                EventData::Deprecate {
                    reason: Some("imported as deprecated".into()),
                },
            )?;
            batch.stage_foreign(deprecate, None)?;
        }
        return Ok((Fate::Imported, Some(derived), None));
    };
    let id = existing.id.clone();
    this_import.insert(derived);
    if strategy == Strategy::Skip {
        return Ok((
            Fate::Skipped,
            Some(id.clone()),
            Some(format!("the project already holds {id} (strategy skip)")),
        ));
    }
    // What this batch staged for the entry must be in the store before it is read again.
    batch.flush()?;
    let existing = batch.session().store().entry(&id)?.unwrap_or(existing);
    let (fate, target_fields) = if strategy == Strategy::Overwrite {
        (Fate::Overwritten, fields.clone())
    } else {
        (Fate::Merged, merged(&existing.fields, &fields))
    };
    let set = check_patch(&EntryInput::of(&target_fields, None), &existing.fields)?;
    let mut changed = false;
    if !set.is_empty() && existing.fields != target_fields {
        let change = Change::Update {
            target: id.clone(),
            set,
            reason: Some(format!("import ({})", strategy_name(strategy))),
        };
        batch.stage(change.clone(), |_, _| Ok(change))?;
        changed = true;
    }
    if strategy == Strategy::Overwrite && deprecated && existing.status == Status::Active {
        batch.flush()?;
        let change = Change::Deprecate {
            target: id.clone(),
            reason: Some("import (overwrite): deprecated".into()),
        };
        batch.stage(change.clone(), |_, _| Ok(change))?;
        changed = true;
    }
    if changed {
        Ok((fate, Some(id), None))
    } else {
        Ok((
            Fate::Skipped,
            Some(id.clone()),
            Some(format!("{id} already holds these values")),
        ))
    }
}

fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Skip => "skip",
        Strategy::Overwrite => "overwrite",
        Strategy::Merge => "merge",
    }
}

/// Imports raw events, unchanged (lossless), through the write policy. Events the log holds are
/// skipped; an event of an entry whose creation was rejected, or that descends from a rejected
/// event, is rejected with it; so is one whose entry's create or whose parents are neither in
/// the log nor accepted from the input (it would be an orphan that `verify` refuses).
///
/// # Errors
/// Only when the project cannot be written at all.
pub fn import_events(
    project: &Project,
    ctx: &WriteContext,
    events: Vec<(String, InputEvent)>,
) -> Result<Report> {
    let mut report = Report::default();
    let mut batch = Batch::open(project, ctx)?;
    let mut refused: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    // Where each input was, for a report in input order (`source` as `outcome` redacts it).
    let position: std::collections::HashMap<String, usize> = events
        .iter()
        .enumerate()
        .map(|(i, (source, _))| (crate::policy::validate::redact_secrets(source), i))
        .collect();
    let mut ordered: Vec<(String, (Event, String))> = Vec::new();
    for (source, e) in events {
        match e {
            Ok(e) => ordered.push((source, e)),
            Err(why) => report
                .rejected
                .push(outcome(&source, None, None, Some(why))),
        }
    }
    // An event after its parents and its entry's create, so that a refused one takes the
    // events that descend from it with it: nothing orphaned reaches the log.
    let ordered = crate::git::parents_first::parents_first(ordered, |(_, (e, _))| e);
    // A tombstone is copied as its line, when a purge of the input or the project vouches for
    // it; else it is rejected, and what descends from it with it.
    let pairs: Vec<(&Event, &str)> = ordered.iter().map(|(_, (e, l))| (e, l.as_str())).collect();
    let unvouched =
        crate::log::tombstones::unvouched(&pairs, |p| batch.session().store().stored_event(p))?;
    let mut refused_events: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (source, (event, line)) in ordered {
        let id = event.id.clone();
        let refused_entry = event.entries().find(|x| refused.contains(*x));
        let refused_parent = event.parents.iter().find(|p| refused_events.contains(*p));
        if let Some(why) = refused_entry
            .map(|entry| format!("the creation of entry {entry} was rejected"))
            .or_else(|| refused_parent.map(|p| format!("its parent {p} was rejected")))
            .or_else(|| unvouched.get(&id).cloned())
        {
            let entry = refused_entry.unwrap_or(&event.entry);
            report
                .rejected
                .push(outcome(&source, Some(&id), Some(entry), Some(why)));
            refused_events.insert(id);
            continue;
        }
        let creates = event.created_entry().map(str::to_owned);
        let entry = creates.clone().unwrap_or_else(|| event.entry.clone());
        match batch.stage_foreign(event, Some(line)) {
            Ok(Some(_)) => report
                .imported
                .push(outcome(&source, Some(&id), Some(&entry), None)),
            Ok(None) => report.skipped.push(outcome(
                &source,
                Some(&id),
                Some(&entry),
                Some("the log already holds this event".into()),
            )),
            Err(e @ (Error::LockTimeout { .. } | Error::Io(_) | Error::CorruptLog { .. })) => {
                return Err(e);
            }
            Err(e) => {
                if let Some(c) = creates {
                    refused.insert(c);
                }
                refused_events.insert(id.clone());
                report.rejected.push(outcome(
                    &source,
                    Some(&id),
                    Some(&entry),
                    Some(reason_of(&e)),
                ));
            }
        }
    }
    batch.finish()?;
    // Applied creations first, reported in the order of the input.
    for list in [
        &mut report.imported,
        &mut report.skipped,
        &mut report.rejected,
    ] {
        list.sort_by_key(|o| position.get(&o.source).copied().unwrap_or(usize::MAX));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use crate::git::export::record;
    use crate::policy::validate::{check_create, entry_input_from_json};
    use projections::{Event, EventData, Status, fold_entry};
    use proptest::prelude::*;

    fn input(
        section: usize,
        kind: usize,
        text: &str,
        tags: &[String],
        confidence: f64,
        dated: bool,
    ) -> serde_json::Value {
        let sections = ["decisions", "observations", "learnings"];
        let kinds = ["decision", "incident", "metric", "other"];
        let mut v = serde_json::json!({
            "section": sections[section % sections.len()],
            "kind": kinds[kind % kinds.len()],
            "subject": format!("s.{text}"),
            "scope": "repo",
            "summary": format!("Summary {text}"),
            "content": format!("Content {text}\nsecond line"),
            "tags": tags,
            "confidence": confidence,
            "evidence": [{"type": "code", "uri": "src/a.rs#L1-L2", "note": text}],
        });
        if dated {
            v["valid_to"] = serde_json::json!("2027-01-01T00:00:00.000Z");
        }
        v
    }

    proptest! {
        /// Property 34 at the record level: an entry's Memory_Entry record, read back as an
        /// import reads it, gives the same fields and status.
        #[test]
        fn a_record_reads_back_to_the_same_fields(
            section in 0usize..3,
            kind in 0usize..4,
            text in "[a-z]{1,12}",
            tags in prop::collection::vec("[a-z]{1,6}", 0..4),
            confidence in 0.0f64..=1.0,
            dated in any::<bool>(),
        ) {
            let raw = input(section, kind, &text, &tags, confidence, dated);
            let parsed = entry_input_from_json(&raw, "").map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (fields, status) = check_create(&parsed).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let event = Event::build("", "agent", "2026-11-22T10:00:00.000Z", Vec::new(), EventData::Create { fields: fields.clone(), status })
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let state = fold_entry(&[event]).state.ok_or_else(|| TestCaseError::fail("no state"))?;
            let rec = serde_json::Value::Object(record(&state));
            let back = entry_input_from_json(&rec, "").map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (again, again_status) = check_create(&back).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(again, fields);
            prop_assert_eq!(again_status, status);
            prop_assert_eq!(status, Status::Active);
        }
    }

    #[test]
    fn merge_prefers_the_higher_confidence_and_unites_evidence_and_tags() {
        let base = input(0, 0, "a", &["x".into()], 0.6, false);
        let (mut low, _) = check_create(&entry_input_from_json(&base, "").unwrap_or_default())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut high = low.clone();
        high.confidence = 0.9;
        high.summary = "Better".into();
        high.tags = vec!["y".into(), "x".into()];
        high.evidence[0].uri = "src/b.rs#L1-L2".into();
        let m = super::merged(&low, &high);
        assert_eq!((m.confidence, m.summary.as_str()), (0.9, "Better"));
        assert_eq!(m.tags, ["x", "y"]);
        assert_eq!(m.evidence.len(), 2);
        low.confidence = 0.95;
        let m = super::merged(&low, &high);
        assert_eq!((m.confidence, m.summary.as_str()), (0.95, "Summary a"));
    }
}
