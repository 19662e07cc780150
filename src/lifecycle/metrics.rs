//! Lifecycle metrics for `memlog lifecycle report`, without scanning entries: counts, lifespans
//! and archival rates from the statistics projection (live), access frequencies from the access
//! log, storage as the last run report measured it.

use super::access_log;
use super::run::{self, Tier};
use crate::error::Result;
use crate::project::Project;
use crate::store::Store;
use serde::Serialize;
use std::collections::BTreeMap;

/// The lifecycle figures of one project.
#[derive(Debug, Clone, Serialize)]
pub struct LifecycleMetrics {
    /// Entries per lifecycle state (active, decaying, archived, expired).
    pub entries_by_lifecycle: BTreeMap<String, i64>,
    pub pinned: i64,
    pub purged: i64,
    pub stale_evidence: i64,
    /// Entries by number of recorded accesses (`0`, `1`, `2-4`, `5-9`, `10-49`, `50+`).
    pub access_frequency: BTreeMap<String, u64>,
    /// Storage per tier as of the last complete run (empty before the first).
    pub storage: BTreeMap<String, Tier>,
    /// Per kind with ended entries (superseded, deprecated, archived, expired or purged): their
    /// mean lifespan in days, from creation to the event that ended them. Live.
    pub average_lifespan_days: BTreeMap<String, f64>,
    /// Per kind: the share of its entries that are archived or expired (0 to 1). Live.
    pub archival_rate: BTreeMap<String, f64>,
    /// The last run, if any.
    pub last_run: Option<RunSummary>,
}

/// The headline of a run report.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    pub now: String,
    pub duration_ms: u64,
    pub processed: usize,
    pub transitions: BTreeMap<String, usize>,
    pub skipped: usize,
    /// Stopped before it went through every entry (a daemon's SIGTERM): its figures are partial.
    pub stopped: bool,
}

/// The summary of a run report.
pub fn summary(r: &run::RunRecord) -> RunSummary {
    RunSummary {
        now: r.now.clone(),
        duration_ms: r.duration_ms,
        processed: r.processed,
        transitions: r.transitions.clone(),
        skipped: r.skipped,
        stopped: r.stopped,
    }
}

/// The last run report of `project`, if any.
///
/// # Errors
/// When the run history cannot be read.
pub fn last_run(project: &Project) -> Result<Option<run::RunRecord>> {
    Ok(run::history_records(project)?.pop())
}

/// Lifecycle metrics of `project`, from its store (caught up by the caller), its access log
/// and its last run report.
///
/// # Errors
/// When the store or the local files cannot be read.
pub fn metrics(project: &Project, store: &Store, now: &str) -> Result<LifecycleMetrics> {
    let stats = store.stats()?;
    // The access log is a hint: unreadable, it counts as empty.
    let access = access_log::histogram(&project.state_dir(), now).unwrap_or_default();
    let mut frequency: BTreeMap<String, u64> = access_log::frequency_distribution(&access)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let accessed: u64 = access.values().fold(0, |sum, n| sum.saturating_add(*n));
    let never = u64::try_from(stats.total_entries)
        .unwrap_or(0)
        .saturating_sub(accessed);
    if never > 0 {
        frequency.insert("0".into(), never);
    }
    let history = run::history_records(project)?;
    let last = history.last();
    // Storage per tier as the last run that went through every entry found it: a run stopped
    // part way (a daemon's SIGTERM) counted only the entries it reached.
    let storage = history
        .iter()
        .rev()
        .find(|r| !r.stopped)
        .map(|r| r.storage.clone())
        .unwrap_or_default();
    let (mut lifespan, mut rate) = (BTreeMap::new(), BTreeMap::new());
    for (kind, entries) in &stats.entries_by_kind {
        let gone: i64 = ["archived", "expired"]
            .iter()
            .filter_map(|l| stats.entries_by_kind_lifecycle.get(&format!("{kind}/{l}")))
            .sum();
        if *entries > 0 {
            #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
            rate.insert(kind.clone(), round(gone as f64 / *entries as f64));
        }
    }
    for (kind, ended) in &stats.ended_by_kind {
        let ms = stats.lifespan_ms_by_kind.get(kind).copied().unwrap_or(0);
        if *ended > 0 {
            #[expect(clippy::cast_precision_loss, reason = "sums of spans far below 2^52")]
            lifespan.insert(
                kind.clone(),
                round(ms as f64 / *ended as f64 / 86_400_000.0),
            );
        }
    }
    Ok(LifecycleMetrics {
        entries_by_lifecycle: stats.entries_by_lifecycle.clone(),
        pinned: stats.pinned_count,
        purged: stats.purged_count,
        stale_evidence: stats.stale_evidence_count,
        access_frequency: frequency,
        storage,
        average_lifespan_days: lifespan,
        archival_rate: rate,
        last_run: last.map(summary),
    })
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
