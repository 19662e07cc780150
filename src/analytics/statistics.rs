//! The statistics read-out (`getStatistics` of the requirements): the MemoryStatistics of one
//! project or several, for a date range, from the statistics projection.
//!
//! Reading a project costs: the statistics record and the latest-operations record, one summary
//! per listed operation, the index keys of the entries whose `valid_to` falls in the next eight
//! days, and the query log. None of it grows with the number of entries.

use super::health::{self, Health};
use super::query_patterns::{self, QueryCounts};
use super::range::DateRange;
use crate::error::Result;
use crate::store::Store;
use chrono::{DateTime, Days, Utc};
use projections::stats::{CONFIDENCE_BUCKETS, Counters, Operation};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// How far ahead an entry counts as approaching expiry (requirement 23.7).
pub const EXPIRY_WINDOW_DAYS: u64 = 7;
/// Rows of the ranked lists (most active agents, most queried subjects and scopes).
pub const TOP: usize = 10;

/// One operation of the recent-operations table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecentOperation {
    pub timestamp: String,
    /// `create`, `supersede` or `deprecate`.
    pub operation: String,
    pub entry_id: String,
    pub agent: String,
    /// The entry's summary now (empty once purged).
    pub summary: String,
    pub project: String,
}

/// An active entry whose `valid_to` comes within [`EXPIRY_WINDOW_DAYS`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpiringEntry {
    pub entry_id: String,
    pub summary: String,
    pub valid_to: String,
    /// Whole days left (0: less than a day).
    pub days_remaining: i64,
    pub project: String,
}

/// A day of a time series.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DayCount {
    pub date: String,
    pub count: i64,
}

/// A ranked name and its count (internal; serialized as the schema's named rows below).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub name: String,
    pub count: i64,
}

/// A row of `most_active_agents`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentCount {
    pub agent: String,
    pub count: i64,
}

/// A row of `most_queried_subjects`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubjectCount {
    pub subject: String,
    pub count: i64,
}

/// A row of `most_queried_scopes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScopeCount {
    pub scope: String,
    pub count: i64,
}

/// What the lifecycle engine reports, for the lifecycle panel.
///
/// INTEGRATION POINT (lifecycle engine): the lifecycle engine's last run report and its access
/// log are not part of the statistics projection. The caller passes what it has to
/// [`MemoryStatistics::build`]; `None` is shown as "not available", never as zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LifecycleInputs {
    /// The last lifecycle run, when one has run.
    pub last_run: Option<LifecycleRun>,
    /// How many entries were read how often (count, entries), from the access log.
    pub access_histogram: Option<BTreeMap<u64, u64>>,
}

/// A lifecycle run as the dashboard shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LifecycleRun {
    /// When it ran.
    pub at: String,
    /// Transitions it wrote, by new state (`decaying`, `archived`, `expired`, `restored`).
    pub transitions: BTreeMap<String, i64>,
    /// Entries it purged.
    pub purged: i64,
}

/// Lifecycle metrics (001 requirement 10, 000 requirement 21.7).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LifecycleMetrics {
    /// Entries per lifecycle state: active, decaying, archived, expired.
    pub entries_by_lifecycle: BTreeMap<String, i64>,
    pub pinned_count: i64,
    /// Bytes of summary and content per lifecycle state (`purged` for purged entries).
    pub storage_bytes_by_lifecycle: BTreeMap<String, i64>,
    /// Per kind: the share of its entries (percent) that are archived or expired.
    pub archival_rate_by_kind: BTreeMap<String, f64>,
    /// Per kind: entries whose life has ended (superseded, deprecated, archived, expired or
    /// purged).
    pub ended_by_kind: BTreeMap<String, i64>,
    /// Per kind with ended entries: their mean lifespan in days, from `created_at` to the event
    /// that ended them (2 decimals).
    pub average_lifespan_days_by_kind: BTreeMap<String, f64>,
    /// Entries and bytes of summary and content per storage tier: `hot` (active and decaying
    /// entries, in the active indexes) and `cold` (archived, expired and purged entries).
    pub storage_by_tier: BTreeMap<String, TierStorage>,
    /// Active entries already past `valid_to` that no lifecycle run has expired yet.
    pub entries_past_valid_to: i64,
    /// The last lifecycle run (`null`: not available).
    pub last_run: Option<LifecycleRun>,
    /// Entries by number of accesses: `0`, `1-4`, `5-19`, `20+` (`null`: not available).
    pub access_frequency_distribution: Option<BTreeMap<String, i64>>,
}

