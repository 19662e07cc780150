//! Writing events: validate first, then append under the write lock with the entry's current
//! heads as parents, then bring the projections up to date.

use crate::durable;
use crate::error::{Error, Result};
use crate::lock::FileLock;
use crate::policy::{Policy, Warning, log_detections};
use crate::project::Project;
use crate::session::Session;
use crate::store::Store;
use crate::validate::Invalid;
use projections::{EntryFields, EntryState, Event, EventData, Status};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::time::Duration;

/// Who writes, when, and how long to wait for locks.
#[derive(Debug, Clone)]
pub struct WriteContext {
    pub actor: String,
    pub at: String,
    pub lock_timeout: Duration,
    /// Check everything, write nothing (`memlog validate`).
    pub dry_run: bool,
}

/// A change to make, already validated.
#[derive(Debug, Clone)]
pub enum Change {
    /// A new entry.
    Create { fields: EntryFields, status: Status },
    /// A replacement entry for `target`, which becomes superseded.
    Supersede {
        target: String,
        fields: EntryFields,
        status: Status,
        reason: Option<String>,
    },
    /// `target` becomes deprecated.
    Deprecate {
        target: String,
        reason: Option<String>,
    },
    /// New field values for `target` (built from the current state by the closure's caller).
    Update {
        target: String,
        set: Map<String, Value>,
        reason: Option<String>,
    },
    /// Pin `target`.
    Pin {
        target: String,
        reason: Option<String>,
    },
    /// Unpin `target`.
    Unpin {
        target: String,
        reason: Option<String>,
    },
    /// Clear a conflict on `target`: the event's parents are all its heads; `set` picks values.
    Resolve {
        target: String,
        set: Map<String, Value>,
        reason: Option<String>,
    },
}

