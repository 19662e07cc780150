//! Namespaces: a project forked into an independent one, and a project merged into another.
//!
//! A fork starts as a copy of the log: the same events, so the two namespaces share their
//! history up to the fork and evolve independently after it. Merging one into another is the
//! union of their events, as a git merge of two branches is: concurrent changes to an entry
//! both hold show as a conflict, and nothing is lost. Entries created independently on both
//! sides with the same subject, scope and summary are duplicates: the more relevant one stays,
//! the other is deprecated, naming it.

use crate::error::{Error, Result};
use crate::log::writer::{Batch, Change, WriteContext};
use crate::project::{Project, ProjectConfig};
use crate::workspace::{ProjectName, Workspace};
use projections::{EntryState, Status};
use serde::Serialize;
use std::cmp::Ordering;

/// What a fork did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Forked {
    pub from: String,
    pub project: String,
    pub events: usize,
}

/// Creates project `new` with `from`'s configuration and events.
///
/// # Errors
/// When `new` already exists (nothing is changed) or a file cannot be written.
pub fn fork(ws: &Workspace, from: &Project, new: &ProjectName, now: &str) -> Result<Forked> {
    let dir = ws.project_dir(new);
    if from.name == *new {
        return Err(Error::Usage(format!(
            "fork {new} {new}: a fork needs a new name for the copy"
        )));
    }
    if dir.exists() {
        return Err(Error::Rejected {
            message: format!(
                "project `{new}` already exists at {}: fork into a new name, or merge into it \
                 with `memlog merge-project {} {new}`",
                dir.display(),
                from.name
            ),
        });
    }
    // Hold the source's write lock so that the copy is a whole number of events.
    let _lock = crate::log::lock::FileLock::acquire(
        &from.write_lock_path(),
        "write",
        std::time::Duration::from_secs(10),
    )?;
    let log = crate::log::read::read_complete(&from.log_path(), 0)?;
    // Every line verified (a tombstone vouched for) before it is copied: a damaged log is not
    // forked into a second one.
    let events = crate::git::as_of::all_events(from)?.len();
    let config = from.config()?;
    crate::project::init(ws, new, now)?;
    let target = Project::new(ws, new.clone());
    let copied = ProjectConfig {
        name: new.to_string(),
        created_at: now.to_owned(),
        ..config
    };
    let mut text = serde_json::to_string_pretty(&copied).map_err(|e| Error::Rejected {
        message: e.to_string(),
    })?;
    text.push('\n');
    crate::log::durable::write_atomic(&target.config_path(), text.as_bytes())?;
    crate::log::durable::write_atomic(&target.log_path(), &log)?;
    Ok(Forked {
        from: from.name.to_string(),
        project: new.to_string(),
        events,
    })
}

/// One duplicate pair settled by a merge.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Settled {
    pub kept: String,
    pub deprecated: String,
}

/// What a merge did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct MergedProject {
    /// Events of the source the target lacked, now in the target.
    pub added: usize,
    /// Events the target already held.
    pub already: usize,
    /// Events the write policy refused, with the reason.
    pub rejected: Vec<(String, String)>,
    /// Duplicates settled: the more relevant entry kept, the other deprecated.
    pub duplicates: Vec<Settled>,
    /// Entries left in conflict by the merge (see `memlog conflicts`).
    pub conflicts: Vec<String>,
}

/// Relevance of an entry among duplicates: confidence, then the best evidence, then the most
/// recent change, then the id (so the choice is deterministic).
pub fn relevance(a: &EntryState, b: &EntryState) -> Ordering {
    let best = |s: &EntryState| {
        s.fields
            .evidence
            .iter()
            .map(|e| e.kind.quality())
            .fold(0.0_f64, f64::max)
    };
    a.fields
        .confidence
        .total_cmp(&b.fields.confidence)
        .then(best(a).total_cmp(&best(b)))
        .then(a.updated_at.cmp(&b.updated_at))
        .then(b.id.cmp(&a.id))
}