/// Entries and bytes in one storage tier.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TierStorage {
    pub entries: i64,
    /// Bytes of summary and content.
    pub bytes: i64,
}

/// Mean lifespan in days of `ended` entries whose lifespans sum to `ms`, 2 decimals.
fn average_days(ms: i64, ended: i64) -> f64 {
    if ended <= 0 {
        return 0.0;
    }
    #[expect(clippy::cast_precision_loss, reason = "sums of spans far below 2^52")]
    let days = ms as f64 / ended as f64 / 86_400_000.0;
    (days * 100.0).round() / 100.0
}

/// The MemoryStatistics of the requirements, plus the lifecycle and bookkeeping counters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryStatistics {
    pub total_entries: i64,
    /// Entries not archived, expired or purged.
    pub active_entries: i64,
    pub entries_by_section: BTreeMap<String, i64>,
    pub entries_by_status: BTreeMap<String, i64>,
    pub entries_by_kind: BTreeMap<String, i64>,
    pub entries_by_scope: BTreeMap<String, i64>,
    /// The same as `lifecycle.entries_by_lifecycle`.
    pub entries_by_lifecycle: BTreeMap<String, i64>,
    pub avg_confidence: f64,
    pub confidence_distribution: BTreeMap<String, i64>,
    pub evidence_type_distribution: BTreeMap<String, i64>,
    pub low_confidence_count: i64,
    pub stale_evidence_count: i64,
    pub entries_created_over_time: Vec<DayCount>,
    pub entries_superseded_over_time: Vec<DayCount>,
    /// The totals of the growth series over the whole range, also where the series are clipped
    /// to [`MAX_DAYS`] days. Not in the JSON, which has the series and `total_entries`.
    ///
    /// [`MAX_DAYS`]: super::range::MAX_DAYS
    #[serde(skip)]
    pub growth: Growth,
    pub entries_by_agent: BTreeMap<String, i64>,
    pub most_active_agents: Vec<AgentCount>,
    pub recent_operations: Vec<RecentOperation>,
    pub most_queried_subjects: Vec<SubjectCount>,
    pub most_queried_scopes: Vec<ScopeCount>,
    pub query_frequency_over_time: Vec<DayCount>,
    pub query_count: i64,
    pub superseded_percentage: f64,
    pub entries_approaching_expiry: Vec<ExpiringEntry>,
    pub compaction_candidates: i64,
    pub lifecycle: LifecycleMetrics,
    pub pinned_count: i64,
    pub conflict_count: i64,
    pub purged_count: i64,
    /// Health of the summary metrics (property 51): `null` without entries.
    pub health: HealthReport,
}

/// Entries created and superseded over a range, and the days it spans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Growth {
    /// The entries of the range (each was created on one of its days).
    pub created: i64,
    /// The entries of the range superseded on a day of the range.
    pub superseded: i64,
    /// The days from the range's first day (or the first with data, where it is open) to its
    /// last (or the last with data).
    pub days: i64,
}

/// The colour of each summary metric, as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthReport {
    pub overall: Option<Health>,
    pub avg_confidence: Option<Health>,
    pub stale_evidence: Health,
    pub expiry: Health,
}

/// What one project contributes, read in one short session.
#[derive(Debug, Clone, Default)]
pub struct ProjectPart {
    pub project: String,
    pub counters: Counters,
    pub operations: Vec<RecentOperation>,
    pub expiring: Vec<ExpiringEntry>,
    pub past_valid_to: i64,
    pub queries: QueryCounts,
}

fn day(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d").to_string()
}

