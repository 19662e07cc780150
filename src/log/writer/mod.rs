//! Writing events: validate first, then append under the write lock with the entry's current
//! heads as parents, then bring the projections up to date.

use crate::error::{Error, Result};
use crate::log::durable;
use crate::log::lock::FileLock;
use crate::policy::validate::{Invalid, check_recorded_create, check_recorded_set};
use crate::policy::{Policy, Warning, log_detections};
use crate::project::Project;
use crate::store::Store;
use crate::store::session::Growth;
use crate::store::session::Session;
use projections::{EntryFields, EntryState, Event, EventData, Lifecycle, Status};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

mod foreign;

/// Who writes, when, and how long to wait for locks.
#[derive(Debug, Clone)]
pub struct WriteContext {
    pub actor: String,
    pub at: String,
    pub lock_timeout: Duration,
    /// Check everything, write nothing (`memlog validate`).
    pub dry_run: bool,
    /// Fault injection for tests: the projections fail right after the append.
    pub fail_after_append: bool,
    /// `at` is the machine's clock, read when the command began (not a time given with
    /// `--now`): a batch reads the clock again once it holds the write lock, so that a write
    /// that waited for another one to the same entry is not dated before it.
    pub clock: bool,
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
    /// Settle concurrent supersedes of `target`: each loser (a competing replacement, with its
    /// heads) is superseded by `winner`, then `target` is superseded by `winner` with all its
    /// heads as parents, which clears the conflict. `restore` holds the winner's heads when
    /// the winner is itself superseded by a competing replacement (two resolves that chose
    /// different winners on two branches, merged: each replacement superseded by the other):
    /// a resolve on the winner makes it active again, first.
    ResolveWinner {
        target: String,
        winner: String,
        losers: Vec<(String, Vec<String>)>,
        restore: Option<Vec<String>>,
        reason: Option<String>,
    },
    /// Clear a conflict on `target`: the event's parents are all its heads; `set` picks values.
    Resolve {
        target: String,
        set: Map<String, Value>,
        reason: Option<String>,
    },
    /// A lifecycle transition of `target`, which must be in state `from` (see
    /// `crate::lifecycle::machine` for the transitions allowed).
    Transition {
        target: String,
        from: projections::Lifecycle,
        to: projections::Lifecycle,
        reason: String,
    },
    /// Remove `target`'s content; `redacted` holds the tombstone digests of the events that
    /// carry it (`crate::lifecycle::purge::redactions`).
    Purge {
        target: String,
        reason: String,
        redacted: BTreeMap<String, String>,
    },
    /// The result of checking `target`'s evidence: the URIs found stale (none clears the flag).
    EvidenceChecked { target: String, stale: Vec<String> },
}

impl Change {
    fn reason(&self) -> Option<&str> {
        match self {
            Self::Create { .. } => None,
            Self::Supersede { reason, .. }
            | Self::Deprecate { reason, .. }
            | Self::Update { reason, .. }
            | Self::Pin { reason, .. }
            | Self::Unpin { reason, .. }
            | Self::Resolve { reason, .. }
            | Self::ResolveWinner { reason, .. } => reason.as_deref(),
            Self::Transition { reason, .. } | Self::Purge { reason, .. } => Some(reason),
            Self::EvidenceChecked { .. } => None,
        }
    }

