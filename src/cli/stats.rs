//! `stats`: the MemoryStatistics of a project or of all, for a date range, read from the
//! delta-maintained statistics projection without scanning entries.

use super::output::safe;
use super::{Ctx, ExitCode, Out};
use crate::analytics::statistics::{self, LifecycleInputs, LifecycleRun, MemoryStatistics};
use crate::analytics::{DateRange, RangeSpec};
use crate::error::{Error, Result};
use crate::lifecycle::{access_log, metrics};
use crate::project::Project;
use serde_json::json;
use std::collections::BTreeMap;

// Which projects and which days: shared by `stats` and `dashboard`. (Not a doc comment: clap
// would take it for the help of the subcommands that flatten it.)
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT", conflicts_with = "all")]
    pub project: Option<String>,
    /// Every project of the workspace, `global` included
    #[arg(long)]
    pub all: bool,
    /// Date range of entry creation: 7d, 30d, all, or <N>d (the last N days, today included)
    #[arg(long, value_name = "RANGE", conflicts_with_all = ["from", "to"])]
    pub range: Option<String>,
    /// First day of the range (ISO 8601 date or time; its UTC day counts)
    #[arg(long, value_name = "DATE")]
    pub from: Option<String>,
    /// Last day of the range, included
    #[arg(long, value_name = "DATE")]
    pub to: Option<String>,
}

impl TargetArgs {
    /// The range asked for, `default` when none.
    pub fn range_spec(&self, default: RangeSpec) -> Result<RangeSpec> {
        match (&self.range, &self.from, &self.to) {
            (Some(r), _, _) => RangeSpec::parse(r),
            (None, None, None) => Ok(default),
            (None, from, to) => RangeSpec::between(from.as_deref(), to.as_deref()),
        }
    }

    /// The projects to read: one, or every project with `--all`.
    pub fn projects(&self, ctx: &Ctx) -> Result<Vec<Project>> {
        if !self.all {
            return Ok(vec![ctx.project(self.project.as_deref())?]);
        }
        let ws = ctx.workspace()?;
        let names = ws.projects()?;
        if names.is_empty() {
            return Err(Error::NoWorkspace {
                start: ws.root().to_path_buf(),
            });
        }
        names.into_iter().map(|n| Project::open(&ws, n)).collect()
    }
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub target: TargetArgs,
}

/// Reads the statistics of `projects` for `range`, one short store session per project.
pub fn read(
    ctx: &Ctx,
    projects: &[Project],
    range: &RangeSpec,
) -> Result<(MemoryStatistics, DateRange, String)> {
    let at = ctx.now();
    let now = crate::clock::parse_time(&at).map_err(Error::Usage)?;
    let dates = range.resolve(now);
    let mut parts = Vec::with_capacity(projects.len());
    // In a date range, accesses count for the entries created in it (property 48), like
    // everything else: each entry read is looked up.
    let bounded = dates.from.is_some() || dates.to.is_some();
    let mut inputs = lifecycle_inputs(projects, &at, !bounded)?;
    let mut counts = if bounded {
        access_counts(projects, &at)
    } else {
        BTreeMap::new()
    };
    let mut in_range: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for p in projects {
        let session = ctx.open_session_whole(p)?;
        parts.push(statistics::read_project(
            p.name.as_str(),
            session.store(),
            &p.state_dir(),
            &dates,
            now,
        )?);
        created_in(session.store(), &counts, &dates, &mut in_range)?;
        // The session (and its store lock) ends here, before the next project is read.
    }
    if bounded {
        counts.retain(|id, _| in_range.contains(id));
        inputs.access_histogram = Some(histogram_of(&counts));
    }
    let stats = MemoryStatistics::build(&parts, &dates, inputs);
    Ok((stats, dates, at))
}