/// Reads one project's part of the statistics from its store and query log.
///
/// # Errors
/// When the store or the query log cannot be read.
pub fn read_project(
    project: &str,
    store: &Store,
    state_dir: &Path,
    range: &DateRange,
    now: DateTime<Utc>,
) -> Result<ProjectPart> {
    let counters = store.stats_created_between(range.from.as_deref(), range.to.as_deref())?;
    let mut operations = Vec::new();
    for op in store.recent_operations()?.0 {
        if !range.contains_day(projections::time::day_of(&op.at)) {
            continue;
        }
        let summary = store
            .entry(&op.entry)?
            .map(|s| s.fields.summary)
            .unwrap_or_default();
        let Operation {
            at,
            operation,
            entry,
            agent,
            ..
        } = op;
        operations.push(RecentOperation {
            timestamp: at,
            operation,
            entry_id: entry,
            agent,
            summary,
            project: project.to_owned(),
        });
    }
    // What expires is a warning about now, whenever the entry was made: the expiry figures
    // count every active entry, not only those created in the range.
    let (expiring, past_today) = expiry(project, store, now)?;
    let today = day(now);
    let all_time;
    let valid_to_per_day = if range.from.is_none() && range.to.is_none() {
        &counters.valid_to_per_day
    } else {
        all_time = store.stats_created_between(None, None)?;
        &all_time.valid_to_per_day
    };
    let past_before_today: i64 = valid_to_per_day.range(..today).map(|(_, n)| *n).sum();
    let queries = query_patterns::read(state_dir, range)?;
    Ok(ProjectPart {
        project: project.to_owned(),
        counters,
        operations,
        expiring,
        past_valid_to: past_before_today + past_today,
        queries,
    })
}

/// The active entries whose `valid_to` is in `[now, now + 7 days]`, soonest first, and how many
/// of today's are already past. Reads the `valid_to` index day by day.
fn expiry(project: &str, store: &Store, now: DateTime<Utc>) -> Result<(Vec<ExpiringEntry>, i64)> {
    let now_ts = crate::clock::format_timestamp(now);
    let end = now
        .checked_add_days(Days::new(EXPIRY_WINDOW_DAYS))
        .unwrap_or(now);
    let end_ts = crate::clock::format_timestamp(end);
    let mut found: Vec<(String, String)> = Vec::new();
    let mut today_past: Vec<String> = Vec::new();
    for offset in 0..=EXPIRY_WINDOW_DAYS {
        let Some(d) = now.checked_add_days(Days::new(offset)) else {
            break;
        };
        let prefix = format!("valid_to\0{}", day(d));
        store.scan_index(prefix.as_bytes(), |rest, _| {
            // rest: the time after the date, `\0`, the entry id.
            let text = String::from_utf8_lossy(rest);
            if let Some((time, id)) = text.split_once('\0') {
                let valid_to = format!("{}{time}", day(d));
                if valid_to < now_ts {
                    today_past.push(id.to_owned());
                } else if valid_to <= end_ts {
                    found.push((valid_to, id.to_owned()));
                }
            }
            true
        })?;
    }
    let past = store
        .hot_entries(&today_past.iter().map(String::as_str).collect::<Vec<_>>())?
        .len();
    let mut out = Vec::new();
    for (valid_to, id) in found {
        let Some(s) = store.hot_entries(&[id.as_str()])?.pop() else {
            continue;
        };
        let left = crate::clock::parse_time(&valid_to)
            .map(|t| (t - now).num_days())
            .unwrap_or(0);
        out.push(ExpiringEntry {
            entry_id: id,
            summary: s.fields.summary,
            valid_to,
            days_remaining: left,
            project: project.to_owned(),
        });
    }
    Ok((out, i64::try_from(past).unwrap_or(i64::MAX)))
}

