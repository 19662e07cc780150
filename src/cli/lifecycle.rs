//! Lifecycle commands: `lifecycle run|daemon|report`, `purge`, `gc`, `pinned`, `drop`,
//! `check-freshness`, `validate-evidence`.

use super::output::{clip, note, safe, warn};
use super::plural::count;
use super::{Ctx, ExitCode, Out};
use crate::error::{Error, Result};
use crate::lifecycle::run::{RunOptions, RunReport};
use crate::lifecycle::{daemon, evidence, freshness, metrics, purge};
use crate::log::writer::{Batch, Change, write};
use crate::project::Project;
use crate::workspace::{GLOBAL_PROJECT, ProjectName};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum LifecycleCommand {
    /// Evaluate every entry once: decay, TTL, retention; append one transition per change
    Run(RunArgs),
    /// Run evaluations on a schedule until SIGINT/SIGTERM
    Daemon(DaemonArgs),
    /// The lifecycle metrics and the last run report
    Report(ProjectArgs),
}

#[derive(Debug, clap::Args)]
pub struct ProjectArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT", conflicts_with = "all")]
    pub project: Option<String>,
    /// Every project of the workspace, `global` included
    #[arg(long)]
    pub all: bool,
    /// Evaluate and print what would change; write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct DaemonArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Time between evaluations: e.g. 30s, 15m, 1h, 1d
    #[arg(long, value_name = "DURATION")]
    pub every: String,
    /// Stop after this many evaluations, at least 1 (default: run until stopped)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), allow_negative_numbers = true)]
    pub max_runs: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    /// The entry (any unique prefix)
    pub id: String,
    /// Why (recorded in the purge event; never put the secret itself here)
    #[arg(long)]
    pub reason: String,
    /// Check and print, write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct GcArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Print what would be rewritten; change nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, clap::Args)]
pub struct DropArgs {
    /// The project to remove from the workspace
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: String,
    /// Confirm: unpin every pinned entry, then delete ai-memory/<PROJECT>/
    #[arg(long)]
    pub yes: bool,
}

#[derive(Debug, clap::Args)]
pub struct EvidenceArgs {
    /// Project (default: --project, or the workspace's only project)
    #[arg(id = "project_name", value_name = "PROJECT")]
    pub project: Option<String>,
    /// Also check URLs (permalinks, tickets, documents) over HTTP, with curl
    #[arg(long)]
    pub online: bool,
    /// Timeout of one HTTP attempt, in milliseconds
    #[arg(long, default_value_t = 5000, value_name = "MS", allow_negative_numbers = true, value_parser = super::numbers::whole::<u64>)]
    pub timeout_ms: u64,
    /// HTTP attempts after the first (waiting 500 ms, then twice as long each time)
    #[arg(long, default_value_t = 2, value_name = "N", allow_negative_numbers = true, value_parser = super::numbers::whole::<u32>)]
    pub retries: u32,
    /// Check and print, write no evidence_checked events
    #[arg(long)]
    pub dry_run: bool,
}

/// Parses `30s`, `15m`, `1h`, `2d` (or a number of seconds).
fn parse_every(s: &str) -> Result<Duration> {
    let bad = || {
        Error::Usage(format!(
            "--every `{}` is not a duration; use e.g. 30s, 15m, 1h or 1d",
            s.escape_debug()
        ))
    };
    let (n, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "s"),
    };
    let n: u64 = n.parse().map_err(|_| bad())?;
    let every = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        "d" => Duration::from_secs(n.saturating_mul(86_400)),
        _ => return Err(bad()),
    };
    if every.is_zero() {
        return Err(Error::Usage(format!(
            "--every `{}` is zero: give a period of at least 1ms, e.g. 30s, 15m, 1h or 1d",
            s.escape_debug()
        )));
    }
    Ok(every)
}

fn projects(ctx: &Ctx, args: &RunArgs) -> Result<Vec<Project>> {
    if args.all {
        let ws = ctx.workspace()?;
        return ws
            .projects()?
            .into_iter()
            .map(|n| Project::open(&ws, n))
            .collect();
    }
    Ok(vec![ctx.project(args.project.as_deref())?])
}

fn options(ctx: &Ctx, dry_run: bool) -> Result<RunOptions> {
    Ok(RunOptions {
        now: ctx.now(),
        actor: ctx.actor()?,
        lock_timeout: ctx.lock_timeout(),
        dry_run,
        fail_entry: if cfg!(debug_assertions) {
            std::env::var("MEMLOG_TEST_LIFECYCLE_FAIL_ENTRY").ok()
        } else {
            None
        },
    })
}