    fn target(&self) -> Option<&str> {
        match self {
            Self::Create { .. } => None,
            Self::Supersede { target, .. }
            | Self::Deprecate { target, .. }
            | Self::Update { target, .. }
            | Self::Pin { target, .. }
            | Self::Unpin { target, .. }
            | Self::Resolve { target, .. }
            | Self::ResolveWinner { target, .. }
            | Self::Transition { target, .. }
            | Self::Purge { target, .. }
            | Self::EvidenceChecked { target, .. } => Some(target),
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
    pub quarantined: Option<crate::store::session::QuarantineNote>,
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
        Change::Update { set, .. } | Change::Resolve { set, .. }
            if state.status == Status::Superseded
                && set.get("status").and_then(Value::as_str) == Some("active") =>
        {
            refuse(format!(
                "{} is superseded by {}; a replaced entry cannot become active again beside its \
                 replacement: supersede {} instead",
                state.id,
                state.superseded_by.as_deref().unwrap_or("another entry"),
                state.superseded_by.as_deref().unwrap_or("that entry"),
            ))
        }
        Change::Resolve { .. } | Change::ResolveWinner { .. } if !state.in_conflict() => {
            refuse(if state.agreed {
                format!(
                    "{} has no conflict to resolve: its {} heads agree (the writers made the \
                     same change); the next change of the entry joins them",
                    state.id,
                    state.heads.len()
                )
            } else {
                format!("{} has no conflict to resolve (one head)", state.id)
            })
        }
        Change::Purge { redacted, .. } if state.purged && redacted.is_empty() => refuse(format!(
            "{} is already purged, and every event that carried its content is covered",
            state.id
        )),
        // Content of it written beside the purge came back with a merge: this purge covers it.
        Change::Purge { .. } if state.purged => Ok(()),
        // A conflict left by a write beside the purge is cleared without changing anything.
        Change::Resolve { set, .. } if state.purged && set.is_empty() => Ok(()),
        _ if state.purged => refuse(format!(
            "{} was purged; its content is gone and it cannot change",
            state.id
        )),
        Change::Pin { .. } if state.pinned => refuse(format!("{} is already pinned", state.id)),
        Change::Unpin { .. } if !state.pinned => refuse(format!("{} is not pinned", state.id)),
        Change::Transition { from, to, .. } if state.lifecycle != *from => refuse(format!(
            "{} is `{}`, not `{from}`: it changed since it was evaluated; run the command again \
             (lifecycle transition from `{from}` to `{to}` refused)",
            state.id, state.lifecycle
        )),
        Change::Transition { from, to, .. } if !crate::lifecycle::machine::is_valid(*from, *to) => {
            refuse(format!(
                "{}: {}",
                state.id,
                crate::lifecycle::machine::check(*from, *to)
                    .err()
                    .unwrap_or_default()
            ))
        }
        _ => Ok(()),
    }
}

/// Whether a change dated `at` comes before `latest`, the time of the latest event of the
/// entry it changes. Such a change is refused: the entry's history, and the audit that lists
/// it in time order, would show it before what it follows (a restore before the archival it
/// undoes). Equal times are in order: a script may run every command at one `--now`. Both are
/// event timestamps, whose fixed layout compares as text in time order (docs/EVENT_FORMAT.md,
/// section 6.2).
pub fn dated_before(at: &str, latest: &str) -> bool {
    at < latest
}

/// The time of the latest event of the entry in `state`: the latest of every event that
/// projects onto it (the supersede that created it included), not only of its heads, so that
/// a log already holding an event dated before its parent is judged by its real latest time.
///
/// # Errors
/// When the store cannot be read.
pub fn latest_event_at(store: &Store, state: &EntryState) -> Result<Option<String>> {
    Ok(store
        .entry_events(&state.id)?
        .into_iter()
        .map(|e| e.at)
        .max())
}

/// Refuses a change to the entry in `state` dated `at`, before the entry's latest event (see
/// [`dated_before`]): a clock that ran behind, or a `--now` left over from an earlier command.
fn refuse_backdated(store: &Store, state: &EntryState, at: &str) -> Result<()> {
    match latest_event_at(store, state)? {
        Some(latest) if dated_before(at, &latest) => Err(Error::Rejected {
            message: format!(
                "{id} has an event dated {latest}, after this change's time {at}: a change \
                 cannot be dated before the history it follows, and nothing was written; use a \
                 --now at or after {latest} (leaving --now and MEMLOG_NOW out dates a change by \
                 the clock, which works once the clock has passed that time)",
                id = state.id
            ),
        }),
        _ => Ok(()),
    }
}

/// The events of `change`, each with its log line.
type Lines = Vec<(Event, String)>;

/// The events of `change` by `actor` at `at`.
fn build_events(
    change: Change,
    heads: Vec<String>,
    (actor, at): (&str, &str),
) -> Result<(Lines, String, Option<String>)> {
    let event = |entry: &str, parents: Vec<String>, data| {
        Event::build_with_line(entry, actor, at, parents, data)
    };
    Ok(match change {
        Change::Create { fields, status } => {
            let e = event("", Vec::new(), EventData::Create { fields, status })?;
            let id = e.0.entry.clone();
            (vec![e], id, None)
        }
        Change::Supersede {
            target,
            fields,
            status,
            reason,
        } => {
            // One event: the replacement is created by the supersede itself, so a crash or a
            // torn tail keeps both or neither.
            let sup = event(
                &target,
                heads,
                EventData::Supersede {
                    by: String::new(),
                    reason,
                    replacement: Some(projections::Replacement { fields, status }),
                },
            )?;
            let by = sup.0.created_entry().unwrap_or_default().to_owned();
            (vec![sup], by, Some(target))
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
        Change::Transition {
            target, to, reason, ..
        } => (
            vec![event(&target, heads, EventData::Transition { to, reason })?],
            target,
            None,
        ),
        Change::Purge {
            target,
            reason,
            redacted,
        } => (
            vec![event(
                &target,
                heads,
                EventData::Purge { reason, redacted },
            )?],
            target,
            None,
        ),
        Change::EvidenceChecked { target, stale } => (
            vec![event(&target, heads, EventData::EvidenceChecked { stale })?],
            target,
            None,
        ),
        Change::ResolveWinner {
            target,
            winner,
            losers,
            restore,
            reason,
        } => {
            // Losers first: if the write is cut short, the conflict on `target` stays open and
            // visible, and running the resolve again finishes it.
            let mut events = Vec::new();
            if let Some(winner_heads) = restore {
                let mut set = Map::new();
                set.insert("status".into(), Value::from(Status::Active.as_str()));
                events.push(event(
                    &winner,
                    winner_heads,
                    EventData::Resolve {
                        set,
                        reason: Some(format!(
                            "won the concurrent supersedes of {target}; the other replacements \
                             are superseded by it"
                        )),
                    },
                )?);
            }
            for (loser, loser_heads) in losers {
                events.push(event(
                    &loser,
                    loser_heads,
                    EventData::Supersede {
                        by: winner.clone(),
                        reason: Some(format!(
                            "lost a concurrent supersede of {target} to {winner}"
                        )),
                        replacement: None,
                    },
                )?);
            }
            events.push(event(
                &target,
                heads,
                EventData::Supersede {
                    by: winner,
                    reason,
                    replacement: None,
                },
            )?);
            (events, target, None)
        }
    })
}

/// One command's writes: the store lock and the write lock held for the whole batch, every
/// change validated against the store and against the changes staged before it, then all their
/// events appended with one write and one fsync, and projected in one catch-up.
///
/// A change whose target an earlier staged change touched commits what is staged first, so its
/// checks see the real state. After the append, a failure to update the projections does not
/// undo the write: the writes are reported as done, with a warning, and the next reader catches
/// up.
pub struct Batch<'a> {
    project: &'a Project,
    ctx: &'a WriteContext,
    /// The time of the events this batch writes: `ctx.at`, or the clock read again under the
    /// write lock (see [`WriteContext::clock`]).
    at: String,
    policy: std::sync::Arc<Policy>,
    session: Session,
    _write_lock: Option<FileLock>,
    staged: Vec<Staged>,
    /// Entries created or targeted by staged changes. (Hashed: a bulk apply looks up every
    /// update in both, and ordered keys with long common prefixes were a tenth of its staging.)
    touched: rustc_hash::FxHashSet<String>,
    /// Subject, scope and summary of staged active creates, to refuse in-batch duplicates.
    staged_keys: rustc_hash::FxHashMap<(String, String, String), String>,
    /// Entries that changes of this batch deprecated or superseded: a later create may say
    /// again what one of them said (see [`Batch::see_retired`]).
    retired: rustc_hash::FxHashSet<String>,
    /// In a dry run (`validate`), which stages nothing: the lines of the events each change
    /// would have written, by entry, so that a later change of the input is checked against
    /// the entry as the earlier ones leave it (a deprecate of an entry created above), as
    /// `apply` checks it; at most [`DRY_EVENTS_KEPT`] of them.
    dry_events: rustc_hash::FxHashMap<String, Vec<String>>,
    dry_kept: usize,
    /// The many-entries warning is said once per batch.
    warned_size: bool,
    /// What earlier commits of this batch wrote.
    done: Committed,
    /// Appends not yet forced to disk.
    unsynced: Vec<durable::Unsynced>,
    /// Leave the sync of the last append to [`Batch::finish`], after the locks are released.
    sync_on_finish: bool,
    /// Appends the projections have not caught up with yet (see [`Batch::append`]).
    deferred: Option<Deferred>,
    /// The policy's verdict on the content of the create being staged, checked ahead of time
    /// (see [`Batch::stage_checked`]).
    prechecked: Option<crate::policy::Verdict>,
    /// The event of that create, built ahead of time too (see [`Batch::stage_checked`]).
    prebuilt: Option<(Event, String)>,
    /// Event ids and created entries of the foreign events this batch accepted (see
    /// [`Batch::stage_foreign`]), staged or already appended: what a later foreign event may
    /// name as a parent or an entry.
    foreign_events: std::collections::HashMap<String, Event>,
    foreign_entries: std::collections::HashSet<String>,
    /// The entries that take over from an entry by the foreign events this batch accepted (a
    /// supersede's `by`, a consolidation's `into`), to refuse a cycle of them.
    foreign_successors: std::collections::HashMap<String, Vec<String>>,
}

/// Events a dry run keeps to check later changes of its input against (see
/// `Batch::dry_events`), as lines: `validate` of 100,000 creates peaks at 108 MB with them (60 MB
/// keeping none, 330 MB keeping every event decoded). Past them, a change of an entry the input
/// created reads as one of an unknown entry.
const DRY_EVENTS_KEPT: usize = 32_768;

/// Lines appended by a batch and not yet applied to the store.
struct Deferred {
    /// The log's stamp as the store recorded it before the first of these appends.
    before: Option<crate::log::stamp::FileStamp>,
    /// The log's stamp after the last one.
    after: crate::log::stamp::FileStamp,
    /// The events appended, while few enough to keep; else the catch-up reads them back.
    events: Option<Vec<(Event, String)>>,
}

/// Appended events a batch keeps for its catch-up; beyond this the catch-up reads the log.
const DEFERRED_EVENTS_KEPT: usize = 8192;

struct Staged {
    /// The events, each with its log line.
    events: Lines,
    written: Written,
}

/// What committing a batch did.
#[derive(Debug, Default)]
pub struct Committed {
    /// Every staged write, now in the log, in staging order.
    pub written: Vec<Written>,
    /// Set when the events are in the log but the projections could not be updated.
    pub store_warning: Option<Warning>,
}

impl<'a> Batch<'a> {
    /// Opens the store (caught up) and takes the write lock.
    ///
    /// # Errors
    /// Lock timeouts, a corrupt log, I/O errors, an unreadable configuration.
    pub fn open(project: &'a Project, ctx: &'a WriteContext) -> Result<Self> {
        let policy = std::sync::Arc::new(Policy::load(project)?);
        project.ensure_state_dir()?;
        let mut session = Session::open(project, ctx.lock_timeout)?;
        let write_lock = if ctx.dry_run {
            None
        } else {
            let lock = FileLock::acquire(&project.write_lock_path(), "write", ctx.lock_timeout)?;
            if let Some(note) = crate::store::session::repair_tail_locked(project)? {
                session.report.quarantined = Some(note);
            }
            session.catch_up(None)?;
            Some(lock)
        };
        // Read under the write lock: no write can now come between this time and the append.
        let at = if ctx.clock && write_lock.is_some() {
            ctx.at
                .clone()
                .max(crate::clock::Clock::timestamp(&crate::clock::SystemClock))
        } else {
            ctx.at.clone()
        };
        Ok(Self {
            project,
            ctx,
            at,
            policy,
            session,
            _write_lock: write_lock,
            staged: Vec::new(),
            touched: rustc_hash::FxHashSet::default(),
            staged_keys: rustc_hash::FxHashMap::default(),
            retired: rustc_hash::FxHashSet::default(),
            dry_events: rustc_hash::FxHashMap::default(),
            dry_kept: 0,
            warned_size: false,
            done: Committed::default(),
            unsynced: Vec::new(),
            sync_on_finish: false,
            deferred: None,
            prechecked: None,
            prebuilt: None,
            foreign_events: std::collections::HashMap::new(),
            foreign_entries: std::collections::HashSet::new(),
            foreign_successors: std::collections::HashMap::new(),
        })
    }