fn ranked(map: &BTreeMap<String, i64>) -> Vec<Ranked> {
    let mut v: Vec<Ranked> = map
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|(name, count)| Ranked {
            name: name.clone(),
            count: *count,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    v.truncate(TOP);
    v
}

/// A daily series over the range, zero days included, on the days of
/// [`DateRange::series_days`].
fn series(map: &BTreeMap<String, i64>, range: &DateRange) -> Vec<DayCount> {
    let Some((first, last)) = range.series_days(
        map.keys().next().map(String::as_str),
        map.keys().next_back().map(String::as_str),
    ) else {
        return Vec::new();
    };
    first
        .iter_days()
        .take_while(|d| *d <= last)
        .map(|d| {
            let date = d.format("%Y-%m-%d").to_string();
            DayCount {
                count: map.get(&date).copied().unwrap_or(0),
                date,
            }
        })
        .collect()
}

fn percent(part: i64, whole: i64) -> f64 {
    if whole == 0 {
        return 0.0;
    }
    #[expect(clippy::cast_precision_loss, reason = "counts far below 2^52")]
    let p = (part as f64 * 10_000.0 / whole as f64).round() / 100.0;
    p
}

/// Entries by number of accesses; `total` entries in all, so those the log never names count
/// in `0` (the log names only entries that were read).
fn access_buckets(histogram: &BTreeMap<u64, u64>, total: i64) -> BTreeMap<String, i64> {
    let mut out: BTreeMap<String, i64> = ["0", "1-4", "5-19", "20+"]
        .iter()
        .map(|b| ((*b).to_owned(), 0))
        .collect();
    for (n, entries) in histogram {
        let b = match n {
            0 => "0",
            1..=4 => "1-4",
            5..=19 => "5-19",
            _ => "20+",
        };
        let n = out.entry(b.to_owned()).or_insert(0);
        *n = n.saturating_add(i64::try_from(*entries).unwrap_or(i64::MAX));
    }
    let accessed: i64 = out
        .iter()
        .filter(|(b, _)| *b != "0")
        .fold(0i64, |sum, (_, n)| sum.saturating_add(*n));
    *out.entry("0".to_owned()).or_insert(0) += total.saturating_sub(accessed).max(0);
    out
}

impl MemoryStatistics {
    /// Combines the parts of one or more projects into the statistics of `range`.
    pub fn build(parts: &[ProjectPart], range: &DateRange, lifecycle: LifecycleInputs) -> Self {
        let mut c = Counters::default();
        let mut queries = QueryCounts::default();
        let mut operations: Vec<RecentOperation> = Vec::new();
        let mut expiring: Vec<ExpiringEntry> = Vec::new();
        let mut past_valid_to = 0;
        for p in parts {
            c.merge(&p.counters);
            queries.merge(&p.queries);
            operations.extend(p.operations.iter().cloned());
            expiring.extend(p.expiring.iter().cloned());
            past_valid_to += p.past_valid_to;
        }
        operations.sort_by(|a, b| {
            (&b.timestamp, &b.project, &b.entry_id).cmp(&(&a.timestamp, &a.project, &a.entry_id))
        });
        operations.truncate(projections::stats::RECENT_OPERATIONS);
        expiring.sort_by(|a, b| {
            (&a.valid_to, &a.project, &a.entry_id).cmp(&(&b.valid_to, &b.project, &b.entry_id))
        });
        let superseded = c.entries_by_status.get("superseded").copied().unwrap_or(0);
        let superseded_per_day: BTreeMap<String, i64> = c
            .entries_superseded_per_day
            .iter()
            .filter(|(d, _)| range.contains_day(d))
            .map(|(d, n)| (d.clone(), *n))
            .collect();
        let mut archival_rate_by_kind = BTreeMap::new();
        for (kind, total) in &c.entries_by_kind {
            let gone: i64 = ["archived", "expired"]
                .iter()
                .filter_map(|l| c.entries_by_kind_lifecycle.get(&format!("{kind}/{l}")))
                .sum();
            archival_rate_by_kind.insert(kind.clone(), percent(gone, *total));
        }
        let average_lifespan_days_by_kind: BTreeMap<String, f64> = c
            .ended_by_kind
            .iter()
            .map(|(kind, n)| {
                let ms = c.lifespan_ms_by_kind.get(kind).copied().unwrap_or(0);
                (kind.clone(), average_days(ms, *n))
            })
            .collect();
        let bytes = |states: &[&str]| -> i64 {
            states
                .iter()
                .filter_map(|l| c.content_bytes_by_lifecycle.get(*l))
                .sum()
        };
        let storage_by_tier = BTreeMap::from([
            (
                "hot".to_owned(),
                TierStorage {
                    entries: c.hot_entries,
                    bytes: bytes(&["active", "decaying"]),
                },
            ),
            (
                "cold".to_owned(),
                TierStorage {
                    entries: c.total_entries - c.hot_entries,
                    bytes: bytes(&["archived", "expired", "purged"]),
                },
            ),
        ]);
        let avg = c.avg_confidence();
        let by_lifecycle: BTreeMap<String, i64> = projections::Lifecycle::ALL
            .iter()
            .map(|l| {
                let n = c.entries_by_lifecycle.get(l.as_str()).copied().unwrap_or(0);
                (l.as_str().to_owned(), n)
            })
            .collect();
        let health = HealthReport {
            overall: health::overall(avg, c.stale_evidence_count, c.total_entries),
            avg_confidence: health::confidence(avg, c.total_entries),
            stale_evidence: health::stale(c.stale_evidence_count),
            expiry: health::expiry(expiring.len(), past_valid_to),
        };
        Self {
            total_entries: c.total_entries,
            active_entries: c.hot_entries,
            entries_by_section: projections::Section::ALL
                .iter()
                .map(|s| {
                    (
                        s.as_str().to_owned(),
                        c.entries_by_section.get(s.as_str()).copied().unwrap_or(0),
                    )
                })
                .collect(),
            entries_by_status: c.entries_by_status.clone(),
            entries_by_kind: c.entries_by_kind.clone(),
            entries_by_scope: c.entries_by_scope.clone(),
            entries_by_lifecycle: by_lifecycle.clone(),
            avg_confidence: avg,
            confidence_distribution: CONFIDENCE_BUCKETS
                .iter()
                .map(|b| {
                    (
                        (*b).to_owned(),
                        c.confidence_distribution.get(*b).copied().unwrap_or(0),
                    )
                })
                .collect(),
            evidence_type_distribution: c.evidence_type_distribution.clone(),
            low_confidence_count: c.low_confidence_count,
            stale_evidence_count: c.stale_evidence_count,
            entries_created_over_time: series(&c.entries_created_per_day, range),
            entries_superseded_over_time: series(&superseded_per_day, range),
            growth: Growth {
                created: c.total_entries,
                superseded: superseded_per_day.values().sum(),
                days: range.span_days(
                    c.entries_created_per_day.keys().next().map(String::as_str),
                    c.entries_created_per_day
                        .keys()
                        .next_back()
                        .map(String::as_str),
                ),
            },
            entries_by_agent: c.entries_by_agent.clone(),
            most_active_agents: ranked(&c.entries_by_agent)
                .into_iter()
                .map(|r| AgentCount {
                    agent: r.name,
                    count: r.count,
                })
                .collect(),
            recent_operations: operations,
            most_queried_subjects: ranked(&queries.subjects)
                .into_iter()
                .map(|r| SubjectCount {
                    subject: r.name,
                    count: r.count,
                })
                .collect(),
            most_queried_scopes: ranked(&queries.scopes)
                .into_iter()
                .map(|r| ScopeCount {
                    scope: r.name,
                    count: r.count,
                })
                .collect(),
            query_frequency_over_time: series(&queries.per_day, range),
            query_count: queries.total,
            superseded_percentage: percent(superseded, c.total_entries),
            entries_approaching_expiry: expiring,
            compaction_candidates: superseded,
            lifecycle: LifecycleMetrics {
                entries_by_lifecycle: by_lifecycle,
                pinned_count: c.pinned_count,
                storage_bytes_by_lifecycle: c.content_bytes_by_lifecycle.clone(),
                archival_rate_by_kind,
                ended_by_kind: c.ended_by_kind.clone(),
                average_lifespan_days_by_kind,
                storage_by_tier,
                entries_past_valid_to: past_valid_to,
                last_run: lifecycle.last_run,
                access_frequency_distribution: lifecycle
                    .access_histogram
                    .as_ref()
                    .map(|a| access_buckets(a, c.total_entries)),
            },
            pinned_count: c.pinned_count,
            conflict_count: c.conflict_count,
            purged_count: c.purged_count,
            health,
        }
    }
}
