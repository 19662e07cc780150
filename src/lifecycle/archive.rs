//! Archive and restore. Archived entries live in the store's cold keyspace, out of the active
//! and text indexes; reading one (`memlog show`) or updating one restores it with an
//! `archived -> active` transition, which the audit shows.

use crate::error::Result;
use crate::log::writer::{Change, WriteContext, Written, write};
use crate::project::Project;
use crate::store::Store;
use projections::{EntryState, Lifecycle};

/// The reason recorded when a read restores an entry.
pub fn restore_reason(via: &str) -> String {
    format!("restored: read by `memlog {via}` while archived")
}

/// The reason recorded when an update restores an archived entry (see [`restored_by_update`]).
pub const UPDATE_RESTORE_REASON: &str = "restored: updated while archived";

/// Whether an update of `state` restores it: an update is a use of the entry, as a read is,
/// and `update --valid-to` is how a `state` entry archived past its `valid_to` is renewed
/// (docs/LIFECYCLE.md, section 11); left archived, the renewed entry would stay out of every
/// answer. The writer appends the `archived -> active` transition with the update, in the
/// same write.
pub fn restored_by_update(state: &EntryState) -> bool {
    state.lifecycle == Lifecycle::Archived && !state.purged
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

/// One page of the cold entries in storage state `state` (`archived`, `expired` or `purged`),
/// by id, and how many there are in all. Reads the cold index and the entries of the page only.
///
/// # Errors
/// When the store cannot be read.
pub fn cold_page(
    store: &Store,
    state: &str,
    offset: usize,
    limit: usize,
) -> Result<(Vec<EntryState>, usize)> {
    let ids = store.cold_ids(state)?;
    let page: Vec<&str> = ids
        .iter()
        .skip(offset)
        .take(limit)
        .map(String::as_str)
        .collect();
    Ok((store.cold_entries_by_id(&page)?, ids.len()))
}

/// Archived entries that pass `keep`, in id order: the separate retrieval path by which a query
/// can include archived entries (they are in no text index). Reads the archived entries only.
///
/// # Errors
/// When the store cannot be read.
pub fn archived_matching(
    store: &Store,
    keep: impl Fn(&EntryState) -> bool,
) -> Result<Vec<EntryState>> {
    let ids = store.cold_ids(Lifecycle::Archived.as_str())?;
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    Ok(store
        .cold_entries_by_id(&refs)?
        .into_iter()
        .filter(|s| keep(s))
        .collect())
}