    /// The write policy this batch checks changes against, to check content ahead of staging
    /// on another thread (see [`Batch::stage_checked`]).
    pub fn policy(&self) -> std::sync::Arc<Policy> {
        std::sync::Arc::clone(&self.policy)
    }

    /// The project this batch writes to and the context it writes with (for [`refused`]).
    pub fn context(&self) -> (&'a Project, &'a WriteContext) {
        (self.project, self.ctx)
    }

    /// The time of the events this batch writes (see [`WriteContext::clock`]).
    pub fn at(&self) -> &str {
        &self.at
    }

    /// The caught-up session (what is staged is not in it yet).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Number of staged, uncommitted writes.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }

    /// Validates `change` and stages its events. `check` runs with the caught-up session and
    /// the target's current state before anything is staged, and returns the final change.
    ///
    /// # Errors
    /// Rejections (schema, policy, preconditions, in-batch duplicates), unknown targets; and
    /// when an earlier staged change had to be committed first, that commit's errors.
    pub fn stage(
        &mut self,
        change: Change,
        check: impl FnOnce(&Session, Option<&EntryState>) -> Result<Change>,
    ) -> Result<Written> {
        let content = self.prechecked.take();
        let prebuilt = self.prebuilt.take();
        let target = match change.target().map(|t| self.session.resolve(t)).transpose() {
            // In a dry run, an entry an earlier change of the input would have created.
            Err(e @ Error::NotFound { .. }) if self.ctx.dry_run => Some(
                self.dry_resolve(change.target().unwrap_or_default())
                    .ok_or(e)?,
            ),
            // The target may be an entry this batch wrote and the store has not seen yet.
            Err(Error::NotFound { .. }) if self.deferred.is_some() || !self.staged.is_empty() => {
                self.commit_staged()?;
                change
                    .target()
                    .map(|t| self.session.resolve(t))
                    .transpose()?
            }
            other => other?,
        };
        if let Some(t) = &target
            && self.touched.contains(t)
        {
            self.commit_staged()?;
        }
        let state = match &target {
            Some(t) => Some(match self.dry_state(t)? {
                Some(state) => state,
                None => self
                    .session
                    .store()
                    .entry(t)?
                    .ok_or_else(|| Error::NotFound {
                        project: self.project.name.to_string(),
                        prefix: t.clone(),
                    })?,
            }),
            None => None,
        };
        // A purged entry is said to be purged before the change is checked: a supersede made
        // from its blanked fields would be refused for their emptiness instead.
        // (A purge and a resolve of it are judged on what `check` makes of them.)
        if let Some(s) = state.as_ref().filter(|s| s.purged)
            && !matches!(change, Change::Purge { .. } | Change::Resolve { .. })
        {
            precondition(&change, s)?;
        }
        if let Some(s) = &state {
            refuse_backdated(self.session.store(), s, &self.at)?;
        }
        let change = check(&self.session, state.as_ref())?;
        if let Some(s) = &state {
            precondition(&change, s)?;
        }
        let content = content.filter(|_| matches!(change, Change::Create { .. }));
        if let Change::Create { fields, .. } = &change {
            self.see_retired(fields)?;
        }
        let mut warnings = gate(
            self.project,
            self.ctx,
            &self.policy,
            Some(self.session.store()),
            &change,
            state.as_ref(),
            content,
        )?;
        if let Some(key) = duplicate_key(&change)
            && let Some(first) = self.staged_keys.get(&key)
        {
            return Err(Error::Invalid(Invalid::one(
                "summary",
                "duplicate",
                format!(
                    "an earlier update of this batch ({first}) has this subject, scope and \
                     summary; supersede or update it instead of adding a copy"
                ),
            )));
        }
        if self.warned_size {
            warnings.retain(|w| w.rule != "many_entries");
        }
        self.warned_size |= warnings.iter().any(|w| w.rule == "many_entries");
        let heads = match &state {
            Some(s) => parents_for(self.session.store(), &change, s)?,
            None => Vec::new(),
        };
        let key = duplicate_key(&change);
        // An update restores an archived entry in the same append; an expired one cannot come
        // back, and the update says so.
        let restore = matches!(change, Change::Update { .. })
            && state
                .as_ref()
                .is_some_and(crate::lifecycle::archive::restored_by_update);
        if matches!(change, Change::Update { .. })
            && let Some(s) = state.as_ref().filter(|s| expired_unpurged(s))
        {
            warnings.push(expired_update_warning(s));
        }
        if let Change::Deprecate { target, .. } | Change::Supersede { target, .. } = &change {
            self.retired.insert(target.clone());
        }
        let (mut events, id, superseded) = match (prebuilt, &change) {
            (Some(event), Change::Create { .. }) => {
                let id = event.0.entry.clone();
                (vec![event], id, None)
            }
            _ => build_events(change, heads, (&self.ctx.actor, &self.at))?,
        };
        if let (Some((create, _)), None) = (events.first(), &target) {
            refuse_written_create(self.session.store(), create)?;
            // In a dry run, the same create earlier in the input is written as far as the
            // later ones can tell.
            if self.ctx.dry_run && self.dry_events.contains_key(&create.entry) {
                return Err(Error::Invalid(Invalid::one(
                    "entry",
                    "duplicate",
                    format!(
                        "this create is written by an earlier update of the input (entry {}): \
                         writing it again would change nothing",
                        create.entry
                    ),
                )));
            }
        }
        if restore {
            push_restore(&mut events, &id, self.ctx)?;
        }
        if let Some(key) = key {
            self.staged_keys.insert(key, id.clone());
        }
        self.touched.insert(id.clone());
        for (e, _) in &events {
            self.touched.insert(e.entry.clone());
        }
        if let Some(t) = &target {
            self.touched.insert(t.clone());
        }
        if self.ctx.dry_run && self.dry_kept < DRY_EVENTS_KEPT {
            for (e, line) in &events {
                self.dry_kept += 1;
                for entry in e.entries() {
                    self.dry_events
                        .entry(entry.to_owned())
                        .or_default()
                        .push(line.clone());
                }
            }
        }
        let written = unstored(&events, id, superseded, warnings);
        if !self.ctx.dry_run {
            self.staged.push(Staged {
                events,
                written: written.clone(),
            });
        }
        Ok(written)
    }