/// What the lifecycle engine knows of `projects` at `now`: the last run of each (from
/// `.memlog/lifecycle-runs.jsonl`; several projects' last runs are added up, `at` the latest)
/// and, `with_access`, how many entries were read how often at or before `now` (from the
/// access log).
///
/// # Errors
/// When a run history exists but cannot be read.
pub fn lifecycle_inputs(
    projects: &[Project],
    now: &str,
    with_access: bool,
) -> Result<LifecycleInputs> {
    let mut last_run: Option<LifecycleRun> = None;
    for p in projects {
        if let Some(r) = metrics::last_run(p)? {
            let run = last_run.get_or_insert_with(LifecycleRun::default);
            if r.now > run.at {
                run.at.clone_from(&r.now);
            }
            for (to, n) in r.transitions {
                let n = i64::try_from(n).unwrap_or(i64::MAX);
                if to == "purged" {
                    run.purged += n;
                } else {
                    *run.transitions.entry(to).or_insert(0) += n;
                }
            }
        }
    }
    let access_histogram = match projects {
        _ if !with_access => None,
        // The access log is a hint: unreadable, it counts as empty (as in `lifecycle report`).
        [one] => Some(access_log::histogram(&one.state_dir(), now).unwrap_or_default()),
        // An entry moved between projects (`merge-project`) has reads in both: counted once.
        _ => Some(histogram_of(&access_counts(projects, now))),
    };
    Ok(LifecycleInputs {
        last_run,
        access_histogram,
    })
}

/// Adds to `in_range` the ids of `counts` that `store` holds and that were created on a day of
/// `dates`. Many ids are looked up in one scan of the text index's feature records, which hold
/// each active entry's creation time (reading and parsing each entry's state took the dashboard
/// 800 ms once all of 100,000 entries had been read); the others from their state.
///
/// # Errors
/// When the store cannot be read.
fn created_in(
    store: &crate::store::Store,
    counts: &BTreeMap<String, u64>,
    dates: &DateRange,
    in_range: &mut std::collections::BTreeSet<String>,
) -> Result<()> {
    use crate::retrieval::features::DocFeatures;
    // The ids whose creation the scan did not give: read from their state.
    let mut unknown: Vec<&String> = Vec::new();
    if counts.len() > crate::store::tuning::scan_created_from() {
        // The range as Unix milliseconds, `[from, to + 1 day)`: the day of a creation time is
        // in the range exactly when the time is.
        let start = |day: &str| {
            chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|t| t.and_utc().timestamp_millis())
        };
        let from = dates.from.as_deref().map(start);
        let to = dates
            .to
            .as_deref()
            .map(|d| start(d).map(|ms| ms + crate::retrieval::rank::MS_PER_DAY));
        // Both in id order: one walk through the ids read beside the scan.
        let mut ids = counts.keys().peekable();
        store.scan_index(crate::retrieval::text_index::DOC_PREFIX, |id, value| {
            while let Some(passed) = ids.next_if(|held| held.as_bytes() < id) {
                unknown.push(passed);
            }
            let Some(held) = ids.next_if(|held| held.as_bytes() == id) else {
                return true;
            };
            match DocFeatures::decode(value).filter(|f| f.created != 0) {
                Some(f) => {
                    let after = from.is_none_or(|from| from.is_some_and(|ms| f.created >= ms));
                    let before = to.is_none_or(|to| to.is_some_and(|ms| f.created < ms));
                    if after && before {
                        in_range.insert(held.clone());
                    }
                }
                None => unknown.push(held),
            }
            ids.peek().is_some()
        })?;
        unknown.extend(ids);
    } else {
        unknown.extend(counts.keys());
    }
    for id in unknown {
        if let Some(entry) = store.entry(id)?
            && dates.contains_day(projections::time::day_of(&entry.created_at))
        {
            in_range.insert(id.clone());
        }
    }
    Ok(())
}

/// Reads per entry id at or before `now`, over the access logs of `projects`.
fn access_counts(projects: &[Project], now: &str) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for p in projects {
        for (id, n) in access_log::counts(&p.state_dir(), now).unwrap_or_default() {
            *counts.entry(id).or_insert(0) += n;
        }
    }
    counts
}

