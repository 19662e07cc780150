//! Archive and restore. Archived entries live in the store's cold keyspace, out of the active
//! and text indexes; reading one (`memlog show`) restores it with an `archived -> active`
//! transition, which the audit shows.

use crate::error::Result;
use crate::project::Project;
use crate::store::Store;
use crate::writer::{Change, WriteContext, Written, write};
use projections::{EntryState, Lifecycle};

/// The reason recorded when a read restores an entry.
pub fn restore_reason(via: &str) -> String {
    format!("restored: read by `memlog {via}` while archived")
}

/// Restores `state` if it is archived (and not purged): appends `archived -> active`.
///
/// # Errors
/// As [`write`].
pub fn restore_if_archived(
    project: &Project,
    ctx: &WriteContext,
    state: &EntryState,
    via: &str,
) -> Result<Option<Written>> {
    if state.lifecycle != Lifecycle::Archived || state.purged {
        return Ok(None);
    }
    let change = Change::Transition {
        target: state.id.clone(),
        from: Lifecycle::Archived,
        to: Lifecycle::Active,
        reason: restore_reason(via),
    };
    write(project, ctx, change.clone(), |_, _| Ok(change)).map(Some)
}

/// One page of archived entries (by id), and how many there are in all.
///
/// # Errors
/// When the store cannot be read.
pub fn archived_page(
    store: &Store,
    offset: usize,
    limit: usize,
) -> Result<(Vec<EntryState>, usize)> {
    store.cold_entries(offset, limit, |s| {
        s.lifecycle == Lifecycle::Archived && !s.purged
    })
}

/// Archived entries that pass `keep`, in id order: the separate retrieval path by which a query
/// can include archived entries (they are in no index).
///
/// # Errors
/// When the store cannot be read.
pub fn archived_matching(
    store: &Store,
    keep: impl Fn(&EntryState) -> bool,
) -> Result<Vec<EntryState>> {
    Ok(store
        .cold_entries(0, usize::MAX, |s| {
            s.lifecycle == Lifecycle::Archived && !s.purged && keep(s)
        })?
        .0)
}