fn print_report(r: &RunReport, out: &mut Out) {
    for w in &r.warnings {
        warn(w);
    }
    for s in &r.skipped {
        warn(&format!("{}: skipped: {}", s.entry, s.error));
    }
    if out.json {
        return;
    }
    for t in &r.transitions {
        out.line(format!(
            "{}  {} -> {}  ({})",
            t.entry,
            t.from,
            t.to,
            clip(&t.reason, 160)
        ));
    }
    let counts: Vec<String> = r.counts().iter().map(|(k, v)| format!("{k} {v}")).collect();
    out.line(format!(
        "{}{}: {} in {}, {}{}, {} skipped, {} pinned, {}{} ms",
        if r.dry_run { "dry run: " } else { "" },
        r.project,
        count(r.processed, "entry", "entries"),
        count(r.batches, "batch", "batches"),
        count(r.transitions.len(), "transition", "transitions"),
        if counts.is_empty() {
            String::new()
        } else {
            format!(" ({})", counts.join(", "))
        },
        r.skipped.len(),
        r.pinned,
        if r.reclaimed_bytes > 0 {
            format!("{} bytes reclaimed, ", r.reclaimed_bytes)
        } else {
            String::new()
        },
        r.duration_ms
    ));
}

pub fn lifecycle(ctx: &Ctx, cmd: LifecycleCommand, out: &mut Out) -> Result<ExitCode> {
    match cmd {
        LifecycleCommand::Run(args) => {
            let stop = AtomicBool::new(false);
            let mut reports = Vec::new();
            let mut failed = false;
            for p in projects(ctx, &args)? {
                match crate::lifecycle::run::run(&p, &options(ctx, args.dry_run)?, &stop) {
                    Ok(r) => {
                        print_report(&r, out);
                        reports.push(r);
                    }
                    // With --all, one broken project does not keep the others from their run
                    // (as the daemon goes on); what ran is reported, and the exit code says.
                    Err(e) if args.all => {
                        failed = true;
                        warn(&format!(
                            "{}: evaluation failed, the other projects were evaluated: {e}",
                            p.name
                        ));
                    }
                    Err(e) => return Err(e),
                }
            }
            let skipped = failed || reports.iter().any(|r| !r.skipped.is_empty());
            if out.json {
                if args.all {
                    out.json(&reports);
                } else if let Some(r) = reports.first() {
                    out.json(r);
                }
            }
            Ok(if skipped {
                ExitCode::Problems
            } else {
                ExitCode::Ok
            })
        }
        LifecycleCommand::Daemon(args) => daemon_cmd(ctx, &args, out),
        LifecycleCommand::Report(args) => {
            let p = ctx.project(args.project.as_deref())?;
            let session = ctx.open_session(&p)?;
            let m = metrics::metrics(&p, session.store(), &ctx.now())?;
            drop(session);
            if out.json {
                out.json(&m);
                return Ok(ExitCode::Ok);
            }
            let line = |m: &std::collections::BTreeMap<String, i64>| {
                m.iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.line(format!(
                "lifecycle        {}",
                line(&m.entries_by_lifecycle)
            ));
            out.line(format!(
                "pinned {}, purged {}, stale evidence {}",
                m.pinned, m.purged, m.stale_evidence
            ));
            out.line(format!(
                "accesses         {}",
                m.access_frequency
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            for (tier, t) in &m.storage {
                out.line(format!(
                    "storage {tier:<9}{}, {}",
                    count(t.entries, "entry", "entries"),
                    count(t.bytes, "byte", "bytes")
                ));
            }
            for (kind, rate) in &m.archival_rate {
                out.line(format!(
                    "kind {kind:<13} archival rate {rate}, average lifespan {}",
                    m.average_lifespan_days
                        .get(kind)
                        .map_or_else(|| "n/a (none ended)".into(), |d| super::plural::days(*d))
                ));
            }
            match &m.last_run {
                Some(r) => {
                    let moved: Vec<String> = r
                        .transitions
                        .iter()
                        .map(|(state, n)| format!("{state} {n}"))
                        .collect();
                    out.line(format!(
                        "last run         {} ({}, {} ms, {} skipped; transitions: {}){}",
                        r.now,
                        count(r.processed, "entry", "entries"),
                        r.duration_ms,
                        r.skipped,
                        super::stats::joined_or(moved, "none"),
                        if r.stopped {
                            ", stopped before the end: its figures are partial"
                        } else {
                            ""
                        }
                    ));
                }
                None => out.line("last run         never (run `memlog lifecycle run`)"),
            }
            Ok(ExitCode::Ok)
        }
    }
}

fn daemon_cmd(ctx: &Ctx, args: &DaemonArgs, out: &mut Out) -> Result<ExitCode> {
    let every = parse_every(&args.every)?;
    let projects = projects(ctx, &args.run)?;
    let base = options(ctx, args.run.dry_run)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = crossbeam_channel::bounded::<()>(1);
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(Error::Io)?;
    let handle = signals.handle();
    let flag = Arc::clone(&stop);
    let waiter = std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            let _ = tx.try_send(());
        }
    });
    note(&format!(
        "lifecycle daemon: evaluating {} every {}; stop with Ctrl-C or SIGTERM",
        projects
            .iter()
            .map(|p| p.name.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        args.every
    ));
    let mut failed = false;
    // Under --json: every report, printed once at the end as one array (the contract's one
    // document, whatever the number of evaluations).
    let mut reports: Vec<RunReport> = Vec::new();
    let schedule = daemon::Schedule {
        every,
        max_rounds: args.max_runs,
    };
    let rounds = daemon::run_daemon(
        &projects,
        &schedule,
        &stop,
        &rx,
        || RunOptions {
            now: ctx.now(),
            ..base.clone()
        },
        |p, r| {
            // A daemon runs for days: the stores its rounds made due are compacted now.
            super::compact::start_due();
            match r {
                Ok(r) => {
                    print_report(&r, out);
                    if out.json {
                        reports.push(r);
                    }
                }
                Err(e) => {
                    failed = true;
                    warn(&format!("{}: evaluation failed: {e}", p.name));
                }
            }
        },
    );
    handle.close();
    let _ = waiter.join();
    if out.json {
        out.json(&reports);
    }
    note(&format!(
        "lifecycle daemon: stopped after {rounds} evaluation{}",
        if rounds == 1 { "" } else { "s" }
    ));
    Ok(if failed {
        ExitCode::Problems
    } else {
        ExitCode::Ok
    })
}

pub fn purge_cmd(ctx: &Ctx, args: PurgeArgs, out: &mut Out) -> Result<ExitCode> {
    crate::policy::validate::check_reason(Some(&args.reason)).map_err(|e| {
        if args.dry_run {
            e.into()
        } else {
            ctx.refused(None, "purge", e)
        }
    })?;
    if args.reason.trim().is_empty() {
        return Err(Error::Usage(
            "--reason must say why the entry is purged (it is kept in the log)".into(),
        ));
    }
    let project = ctx.project(None)?;
    let mut wctx = ctx.write_context_for(&project, "purge")?;
    wctx.dry_run = args.dry_run;
    let template = Change::Purge {
        target: super::read::normalize_id(&args.id),
        reason: args.reason.clone(),
        redacted: std::collections::BTreeMap::new(),
    };
    let w = write(&project, &wctx, template, |session, state| {
        let id = state.map(|s| s.id.clone()).unwrap_or_default();
        // Every event carrying the content that no earlier purge covers: all of them for a
        // first purge, what a merge brought back for a purged entry.
        Ok(Change::Purge {
            redacted: purge::uncovered(session.store(), &id)?,
            target: id,
            reason: args.reason.clone(),
        })
    })?;
    super::write_ops::print_written(ctx, &w, "purged", out);
    if !args.dry_run {
        note(&format!(
            "the content is out of the projections; run `memlog gc {}` to remove it from events.jsonl, \
             then see docs/LIFECYCLE.md for copies in git history",
            project.name
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn gc_cmd(ctx: &Ctx, args: GcArgs, out: &mut Out) -> Result<ExitCode> {
    let project = ctx.project(args.project.as_deref())?;
    let r = purge::gc(&project, ctx.lock_timeout(), args.dry_run)?;
    for p in &r.problems {
        warn(p);
    }
    if out.json {
        out.json(&r);
    } else {
        out.line(format!(
            "{}{}: {} replaced by tombstones ({}), {} dropped, {} -> {} bytes",
            if r.dry_run { "dry run: " } else { "" },
            r.project,
            count(r.tombstoned, "line", "lines"),
            count(r.purges, "purge", "purges"),
            count(r.duplicates_dropped, "old copy", "old copies"),
            r.bytes_before,
            r.bytes_after
        ));
    }
    Ok(if r.problems.is_empty() {
        ExitCode::Ok
    } else {
        ExitCode::Problems
    })
}

pub fn pinned(ctx: &Ctx, args: ProjectArgs, out: &mut Out) -> Result<ExitCode> {
    let p = ctx.project(args.project.as_deref())?;
    let session = ctx.open_session(&p)?;
    let store = session.store();
    // Both from indexes: pinned hot entries, then pinned cold ones (no scan of the entries).
    let mut ids = store.ids_with("pinned", "true")?;
    let cold_ids = store.cold_pinned_ids()?;
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut entries = store.hot_entries(&refs)?;
    let cold_refs: Vec<&str> = cold_ids.iter().map(String::as_str).collect();
    entries.extend(store.cold_entries_by_id(&cold_refs)?);
    entries.sort_by(|a, b| (&a.pinned_at, &a.id).cmp(&(&b.pinned_at, &b.id)));
    ids.clear();
    if out.json {
        let items: Vec<serde_json::Value> = entries
            .iter()
            .map(|s| serde_json::Value::Object(projections::entry_json::to_flat_map(s)))
            .collect();
        out.json(&items);
        return Ok(ExitCode::Ok);
    }
    if entries.is_empty() {
        out.line("no pinned entries");
    }
    for s in &entries {
        // The entry's status (a pinned entry can since have been superseded or deprecated),
        // and its lifecycle state when it is not active (archived, expired, ...).
        let state = match s.lifecycle {
            projections::Lifecycle::Active => s.status.as_str().to_owned(),
            other => format!("{} ({})", s.status.as_str(), other.as_str()),
        };
        out.line(format!(
            "{}  pinned by {} at {}  {:<21} {}",
            s.id,
            safe(s.pinned_by.as_deref().unwrap_or("-")),
            s.pinned_at.as_deref().unwrap_or("-"),
            state,
            clip(&s.fields.summary, 80)
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn drop_cmd(ctx: &Ctx, args: DropArgs, out: &mut Out) -> Result<ExitCode> {
    let ws = ctx.workspace()?;
    let name = ProjectName::new(&args.project)?;
    if name.as_str() == GLOBAL_PROJECT {
        return Err(Error::Rejected {
            message: "`global` holds memory shared by every project and cannot be dropped".into(),
        });
    }
    let project = Project::open(&ws, name)?;
    if !args.yes {
        return Err(Error::Usage(format!(
            "`memlog drop {0}` deletes {1} (its log, configuration and projections); \
             run `memlog drop {0} --yes` to confirm",
            project.name,
            project.dir.display()
        )));
    }
    let wctx = ctx.write_context()?;
    let mut unpinned = Vec::new();
    {
        let mut batch = Batch::open(&project, &wctx)?;
        let store = batch.session().store();
        let mut ids = store.ids_with("pinned", "true")?;
        let cold_ids = store.cold_pinned_ids()?;
        let cold_refs: Vec<&str> = cold_ids.iter().map(String::as_str).collect();
        let cold = store.cold_entries_by_id(&cold_refs)?;
        ids.extend(cold.into_iter().filter(|s| !s.purged).map(|s| s.id));
        for id in ids {
            let change = Change::Unpin {
                target: id.clone(),
                reason: Some(format!("project {} dropped", project.name)),
            };
            batch.stage(change.clone(), |_, _| Ok(change))?;
            unpinned.push(id);
        }
        batch.finish()?;
    }
    fs_err::remove_dir_all(&project.dir)?;
    if out.json {
        out.json(&serde_json::json!({
            "project": project.name.to_string(),
            "dropped": true,
            "unpinned": unpinned,
        }));
    } else {
        out.line(format!(
            "dropped {} ({} unpinned first); it stays in git history until you commit the removal",
            project.name,
            count(unpinned.len(), "entry", "entries")
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn check_freshness(ctx: &Ctx, args: ProjectArgs, out: &mut Out) -> Result<ExitCode> {
    let p = ctx.project(args.project.as_deref())?;
    let days = p.config()?.policies.retrieval.expiry_warning_days;
    let session = ctx.open_session(&p)?;
    let items = freshness::check(session.store(), &ctx.now(), days)?;
    if out.json {
        out.json(&items);
        return Ok(ExitCode::Ok);
    }
    if items.is_empty() {
        out.line(format!(
            "nothing expires within {days} days and no review is due"
        ));
    }
    // Columns padded to their widest cell, so that they line up whatever the ids and dates.
    let due: Vec<String> = items
        .iter()
        .map(|i| {
            // What is due or past is so now or before: "0.0 days ago", never "in -0.0 days".
            let when = if i.days < 0.0 || (i.days == 0.0 && i.problem != "expiring") {
                format!("{:.1} days ago", i.days.abs())
            } else {
                format!("in {:.1} days", i.days)
            };
            format!("{} ({when})", i.due)
        })
        .collect();
    let subjects: Vec<String> = items.iter().map(|i| clip(&i.subject, 24)).collect();
    let width = |cells: &mut dyn Iterator<Item = usize>| cells.max().unwrap_or(0);
    let id_w = width(&mut items.iter().map(|i| i.id.chars().count()));
    let due_w = width(&mut due.iter().map(|d| d.chars().count()));
    let subject_w = width(&mut subjects.iter().map(|s| s.chars().count()));
    for ((i, due), subject) in items.iter().zip(&due).zip(&subjects) {
        out.line(format!(
            "{:<id_w$}  {:<10}  {:<due_w$}  {:<12}  {:<subject_w$}  {}",
            i.id,
            i.problem,
            due,
            i.section,
            subject,
            clip(&i.summary, 60)
        ));
    }
    Ok(ExitCode::Ok)
}

pub fn validate_evidence(ctx: &Ctx, args: EvidenceArgs, out: &mut Out) -> Result<ExitCode> {
    let p = ctx.project(args.project.as_deref())?;
    let root = p.workspace.root().to_path_buf();
    let online = args.online.then(|| evidence::Online {
        timeout: Duration::from_millis(args.timeout_ms.max(1)),
        retries: args.retries,
        backoff: Duration::from_millis(500),
    });
    let mut wctx = ctx.write_context()?;
    wctx.dry_run = args.dry_run;
    // Read the entries and check them without any lock: HTTP checks can be slow.
    let entries = {
        let session = ctx.open_session(&p)?;
        let store = session.store();
        let mut all = store.recent(usize::MAX, |s| !s.fields.evidence.is_empty())?;
        let (cold, _) = store.cold_entries(0, usize::MAX, |s| {
            !s.purged && !s.fields.evidence.is_empty()
        })?;
        all.extend(cold);
        all
    };
    let checks: Vec<evidence::EntryCheck> = entries
        .iter()
        .map(|s| evidence::check_entry(&root, s, online.as_ref()))
        .collect();
    let mut batch = Batch::open(&p, &wctx)?;
    let mut changed = Vec::new();
    for (state, check) in entries.iter().zip(&checks) {
        if let Some(stale) = check.change(state) {
            let change = Change::EvidenceChecked {
                target: state.id.clone(),
                stale: stale.clone(),
            };
            match batch.stage(change.clone(), |_, _| Ok(change)) {
                Ok(_) => changed.push((state.id.clone(), !stale.is_empty())),
                Err(e) => warn(&format!("{}: {e}", state.id)),
            }
        }
    }
    batch.finish()?;
    let stale_count = checks.iter().filter(|c| !c.stale.is_empty()).count();
    if out.json {
        out.json(&serde_json::json!({
            "project": p.name.to_string(),
            "online": args.online,
            "dry_run": args.dry_run,
            "entries": checks,
            "marked_stale": changed.iter().filter(|(_, s)| *s).map(|(i, _)| i).collect::<Vec<_>>(),
            "cleared": changed.iter().filter(|(_, s)| !*s).map(|(i, _)| i).collect::<Vec<_>>(),
        }));
    } else {
        for c in &checks {
            for u in c.checks.iter().filter(|u| u.result != "ok") {
                out.line(format!(
                    "{}  {:<9} {}  ({})",
                    c.id,
                    u.result,
                    safe(&u.uri),
                    u.detail
                ));
            }
        }
        let (marked, cleared) = if args.dry_run {
            (
                "would be marked stale",
                "would be cleared (dry run: nothing written)",
            )
        } else {
            ("marked stale", "cleared")
        };
        out.line(format!(
            "{}: {} checked, {} with stale evidence; {} {marked}, {} {cleared}{}",
            p.name,
            count(checks.len(), "entry", "entries"),
            stale_count,
            changed.iter().filter(|(_, s)| *s).count(),
            changed.iter().filter(|(_, s)| !*s).count(),
            if args.online {
                ""
            } else {
                " (URLs not checked: add --online)"
            }
        ));
    }
    Ok(if stale_count > 0 {
        ExitCode::Problems
    } else {
        ExitCode::Ok
    })
}