/// How many entries have each count of `counts`.
fn histogram_of(counts: &BTreeMap<String, u64>) -> BTreeMap<u64, u64> {
    let mut h = BTreeMap::new();
    for n in counts.values().filter(|n| **n > 0) {
        *h.entry(*n).or_insert(0) += 1;
    }
    h
}

pub fn run(ctx: &Ctx, args: StatsArgs, out: &mut Out) -> Result<ExitCode> {
    let range = args.target.range_spec(RangeSpec::All)?;
    let projects = args.target.projects(ctx)?;
    let (s, dates, at) = read(ctx, &projects, &range)?;
    let names: Vec<&str> = projects.iter().map(|p| p.name.as_str()).collect();
    let label = if args.target.all {
        "all".to_owned()
    } else {
        names.first().copied().unwrap_or_default().to_owned()
    };
    if out.json {
        let mut doc = json!({
            "project": label,
            "computed_at": at,
            "range": dates,
            "statistics": s,
        });
        if args.target.all {
            doc["projects"] = json!(names);
        }
        out.json(&doc);
        return Ok(ExitCode::Ok);
    }
    print_summary(out, &label, &dates, &s);
    Ok(ExitCode::Ok)
}

fn list(m: &BTreeMap<String, i64>) -> String {
    joined_or(
        m.iter().map(|(k, v)| format!("{} {v}", safe(k))).collect(),
        "-",
    )
}

/// `parts` joined by commas, or `none` when there are none.
pub(super) fn joined_or(parts: Vec<String>, none: &str) -> String {
    if parts.is_empty() {
        none.to_owned()
    } else {
        parts.join(", ")
    }
}