    /// Before a create is checked for duplicates: when an earlier change of this batch
    /// deprecated or superseded the entry that says the same (same subject, scope and
    /// summary), the create is checked as it would be in a later run, against that entry as
    /// the change left it: the change is committed first (the store's check reads the store),
    /// and the entry no longer counts among this batch's active creates.
    fn see_retired(&mut self, fields: &projections::EntryFields) -> Result<()> {
        if self.retired.is_empty() {
            return Ok(());
        }
        let in_batch = (
            fields.subject.clone(),
            fields.scope.clone(),
            fields.summary.clone(),
        );
        if self
            .staged_keys
            .get(&in_batch)
            .is_some_and(|first| self.retired.contains(first))
        {
            self.staged_keys.remove(&in_batch);
        }
        if !self.ctx.dry_run && !self.staged.is_empty() {
            let key = crate::store::duplicate_key(fields);
            let active = self.session.store().ids_with("duplicate", &key)?;
            if active.iter().any(|id| self.retired.contains(id)) {
                self.commit_staged()?;
            }
        }
        Ok(())
    }

    /// In a dry run, the entry named by `prefix` (an id or a unique prefix of one) among those
    /// earlier changes of the input would have created.
    fn dry_resolve(&self, prefix: &str) -> Option<String> {
        // A whole id, most often: found without looking at the others.
        if self.dry_events.contains_key(prefix) {
            return Some(prefix.to_owned());
        }
        let mut found = self.dry_events.keys().filter(|id| id.starts_with(prefix));
        match (found.next(), found.next()) {
            (Some(id), None) => Some(id.clone()),
            _ => None,
        }
    }

