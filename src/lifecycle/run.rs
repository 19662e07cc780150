//! `lifecycle run`: evaluate every entry of a project in batches and append one `transition`
//! (or `purge`) event per change through the writer. Each batch takes the locks, stages its
//! changes, appends them with one write and releases the locks, so other commands wait at most
//! one batch. An entry that fails is reported and skipped; the run goes on.

use super::engine::{Decision, Evaluator, Facts};
use super::{access_log, purge};
use crate::error::{Error, Result};
use crate::log::writer::{Batch, Change, WriteContext};
use crate::project::Project;
use projections::{Dimension, Lifecycle};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Local history of run reports, in the project's state directory.
pub const RUNS_FILE: &str = "lifecycle-runs.jsonl";

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub now: String,
    pub actor: String,
    pub lock_timeout: Duration,
    /// Evaluate and report, write nothing (no events, no report, no access-log compaction).
    pub dry_run: bool,
    /// Fault injection for tests: evaluating this entry fails.
    pub fail_entry: Option<String>,
}

/// One change a run made (or would make).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Applied {
    pub entry: String,
    pub from: String,
    /// A lifecycle state, or `purged`.
    pub to: String,
    pub reason: String,
    /// The event appended (none in a dry run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// For a purge: the bytes of content it removes from the projections.
    #[serde(skip)]
    pub reclaimed: u64,
}

/// An entry the run could not evaluate or change.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    pub entry: String,
    pub error: String,
}

/// What a run did: kept in `.memlog/lifecycle-runs.jsonl` for statistics and the dashboard.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunReport {
    pub project: String,
    pub now: String,
    pub dry_run: bool,
    pub duration_ms: u64,
    pub processed: usize,
    pub batches: usize,
    pub pinned: usize,
    pub transitions: Vec<Applied>,
    pub skipped: Vec<Skipped>,
    /// Entries in the `archived` lifecycle state after the run; after a dry run, the number the
    /// run would leave.
    pub archived: i64,
    pub warnings: Vec<String>,
    /// Stopped by a signal before every batch ran.
    pub stopped: bool,
    /// Entries and bytes of state per storage tier (`hot`, `archived`, `expired`, `purged`),
    /// as seen by this run.
    #[serde(default)]
    pub storage: std::collections::BTreeMap<String, Tier>,
    /// Per kind: entries, entries that left the hot tier, and their summed lifespans.
    #[serde(default)]
    pub kinds: std::collections::BTreeMap<String, KindLife>,
    /// Bytes of entry state (summary, content, evidence) that this run's purges removed from
    /// the projections; `memlog gc` then removes them from the log.
    #[serde(default)]
    pub reclaimed_bytes: u64,
}

/// Storage used by one tier.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Tier {
    pub entries: u64,
    pub bytes: u64,
}

/// Lifespans of one kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct KindLife {
    pub entries: u64,
    /// Archived, expired or purged.
    pub archived: u64,
    /// Days from creation to archival, summed over `archived`.
    pub lifespan_days_sum: f64,
}

fn tier_of(s: &projections::EntryState) -> &'static str {
    if s.purged {
        "purged"
    } else {
        match s.lifecycle {
            Lifecycle::Archived => "archived",
            Lifecycle::Expired => "expired",
            Lifecycle::Active | Lifecycle::Decaying => "hot",
        }
    }
}

/// Adds one entry to the storage and lifespan figures.
/// Bytes of an entry's state that a purge removes: its summary, content and evidence, as the
/// state is stored.
fn content_bytes(s: &projections::EntryState) -> u64 {
    let mut blank = s.clone();
    blank.fields.summary.clear();
    blank.fields.content.clear();
    blank.fields.evidence.clear();
    let size = |s: &projections::EntryState| serde_json::to_vec(s).map_or(0, |b| b.len() as u64);
    size(s).saturating_sub(size(&blank))
}