impl Change {
    fn target(&self) -> Option<&str> {
        match self {
            Self::Create { .. } => None,
            Self::Supersede { target, .. }
            | Self::Deprecate { target, .. }
            | Self::Update { target, .. }
            | Self::Pin { target, .. }
            | Self::Unpin { target, .. }
            | Self::Resolve { target, .. } => Some(target),
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// The entry created or changed (for supersede: the replacement).
    pub id: String,
    /// For supersede: the entry that was superseded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded: Option<String>,
    /// Ids of the events appended, in order.
    pub events: Vec<String>,
    /// The entry after the write, when the projections could be updated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryState>,
    /// Policy warnings: reported, not blocking.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Warning>,
    /// A torn tail set aside when the store was opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quarantined: Option<crate::session::QuarantineNote>,
}

/// Refuses changes that make no sense for the target's current state.
fn precondition(change: &Change, state: &EntryState) -> Result<()> {
    let refuse = |message: String| Err(Error::Rejected { message });
    match change {
        Change::Supersede { .. } if state.status == Status::Superseded => refuse(format!(
            "{} is already superseded by {}; supersede that entry instead",
            state.id,
            state.superseded_by.as_deref().unwrap_or("another entry")
        )),
        Change::Deprecate { .. } if state.status == Status::Deprecated => {
            refuse(format!("{} is already deprecated", state.id))
        }
        Change::Deprecate { .. } if state.status == Status::Superseded => refuse(format!(
            "{} is superseded by {}; deprecate that entry instead",
            state.id,
            state.superseded_by.as_deref().unwrap_or("another entry")
        )),
        Change::Resolve { .. } if !state.in_conflict() => refuse(format!(
            "{} has no conflict to resolve (one head)",
            state.id
        )),
        Change::Pin { .. } if state.pinned => refuse(format!("{} is already pinned", state.id)),
        Change::Unpin { .. } if !state.pinned => refuse(format!("{} is not pinned", state.id)),
        _ if state.purged => refuse(format!(
            "{} was purged; its content is gone and it cannot change",
            state.id
        )),
        _ => Ok(()),
    }
}

fn build_events(
    change: Change,
    heads: Vec<String>,
    ctx: &WriteContext,
) -> Result<(Vec<Event>, String, Option<String>)> {
    let event = |entry: &str, parents: Vec<String>, data| {
        Event::build(entry, &ctx.actor, &ctx.at, parents, data)
    };
    Ok(match change {
        Change::Create { fields, status } => {
            let e = event("", Vec::new(), EventData::Create { fields, status })?;
            let id = e.entry.clone();
            (vec![e], id, None)
        }
        Change::Supersede {
            target,
            fields,
            status,
            reason,
        } => {
            let create = event("", Vec::new(), EventData::Create { fields, status })?;
            let by = create.entry.clone();
            let sup = event(
                &target,
                heads,
                EventData::Supersede {
                    by: by.clone(),
                    reason,
                    replacement: None,
                },
            )?;
            (vec![create, sup], by, Some(target))
        }
        Change::Deprecate { target, reason } => (
            vec![event(&target, heads, EventData::Deprecate { reason })?],
            target,
            None,
        ),
        Change::Update {
            target,
            set,
            reason,
        } => (
            vec![event(&target, heads, EventData::Update { set, reason })?],
            target,
            None,
        ),
        Change::Pin { target, reason } => (
            vec![event(&target, heads, EventData::Pin { reason })?],
            target,
            None,
        ),
        Change::Unpin { target, reason } => (
            vec![event(&target, heads, EventData::Unpin { reason })?],
            target,
            None,
        ),
        Change::Resolve {
            target,
            set,
            reason,
        } => (
            vec![event(&target, heads, EventData::Resolve { set, reason })?],
            target,
            None,
        ),
    })
}

/// Appends events as whole lines, after setting aside a torn tail. The caller holds the write lock.
fn append(project: &Project, events: &[Event]) -> Result<()> {
    durable::quarantine_torn_tail(&project.log_path(), &project.quarantine_path())?;
    let mut bytes = Vec::new();
    for e in events {
        bytes.extend_from_slice(e.to_line()?.as_bytes());
        bytes.push(b'\n');
    }
    durable::append(&project.log_path(), &bytes)
}

/// Validated change → events in the log → projections updated.
///
/// `check` runs with the caught-up session and the target's current state (if any) before
/// anything is written, so it can refuse based on what the store holds (duplicates, existence).
///
/// # Errors
/// Lock timeouts, rejected preconditions, I/O and store errors.
pub fn write(
    project: &Project,
    ctx: &WriteContext,
    change: Change,
    check: impl FnOnce(&Session, Option<&EntryState>) -> Result<Change>,
) -> Result<Written> {
    if ctx.dry_run && !project.config_path().is_file() {
        // Validating against a project that does not exist yet: nothing to open, nothing to
        // create. Only the checks that need no store apply, and no target exists.
        return dry_run_without_store(project, ctx, change);
    }
    let policy = Policy::load(project)?;
    project.ensure_state_dir()?;
    let mut session = match Session::open(project, ctx.lock_timeout) {
        Ok(s) => s,
        Err(Error::LockTimeout { .. }) if change.target().is_none() => {
            // The store is busy; a create needs nothing from it. Append, and let the next
            // reader catch up.
            return write_without_store(project, ctx, &policy, change);
        }
        Err(e) => return Err(e),
    };
    let target = change.target().map(|t| session.resolve(t)).transpose()?;
    let change = retarget(change, target.as_deref());
    let write_lock = if ctx.dry_run {
        None
    } else {
        Some(FileLock::acquire(
            &project.write_lock_path(),
            "write",
            ctx.lock_timeout,
        )?)
    };
    session.catch_up()?;
    let state = match &target {
        Some(t) => Some(session.store().entry(t)?.ok_or_else(|| Error::NotFound {
            project: project.name.to_string(),
            prefix: t.clone(),
        })?),
        None => None,
    };
    if let Some(s) = &state {
        precondition(&change, s)?;
    }
    let change = check(&session, state.as_ref())?;
    let warnings = gate(
        project,
        ctx,
        &policy,
        Some(session.store()),
        &change,
        state.as_ref(),
    )?;
    let heads = match &state {
        Some(s) => parents_for(session.store(), &change, s)?,
        None => Vec::new(),
    };
    let (events, id, superseded) = build_events(change, heads, ctx)?;
    if ctx.dry_run {
        return Ok(unstored(events, id, superseded, warnings));
    }
    append(project, &events)?;
    drop(write_lock);
    session.catch_up()?;
    Ok(Written {
        entry: session.store().entry(&id)?,
        id,
        superseded,
        events: events.into_iter().map(|e| e.id).collect(),
        warnings,
        quarantined: session.report.quarantined.clone(),
    })
}

/// The parents of an event on `state`: all its heads for a resolve (which joins them), else
/// the latest head only, so that writing to an entry in conflict keeps the conflict visible
/// until someone resolves it.
fn parents_for(store: &Store, change: &Change, state: &EntryState) -> Result<Vec<String>> {
    if !state.in_conflict() || matches!(change, Change::Resolve { .. }) {
        return Ok(state.heads.clone());
    }
    let latest = store
        .entry_events(&state.id)?
        .into_iter()
        .filter(|e| state.heads.contains(&e.id))
        .max_by(|a, b| (&a.at, &a.id).cmp(&(&b.at, &b.id)))
        .map(|e| e.id);
    Ok(latest.map_or_else(|| state.heads.clone(), |h| vec![h]))
}

/// Runs the write policy on the change's final fields; rejected secrets are logged (without
/// their values) to the project's security log.
fn gate(
    project: &Project,
    ctx: &WriteContext,
    policy: &Policy,
    store: Option<&Store>,
    change: &Change,
    state: Option<&EntryState>,
) -> Result<Vec<Warning>> {
    let (verdict, operation) = match change {
        Change::Create { fields, status } => {
            (policy.check(store, fields, *status, None, None)?, "create")
        }
        Change::Supersede {
            target,
            fields,
            status,
            ..
        } => (
            policy.check(store, fields, *status, Some(target), None)?,
            "supersede",
        ),
        Change::Update { set, .. } | Change::Resolve { set, .. } => {
            let Some(state) = state else {
                return Ok(Vec::new());
            };
            let (fields, status) = projections::fold::apply_set(state, set)
                .map_err(|m| Error::Invalid(Invalid::one("set", "type", m)))?;
            let only: BTreeSet<String> = set.keys().cloned().collect();
            let status = status.unwrap_or(state.status);
            (
                policy.check(store, &fields, status, Some(&state.id), Some(&only))?,
                "update",
            )
        }
        Change::Deprecate { .. } | Change::Pin { .. } | Change::Unpin { .. } => {
            return Ok(Vec::new());
        }
    };
    verdict.into_result().or_else(|(invalid, detections)| {
        if !ctx.dry_run {
            log_detections(project, &ctx.at, &ctx.actor, operation, &detections)?;
        }
        Err(Error::Invalid(invalid))
    })
}

fn store_skipped() -> Warning {
    Warning {
        field: "entry".into(),
        rule: "store_busy",
        message: "the store was busy: duplicate and reference checks were skipped".into(),
    }
}

fn write_without_store(
    project: &Project,
    ctx: &WriteContext,
    policy: &Policy,
    change: Change,
) -> Result<Written> {
    let mut warnings = gate(project, ctx, policy, None, &change, None)?;
    warnings.push(store_skipped());
    let (events, id, superseded) = build_events(change, Vec::new(), ctx)?;
    if !ctx.dry_run {
        let _lock = FileLock::acquire(&project.write_lock_path(), "write", ctx.lock_timeout)?;
        append(project, &events)?;
    }
    Ok(unstored(events, id, superseded, warnings))
}

/// What a write did when the store was not consulted afterwards.
fn unstored(
    events: Vec<Event>,
    id: String,
    superseded: Option<String>,
    warnings: Vec<Warning>,
) -> Written {
    Written {
        id,
        superseded,
        events: events.into_iter().map(|e| e.id).collect(),
        entry: None,
        warnings,
        quarantined: None,
    }
}

fn dry_run_without_store(project: &Project, ctx: &WriteContext, change: Change) -> Result<Written> {
    if let Some(t) = change.target() {
        return Err(Error::NotFound {
            project: project.name.to_string(),
            prefix: t.to_owned(),
        });
    }
    let warnings = gate(project, ctx, &Policy::defaults(), None, &change, None)?;
    let (events, id, superseded) = build_events(change, Vec::new(), ctx)?;
    Ok(unstored(events, id, superseded, warnings))
}

fn retarget(change: Change, target: Option<&str>) -> Change {
    let Some(t) = target.map(str::to_owned) else {
        return change;
    };
    match change {
        Change::Create { .. } => change,
        Change::Supersede {
            fields,
            status,
            reason,
            ..
        } => Change::Supersede {
            target: t,
            fields,
            status,
            reason,
        },
        Change::Deprecate { reason, .. } => Change::Deprecate { target: t, reason },
        Change::Update { set, reason, .. } => Change::Update {
            target: t,
            set,
            reason,
        },
        Change::Pin { reason, .. } => Change::Pin { target: t, reason },
        Change::Unpin { reason, .. } => Change::Unpin { target: t, reason },
        Change::Resolve { set, reason, .. } => Change::Resolve {
            target: t,
            set,
            reason,
        },
    }
}