    /// In a dry run, the state of entry `id` as the earlier changes of the input would leave
    /// it; `None` when none of them changed it.
    fn dry_state(&self, id: &str) -> Result<Option<EntryState>> {
        let Some(dry) = self.dry_events.get(id) else {
            return Ok(None);
        };
        let mut events = self.session.store().entry_events(id)?;
        for line in dry {
            events.push(projections::decode_line(line).map_err(|e| Error::Rejected {
                message: format!("an event this input would write does not verify: {e}"),
            })?);
        }
        Ok(projections::fold_entry_of(id, &events).state)
    }

    /// [`Batch::stage`] of a create whose fields `check` returns unchanged and whose content
    /// `content` is the policy's verdict on ([`Policy::check_entry`] with every field): that
    /// check, the slowest of a create (every field is scanned for secrets), ran ahead, on
    /// another thread, while earlier updates were staged. The checks against the store and
    /// the batch still run here. `event`, when given, is the create's event, built ahead as
    /// well ([`Event::build_with_line`] with this batch's actor and time, no parents): encoding
    /// and hashing it was the larger part of what the staging thread did per create.
    ///
    /// # Errors
    /// As [`Batch::stage`].
    pub fn stage_checked(
        &mut self,
        change: Change,
        content: crate::policy::Verdict,
        event: Option<(Event, String)>,
        check: impl FnOnce(&Session, Option<&EntryState>) -> Result<Change>,
    ) -> Result<Written> {
        self.prechecked = Some(content);
        self.prebuilt = event
            .filter(|(e, _)| e.actor == self.ctx.actor && e.at == self.at && e.parents.is_empty());
        self.stage(change, check)
    }

    /// Appends everything staged (one write, one fsync) and updates the projections; returns
    /// what was written since the last call, including commits that staging had to force.
    ///
    /// # Errors
    /// When the append itself fails: then nothing of the last staged group was written (what
    /// earlier forced commits wrote is in [`Batch::take_written`]).
    pub fn flush(&mut self) -> Result<Committed> {
        self.commit_staged()?;
        Ok(std::mem::take(&mut self.done))
    }

    /// Appends everything staged (one write) but leaves the projections to catch up once, when
    /// the batch finishes or a later change needs them: what a bulk import calls every few
    /// thousand updates, so that memory stays bounded and the store is updated in one pass
    /// (a replay of the whole log when the import outgrows what the store held). Returns what
    /// was written since the last call; a store warning comes with the final commit.
    ///
    /// # Errors
    /// When the append fails: then nothing of the last staged group was written.
    pub fn append(&mut self) -> Result<Committed> {
        self.append_staged()?;
        Ok(std::mem::take(&mut self.done))
    }

    /// Commits what is staged, releases the locks, then forces the log to disk: the fsync, the
    /// slowest step of a write, does not keep other processes waiting. The writes are
    /// acknowledged (returned) only after it.
    ///
    /// # Errors
    /// When the append or the sync fails.
    pub fn finish(mut self) -> Result<Committed> {
        self.sync_on_finish = true;
        let committed = self.commit_staged();
        let unsynced = std::mem::take(&mut self.unsynced);
        let done = std::mem::take(&mut self.done);
        drop(self);
        for u in unsynced {
            u.sync()?;
        }
        committed.map(|()| done)
    }

    fn sync_pending(&mut self) -> Result<()> {
        for u in self.unsynced.drain(..) {
            u.sync()?;
        }
        Ok(())
    }

    /// Writes committed by staging itself and not yet returned by [`Batch::flush`]: what a caller
    /// must still report when the batch stops with an error.
    pub fn take_written(&mut self) -> Committed {
        std::mem::take(&mut self.done)
    }

    /// Appends the staged events, records them in `done` and brings the store up to date.
    fn commit_staged(&mut self) -> Result<()> {
        self.append_staged()?;
        self.catch_up_deferred();
        Ok(())
    }