fn account(
    report: &mut RunReport,
    s: &projections::EntryState,
    store: &crate::store::Store,
    now: &str,
) {
    let tier = report.storage.entry(tier_of(s).into()).or_default();
    tier.entries += 1;
    tier.bytes += serde_json::to_vec(s).map_or(0, |b| b.len() as u64);
    let kind = report
        .kinds
        .entry(s.fields.kind.as_str().into())
        .or_default();
    kind.entries += 1;
    if s.is_cold() {
        kind.archived += 1;
        let left = store
            .audit(Some(&s.id))
            .ok()
            .and_then(|a| {
                a.into_iter()
                    .find(|r| r.dimension == Dimension::Lifecycle && r.to == "archived")
            })
            .map_or_else(|| now.to_owned(), |r| r.at);
        if let (Some(created), Some(left)) = (
            crate::retrieval::features::unix_millis(&s.created_at),
            crate::retrieval::features::unix_millis(&left),
        ) {
            #[expect(
                clippy::cast_precision_loss,
                reason = "millisecond spans far below 2^52"
            )]
            let days = (left - created).max(0) as f64 / 86_400_000.0;
            kind.lifespan_days_sum += days;
        }
    }
}

impl RunReport {
    /// Transitions by target state (`decaying`, `archived`, ..., `purged`).
    pub fn counts(&self) -> std::collections::BTreeMap<String, usize> {
        let mut m = std::collections::BTreeMap::new();
        for t in &self.transitions {
            *m.entry(t.to.clone()).or_insert(0) += 1;
        }
        m
    }
}

/// When `entry` entered its current lifecycle state, from its audit records.
fn lifecycle_since(
    store: &crate::store::Store,
    id: &str,
    now: Lifecycle,
) -> Result<Option<String>> {
    Ok(store
        .audit(Some(id))?
        .into_iter()
        .rev()
        .find(|r| r.dimension == Dimension::Lifecycle && r.to == now.as_str())
        .map(|r| r.at))
}

/// Runs one evaluation of `project` at `opts.now`. `stop` is checked between batches.
///
/// # Errors
/// An invalid policy (naming the key), lock timeouts, a corrupt log, I/O errors. Failures of
/// single entries are not errors: they are in the report's `skipped`.
pub fn run(project: &Project, opts: &RunOptions, stop: &AtomicBool) -> Result<RunReport> {
    let started = Instant::now();
    let config = project.config()?;
    let policy = config.policies.lifecycle;
    let evaluator = Evaluator::new(&policy, &opts.now).map_err(Error::Usage)?;
    // The access log is a hint: unreadable, it counts as empty and the run says so.
    let (access, access_warning) = match access_log::load(&project.state_dir(), &opts.now) {
        Ok(a) => (a, None),
        Err(e) => (
            std::collections::BTreeMap::new(),
            Some(format!(
                "the access log could not be read ({e}); entries were evaluated as never accessed"
            )),
        ),
    };
    let ids = {
        let session = crate::store::session::Session::open(project, opts.lock_timeout)?;
        session
            .store()
            .ids_with_prefix(projections::event::ENTRY_PREFIX, usize::MAX)?
    };
    let wctx = WriteContext {
        actor: opts.actor.clone(),
        at: opts.now.clone(),
        lock_timeout: opts.lock_timeout,
        dry_run: opts.dry_run,
        fail_after_append: false,
        // The run is judged and recorded at the one time it reports.
        clock: false,
    };
    let mut report = RunReport {
        project: project.name.to_string(),
        now: opts.now.clone(),
        dry_run: opts.dry_run,
        duration_ms: 0,
        processed: 0,
        batches: 0,
        pinned: 0,
        transitions: Vec::new(),
        skipped: Vec::new(),
        archived: 0,
        warnings: access_warning.into_iter().collect(),
        stopped: false,
        storage: std::collections::BTreeMap::new(),
        kinds: std::collections::BTreeMap::new(),
        reclaimed_bytes: 0,
    };
    let size = usize::try_from(policy.batch_size).unwrap_or(500).max(1);
    for chunk in ids.chunks(size) {
        if stop.load(Ordering::SeqCst) {
            report.stopped = true;
            break;
        }
        // A batch that cannot start (its locks, its store) is reported, and the next one runs.
        if let Err(e) = run_batch(
            project,
            &wctx,
            &evaluator,
            &access,
            chunk,
            opts,
            &mut report,
        ) {
            report.skipped.extend(chunk.iter().map(|id| Skipped {
                entry: id.clone(),
                error: format!("the batch could not run: {e}"),
            }));
        }
        report.batches += 1;
    }
    let session = crate::store::session::Session::open(project, opts.lock_timeout)?;
    let stats = session.store().stats()?;
    let stored = stats
        .entries_by_lifecycle
        .get("archived")
        .copied()
        .unwrap_or(0);
    drop(session);
    report.archived = if opts.dry_run {
        // Nothing was written: count what the store would hold after these transitions.
        let moved = |to: bool| {
            let n = report
                .transitions
                .iter()
                .filter(|t| (if to { &t.to } else { &t.from }) == "archived")
                .count();
            i64::try_from(n).unwrap_or(i64::MAX)
        };
        stored + moved(true) - moved(false)
    } else {
        stored
    };
    if u64::try_from(report.archived).unwrap_or(0) > policy.archive_size_warning {
        report.warnings.push(format!(
            "{} entries are archived, more than policies.lifecycle.archive_size_warning ({}): \
             review the archive (`memlog list --archived`), purge what is not needed, or raise the limit",
            report.archived, policy.archive_size_warning
        ));
    }
    report.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if !opts.dry_run {
        if let Err(e) = access_log::compact_if_large(&project.state_dir()) {
            report
                .warnings
                .push(format!("the access log could not be compacted: {e}"));
        }
        save_report(project, &report, policy.audit_retention_days)?;
    }
    Ok(report)
}

