//! Writing events: validate first, then append under the write lock with the entry's current
//! heads as parents, then bring the projections up to date.

use crate::durable;
use crate::error::{Error, Result};
use crate::lock::FileLock;
use crate::project::Project;
use crate::session::Session;
use projections::{EntryFields, EntryState, Event, EventData, Status};
use serde::Serialize;
use serde_json::{Map, Value};
use std::time::Duration;

/// Who writes, when, and how long to wait for locks.
#[derive(Debug, Clone)]
pub struct WriteContext {
    pub actor: String,
    pub at: String,
    pub lock_timeout: Duration,
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
    project.ensure_state_dir()?;
    let mut session = match Session::open(project, ctx.lock_timeout) {
        Ok(s) => s,
        Err(Error::LockTimeout { .. }) if change.target().is_none() => {
            // The store is busy; a create needs nothing from it. Append, and let the next
            // reader catch up.
            return write_without_store(project, ctx, change);
        }
        Err(e) => return Err(e),
    };
    let target = change.target().map(|t| session.resolve(t)).transpose()?;
    let change = retarget(change, target.as_deref());
    let write_lock = FileLock::acquire(&project.write_lock_path(), "write", ctx.lock_timeout)?;
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
    let heads = state.as_ref().map(|s| s.heads.clone()).unwrap_or_default();
    let (events, id, superseded) = build_events(change, heads, ctx)?;
    append(project, &events)?;
    drop(write_lock);
    session.catch_up()?;
    Ok(Written {
        entry: session.store().entry(&id)?,
        id,
        superseded,
        events: events.into_iter().map(|e| e.id).collect(),
    })
}

fn write_without_store(project: &Project, ctx: &WriteContext, change: Change) -> Result<Written> {
    let (events, id, superseded) = build_events(change, Vec::new(), ctx)?;
    let _lock = FileLock::acquire(&project.write_lock_path(), "write", ctx.lock_timeout)?;
    append(project, &events)?;
    Ok(Written {
        id,
        superseded,
        events: events.into_iter().map(|e| e.id).collect(),
        entry: None,
    })
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