    /// Appends the staged events and records them in `done`; the store catches up later.
    fn append_staged(&mut self) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        let mut staged = std::mem::take(&mut self.staged);
        // The last check before the log: a line whose id does not hash it would make every
        // later rebuild stop with CORRUPT_LOG. A tombstone's id hashes the content a purge
        // removed, and whoever staged it checked that the purge vouches for it. (Hashed on the
        // cores: a bulk import stages a hundred megabytes.)
        let all: Vec<&(Event, String)> = staged.iter().flat_map(|s| &s.events).collect();
        let unverifiable = crate::parallel::map_chunks(&all, |part| {
            part.iter()
                .find(|(e, l)| !crate::log::tombstones::marked(l) && !verifies(l, &e.id))
                .map(|(e, _)| e.id.clone())
        });
        if let Some(id) = unverifiable.into_iter().flatten().next() {
            return Err(Error::Rejected {
                message: unverified(&id),
            });
        }
        let count = all.len();
        drop(all);
        // The events move to the catch-up when it can keep them (else it reads the log).
        let kept_before = match &self.deferred {
            Some(d) => d.events.as_ref().map(Vec::len),
            None => Some(0),
        };
        let keep = kept_before.is_some_and(|k| k + count <= DEFERRED_EVENTS_KEPT);
        let mut bytes = Vec::new();
        let mut events: Vec<(Event, String)> = Vec::new();
        for s in &mut staged {
            for (e, line) in s.events.drain(..) {
                bytes.extend_from_slice(line.as_bytes());
                bytes.push(b'\n');
                if keep {
                    events.push((e, line));
                }
            }
        }
        let before = match &self.deferred {
            Some(d) => d.before.clone(),
            None => self.session.store().log_stamp()?.flatten(),
        };
        let (after, unsynced) = durable::append_unsynced(&self.project.log_path(), &bytes)?;
        // Synced by `finish` after the locks are released, or now when more may follow.
        self.unsynced.push(unsynced);
        if !self.sync_on_finish {
            self.sync_pending()?;
        }
        // From here on the events are written: whatever fails next, they are in the log.
        let kept = match self.deferred.take() {
            None => keep.then_some(events),
            Some(d) => d.events.and_then(|mut kept| {
                keep.then(|| {
                    kept.extend(events);
                    kept
                })
            }),
        };
        self.deferred = Some(Deferred {
            before,
            after,
            events: kept.filter(|k| k.len() <= DEFERRED_EVENTS_KEPT),
        });
        self.done
            .written
            .extend(staged.into_iter().map(|s| s.written));
        Ok(())
    }

    /// Applies the deferred appends to the store. A failure does not undo them: the writes are
    /// reported as done, with a warning, and the next reader catches up.
    fn catch_up_deferred(&mut self) {
        let Some(d) = self.deferred.take() else {
            return;
        };
        self.touched.clear();
        // Without the events (too many to keep), the catch-up reads them from the log.
        let growth = d.before.map(|before| Growth {
            before,
            after: d.after,
            events: d.events.unwrap_or_default(),
        });
        let caught_up = if self.ctx.fail_after_append {
            Err(Error::store(
                &self.project.store_dir(),
                "injected failure after the append",
            ))
        } else {
            self.session.catch_up(growth.as_ref())
        };
        let store_warning = match caught_up {
            Ok(()) => None,
            Err(e) => Some(Warning {
                field: "store".into(),
                rule: "store_stale",
                message: format!(
                    "written to the log, but the projections could not be updated ({e}); the \
                     next memlog command catches up"
                ),
            }),
        };
        self.done.store_warning = self.done.store_warning.take().or(store_warning);
    }
}

/// The replacements that concurrent supersedes of `state` created, sorted; more than one means
/// the writers disagreed on what replaces it.
///
/// # Errors
/// When the store cannot be read.
pub fn competing_replacements(store: &Store, state: &EntryState) -> Result<Vec<String>> {
    let mut by: Vec<String> = store
        .entry_events(&state.id)?
        .into_iter()
        .filter(|e| e.entry == state.id)
        .filter_map(|e| match e.data {
            EventData::Supersede { by, .. } => Some(by),
            _ => None,
        })
        .collect();
    by.sort();
    by.dedup();
    Ok(by)
}

/// The entry that stands for the line of `replacement` (one of `competing`, the replacements
/// of an entry superseded concurrently) now: `replacement` itself while it is not superseded,
/// else the entry its supersedes lead to (a replacement that its own branch superseded again
/// by a newer one). `None` when the line gives way to another of `competing` or circles back
/// (two resolves that chose different winners, merged, leave each replacement superseded by
/// the other), or leads to an entry the store lacks.
///
/// # Errors
/// When the store cannot be read.
pub fn line_end(
    store: &Store,
    replacement: &str,
    competing: &[String],
) -> Result<Option<EntryState>> {
    let mut seen = std::collections::HashSet::new();
    let mut at = replacement.to_owned();
    loop {
        if !seen.insert(at.clone()) {
            return Ok(None);
        }
        let Some(state) = store.entry(&at)? else {
            return Ok(None);
        };
        if state.status != Status::Superseded {
            return Ok(Some(state));
        }
        match state.superseded_by {
            Some(by) if !(competing.contains(&by) && by != replacement) => at = by,
            _ => return Ok(None),
        }
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        // A batch given up on an error: what reached the log is still forced to disk.
        for u in self.unsynced.drain(..) {
            let _ = u.sync();
        }
    }
}

/// Refuses a create whose event the log already holds: the same create by the same actor at
/// the same time (a retry with `--now`, or of a killed `apply`). Once its entry is superseded
/// or deprecated no active duplicate names it, and the line would be written again and reported
/// as applied while the entry stays as it is.
fn refuse_written_create(store: &Store, create: &Event) -> Result<()> {
    if !store.has_event(&create.id)? {
        return Ok(());
    }
    let now = store.entry(&create.entry)?.map_or_else(String::new, |s| {
        if s.purged {
            ", now purged".to_owned()
        } else {
            format!(", now {}", s.status)
        }
    });
    Err(Error::Invalid(Invalid::one(
        "entry",
        "duplicate",
        format!(
            "this create was written before: the log holds its event {} (entry {}{now}); \
             writing it again would change nothing",
            create.id, create.entry
        ),
    )))
}