fn run_batch(
    project: &Project,
    wctx: &WriteContext,
    evaluator: &Evaluator,
    access: &std::collections::BTreeMap<String, access_log::AccessStats>,
    ids: &[String],
    opts: &RunOptions,
    report: &mut RunReport,
) -> Result<()> {
    let mut batch = Batch::open(project, wctx)?;
    let mut staged: Vec<Applied> = Vec::new();
    for id in ids {
        report.processed += 1;
        let outcome = (|| -> Result<Option<(Change, Applied)>> {
            if opts
                .fail_entry
                .as_deref()
                .is_some_and(|f| id.starts_with(f))
            {
                return Err(Error::Rejected {
                    message: "injected evaluation failure".into(),
                });
            }
            let store = batch.session().store();
            let Some(state) = store.entry(id)? else {
                return Ok(None);
            };
            if state.pinned {
                report.pinned += 1;
            }
            let since = match state.lifecycle {
                Lifecycle::Archived | Lifecycle::Expired => {
                    lifecycle_since(store, id, state.lifecycle)?
                }
                _ => None,
            };
            let facts = Facts {
                state: &state,
                access: access.get(id.as_str()),
                lifecycle_since: since.as_deref(),
            };
            let decision = evaluator
                .evaluate(&facts)
                .map_err(|message| Error::Rejected { message })?;
            // Storage and lifespans as they are after this run.
            let mut after = state.clone();
            match &decision {
                Decision::Transition { to, .. } => after.lifecycle = *to,
                Decision::Purge { .. } => after.purged = true,
                Decision::Keep(_) => {}
            }
            account(report, &after, store, &opts.now);
            Ok(match decision {
                Decision::Keep(_) => None,
                Decision::Transition { from, to, reason } => Some((
                    Change::Transition {
                        target: id.clone(),
                        from,
                        to,
                        reason: reason.clone(),
                    },
                    Applied {
                        entry: id.clone(),
                        from: from.as_str().into(),
                        to: to.as_str().into(),
                        reason,
                        event: None,
                        reclaimed: 0,
                    },
                )),
                Decision::Purge { reason } => Some((
                    Change::Purge {
                        target: id.clone(),
                        reason: reason.clone(),
                        redacted: purge::redactions(store, id)?,
                    },
                    Applied {
                        entry: id.clone(),
                        from: state.lifecycle.as_str().into(),
                        to: "purged".into(),
                        reason,
                        event: None,
                        reclaimed: content_bytes(&state),
                    },
                )),
            })
        })();
        let staged_one = outcome.and_then(|o| match o {
            None => Ok(None),
            Some((change, mut applied)) => {
                let w = batch.stage(change.clone(), |_, _| Ok(change))?;
                applied.event = (!opts.dry_run).then(|| w.events.first().cloned()).flatten();
                Ok(Some(applied))
            }
        });
        match staged_one {
            Ok(Some(a)) => staged.push(a),
            Ok(None) => {}
            Err(e) => report.skipped.push(Skipped {
                entry: id.clone(),
                error: e.to_string(),
            }),
        }
    }
    match batch.finish() {
        Ok(_) => {
            report.reclaimed_bytes += staged.iter().map(|a| a.reclaimed).sum::<u64>();
            report.transitions.extend(staged);
        }
        Err(e) => {
            // The batch's append failed: none of its changes were written.
            for a in staged {
                report.skipped.push(Skipped {
                    entry: a.entry,
                    error: format!("the batch could not be written: {e}"),
                });
            }
        }
    }
    Ok(())
}