fn print_summary(out: &mut Out, project: &str, dates: &DateRange, s: &MemoryStatistics) {
    // An open side is open: `--from` alone also takes entries dated after today.
    let days = match (&dates.from, &dates.to) {
        (None, None) => None,
        (Some(f), Some(t)) => Some(format!("{f} to {t}")),
        (Some(f), None) => Some(format!("from {f} on")),
        (None, Some(t)) => Some(format!("up to {t}")),
    };
    let range = match days {
        None => "all time".to_owned(),
        // `--from`/`--to` are labelled by their dates: say them once.
        Some(days) if dates.label.contains("..") => days,
        Some(days) => format!("{} ({days})", dates.label),
    };
    let health = |h: Option<crate::analytics::health::Health>| h.map_or("-", |h| h.label());
    out.line(format!("project            {project}"));
    out.line(format!("range              {range}"));
    out.line(format!(
        "entries            {} ({} not archived, expired or purged)",
        s.total_entries, s.active_entries
    ));
    out.line(format!(
        "average confidence {:.2} [{}]  (low-confidence: {})",
        s.avg_confidence,
        health(s.health.avg_confidence),
        s.low_confidence_count
    ));
    out.line(format!(
        "stale evidence     {} [{}]",
        s.stale_evidence_count,
        s.health.stale_evidence.label()
    ));
    out.line(format!(
        "by section         {}",
        list(&s.entries_by_section)
    ));
    out.line(format!("by status          {}", list(&s.entries_by_status)));
    out.line(format!("by kind            {}", list(&s.entries_by_kind)));
    out.line(format!(
        "confidence         {}",
        list(&s.confidence_distribution)
    ));
    out.line(format!(
        "evidence types     {}",
        list(&s.evidence_type_distribution)
    ));
    let agents: Vec<String> = s
        .most_active_agents
        .iter()
        .map(|a| format!("{} {}", safe(&a.agent), a.count))
        .collect();
    out.line(format!("most active agents {}", joined_or(agents, "-")));
    // The totals, not the sums of the series, which never run over more than MAX_DAYS days.
    out.line(format!(
        "growth             {} created, {} superseded over {}",
        s.growth.created,
        s.growth.superseded,
        super::plural::count(s.growth.days, "day", "days")
    ));
    out.line(format!(
        "lifecycle          {}  pinned {}",
        list(&s.lifecycle.entries_by_lifecycle),
        s.pinned_count
    ));
    let l = &s.lifecycle;
    let lifespans: Vec<String> = l
        .average_lifespan_days_by_kind
        .iter()
        .map(|(kind, days)| {
            let ended = l.ended_by_kind.get(kind).copied().unwrap_or(0);
            let rate = l.archival_rate_by_kind.get(kind).copied().unwrap_or(0.0);
            format!(
                "{kind} {} ({ended} ended, {rate}% archived)",
                super::plural::days(*days)
            )
        })
        .collect();
    out.line(format!(
        "lifespan           {}",
        joined_or(lifespans, "- (no entry has ended)")
    ));
    let tier = |name: &str| {
        l.storage_by_tier.get(name).map_or_else(String::new, |t| {
            format!("{name} {} entries {} bytes", t.entries, t.bytes)
        })
    };
    out.line(format!(
        "storage            {}, {}",
        tier("hot"),
        tier("cold")
    ));
    out.line(format!(
        "last run           {}",
        l.last_run.as_ref().map_or_else(
            || "never (run `memlog lifecycle run`)".to_owned(),
            |r| {
                let mut moved: Vec<String> = r
                    .transitions
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                if r.purged > 0 {
                    moved.push(format!("purged {}", r.purged));
                }
                if moved.is_empty() {
                    format!("{} (no transitions)", r.at)
                } else {
                    format!("{} ({})", r.at, moved.join(", "))
                }
            }
        )
    ));
    out.line(format!(
        "accesses           {}",
        l.access_frequency_distribution.as_ref().map_or_else(
            || "-".to_owned(),
            |d| {
                ["0", "1-4", "5-19", "20+"]
                    .iter()
                    .map(|b| format!("{b} {}", d.get(*b).copied().unwrap_or(0)))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )
    ));
    out.line(format!(
        "superseded         {}%  compaction candidates {}  conflicts {}",
        s.superseded_percentage, s.compaction_candidates, s.conflict_count
    ));
    out.line(format!(
        "expiring in 7 days {} [{}]  past valid_to {}",
        s.entries_approaching_expiry.len(),
        s.health.expiry.label(),
        s.lifecycle.entries_past_valid_to
    ));
    // With several projects (`--all`), each entry is named with its project.
    let expiring = &s.entries_approaching_expiry;
    let several = expiring.iter().any(|e| e.project != expiring[0].project)
        || s.recent_operations
            .iter()
            .any(|o| o.project != s.recent_operations[0].project);
    let named = |project: &str, id: &str| {
        if several {
            format!("{}/{id}", safe(project))
        } else {
            id.to_owned()
        }
    };
    for e in expiring {
        out.line(format!(
            "  {}d  {}  {}",
            e.days_remaining,
            named(&e.project, &e.entry_id),
            safe(&e.summary)
        ));
    }
    let top = |v: Vec<(&str, i64)>| {
        if v.is_empty() {
            return "-".to_owned();
        }
        v.iter()
            .map(|(name, count)| format!("{} {count}", safe(name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.line(format!(
        "queries            {}  subjects: {}  scopes: {}",
        s.query_count,
        top(s
            .most_queried_subjects
            .iter()
            .map(|r| (r.subject.as_str(), r.count))
            .collect()),
        top(s
            .most_queried_scopes
            .iter()
            .map(|r| (r.scope.as_str(), r.count))
            .collect())
    ));
    out.line("recent operations");
    if s.recent_operations.is_empty() {
        out.line("  -");
    }
    for o in &s.recent_operations {
        out.line(format!(
            "  {}  {:<9}  {}  {}  {}",
            o.timestamp,
            o.operation,
            named(&o.project, &o.entry_id),
            safe(&o.agent),
            safe(&o.summary)
        ));
    }
}