/// The duplicate key of a change that creates an active entry.
fn duplicate_key(change: &Change) -> Option<(String, String, String)> {
    match change {
        Change::Create { fields, status } | Change::Supersede { fields, status, .. }
            if *status == Status::Active =>
        {
            Some((
                fields.subject.clone(),
                fields.scope.clone(),
                fields.summary.clone(),
            ))
        }
        _ => None,
    }
}

/// Validated change → events in the log → projections updated: a batch of one.
///
/// # Errors
/// Lock timeouts, rejected preconditions, I/O errors.
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
    // The detector compiles its rules on first use (a few milliseconds): do it before taking
    // the locks, which every other memlog process on this project is waiting for.
    if let Change::Create { fields, .. } | Change::Supersede { fields, .. } = &change {
        let _ = crate::policy::secret_scan::scan_text(&fields.content);
        let _ = crate::policy::secret_scan::scan_text(&fields.summary);
    }
    let _ = crate::policy::secret_scan::scan_text(&ctx.actor);
    let mut batch = Batch::open(project, ctx)?;
    let staged = batch.stage(change, check)?;
    if ctx.dry_run {
        return Ok(staged);
    }
    let quarantined = batch.session.report.quarantined.clone();
    let sync_warnings: Vec<Warning> = batch
        .session
        .report
        .warnings()
        .into_iter()
        .filter(|w| w.rule != "newline_added" && w.rule != "quarantined")
        .collect();
    batch.sync_on_finish = true;
    let committed = batch.flush()?;
    let mut w = committed.written.into_iter().next().unwrap_or(staged);
    if committed.store_warning.is_none() {
        w.entry = batch.session.store().entry(&w.id).ok().flatten();
    }
    // Releases the locks, then syncs the append.
    batch.finish()?;
    w.warnings.extend(committed.store_warning);
    w.warnings.extend(sync_warnings);
    w.quarantined = quarantined;
    Ok(w)
}

/// Appends to `events`, the update of archived entry `id`, the `archived -> active`
/// transition that restores it (see [`crate::lifecycle::archive::restored_by_update`]): its
/// parent is the update, so that one append holds both, and replay restores the entry after
/// the update whatever the order of lines.
fn push_restore(events: &mut Lines, id: &str, ctx: &WriteContext) -> Result<()> {
    let parents = events.last().map(|(e, _)| vec![e.id.clone()]);
    events.push(Event::build_with_line(
        id,
        &ctx.actor,
        &ctx.at,
        parents.unwrap_or_default(),
        EventData::Transition {
            to: Lifecycle::Active,
            reason: crate::lifecycle::archive::UPDATE_RESTORE_REASON.into(),
        },
    )?);
    Ok(())
}

/// Whether `state` is expired and still has its content.
fn expired_unpurged(state: &EntryState) -> bool {
    state.lifecycle == Lifecycle::Expired && !state.purged
}

/// An expired entry cannot come back (docs/LIFECYCLE.md, section 2): an update of one is
/// written, but nobody would see it, so the writer says so and names the way to keep it.
fn expired_update_warning(state: &EntryState) -> Warning {
    Warning {
        field: "lifecycle".into(),
        rule: "expired_entry",
        message: format!(
            "{id} is expired: the update is written, but an expired entry stays out of `query`, \
             `list` and `context`, cannot be restored and is purged when its retention ends; \
             to keep what it says, replace it with `memlog supersede {id}`",
            id = state.id
        ),
    }
}