/// `report` as the run history keeps it: its transitions counted by the state they went to and
/// its skips counted, not listed (the events and the audit hold each one). A run that changes
/// every entry of a large project listed each: 10 MB a report at 40,000 entries, read by every
/// `stats`.
fn kept_report(report: &RunReport) -> serde_json::Value {
    let mut v = serde_json::to_value(report).unwrap_or(serde_json::Value::Null);
    if let Some(m) = v.as_object_mut() {
        m.insert(
            "transitions".into(),
            serde_json::to_value(report.counts()).unwrap_or_default(),
        );
        m.insert("skipped".into(), report.skipped.len().into());
    }
    v
}

/// Appends `report` to the run history, dropping reports older than the audit retention; a
/// report kept before with every transition listed is kept counted (the file is then written
/// anew, once).
fn save_report(project: &Project, report: &RunReport, retention_days: u32) -> Result<()> {
    let path = project.state_dir().join(RUNS_FILE);
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = false;
    let cutoff = crate::retrieval::features::unix_millis(&report.now)
        .map(|n| n - i64::from(retention_days) * 86_400_000);
    #[derive(Deserialize)]
    struct When {
        now: String,
    }
    if let Ok(text) = fs_err::read_to_string(&path) {
        for line in text.lines() {
            let old = serde_json::from_str::<When>(line)
                .ok()
                .and_then(|r| crate::retrieval::features::unix_millis(&r.now));
            if let (Some(old), Some(cutoff)) = (old, cutoff)
                && old < cutoff
            {
                dropped = true;
                continue;
            }
            if line.contains("\"transitions\":[")
                && let Ok(listed) = serde_json::from_str::<RunReport>(line)
            {
                dropped = true;
                kept.push(kept_report(&listed).to_string());
                continue;
            }
            kept.push(line.to_owned());
        }
    }
    let line = kept_report(report).to_string();
    if dropped {
        kept.push(line);
        let mut bytes = kept.join("\n").into_bytes();
        bytes.push(b'\n');
        crate::log::durable::write_atomic(&path, &bytes)?;
    } else {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        let _ = crate::log::durable::append_unsynced(&path, &bytes)?;
    }
    Ok(())
}

/// What the read-outs (`stats`, `lifecycle report`) take of a run report: its transitions and
/// skips counted, not kept. A run that changes every entry of a large project lists each
/// transition: parsed whole, the history of a few such runs made `stats` 10 times slower and 6
/// times larger (75 ms and 76 MB at 40,000 archived entries).
#[derive(Debug, Clone, Deserialize)]
pub struct RunRecord {
    pub now: String,
    pub duration_ms: u64,
    pub processed: usize,
    /// Transitions by the state they went to (or `purged`).
    #[serde(deserialize_with = "count_by_target")]
    pub transitions: std::collections::BTreeMap<String, usize>,
    #[serde(deserialize_with = "count_items")]
    pub skipped: usize,
    #[serde(default)]
    pub stopped: bool,
    #[serde(default)]
    pub storage: std::collections::BTreeMap<String, Tier>,
}