/// Adds `from`'s events to `into` (each through the write policy, unchanged), then settles
/// the duplicates the merge made.
///
/// # Errors
/// When `into` cannot be written (a lock, I/O) or `from`'s log is corrupt.
pub fn merge(from: &Project, into: &Project, ctx: &WriteContext) -> Result<MergedProject> {
    if from.name == into.name {
        return Err(Error::Usage(format!(
            "merge-project needs two different projects (both are `{}`)",
            from.name
        )));
    }
    let events = crate::git::as_of::all_events(from)?;
    // An event after its parents and its entry's create, so that a refused creation takes its
    // entry's other events with it.
    let events = crate::git::parents_first::parents_first(events, |(e, _)| e);
    let mut out = MergedProject::default();
    let mut created = Vec::new();
    let mut refused = std::collections::BTreeSet::new();
    let mut batch = Batch::open(into, ctx)?;
    // A tombstone is copied as its line, when a purge of the project vouches for it.
    let pairs: Vec<(&projections::Event, &str)> =
        events.iter().map(|(e, l)| (e, l.as_str())).collect();
    let unvouched =
        crate::log::tombstones::unvouched(&pairs, |p| batch.session().store().stored_event(p))?;
    let mut seen = std::collections::HashSet::new();
    for (event, line) in events {
        if !seen.insert(event.id.clone()) {
            continue;
        }
        let id = event.id.clone();
        if let Some(entry) = event.entries().find(|x| refused.contains(*x)) {
            out.rejected
                .push((id, format!("the creation of entry {entry} was rejected")));
            continue;
        }
        let creates = event.created_entry().map(str::to_owned);
        if let Some(why) = unvouched.get(&id) {
            refused.extend(creates);
            out.rejected.push((id, why.clone()));
            continue;
        }
        match batch.stage_foreign_with(event, Some(line), true) {
            Ok(Some(_)) => {
                out.added += 1;
                created.extend(creates);
            }
            Ok(None) => out.already += 1,
            Err(e @ (Error::LockTimeout { .. } | Error::Io(_) | Error::CorruptLog { .. })) => {
                return Err(e);
            }
            Err(e) => {
                refused.extend(creates);
                out.rejected
                    .push((id, crate::policy::validate::redact_secrets(&e.to_string())));
            }
        }
    }
    batch.finish()?;

    // Duplicates: a created entry beside an active one with the same subject, scope, summary.
    let mut pairs: Vec<(EntryState, EntryState)> = Vec::new();
    {
        let session = crate::store::session::Session::open(into, ctx.lock_timeout)?;
        let store = session.store();
        for id in &created {
            let Some(s) = store.entry(id)? else { continue };
            if s.status != Status::Active {
                continue;
            }
            // Archived entries too: a read restores one as it is, beside the copy.
            let key = crate::store::duplicate_key(&s.fields);
            let mut others = store.ids_with("duplicate", &key)?;
            others.extend(store.ids_with("duplicate_archived", &key)?);
            for other in others {
                if other == *id || pairs.iter().any(|(a, b)| a.id == other && b.id == *id) {
                    continue;
                }
                if let Some(o) = store.entry(&other)?
                    && o.status == Status::Active
                    && o.fields.scope == s.fields.scope
                    && o.fields.summary == s.fields.summary
                    && o.fields.subject == s.fields.subject
                {
                    pairs.push((s.clone(), o));
                }
            }
        }
        // Every entry in conflict, archived and purged ones too, as `memlog conflicts` lists.
        out.conflicts = super::conflicts::list(store, || {
            let events: Vec<projections::Event> = super::as_of::all_events(into)?
                .into_iter()
                .map(|(e, _)| e)
                .collect();
            Ok(super::conflicts::in_conflict(&events))
        })?
        .into_iter()
        .map(|c| c.entry)
        .collect();
    }
    let mut done: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for (a, b) in pairs {
        if done.contains(&a.id) || done.contains(&b.id) {
            continue;
        }
        let (kept, lost) = if relevance(&a, &b) == Ordering::Greater {
            (a, b)
        } else {
            (b, a)
        };
        let change = Change::Deprecate {
            target: lost.id.clone(),
            reason: Some(format!(
                "merged from project {}: duplicate of {}, which is more relevant",
                from.name, kept.id
            )),
        };
        crate::log::writer::write(into, ctx, change.clone(), |_, _| Ok(change))?;
        done.insert(lost.id.clone());
        out.duplicates.push(Settled {
            kept: kept.id,
            deprecated: lost.id,
        });
    }
    Ok(out)
}