/// The parents of an event on `state`: all its heads for a resolve (which joins them), else
/// the latest head only, so that writing to an entry in conflict keeps the conflict visible
/// until someone resolves it.
fn parents_for(store: &Store, change: &Change, state: &EntryState) -> Result<Vec<String>> {
    if !state.in_conflict()
        || matches!(
            change,
            Change::Resolve { .. } | Change::ResolveWinner { .. }
        )
    {
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
    content: Option<crate::policy::Verdict>,
) -> Result<Vec<Warning>> {
    let (mut verdict, operation) = match change {
        Change::Create { fields, status } => match content {
            Some(mut v) => {
                if let Some(store) = store {
                    v.merge(policy.check_against_store(store, fields, *status, None, None)?);
                }
                (v, "create")
            }
            None => (policy.check(store, fields, *status, None, None)?, "create"),
        },
        Change::Supersede {
            target,
            fields,
            status,
            ..
        } => (
            policy.check(store, fields, *status, Some(target), None)?,
            "supersede",
        ),
        Change::Update { set, .. } | Change::Resolve { set, .. } => match state {
            None => (crate::policy::Verdict::default(), "update"),
            // Clearing the conflict of a purged entry changes no field: there is no content
            // left to check.
            Some(state) if state.purged && set.is_empty() => {
                (crate::policy::Verdict::default(), "resolve")
            }
            Some(state) => (check_update(policy, store, state, set)?, "update"),
        },
        Change::Deprecate { .. } => (crate::policy::Verdict::default(), "deprecate"),
        Change::ResolveWinner { .. } => (crate::policy::Verdict::default(), "resolve"),
        Change::Pin { .. } => (crate::policy::Verdict::default(), "pin"),
        Change::Unpin { .. } => (crate::policy::Verdict::default(), "unpin"),
        Change::Transition { .. } => (crate::policy::Verdict::default(), "transition"),
        Change::Purge { .. } => (crate::policy::Verdict::default(), "purge"),
        Change::EvidenceChecked { .. } => (crate::policy::Verdict::default(), "evidence_checked"),
    };
    // Every text that enters an event is scanned, not only the entry's fields.
    if let Some(reason) = change.reason() {
        verdict.merge(policy.check_free_text("reason", reason));
    }
    verdict.merge(policy.check_free_text("actor", &ctx.actor));
    verdict.into_result().or_else(|mut invalid| {
        log_refusal(project, ctx, operation, &mut invalid)?;
        Err(Error::Invalid(invalid))
    })
}

/// Appends the secrets found in a refused write to the project's security log, each once: they
/// are taken out of `invalid`. A dry run (`memlog validate`) logs nothing.
fn log_refusal(
    project: &Project,
    ctx: &WriteContext,
    operation: &str,
    invalid: &mut Invalid,
) -> Result<()> {
    let detections = std::mem::take(&mut invalid.detections);
    if ctx.dry_run {
        return Ok(());
    }
    log_detections(project, &ctx.at, &ctx.actor, operation, &detections)
}

/// A write refused by the checks that run before the write policy (the schema checks of
/// [`crate::policy::validate`], which stop it before [`gate`] runs): the secrets they found
/// (an [`Error::Invalid`]'s detections), and a secret given as the actor, which only the policy
/// checks, are logged as the policy logs its own, so that a write refused for several reasons
/// still logs every secret in it. Returns `e`, or the error of writing the log.
///
/// For errors of schema checks only: an error of [`write`] or [`Batch::stage`] was logged
/// already.
pub fn refused(
    project: &Project,
    ctx: &WriteContext,
    operation: &str,
    e: impl Into<Error>,
) -> Error {
    let mut e = e.into();
    if let Error::Invalid(invalid) = &mut e {
        let actor = Policy::defaults().check_free_text("actor", &ctx.actor);
        invalid.detections.extend(actor.detections);
        if let Err(log_error) = log_refusal(project, ctx, operation, invalid) {
            return log_error;
        }
    }
    e
}

/// The write policy on an update (or a resolve) that sets `set` on the entry in `state`.
fn check_update(
    policy: &Policy,
    store: Option<&Store>,
    state: &EntryState,
    set: &Map<String, Value>,
) -> Result<crate::policy::Verdict> {
    let (fields, status) = projections::fold::apply_set(state, set)
        .map_err(|m| Error::Invalid(Invalid::one("set", "type", m)))?;
    let status = status.unwrap_or(state.status);
    // Promoting a draft makes a new active entry: it gets every check a create
    // gets. Otherwise an update is checked on the fields it changes.
    let promoted = state.status != Status::Active && status == Status::Active;
    let only: BTreeSet<String> = set.keys().cloned().collect();
    let only = (!promoted).then_some(&only);
    let mut v = policy.check(store, &fields, status, Some(&state.id), only)?;
    if status == Status::Active && fields.evidence.is_empty() {
        v.problems.push(crate::policy::validate::Problem {
            field: "evidence".into(),
            constraint: "required",
            message: "an active entry needs at least one evidence object {type, uri, \
                      note}; add --evidence TYPE:URI:NOTE before making it active"
                .into(),
        });
    }
    Ok(v)
}

/// What a write did when the store was not consulted afterwards.
fn unstored(
    events: &[(Event, String)],
    id: String,
    superseded: Option<String>,
    warnings: Vec<Warning>,
) -> Written {
    Written {
        id,
        superseded,
        events: events.iter().map(|(e, _)| e.id.clone()).collect(),
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
    let warnings = gate(project, ctx, &Policy::defaults(), None, &change, None, None)?;
    let (events, id, superseded) = build_events(change, Vec::new(), (&ctx.actor, &ctx.at))?;
    Ok(unstored(&events, id, superseded, warnings))
}

/// Whether `line` states the id `id` and hashes to it.
fn verifies(line: &str, id: &str) -> bool {
    crate::log::line_id::stated_id(line.as_bytes()) == Some((id, true))
}

/// Why an event whose line would not verify was not written.
fn unverified(id: &str) -> String {
    format!(
        "event {id} was not written: its line does not hash to its id, so every later \
         rebuild would refuse the log. Nothing was written; this is a bug in memlog, please \
         report it with the event's line"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last check before the log: a staged line whose id does not hash it (a line made
    /// again from an event that lost a key on decoding, say) is not appended, and nothing of
    /// its batch is.
    #[test]
    fn a_line_that_does_not_hash_to_its_id_is_never_appended() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = crate::workspace::Workspace::at(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let name = crate::workspace::ProjectName::new("p").unwrap_or_else(|e| panic!("{e}"));
        let at = "2026-01-01T00:00:00.000Z";
        crate::project::init(&ws, &name, at).unwrap_or_else(|e| panic!("{e}"));
        let project = Project::open(&ws, name).unwrap_or_else(|e| panic!("{e}"));
        let ctx = WriteContext {
            actor: "t".into(),
            at: at.into(),
            lock_timeout: Duration::from_secs(5),
            dry_run: false,
            fail_after_append: false,
            clock: false,
        };
        let fields: EntryFields = serde_json::from_value(serde_json::json!({
            "section": "decisions", "kind": "decision", "subject": "a.b", "scope": "repo",
            "summary": "s", "content": "c", "confidence": 0.5
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let (event, line) = Event::build_with_line(
            "",
            "t",
            at,
            vec![],
            EventData::Create {
                fields,
                status: Status::Active,
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let altered = line.replacen("\"summary\":\"s\"", "\"summary\":\"t\"", 1);
        let mut batch = Batch::open(&project, &ctx).unwrap_or_else(|e| panic!("{e}"));
        for l in [line.clone(), altered] {
            batch.staged.push(Staged {
                events: vec![(event.clone(), l)],
                written: unstored(&[], String::new(), None, Vec::new()),
            });
        }
        let e = batch
            .append_staged()
            .err()
            .unwrap_or_else(|| panic!("appended"));
        assert!(matches!(e, Error::Rejected { .. }), "{e}");
        assert!(e.to_string().contains(&event.id), "{e}");
        assert_eq!(fs_err::read(project.log_path()).unwrap_or_default(), b"");
    }
}