/// A list of transitions counted by their `to`, each read without copying its other members.
fn count_by_target<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<std::collections::BTreeMap<String, usize>, D::Error> {
    struct Counting;
    #[derive(Deserialize)]
    struct Target<'a> {
        #[serde(borrow)]
        to: std::borrow::Cow<'a, str>,
    }
    impl<'de> serde::de::Visitor<'de> for Counting {
        type Value = std::collections::BTreeMap<String, usize>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of transitions")
        }
        /// As the history keeps it now: counts by state.
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut counts = std::collections::BTreeMap::new();
            while let Some((to, n)) = map.next_entry::<String, usize>()? {
                counts.insert(to, n);
            }
            Ok(counts)
        }
        /// As reports were kept before: every transition.
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut counts = std::collections::BTreeMap::new();
            while let Some(t) = seq.next_element::<Target<'de>>()? {
                match counts.get_mut(t.to.as_ref()) {
                    Some(n) => *n += 1,
                    None => {
                        counts.insert(t.to.into_owned(), 1);
                    }
                }
            }
            Ok(counts)
        }
    }
    d.deserialize_any(Counting)
}

/// The length of a list, its items skipped, or a count.
fn count_items<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<usize, D::Error> {
    struct Counting;
    impl<'de> serde::de::Visitor<'de> for Counting {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list")
        }
        fn visit_u64<E: serde::de::Error>(self, n: u64) -> std::result::Result<usize, E> {
            usize::try_from(n).map_err(E::custom)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut n = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    d.deserialize_any(Counting)
}

/// The run reports kept for `project` (`.memlog/lifecycle-runs.jsonl`), oldest first, as
/// [`RunRecord`]s.
///
/// # Errors
/// When the file exists but cannot be read.
pub fn history_records(project: &Project) -> Result<Vec<RunRecord>> {
    let path = project.state_dir().join(RUNS_FILE);
    match fs_err::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A report read as a [`RunRecord`] counts what the whole report holds: its transitions
        /// by target and its skips.
        #[test]
        fn a_record_counts_what_the_report_holds(
            targets in prop::collection::vec(
                prop::sample::select(vec!["decaying", "archived", "expired", "purged", "active"]),
                0..40,
            ),
            skipped in 0usize..5,
        ) {
            let report = RunReport {
                project: "demo".into(),
                now: "2026-11-22T10:00:00.000Z".into(),
                dry_run: false,
                duration_ms: 12,
                processed: targets.len() + skipped,
                batches: 1,
                pinned: 0,
                transitions: targets
                    .iter()
                    .enumerate()
                    .map(|(i, to)| Applied {
                        entry: format!("m-{i:026}"),
                        from: "active".into(),
                        to: (*to).into(),
                        reason: "a \"quoted\" reason".into(),
                        event: Some(format!("{i:064}")),
                        reclaimed: 0,
                    })
                    .collect(),
                skipped: (0..skipped)
                    .map(|i| Skipped { entry: format!("m-{i:026}"), error: "x".into() })
                    .collect(),
                archived: 0,
                warnings: Vec::new(),
                stopped: false,
                storage: std::collections::BTreeMap::new(),
                kinds: std::collections::BTreeMap::new(),
                reclaimed_bytes: 0,
            };
            let line = serde_json::to_string(&report).unwrap_or_default();
            let record: RunRecord = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{e}: {line}"));
            prop_assert_eq!(&record.transitions, &report.counts());
            prop_assert_eq!(record.skipped, skipped);
            prop_assert_eq!(record.processed, report.processed);
            // As the history keeps it: the same counts.
            let kept: RunRecord = serde_json::from_value(kept_report(&report))
                .unwrap_or_else(|e| panic!("{e}"));
            prop_assert_eq!(kept.transitions, report.counts());
            prop_assert_eq!(kept.skipped, skipped);
        }
    }
}
